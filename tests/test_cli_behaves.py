"""A command line that behaves (issue 13): -h and --version, every problem of a scenario at once,
rates that carry a unit, Python schedulers named as "package.module:Class", a resumed study that
says what it reuses, and figures written under the study by default."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

import mpsched
from mpsched.cli import app
from mpsched.scenario import ScenarioError, load_scenario

from conftest import SCENARIOS, has_core_runner

MPSCHED = str(Path(sys.executable).parent / "mpsched")
QUICK = (SCENARIOS / "quick.toml").read_text()


def test_dash_h_and_version_are_understood():
    for args in (["-h"], ["--help"], ["show", "-h"], ["run", "-h"]):
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 0 and "Usage:" in r.output, (args, r.output)
    for flag in ("--version", "-V"):
        r = CliRunner().invoke(app, [flag])
        assert r.exit_code == 0 and r.output.strip() == f"mpsched {mpsched.__version__}"


def test_help_text_keeps_bracketed_words():
    """`show --help` once printed "path shares (on a : link ...": "[topology]" was eaten as markup."""
    r = CliRunner().invoke(app, ["show", "--help"], terminal_width=80)
    assert r.exit_code == 0
    assert "[topology]" in " ".join(r.output.split())


def test_every_problem_of_a_scenario_is_listed_at_once(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(QUICK.replace('rtt = "20ms"', 'rtt = "fast"').replace('cc = "cubic"', 'cc = "nosuch"')
                   .replace('interval = "800ms"', 'interval = "-1s"'))
    with pytest.raises(ScenarioError) as e:
        load_scenario(bad)
    fields = [f for f, _ in e.value.problems]
    assert fields == ["paths[0].rtt", "connection[0].cc", "workload[0].interval"], str(e.value)
    assert e.value.field == "paths[0].rtt"  # the first stays the error's field
    p = subprocess.run([MPSCHED, "check", str(bad)], capture_output=True, text=True)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "3 problems" in p.stderr and all(f in p.stderr for f in fields) and "more problem" not in p.stderr


@pytest.mark.parametrize("bare", ["10", "10.5", "'10'"])
def test_a_rate_without_unit_is_refused_naming_the_spellings(tmp_path, bare):
    bad = tmp_path / "bad.toml"
    bad.write_text(QUICK.replace('rate = "20Mbit"', f"rate = {bare}"))
    with pytest.raises(ScenarioError) as e:
        load_scenario(bad)
    n = bare.strip("'")
    assert e.value.field == "paths[0].rate"
    assert f"{n} has no unit" in e.value.message and f'"{n}bit"' in e.value.message
    assert f'"{n}Mbit"' in e.value.message and "bit/s" in e.value.message


def test_every_shipped_scenario_writes_its_rates_with_units():
    from mpsched.study import plan

    for f in sorted(SCENARIOS.rglob("*.toml")):
        plan(load_scenario(f))  # raises on a bare-number rate


SCHEDULER_MODULE = textwrap.dedent('''
    from mpsched.sched import SendNew

    class FirstPath:
        """Everything on the first available subflow."""

        def schedule(self, view):
            for sf in view.subflows:
                if sf.available and not sf.backup:
                    return [SendNew(sf.id, min(sf.mss_bytes, sf.free_cwnd_bytes))]
            return []
''')


def _scheduler_dir(tmp_path: Path) -> Path:
    (tmp_path / "mysched_issue13.py").write_text(SCHEDULER_MODULE)
    scenario = tmp_path / "s.toml"
    scenario.write_text(QUICK.replace('scheduler = ["minrtt", "roundrobin"]', 'scheduler = ["mysched_issue13:FirstPath", "minrtt"]')
                        .replace('size = ["64KiB", "256KiB"]', 'size = "64KiB"'))
    return scenario


def test_a_python_scheduler_is_named_in_toml_as_module_colon_class(tmp_path, monkeypatch):
    scenario = _scheduler_dir(tmp_path)
    monkeypatch.chdir(tmp_path)  # importable from the current directory
    monkeypatch.delitem(sys.modules, "mysched_issue13", raising=False)
    s = load_scenario(scenario)
    assert s.connection[0].scheduler == ["py:FirstPath", "minrtt"]
    if not has_core_runner():
        pytest.skip("needs the compiled core")
    res = mpsched.run(s)
    assert set(res.flows.get_column("scheduler")) == {"py:FirstPath", "minrtt"}
    assert res.flows.get_column("completed").all()


def test_the_command_line_runs_a_module_colon_class_scheduler_and_explains_a_missing_one(tmp_path):
    scenario = _scheduler_dir(tmp_path)
    if has_core_runner():
        p = subprocess.run([MPSCHED, "run", str(scenario), "-o", str(tmp_path / "out")], capture_output=True,
                           text=True, cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        assert set(mpsched.load(tmp_path / "out").flows.get_column("scheduler")) == {"py:FirstPath", "minrtt"}
        p = subprocess.run([MPSCHED, "compare", str(tmp_path / "out"), "-f", "csv"], capture_output=True, text=True)
        assert p.returncode == 0 and "py:FirstPath" in p.stdout
    missing = tmp_path / "missing.toml"
    missing.write_text(scenario.read_text().replace("mysched_issue13:FirstPath", "nosuchmodule_x:Sched"))
    p = subprocess.run([MPSCHED, "check", str(missing)], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "cannot import module 'nosuchmodule_x'" in p.stderr and "PYTHONPATH" in p.stderr
    wrong = tmp_path / "wrong.toml"
    wrong.write_text(scenario.read_text().replace("mysched_issue13:FirstPath", "mysched_issue13:Nope"))
    p = subprocess.run([MPSCHED, "check", str(wrong)], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 2 and "has no 'Nope'" in p.stderr and "FirstPath" in p.stderr


def test_a_resumed_study_says_how_many_runs_were_already_stored(tmp_path, fake_engine, monkeypatch):
    from mpsched import engines

    out = tmp_path / "study"
    args = ["run", str(SCENARIOS / "quick.toml"), "--out", str(out), "--jobs", "1"]
    synthetic = engines.run_config

    def fails_once(config, engine="sim"):  # the second run does not get stored, as if interrupted
        if len(fake_engine) == 1:
            fake_engine.append(config)
            raise engines.EngineError("stopped before this run was stored")
        return synthetic(config, engine)

    monkeypatch.setattr(engines, "run_config", fails_once)
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 1 and "already stored" not in r.output
    monkeypatch.setattr(engines, "run_config", synthetic)
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "3 of 4 already stored, 1 to run" in " ".join(r.output.split())
    assert len(fake_engine) == 5  # four, then only the missing one


def test_plot_writes_under_the_study_by_default(tmp_path, fake_engine, monkeypatch):
    out = tmp_path / "study"
    CliRunner().invoke(app, ["run", str(SCENARIOS / "quick.toml"), "--out", str(out), "--jobs", "1"])
    monkeypatch.chdir(tmp_path)
    files = mpsched.load(out).plot()
    assert files and all(f.parent == out / "figures" for f in files)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["study"]  # nothing else written
    with pytest.raises(ValueError, match="in memory"):
        mpsched.load(out).__class__(mpsched.load(out).tables, mpsched.load(out).runs, [], {}).plot()


def test_run_takes_schedulers_from_the_command_line_including_module_colon_class(tmp_path):
    (tmp_path / "mysched_issue13.py").write_text(SCHEDULER_MODULE)
    out = tmp_path / "out"
    if has_core_runner():
        p = subprocess.run([MPSCHED, "run", str(SCENARIOS / "quick.toml"), "-s", "mysched_issue13:FirstPath",
                            "-s", "minrtt", "-o", str(out)], capture_output=True, text=True, cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        assert set(mpsched.load(out).flows.get_column("scheduler")) == {"py:FirstPath", "minrtt"}
    p = subprocess.run([MPSCHED, "run", str(SCENARIOS / "quick.toml"), "-s", "nosuchmodule_x:Sched", "-o", str(out)],
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 2 and "cannot import module 'nosuchmodule_x'" in p.stderr and "Traceback" not in p.stderr


def test_plot_run_draws_the_named_runs_setting_and_refuses_an_unknown_run(tmp_path, fake_engine):
    out = tmp_path / "study"
    CliRunner().invoke(app, ["run", str(SCENARIOS / "quick.toml"), "--out", str(out), "--jobs", "1"])
    res = mpsched.load(out)
    run = res.runs.filter(res.runs["size"] == "64KiB").get_column("run_id")[0]
    from mpsched.analysis.figures_compare import contrast_runs

    chosen = contrast_runs(res, run)
    assert set(chosen) == {"minrtt", "roundrobin"}
    assert set(res.runs.filter(res.runs["run_id"].is_in(list(chosen.values()))).get_column("size")) == {"64KiB"}
    r = CliRunner().invoke(app, ["plot", str(out), "--run", run])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["plot", str(out), "--run", "nope"])
    assert r.exit_code == 2 and "no run 'nope'" in r.output
