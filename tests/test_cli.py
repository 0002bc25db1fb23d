"""The `mpsched` command end to end: run, show, plot, schedulers, and its error exits."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import mpsched
from mpsched.cli import app
from mpsched.study import plan

from conftest import SCENARIOS, has_core_runner

MPSCHED = str(Path(sys.executable).parent / "mpsched")


def test_run_show_plot_on_the_quick_scenario(tmp_path, fake_engine):
    out = tmp_path / "study"
    r = CliRunner().invoke(app, ["run", str(SCENARIOS / "quick.toml"), "--out", str(out), "--jobs", "1"])
    assert r.exit_code == 0, r.output
    # the closing summary answers the question: roundrobin is 1.5x slower in the synthetic engine
    assert "each scheduler against minrtt" in r.output and "roundrobin" in r.output
    assert "+50.0" in r.output and "slower" in r.output
    assert pl.read_parquet(out / "*" / "run.parquet").height == 4  # one row per run, over the batches
    assert pl.read_parquet(out / "*" / "flows.parquet").get_column("run_id").n_unique() == 4
    r = CliRunner().invoke(app, ["show", str(out)])
    assert r.exit_code == 0 and "64KiB" in r.output and "256KiB" in r.output
    r = CliRunner().invoke(app, ["plot", str(out)])
    assert r.exit_code == 0, r.output
    assert (out / "figures" / "fct_box.png").is_file() and (out / "figures" / "fct_cdf.svg").is_file()


def test_show_and_plot_refuse_a_missing_study(tmp_path):
    for cmd in ("show", "plot"):
        r = CliRunner().invoke(app, [cmd, str(tmp_path / "nothing")])
        assert r.exit_code == 2 and "no results directory" in r.output
    (tmp_path / "empty").mkdir()
    r = CliRunner().invoke(app, ["show", str(tmp_path / "empty")])
    assert r.exit_code == 2 and "no complete run" in r.output


def test_bad_scenario_exits_2_with_one_line_and_no_traceback(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text((SCENARIOS / "quick.toml").read_text().replace('rate = "20Mbit"', 'rate = "-20Mbit"'))
    p = subprocess.run([MPSCHED, "run", str(bad), "--out", str(tmp_path / "o")], capture_output=True, text=True)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr + p.stdout
    assert "paths[0].rate" in p.stderr and "negative" in p.stderr
    assert not (tmp_path / "o").exists()  # nothing ran


def test_missing_engine_is_a_clear_failure(tmp_path, monkeypatch):
    from mpsched import _core

    if hasattr(_core, "run_json"):
        monkeypatch.delattr(_core, "run_json")
    r = CliRunner().invoke(app, ["run", str(SCENARIOS / "quick.toml"), "--out", str(tmp_path / "o")])
    assert r.exit_code == 1 and "run_json" in r.output
    with pytest.raises(mpsched.EngineUnavailable):
        mpsched.run(SCENARIOS / "quick.toml")


def test_schedulers_lists_the_registry():
    if mpsched.schedulers() is None:
        pytest.skip("this build of the core does not export schedulers_json yet")
    r = CliRunner().invoke(app, ["schedulers"])
    assert r.exit_code == 0
    for name in ("minrtt", "ecf", "blest", "redundant", "roundrobin"):
        assert name in r.output


def _mptcp_in_core() -> bool:
    """The core may export run_json before its MPTCP connection is wired in."""
    from mpsched import _core

    cfg = plan(mpsched.load_scenario(SCENARIOS / "quick.toml"))[0].config
    cfg["duration_ns"] = 10_000_000
    try:
        _core.run_json(json.dumps(cfg))
    except ValueError as e:
        if "not wired" in str(e):
            return False
        raise
    return True


def _check_quick_study(out: Path, protocol: str) -> pl.DataFrame:
    """Files and values of the quick scenario (two paths: 20 Mbit/s 20 ms, 5 Mbit/s 80 ms)."""
    assert pl.read_parquet(out / "*" / "run.parquet").height == 4
    flows = pl.read_parquet(out / "*" / "flows.parquet")
    assert flows.height == 4 * 3
    assert set(flows.get_column("protocol")) == {protocol}
    assert flows.get_column("completed").all(), "every short flow finishes well within 3 s on these paths"
    # conservation: a completed flow delivered exactly its size; FCT = end - start
    assert (flows.get_column("bytes_delivered") == flows.get_column("size_bytes")).all()
    assert (flows.get_column("bytes_sent") >= flows.get_column("size_bytes")).all()
    assert (flows.get_column("fct_ns") == flows.get_column("end_ns") - flows.get_column("start_ns")).all()
    sizes = dict(flows.select("size", "size_bytes").unique().iter_rows())
    assert sizes == {"64KiB": 65536, "256KiB": 262144}
    # physics: nothing beats the handshake (one RTT of the fast path, 20 ms) plus the bytes at
    # the summed capacity (25 Mbit/s for MPTCP, 20 Mbit/s for TCP on the first path)
    rate = 25e6 if protocol == "mptcp" else 20e6
    floor = 0.020e9 + flows.get_column("size_bytes") * 8e9 / rate
    assert (flows.get_column("fct_ns") >= floor).all()
    sub = pl.read_parquet(out / "*" / "subflows.parquet")
    assert set(sub.get_column("path")) <= {"fast", "slow"}  # engines' path indices become names
    # the subflows of a flow sent at least its bytes, and exactly what the flow says it sent
    per_flow = sub.group_by("run_id", "flow_id").agg(pl.col("bytes_sent").sum().alias("sub_sent"))
    joined = per_flow.join(flows.select("run_id", "flow_id", "size_bytes", "bytes_sent"), on=["run_id", "flow_id"])
    assert (joined.get_column("sub_sent") >= joined.get_column("size_bytes")).all()
    assert (joined.get_column("sub_sent") == joined.get_column("bytes_sent")).all()
    meta = json.loads(next(out.glob("*/runs.jsonl")).read_text().splitlines()[0])["meta"]
    assert meta["engine"] == "sim" and meta["seed"] == 1 and meta["engine_stats"]["events"] > 0
    return flows


@pytest.mark.skipif(not has_core_runner(), reason="this build of the core has no run_json yet")
def test_the_real_simulator_runs_tcp_on_the_quick_scenario(tmp_path):
    scenario = tmp_path / "quick_tcp.toml"
    scenario.write_text((SCENARIOS / "quick.toml").read_text().replace('cc = "cubic"', 'cc = "cubic"\nprotocol = "tcp"'))
    out = tmp_path / "quick"
    p = subprocess.run([MPSCHED, "run", str(scenario), "--out", str(out), "--jobs", "2"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    flows = _check_quick_study(out, "tcp")
    # single-path TCP ignores the scheduler: the two scheduler runs are identical
    by = flows.sort("size", "flow_id", "scheduler", "run_id")
    fct = by.group_by("size", "flow_id", maintain_order=True).agg(pl.col("fct_ns").n_unique())
    assert (fct.get_column("fct_ns") == 1).all()
    # determinism: the same scenario and seed give bit-identical records (in-process this time)
    again = mpsched.run(mpsched.load_scenario(scenario), jobs=1)
    key = ["size", "seed", "flow_id", "run_id"]
    assert again.flows.sort(key).equals(mpsched.load(out).flows.sort(key))


@pytest.mark.skipif(not has_core_runner(), reason="this build of the core has no run_json yet")
def test_the_real_simulator_runs_mptcp_on_the_quick_scenario(tmp_path):
    if not _mptcp_in_core():
        pytest.skip("this build of the core does not simulate MPTCP connections yet")
    out = tmp_path / "quick"
    p = subprocess.run([MPSCHED, "run", str(SCENARIOS / "quick.toml"), "--out", str(out), "--jobs", "2"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    flows = _check_quick_study(out, "mptcp")
    assert set(flows.get_column("scheduler")) == {"minrtt", "roundrobin"}
    sub = pl.read_parquet(out / "*" / "subflows.parquet")
    assert set(sub.get_column("path")) == {"fast", "slow"}


def test_progress_bar_on_a_terminal_and_silence_elsewhere(tmp_path, fake_engine):
    import io

    from rich.console import Console

    from mpsched.study.progress import run_progress

    buf = io.StringIO()
    term = Console(file=buf, force_terminal=True, width=100)
    with run_progress(4, term) as update:
        mpsched.run(SCENARIOS / "quick.toml", tmp_path / "a", on_progress=update)
    assert "4/4" in buf.getvalue()
    quiet = io.StringIO()
    with run_progress(4, Console(file=quiet, force_terminal=False)) as update:
        mpsched.run(SCENARIOS / "quick.toml", tmp_path / "b", on_progress=update)
    assert quiet.getvalue() == ""


@pytest.mark.skipif(not has_core_runner(), reason="this build of the core has no run_json yet")
@pytest.mark.parametrize("protocol", ["tcp", "mptcp"])
def test_the_real_simulator_places_back_to_back_flows(tmp_path, protocol):
    if protocol == "mptcp" and not _mptcp_in_core():
        pytest.skip("this build of the core does not simulate MPTCP connections yet")
    s = mpsched.Scenario.from_dict({
        "duration": "20s", "seed": 3,
        "paths": [{"name": "fast", "rate": "20Mbit", "rtt": "20ms", "jitter": "3ms"},
                  {"name": "slow", "rate": "5Mbit", "rtt": "80ms", "loss": "0.5%"}],
        "connection": {"protocol": protocol},
        "workload": {"sizes": ["64KiB", "1MiB"], "repeat": 5, "arrival": "back_to_back", "gap": "10ms"},
    })
    flows = mpsched.run(s, tmp_path).flows.sort("flow_id")  # the engine checks causality itself
    assert flows.get_column("completed").all()
    starts, ends = flows.get_column("start_ns").to_list(), flows.get_column("end_ns").to_list()
    assert [b - a for a, b in zip(ends, starts[1:])] == [10_000_000] * 9
