"""A new user's mistakes (session 13): each gets one line naming the problem and the fix, the
right exit status (2 bad input, 1 failure, 130 interrupted) and never a traceback, a silently
changed meaning, or results quietly left out."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import mpsched
from mpsched.cli import app
from mpsched.scenario import ScenarioError, load_scenario, loads_scenario
from mpsched.study import store

from conftest import SCENARIOS, has_core_runner

MPSCHED = str(Path(sys.executable).parent / "mpsched")
QUICK = (SCENARIOS / "quick.toml").read_text()


def _cli(args: list[str]):
    r = CliRunner().invoke(app, [str(a) for a in args])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r


def _one_line(r) -> str:
    """The error line of a refused command: exactly one, no traceback."""
    out = r.output
    assert "Traceback" not in out, out
    lines = [ln for ln in out.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, out
    return lines[0]


@pytest.mark.parametrize("bare", ["100", "'100'", "1.5", "[\"1BDP\", 50]"])
def test_a_path_queue_without_unit_is_refused(bare):
    """`queue = 100` on a path read as 100 bytes (less than one packet), while the same line in a
    [topology] counts packets: the number alone is refused with both spellings."""
    text = QUICK.replace('queue = "1BDP"', f"queue = {bare}", 1)
    with pytest.raises(ScenarioError) as e:
        loads_scenario(text)
    assert e.value.field == "paths[0].queue", str(e.value)
    assert "has no unit" in e.value.message and "B\" for" in e.value.message
    if bare in ("100", "'100'"):
        assert '"100 packets"' in e.value.message and '"100B"' in e.value.message


def test_a_path_queue_with_its_unit_and_a_topology_queue_in_packets_still_load():
    for q in ('"100 packets"', '"100pkt"', '"150000B"', '"250KB"', '"1BDP"', '"50ms"', '"unlimited"'):
        loads_scenario(QUICK.replace('queue = "1BDP"', f"queue = {q}", 1))
    assert load_scenario(SCENARIOS / "datacenter" / "query_fattree.toml").topology.queue == 100
    with pytest.raises(ScenarioError, match="queue of 0 bytes holds nothing"):  # not "write '0 packets'"
        loads_scenario(QUICK.replace('queue = "1BDP"', "queue = 0", 1))


def test_run_into_a_file_or_below_one_says_so_before_any_work(tmp_path):
    scenario = tmp_path / "quick.toml"
    scenario.write_text(QUICK)
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine\n")
    r = _cli(["run", scenario, "-o", a_file])
    assert r.exit_code == 2 and "is a file, not a directory" in _one_line(r)
    r = _cli(["run", scenario, "-o", a_file / "study"])
    assert r.exit_code == 2 and "cannot write the output directory" in _one_line(r)
    assert a_file.read_text() == "mine\n"


def test_plot_into_a_file_is_one_line(tmp_path, fake_engine):
    mpsched.run(load_scenario(SCENARIOS / "quick.toml"), tmp_path / "study")
    a_file = tmp_path / "figs"
    a_file.write_text("")
    r = _cli(["plot", tmp_path / "study", "-o", a_file])
    assert r.exit_code == 2 and "is a file, not a directory" in _one_line(r)


def test_prepare_dir_refuses_what_cannot_be_written(tmp_path):
    from mpsched.study.safety import OutputUnusable, prepare_dir

    assert prepare_dir(tmp_path / "a" / "b").is_dir()
    (tmp_path / "f").write_text("")
    for bad in (tmp_path / "f", tmp_path / "f" / "x"):
        with pytest.raises(OutputUnusable):
            prepare_dir(bad)
    assert not list((tmp_path / "a" / "b").iterdir())  # the write probe is gone


def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: max(1, p.stat().st_size // 2)])


@pytest.mark.parametrize("victim", ["flows.parquet", "subflows.parquet", "run.parquet", "runs.jsonl", "batch.json"])
def test_show_compare_plot_on_a_damaged_study_are_one_line_naming_the_file(tmp_path, fake_engine, victim):
    """A file truncated by a crash or a full disk: before, a polars or JSON traceback, or (a
    truncated batch.json) a summary that silently left the batch's runs out."""
    mpsched.run(load_scenario(SCENARIOS / "quick.toml"), tmp_path)
    batch = store.batch_dirs(tmp_path)[0]
    _truncate(batch / victim)
    for cmd in (["show", tmp_path], ["show", tmp_path, "-f", "csv"], ["compare", tmp_path], ["plot", tmp_path]):
        r = _cli(cmd)
        if victim == "runs.jsonl" and cmd[0] != "plot":  # the summaries do not read it: they are whole
            assert r.exit_code == 0 and "Traceback" not in r.output, (cmd, r.output)
            continue
        assert r.exit_code == 1, (cmd, r.output)
        line = _one_line(r)
        assert str(batch / victim) in line and "mpsched run" in line, line
    assert batch.name in store.Store(tmp_path).damaged()


