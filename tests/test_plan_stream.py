"""A study's client keeps only each run's id while it runs: the runs' configurations (a few
kilobytes each) are made as their batch is handed out, so its memory does not grow with the
number of runs. Every run is still checked before the first starts."""

from __future__ import annotations

import gc
import importlib
import tracemalloc

import pytest

import mpsched
from mpsched.scenario import Scenario, ScenarioError
from mpsched.study import Task, plan, plan_stream
from mpsched.study import execute as ex

plan_module = importlib.import_module("mpsched.study.plan")  # the module (the package exports the function `plan`)
N_SEEDS = 400


def _scenario(seeds: int = N_SEEDS, **more) -> Scenario:
    return Scenario.from_dict({
        "name": "many", "duration": "200ms", "seed": list(range(1, seeds + 1)),
        "paths": [{"name": "a", "rate": "10Mbit", "rtt": "10ms"}, {"name": "b", "rate": "5Mbit", "rtt": "30ms"}],
        "connection": {"scheduler": "minrtt"},
        "workload": {"kind": "sized", "size": "16KiB", "arrival": "periodic", "interval": "1s"},
        "record": {"interval": "0"},
    } | more)


def test_plan_stream_checks_every_run_but_keeps_only_their_ids(monkeypatch):
    monkeypatch.setattr(plan_module, "HEAD_TASKS", 0)  # none kept for the first pass: only the ids
    s = _scenario()
    tracemalloc.start()
    try:
        listed = plan(s)
        held_bytes = tracemalloc.get_traced_memory()[0]  # every task alive
        ids = [t.run_id for t in listed]
        del listed
        gc.collect()
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        streamed = plan_stream(s)
        peak_bytes = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert streamed.run_ids == ids and len(streamed) == N_SEEDS
    # the ids (and one run in the making), not the runs: a tenth of the tasks' memory is far more
    # than that, and far less than the N x ~17 KB of the tasks
    assert peak_bytes < held_bytes / 10, (peak_bytes, held_bytes)
    again = list(streamed.tasks())
    assert [t.run_id for t in again] == ids  # made again, the same runs
    assert [t.run_id for t in streamed.tasks(skip=set(ids[:-3]))] == ids[-3:]


def test_a_bad_run_late_in_a_sweep_is_refused_before_any_runs(tmp_path):
    # the last duration ends before the path event: only its runs are bad, and only normalizing
    # them finds it
    s = _scenario(seeds=2, duration=["2s", "1500ms", "500ms"],
                  path_events=[{"kind": "blackhole", "path": "a", "at": "1s", "duration": "100ms"}])
    with pytest.raises(ScenarioError) as e:
        plan_stream(s)
    assert e.value.field == "path_events[0].at" and "in the run with duration=500ms, seed=1" in str(e.value)
    with pytest.raises(ScenarioError):
        mpsched.run(s, tmp_path / "study")
    assert not list((tmp_path / "study").glob("b*"))  # nothing ran


def test_a_running_study_holds_only_the_batches_in_flight(tmp_path, monkeypatch):
    """Counted where the runs happen: the tasks alive in the client while a batch runs are that
    batch's (and those of the first pass kept from the check), never the whole study's: they
    are made as batches are handed out."""
    head = 16
    monkeypatch.setattr(plan_module, "HEAD_TASKS", head)
    live: list[int] = []  # tasks alive beyond the batch running, at each batch
    real = ex.execute_batch

    def ours(o) -> bool:
        # this study's tasks only: a task of another test's study still referenced by a thread
        # that test left behind is not this client's (CI once counted one extra mid-run)
        return type(o) is Task and 'name = "many"' in o.scenario_toml

    def counting(tasks, *args, **kwargs):
        gc.collect()  # count the tasks alive, not unreachable ones the collector has not yet freed
        live.append(sum(1 for o in gc.get_objects() if ours(o)) - len(tasks))
        return real(tasks, *args, **kwargs)

    monkeypatch.setattr(ex, "execute_batch", counting)
    res = mpsched.run(_scenario(), tmp_path / "study", jobs=1)
    assert res.runs.height == N_SEEDS and res.flows.height == N_SEEDS
    assert len(live) > 2 and max(live) <= head + 1, live  # the kept ones not yet handed out, the next one in the making
    # resumed: nothing is made again but the runs that are missing
    live.clear()
    again = mpsched.run(_scenario(), tmp_path / "study", jobs=1)
    assert live == [] and again.runs.sort("run_id").equals(res.runs.sort("run_id"))


def test_a_study_of_100_000_runs_is_made_one_run_at_a_time(monkeypatch):
    """The runs are made from the expansion one at a time, and from any index on without
    building the ones before (what a resumed or streamed study asks for): counted in calls of
    the normalizer, with nothing run."""
    s = _scenario(seeds=100_000)
    calls = []
    real = plan_module.normalize
    monkeypatch.setattr(plan_module, "normalize", lambda sc: calls.append(1) or real(sc))
    first = plan_module._tasks(s, "sim", True, check=False)
    assert [next(first).params["seed"] for _ in range(3)] == [1, 2, 3] and len(calls) == 3
    tail = list(plan_module._tasks(s, "sim", True, check=False, start=99_997))
    assert [t.params["seed"] for t in tail] == [99_998, 99_999, 100_000] and len(calls) == 6
    assert [t.index for t in tail] == [99_997, 99_998, 99_999]
