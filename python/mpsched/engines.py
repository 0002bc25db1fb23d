"""The two engines behind one function: "sim" (the Rust core) and "kernel" (the Linux testbed).

Both take one normalized run configuration (`mpsched.normalize.to_config`) and return the same
record tables: table name -> column name -> list of values.
"""

from __future__ import annotations

import copy
import json
from typing import Any

__all__ = ["ENGINES", "EngineError", "EngineUnavailable", "check_engine", "run_config", "run_chained"]

ENGINES = ("sim", "kernel")

Tables = dict[str, dict[str, list]]


class EngineError(RuntimeError):
    """A run the engine could not complete (the message says why)."""


class EngineUnavailable(EngineError):
    """The requested engine is not present in this installation."""


def check_engine(engine: str) -> None:
    """Raise `EngineUnavailable` with a clear message unless `engine` can run here."""
    if engine not in ENGINES:
        raise EngineUnavailable(f"unknown engine {engine!r}; available: {', '.join(ENGINES)}")
    if engine == "sim":
        from mpsched import _core

        if not hasattr(_core, "run_json"):
            raise EngineUnavailable(
                "the compiled simulator core in this installation has no run_json() yet; "
                "update the checkout and rebuild it with `make setup`"
            )
    else:
        try:
            from mpsched.testbed import preflight
        except ImportError as e:
            raise EngineUnavailable(f"the kernel testbed engine is not available: {e}") from None
        preflight()  # raises an EngineUnavailable naming what the machine lacks


def python_schedulers_of(config: dict[str, Any]) -> dict[str, type]:
    """The Python scheduler classes a configuration names ("py:..."), from `mpsched.sched`."""
    from mpsched.sched import python_schedulers

    try:
        return python_schedulers([t["scheduler"] for t in config.get("transports", [])])
    except KeyError as e:
        raise EngineError(str(e.args[0])) from None


def run_config(config: dict[str, Any], engine: str = "sim") -> Tables:
    """Run one normalized configuration on `engine` and return its record tables."""
    check_engine(engine)
    custom = python_schedulers_of(config)
    if custom and engine != "sim":
        raise EngineError(f"Python schedulers ({', '.join(custom)}) run in the simulator only")
    if engine == "sim":
        from mpsched import _core

        try:
            tables = _core.run_json(json.dumps(config), custom) if custom else _core.run_json(json.dumps(config))
        except ValueError as e:  # the core refused the configuration (or a Python scheduler's action)
            raise EngineError(f"the simulator refused the configuration: {e}") from None
    else:
        from mpsched.testbed import run_kernel

        tables = run_kernel(config)
    if not isinstance(tables, dict):
        raise EngineError(f"engine {engine!r} returned {type(tables).__name__}, expected a dict of tables")
    return tables


def run_chained(config: dict[str, Any], chain: list[dict[str, int]], engine: str = "sim") -> Tables:
    """Run a configuration whose flows partly start when another flow completes.

    The core takes fixed start times only, so the chain is resolved by running again: each pass
    fixes the start of every flow whose predecessor has completed (its end + gap), until no
    flow is left to place (a predecessor that never completes leaves its successors unstarted,
    recorded as incomplete). This is exact because a flow cannot affect flows that ended before
    it started, which the final pass checks: every placed flow must start exactly `gap_ns` after
    its predecessor's end in the final records too.
    """
    if not chain:
        return run_config(config, engine)
    if engine != "sim":
        raise EngineError("back-to-back arrivals need one run per flow; only the simulator does that")
    cfg = copy.deepcopy(config)
    start = {f["id"]: f for f in cfg["flows"]}
    pending = {c["flow"]: c for c in chain}
    # placing passes need flow end times only: no time series (the final pass records them)
    probe = copy.deepcopy(cfg)
    probe["record"] = {**probe.get("record", {}), "sample_interval_ns": 0}
    probe_start = {f["id"]: f for f in probe["flows"]}
    while True:
        tables = run_config(probe, engine)
        flows = tables["flows"]
        end = {fid: e for fid, e, done in zip(flows["flow_id"], flows["end_ns"], flows["completed"]) if done}
        placed = [c for c in pending.values() if c["after"] not in pending and c["after"] in end]
        if not placed:
            break
        for c in placed:
            start[c["flow"]]["start_ns"] = probe_start[c["flow"]]["start_ns"] = end[c["after"]] + c["gap_ns"]
            del pending[c["flow"]]
        if not pending:
            break
    tables = run_config(cfg, engine)
    flows = tables["flows"]
    end = {fid: e for fid, e, done in zip(flows["flow_id"], flows["end_ns"], flows["completed"]) if done}
    for c in chain:
        if c["flow"] not in pending and end.get(c["after"]) != start[c["flow"]]["start_ns"] - c["gap_ns"]:
            raise EngineError(
                f"flow {c['after']} ended at a different time once flow {c['flow']} was added after it: "
                "the engine is not causal, so back-to-back arrivals cannot be placed"
            )
    return tables