def test_a_truncated_batch_json_is_recomputed_by_the_next_run(tmp_path, fake_engine):
    s = load_scenario(SCENARIOS / "quick.toml")
    mpsched.run(s, tmp_path)
    n = len(fake_engine)
    _truncate(store.batch_dirs(tmp_path)[0] / "batch.json")
    res = mpsched.run(s, tmp_path)
    assert len(fake_engine) > n and res.flows.height == 12
    assert not store.Store(tmp_path).damaged()


def test_an_unknown_engine_is_bad_input_for_run_as_for_check(tmp_path):
    scenario = tmp_path / "quick.toml"
    scenario.write_text(QUICK)
    for cmd in ("run", "check"):
        r = _cli([cmd, scenario, "-e", "kernell"])
        assert r.exit_code == 2 and "available: sim, kernel" in _one_line(r), (cmd, r.output)


def test_validate_grid_refuses_a_missing_folder_or_a_cell_filter_that_matches_nothing(tmp_path):
    r = _cli(["validate", "--grid", tmp_path / "nosuch"])
    assert r.exit_code == 2 and "no grid folder" in _one_line(r)
    assert not (tmp_path / "nosuch").exists()
    r = _cli(["validate", "--grid", SCENARIOS / "validation" / "grid", "--cells", "no-such-cell"])
    assert r.exit_code == 2 and "matches --cells 'no-such-cell'" in _one_line(r)


def test_reproduce_interrupted_says_what_is_stored_and_how_to_resume(tmp_path, monkeypatch):
    from mpsched.experiments import report
    from mpsched.study import Interrupted

    def stopped(name, out, **kw):
        raise Interrupted(1, 3, Path(out) / "table2")

    monkeypatch.setattr(report, "reproduce", stopped)
    r = _cli(["reproduce", "datacenter_short_flows", "--quick", "-o", tmp_path])
    assert r.exit_code == 130, r.output
    assert "interrupted: 1 of 3 run(s) stored in" in r.output
    assert f"resume with: mpsched reproduce datacenter_short_flows --quick -o {tmp_path}" in r.output


@pytest.mark.skipif(not has_core_runner(), reason="needs the compiled core")
def test_ctrl_c_during_reproduce_exits_130_without_an_abort(tmp_path):
    """Before, `reproduce` let KeyboardInterrupt reach the interpreter's exit while a run was
    still inside the core in its daemon thread: "FATAL: exception not rethrown", SIGABRT (134)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.Popen([MPSCHED, "reproduce", "datacenter_short_flows", "--quick", "-j", "1", "-o", str(tmp_path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob("*/.lock")):  # a study is executing runs
        assert p.poll() is None, p.communicate()
        assert time.monotonic() < deadline, "the study never started"
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "Traceback" not in err and "FATAL" not in err
    assert len([ln for ln in err.splitlines() if ln.startswith("interrupted:")]) == 1, err


def test_show_of_a_stopped_study_says_it_is_incomplete_and_how_to_resume(tmp_path, fake_engine):
    """Before, `show` of an interrupted study summarised the runs that had finished as if they
    were the whole study (a scheduler or a size could be missing without a word)."""
    scenario = tmp_path / "quick.toml"
    scenario.write_text(QUICK)
    out = tmp_path / "study"
    r = _cli(["run", scenario, "-o", out, "-j", "1"])
    assert r.exit_code == 0, r.output
    r = _cli(["show", out])
    assert r.exit_code == 0 and "incomplete" not in r.output, r.output
    n = len(store.Store(out).batches()[0].runs)
    total = sum(len(b.runs) for b in store.Store(out).batches())
    store.Store(out).remove_batch(store.Store(out).batches()[0].name)  # as if stopped before it was written
    r = _cli(["show", out])
    assert r.exit_code == 0
    warning = [ln for ln in r.output.splitlines() if ln.startswith("warning:")]
    assert len(warning) == 1 and f"{total - n} of {total} run(s)" in warning[0], r.output
    assert f"resume with: mpsched run {scenario} -o {out}" in warning[0]
    r = _cli(["run", scenario, "-o", out, "-j", "1"])  # resumed: complete again
    assert r.exit_code == 0 and f"{total - n} of {total} already stored" in r.output
    assert "incomplete" not in _cli(["show", out]).output


def test_the_resume_command_keeps_the_schedulers_and_force_of_the_interrupted_one(tmp_path, monkeypatch):
    """Before, `run -s ecf` interrupted said "resume with: mpsched run X -o OUT": that command
    runs the file's schedulers, another study."""
    import mpsched.study as study
    from mpsched.study import Interrupted

    def stopped(scenario, out, **kw):
        raise Interrupted(0, 6, Path(out))

    monkeypatch.setattr(study, "run", stopped)
    scenario = tmp_path / "quick.toml"
    scenario.write_text(QUICK)
    r = _cli(["run", scenario, "-o", tmp_path / "o", "-s", "ecf", "-s", "blest", "--force", "-j", "1"])
    assert r.exit_code == 130, r.output
    assert f"resume with: mpsched run {scenario} -o {tmp_path / 'o'} -s ecf -s blest --force" in r.output


