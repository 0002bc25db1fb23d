"""What a run tells its user besides its results (issue 14): the simulated time while a long run
goes (from inside the core, on the progress bar), and the actions the connections refused their
scheduler, built-in or Python, in the `actions` table."""

from __future__ import annotations

import textwrap

import pytest

import mpsched
from mpsched.engines import sim
from mpsched.sched import SendNew, register
from mpsched.scenario.normalize import to_config
from mpsched.study.progress import SimTimeColumn
from mpsched.study.simclock import SimClock


def _scenario(scheduler: str, duration: str = "3s", workload: str = 'kind = "bulk"', connection: str = ""):
    return mpsched.loads_scenario(textwrap.dedent(f"""\
        duration = "{duration}"
        [[paths]]
        name = "fast"
        rate = "100Mbit"
        rtt = "10ms"
        [[paths]]
        name = "slow"
        rate = "10Mbit"
        rtt = "60ms"
        [connection]
        scheduler = "{scheduler}"
        """) + connection + "\n[workload]\n" + workload + "\n")


def test_a_long_run_reports_its_simulated_time_while_it_goes():
    config = to_config(_scenario("minrtt").expand()[0])
    seen: list[tuple[int, int]] = []
    tables = sim.run(config, progress=lambda now_ns, duration_ns: seen.append((now_ns, duration_ns)))
    duration_ns = config["duration_ns"]
    times = [t for t, _ in seen]
    assert {d for _, d in seen} == {duration_ns}
    assert times == sorted(times) and times[-1] == tables["_stats"]["end_ns"]
    assert any(0 < t < duration_ns for t in times), times  # seen while the run was going


def test_the_bar_shows_the_clock_the_core_updates():
    clock = SimClock()
    column = SimTimeColumn(clock)
    assert column.render(None).plain == ""
    config = to_config(_scenario("minrtt").expand()[0])
    shown: list[str] = []

    def report(now_ns: int, duration_ns: int) -> None:
        clock.report(now_ns, duration_ns)
        shown.append(column.render(None).plain)

    sim.run(config, progress=report)
    assert any(s.startswith("sim ") and s.endswith("/ 3 s") and s != "sim 0 s / 3 s" for s in shown), shown


def test_a_pool_workers_clock_is_read_by_the_client_through_shared_memory():
    from multiprocessing import get_context

    client, worker = SimClock(), SimClock()
    slots = client.pool_slots(get_context("spawn"), 2)
    worker.share(slots)  # what `worker_init` does in each worker
    worker.report(7_000_000_000, 100_000_000_000)
    assert client.text() == "sim 7 s / 100 s"
    worker.clear()
    assert client.text() == ""
    client.unwatch()
    worker.report(1, 2)
    assert client.text() == ""


def test_a_study_run_feeds_the_clock_the_bar_reads(monkeypatch):
    from mpsched.study.simclock import SIM_CLOCK

    seen: list[int] = []
    report = SIM_CLOCK.report
    monkeypatch.setattr(SIM_CLOCK, "report", lambda now_ns, duration_ns: (seen.append(now_ns), report(now_ns, duration_ns)))
    mpsched.run(_scenario("minrtt"))
    assert any(0 < t < 3_000_000_000 for t in seen), seen
    assert SIM_CLOCK.text() == ""  # cleared once the run is over


def test_a_built_in_scheduler_filling_a_small_window_to_its_edge_is_refused_nothing():
    # redundant sends every byte on every subflow and asks for new data up to what a small
    # receive window allows. Linux fills an MPTCP mapping to the window's edge in bytes
    # (`mptcp_check_allowed_size`; docs/testbed.md, tcp11y), so the connection takes a room
    # smaller than one segment too: nothing is refused. (When the simulator cut hand-overs to
    # whole segments, this run refused 714 "new" actions, receive_window_full, each for such a
    # room; no built-in scheduler asks beyond the room it is shown.)
    res = mpsched.run(_scenario("redundant", "2s", 'kind = "sized"\nsize = "2MB"\ninterval = "1s"', 'rcv_buf = "64KB"'))
    assert res.flows["completed"].all()
    assert res.actions.height == 0


class _IgnoresTheWindow:
    """Asks for new data on the first subflow whatever the receive window and the queue allow."""

    def schedule(self, view):
        return [SendNew(0, 1 << 20)] if view.unsent_bytes else []


def test_refused_actions_are_in_the_actions_table_per_flow_kind_and_reason():
    res = mpsched.run(_scenario(register(_IgnoresTheWindow), "2s", 'kind = "sized"\nsize = "2MB"\ninterval = "1s"',
                                'rcv_buf = "64KB"'))
    acts = res.actions
    assert acts.height and set(acts.columns) >= {"run_id", "flow_id", "scheduler", "action", "reason", "rejected_count"}
    assert (acts["rejected_count"] > 0).all() and set(acts["action"]) == {"new"}
    assert "receive_window_full" in set(acts["reason"])
    assert set(acts["flow_id"]) <= set(res.flows["flow_id"])


def test_a_run_without_refusals_stores_an_empty_actions_table(tmp_path):
    res = mpsched.run(_scenario("minrtt", "2s", 'kind = "sized"\nsize = "200KB"\ninterval = "1s"'), out=tmp_path / "s")
    assert res.flows["completed"].all()
    assert res.actions.height == 0
    assert (tmp_path / "s").is_dir() and mpsched.load(tmp_path / "s").actions.height == 0


def test_no_flow_completing_warns_with_the_connections_refusals():
    # a transfer far longer than the run: the warning quotes the connection's refusals
    scenario = _scenario(register(_IgnoresTheWindow), "1s", 'kind = "sized"\nsize = "20MB"\ninterval = "2s"',
                         'rcv_buf = "64KB"')
    with pytest.warns(RuntimeWarning, match=r"no flow completed in 1 of 1 run.*refused the scheduler's actions \(.* x\d+"):
        res = mpsched.run(scenario)
    assert res.actions["rejected_count"].sum() > 0
