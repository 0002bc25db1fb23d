"""Schedulers written in Python, run by the simulator core."""

import json
import textwrap

import pytest

import mpsched
from mpsched import _core
from mpsched.study import plan
from mpsched.sched import Penalize, Resend, SendNew, python_scheduler_name, register


class RoundRobin:
    """The docstring example of mpsched.sched: alternate over available subflows."""

    def __init__(self):
        self.last = -1

    def schedule(self, view):
        n = len(view.subflows)
        for step in range(1, n + 1):
            sf = view.subflows[(self.last + step) % n]
            if sf.available and not sf.backup:
                self.last = sf.id
                return [SendNew(sf.id, min(sf.mss_bytes, sf.free_cwnd_bytes))]
        return []


def _config(scheduler: str, size="4MB") -> dict:
    s = mpsched.loads_scenario(
        f"""
        duration = "20s"
        [[paths]]
        name = "a"
        rate = "20Mbit"
        rtt = "20ms"
        queue = "1BDP"
        [[paths]]
        name = "b"
        rate = "20Mbit"
        rtt = "30ms"
        queue = "1BDP"
        [connection]
        scheduler = "roundrobin"
        [workload]
        kind = "sized"
        size = "{size}"
        repeat = 1
        arrival = "periodic"
        interval = "1s"
        """
    )
    [task] = plan(s)
    config = task.config
    for t in config["transports"]:
        t["scheduler"] = scheduler
    return config


def _path_bytes(tables) -> list[int]:
    return tables["subflows"]["bytes_sent"]


def test_python_round_robin_uses_the_paths_as_the_builtin_one():
    name = register(RoundRobin)
    assert name == python_scheduler_name(RoundRobin) == "py:RoundRobin"
    py = _core.run_json(json.dumps(_config(name)), {name: RoundRobin})
    rust = _core.run_json(json.dumps(_config("roundrobin")))
    assert py["flows"]["completed"] == [True] and rust["flows"]["completed"] == [True]
    assert py["flows"]["scheduler"] == [name]
    py_bytes, rust_bytes = _path_bytes(py), _path_bytes(rust)
    # Both carry data on both paths, in shares within 10 points of each other.
    assert all(b > 0 for b in py_bytes) and all(b > 0 for b in rust_bytes)
    share = lambda b: b[0] / sum(b)
    assert abs(share(py_bytes) - share(rust_bytes)) < 0.10, (py_bytes, rust_bytes)
    # Equal 20 Mbit/s paths: neither gets much more than its half.
    assert 0.35 < share(py_bytes) < 0.65


def test_redundant_copies_through_resend_are_counted():
    class Duplicate:
        def schedule(self, view):
            acts = []
            for sf in view.subflows:
                if sf.available and view.unsent_bytes > 0:
                    acts.append(SendNew(sf.id, sf.free_cwnd_bytes))
                    break
            for dsn, length, mask in view.unacked:
                for sf in view.subflows:
                    if sf.available and not mask & (1 << sf.id):
                        acts.append(Resend(sf.id, dsn, min(length, sf.free_cwnd_bytes)))
            return acts

    name = register(Duplicate)
    out = _core.run_json(json.dumps(_config(name, "1MB")), {name: Duplicate})
    assert out["flows"]["completed"] == [True]
    assert out["flows"]["bytes_redundant"][0] > 0


def test_an_exception_in_python_is_raised_not_swallowed():
    class Broken:
        def schedule(self, view):
            raise ZeroDivisionError("boom in schedule")

    name = register(Broken)
    with pytest.raises(ZeroDivisionError, match="boom in schedule"):
        _core.run_json(json.dumps(_config(name, "100KB")), {name: Broken})


def test_a_malformed_action_names_the_forms_allowed():
    class Bad:
        def schedule(self, view):
            return [("fly", 0)]

    name = register(Bad)
    with pytest.raises(ValueError, match="action tuple"):
        _core.run_json(json.dumps(_config(name, "100KB")), {name: Bad})


def test_penalize_is_an_action():
    assert Penalize(1).kind == "penalize" and SendNew(0, 10).kind == "new" and Resend(0, 0, 1).why == "redundant"


def test_a_class_without_schedule_is_refused():
    with pytest.raises(TypeError, match="schedule"):
        register(int)


# --- refused actions and a scheduler's own errors (issue 14) -------------------------------------


class _AsksForAMissingSubflow:
    def schedule(self, view):
        return [SendNew(7, 1000)] if view.unsent_bytes else []


class _RaisesValueError:
    def schedule(self, view):
        raise ValueError("my bug")


def _one_path_scenario(scheduler: type):
    name = register(scheduler)
    return mpsched.loads_scenario(textwrap.dedent(f"""\
        duration = "300ms"
        [[paths]]
        name = "a"
        rate = "10Mbit"
        rtt = "20ms"
        [connection]
        scheduler = "{name}"
        [workload]
        kind = "sized"
        size = "10KB"
        interval = "1s"
        """))


def test_refused_actions_are_counted_per_reason_and_a_run_that_never_completes_warns():
    with pytest.warns(RuntimeWarning, match="no flow completed in 1 of 1 run.*unknown_subflow x"):
        res = mpsched.run(_one_path_scenario(_AsksForAMissingSubflow))
    assert not res.flows["completed"].any()
    acts = res.actions
    assert acts["action"].to_list() == ["new"] and acts["reason"].to_list() == ["unknown_subflow"]
    assert acts["rejected_count"][0] > 0


def test_a_value_error_in_schedule_is_the_schedulers_error_with_its_line():
    with pytest.raises(mpsched.RunFailed) as e:
        mpsched.run(_one_path_scenario(_RaisesValueError))
    msg = str(e.value)
    assert "the Python scheduler raised ValueError: my bug" in msg and "test_pysched.py" in msg
    assert "refused the configuration" not in msg