def test_a_scenario_saved_with_a_byte_order_mark_loads(tmp_path):
    """Editors on Windows save UTF-8 with a BOM; tomllib refused it as "Invalid statement (at line
    1, column 1)", which names nothing the user can see."""
    f = tmp_path / "bom.toml"
    f.write_bytes(b"\xef\xbb\xbf" + QUICK.encode())
    assert load_scenario(f).paths[0].name == "fast"


def test_show_of_a_folder_of_studies_names_them(tmp_path, fake_engine):
    mpsched.run(load_scenario(SCENARIOS / "quick.toml"), tmp_path / "a")
    r = _cli(["show", tmp_path])
    assert r.exit_code == 2
    line = _one_line(r)
    assert "holds no complete run" in line and f"mpsched show {tmp_path / 'a'}" in line


def test_a_negative_jobs_count_is_refused_not_read_as_every_cpu(tmp_path):
    scenario = tmp_path / "quick.toml"
    scenario.write_text(QUICK)
    for cmd in (["run", scenario, "-o", tmp_path / "o"], ["reproduce", "cfs_web", "-o", tmp_path / "r"]):
        r = _cli(cmd + ["-j", "-1"])
        assert r.exit_code == 2 and "--jobs" in r.output, r.output
    assert not (tmp_path / "o").exists() and not (tmp_path / "r").exists()


def test_a_trace_that_is_a_folder_is_named_as_one(tmp_path):
    text = QUICK.replace('queue = "1BDP"', f'queue = "1BDP"\ntrace = "{tmp_path}"', 1)
    with pytest.raises(ScenarioError) as e:
        loads_scenario(text)
    assert e.value.field == "paths[0].trace" and "is a folder" in e.value.message


def test_doctor_without_root_says_it_needs_root(monkeypatch):
    """Before, it answered "no leftovers of kernel runs": it cannot see root's namespaces."""
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    r = CliRunner().invoke(app, ["doctor"])
    assert r.exit_code == 1 and "as root" in r.output and "no leftovers" not in r.output, r.output


def test_a_rerun_says_it_replaces_runs_of_another_code_version(tmp_path, fake_engine):
    """Runs stored by an older checkout are run again and replaced: before, without a word."""
    import json

    scenario = tmp_path / "quick.toml"
    scenario.write_text(QUICK)
    out = tmp_path / "o"
    assert _cli(["run", scenario, "-o", out, "-j", "1"]).exit_code == 0
    batch = store.Store(out).batches()[0]
    doc = json.loads((out / batch.name / "batch.json").read_text())
    (out / batch.name / "batch.json").write_text(json.dumps({**doc, "code_version": "0.1.0+git.old"}))
    r = _cli(["run", scenario, "-o", out, "-j", "1"])
    assert r.exit_code == 0
    assert f"{len(batch.runs)} run(s) stored by another code version (0.1.0+git.old) are run again and replace them" \
        in " ".join(r.output.split()), r.output
    assert "another code version" not in _cli(["run", scenario, "-o", out, "-j", "1"]).output


def test_validate_refuses_an_unusable_output_before_any_kernel_run(tmp_path, monkeypatch):
    from mpsched import engines
    from mpsched.study import validate

    monkeypatch.setattr(engines, "check_engine", lambda engine: None)  # as on a testbed host

    def no_kernel(*a, **kw):
        raise AssertionError("a kernel run started before the output folder was checked")

    monkeypatch.setattr(validate, "run_validation", no_kernel)
    scenario = tmp_path / "k.toml"  # one the kernel engine accepts (its scheduler: the kernel's)
    scenario.write_text(QUICK.replace('scheduler = ["minrtt", "roundrobin"]', 'scheduler = "linux"'))
    a_file = tmp_path / "out"
    a_file.write_text("")
    r = _cli(["validate", scenario, "-o", a_file])
    assert r.exit_code == 2 and "is a file, not a directory" in _one_line(r)
