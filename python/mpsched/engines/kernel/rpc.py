"""Request / response (RPC) and real-time message flows on the kernel testbed: the simulator's
`rpc` and `messages` applications run by mpxfer (native/mpxfer_rpc.c, native/mpxfer_msg.c), and
their `blocks` table (one row per request, its latency from issue to the last byte of its
response read by the client; one row per message, its one-way delay from its due time to its
last byte read by the receiver), as the simulator records them.

Pure (no root): the plan's refusals and the table are tested anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mpsched.engines.kernel.errors import TestbedConfigError

__all__ = ["RpcPlan", "MessagesPlan", "rpc_plan", "messages_plan", "blocks_table", "BLOCK_COLUMNS"]

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

    @property
    def units(self) -> int:
        return self.requests

    @property
    def unit_bytes(self) -> int:
        return self.response_bytes

    def fields(self) -> str:
        """The four trailing fields of the flow's line in mpxfer's flows file."""
        return f" {self.request_bytes} {self.response_bytes} {self.interval_ns or 0} {self.concurrency}"


@dataclass(frozen=True)
class MessagesPlan:
    """`count` messages of `size_bytes`, message k due at the flow's start + k * `interval_ns`."""
    count: int
    size_bytes: int
    interval_ns: int
    deadline_ns: int | None
    start_ns: int

    @property
    def units(self) -> int:
        return self.count

    @property
    def unit_bytes(self) -> int:
        return self.size_bytes

    def fields(self) -> str:
        """The four trailing fields of the flow's line in mpxfer's flows file."""
        return f" {self.size_bytes} 0 {self.interval_ns} 0"

    def due_ns(self, k: int) -> int:
        return self.start_ns + k * self.interval_ns


def messages_plan(app: dict[str, Any], start_ns: int, where: str) -> MessagesPlan:
    """The testbed's form of a `messages` application: as many messages as the simulator issues
    from `start_ns` until `stop_ns` (mpsched-sim units.rs `interval_units`)."""
    size, interval, stop = int(app["size_bytes"]), int(app["interval_ns"]), int(app["stop_ns"])
    if size <= 0:
        raise TestbedConfigError(f"{where}.app.size_bytes", "must be positive")
    if interval <= 0:
        raise TestbedConfigError(f"{where}.app.interval_ns", "must be positive")
    count = -(-(stop - start_ns) // interval) if stop > start_ns else 0
    if count <= 0:
        raise TestbedConfigError(f"{where}.app.stop_ns", "must come after the flow's start (no message to send)")
    return MessagesPlan(count=count, size_bytes=size, interval_ns=interval, deadline_ns=app.get("deadline_ns"),
                        start_ns=start_ns)


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


def blocks_table(plans: dict[int, RpcPlan | MessagesPlan], block_lines: list[dict],
                 duration_ns: int) -> dict[str, list]:
    """The `blocks` table from mpxfer's "block" lines (times already relative to the epoch):
    a response or message not read misses its deadline once its due time fell within the run,
    as in the simulator (records.rs, BlockRow). A messages receiver prints only the messages it
    read; every message of the plan issued within the run gets a row, stamped with its due time
    (the simulator's application issues on that clock)."""
    out: dict[str, list] = {c: [] for c in BLOCK_COLUMNS}
    # RPC rows are mpxfer's lines; message rows are the plan's, with the read time where one was read.
    lines = [d for d in block_lines if isinstance(plans.get(d["flow_id"]), RpcPlan)]
    read = {(d["flow_id"], d["block"]): d.get("delivered_ns") for d in block_lines}
    for fid, m in plans.items():
        if isinstance(m, MessagesPlan):
            lines += [{"flow_id": fid, "block": k, "sent_ns": m.due_ns(k), "delivered_ns": read.get((fid, k))}
                      for k in range(m.count) if m.due_ns(k) <= duration_ns]
    for d in sorted(lines, key=lambda d: (d["flow_id"], d["block"])):
        r = plans[d["flow_id"]]
        sent, delivered = d["sent_ns"], d.get("delivered_ns")
        delay = None if delivered is None else max(delivered - sent, 0)
        missed = False
        if r.deadline_ns is not None:
            due = sent + r.deadline_ns
            missed = due <= duration_ns if delivered is None else delivered > due
        for col, v in zip(BLOCK_COLUMNS, (d["flow_id"], d["block"], r.unit_bytes, sent, delivered, delay,
                                          r.deadline_ns, missed)):
            out[col].append(v)
    return out
