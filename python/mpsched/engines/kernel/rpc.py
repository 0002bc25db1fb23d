"""Request / response (RPC) flows on the kernel testbed: the simulator's `rpc` application
run by mpxfer (native/mpxfer_rpc.c), and its `blocks` table (one row per request, its latency
from issue to the last byte of its response read by the client), as the simulator records it.

Pure (no root): the plan's refusals and the table are tested anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mpsched.engines.kernel.errors import TestbedConfigError

__all__ = ["RpcPlan", "rpc_plan", "blocks_table", "BLOCK_COLUMNS"]

BLOCK_COLUMNS = ("flow_id", "block", "size_bytes", "sent_ns", "delivered_ns", "delay_ns", "deadline_ns",
                 "deadline_missed")


@dataclass(frozen=True)
class RpcPlan:
    requests: int
    request_bytes: int
    response_bytes: int
    interval_ns: int | None     # open loop; None: closed loop of `concurrency`
    concurrency: int
    deadline_ns: int | None

    def fields(self) -> str:
        """The four trailing fields of the flow's line in mpxfer's flows file."""
        return f" {self.request_bytes} {self.response_bytes} {self.interval_ns or 0} {self.concurrency}"


def rpc_plan(app: dict[str, Any], direction: str, where: str) -> RpcPlan:
    """The testbed's form of an `rpc` application (`where`: the flow's field path)."""
    if direction != "download":
        raise TestbedConfigError(f"{where}.direction", "an rpc is a download: requests go up, responses come down")
    plan = RpcPlan(requests=int(app["requests"]), request_bytes=int(app.get("request_bytes", 300)),
                   response_bytes=int(app["response_bytes"]), interval_ns=app.get("interval_ns"),
                   concurrency=int(app.get("concurrency") or 1), deadline_ns=app.get("deadline_ns"))
    for key in ("requests", "request_bytes", "response_bytes", "concurrency"):
        if getattr(plan, key) <= 0:
            raise TestbedConfigError(f"{where}.app.{key}", "must be positive")
    if plan.interval_ns is not None and plan.interval_ns <= 0:
        raise TestbedConfigError(f"{where}.app.interval_ns", "must be positive (or absent for a closed loop)")
    return plan


def blocks_table(rpcs: dict[int, RpcPlan], block_lines: list[dict], duration_ns: int) -> dict[str, list]:
    """The `blocks` table from mpxfer's "block" lines (times already relative to the epoch):
    a response not read misses its deadline once its due time fell within the run, as in the
    simulator (records.rs, BlockRow)."""
    out: dict[str, list] = {c: [] for c in BLOCK_COLUMNS}
    for d in sorted(block_lines, key=lambda d: (d["flow_id"], d["block"])):
        r = rpcs.get(d["flow_id"])
        if r is None:
            continue
        sent, delivered = d["sent_ns"], d.get("delivered_ns")
        delay = None if delivered is None else max(delivered - sent, 0)
        missed = False
        if r.deadline_ns is not None:
            due = sent + r.deadline_ns
            missed = due <= duration_ns if delivered is None else delivered > due
        for col, v in zip(BLOCK_COLUMNS, (d["flow_id"], d["block"], r.response_bytes, sent, delivered, delay,
                                          r.deadline_ns, missed)):
            out[col].append(v)
    return out
