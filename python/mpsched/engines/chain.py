"""Back-to-back arrivals on an engine that takes fixed start times only: resolved by re-running."""

from __future__ import annotations

import copy
from typing import Any, Callable

from mpsched.engines.base import EngineError, Tables
from mpsched.engines.dispatch import run_config

__all__ = ["run_chained"]


def run_chained(config: dict[str, Any], chain: list[dict[str, int]], engine: str = "sim", *,
                run_one: Callable[[dict[str, Any], str], Tables] = run_config) -> Tables:
    """Run a configuration whose flows partly start when another flow completes.

    The core takes fixed start times only, so the chain is resolved by running again: each pass
    fixes the start of every flow whose predecessor has completed (its end + gap), until no
    flow is left to place (a predecessor that never completes leaves its successors unstarted,
    recorded as incomplete). This is exact because a flow cannot affect flows that ended before
    it started, which the final pass checks: every placed flow must start exactly `gap_ns` after
    its predecessor's end in the final records too. `run_one(config, engine)` runs one pass
    (`run_config` unless given).
    """
    if not chain:
        return run_one(config, engine)
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
        tables = run_one(probe, engine)
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
    tables = run_one(cfg, engine)
    flows = tables["flows"]
    end = {fid: e for fid, e, done in zip(flows["flow_id"], flows["end_ns"], flows["completed"]) if done}
    for c in chain:
        if c["flow"] not in pending and end.get(c["after"]) != start[c["flow"]]["start_ns"] - c["gap_ns"]:
            raise EngineError(
                f"flow {c['after']} ended at a different time once flow {c['flow']} was added after it: "
                "the engine is not causal, so back-to-back arrivals cannot be placed"
            )
    return tables
