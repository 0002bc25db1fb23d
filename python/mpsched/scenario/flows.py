"""The flows of a two-host scenario: each `[[workload]]` becomes flows with a start time and an
application (sized transfers, web pages, bulk, CBR, messages, RPCs), or a chain of back-to-back flows whose
starts depend on earlier flows' ends (resolved by `mpsched.engines.run_chained`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from mpsched.scenario.fields import ScenarioError
from mpsched.scenario.pages import page_objects
from mpsched.scenario.units import parse_rate_bps, parse_size_bytes, parse_time_ns

if TYPE_CHECKING:
    from mpsched.scenario.model import Scenario

__all__ = ["workload_flows"]


def workload_flows(s: Scenario, duration_ns: int) -> tuple[list[dict[str, Any]], list[dict[str, int]]]:
    """Every flow of the scenario's workloads and the chain of back-to-back ones: a list of
    ``{"flow", "after", "gap_ns"}``, meaning flow `flow` starts `gap_ns` after flow `after`
    completes (it waits at the end of the run, `start_ns = duration_ns`, until placed)."""
    conn_index = {c.name: i for i, c in enumerate(s.connection)}
    flows: list[dict[str, Any]] = []
    chain: list[dict[str, int]] = []
    for wi, w in enumerate(s.workload):
        transport = conn_index[w.connection] if w.connection is not None else 0
        for start_ns, app in _workload_flows(s, wi, duration_ns):
            if start_ns is None:  # back to back: after the previous flow of this workload
                chain.append({"flow": len(flows), "after": len(flows) - 1,
                              "gap_ns": parse_time_ns(w.gap) if w.gap is not None else 0})
                start_ns = duration_ns
            flow = {"id": len(flows), "transport": transport, "start_ns": start_ns, "direction": w.direction, "app": app}
            if w.nodelay is not None:  # else each engine's default for the kind (mpxfer's)
                flow["nodelay"] = w.nodelay
            flows.append(flow)
    return flows, chain


def _messages_app(w: Any, where: str, start_ns: int, duration_ns: int) -> dict[str, Any]:
    """The core's `messages` application: one message of `size` every `interval` until
    `stop_ns` (given, from a count of `messages`, or the end of the run)."""
    interval_ns = parse_time_ns(w.interval) if w.interval is not None else round(1e9 / float(w.rate_hz))
    if interval_ns <= 0:
        raise ScenarioError(f"{where}.rate_hz", "more than one message a nanosecond; lower rate_hz")
    if w.messages is not None:  # message k is issued at start + k * interval, k < messages
        stop_ns = start_ns + (int(w.messages) - 1) * interval_ns + 1
        if stop_ns > duration_ns:
            raise ScenarioError(f"{where}.messages", f"{w.messages} messages every {interval_ns / 1e6:g} ms do not "
                                "fit in the run; lengthen duration or send fewer")
    else:
        stop_ns = parse_time_ns(w.stop) if w.stop is not None else duration_ns
    if stop_ns <= start_ns:
        raise ScenarioError(f"{where}.stop", "a messages flow must stop after it starts")
    app: dict[str, Any] = {"kind": "messages", "size_bytes": parse_size_bytes(w.size), "interval_ns": interval_ns,
                           "stop_ns": stop_ns}
    if w.deadline is not None:
        app["deadline_ns"] = parse_time_ns(w.deadline)
    return app


#: An RPC request's size when the scenario gives none: a small request with its headers (an
#: assumption, not a measurement; the documented default of `request`).
_RPC_REQUEST_BYTES = 300


def _rpc_app(w: Any, where: str) -> dict[str, Any]:
    """The core's `rpc` application."""
    app: dict[str, Any] = {"kind": "rpc", "requests": int(w.requests), "response_bytes": parse_size_bytes(w.response),
                           "request_bytes": parse_size_bytes(w.request) if w.request is not None else _RPC_REQUEST_BYTES}
    if w.interval is not None or w.rate_hz is not None:
        app["interval_ns"] = parse_time_ns(w.interval) if w.interval is not None else round(1e9 / float(w.rate_hz))
        if app["interval_ns"] <= 0:
            raise ScenarioError(f"{where}.rate_hz", "more than one request a nanosecond; lower rate_hz")
    else:
        app["concurrency"] = int(w.concurrency) if w.concurrency is not None else 1
    if w.deadline is not None:
        app["deadline_ns"] = parse_time_ns(w.deadline)
    return app


def _workload_flows(s: Scenario, wi: int, duration_ns: int) -> list[tuple[int | None, dict[str, Any]]]:
    """(start, app) of each flow of workload `wi`; a start of None means "when the previous
    flow ends" (back to back)."""
    w = s.workload[wi]
    where = f"workload[{wi}]"
    start_ns = parse_time_ns(w.start)
    if w.kind in ("bulk", "cbr"):
        stop_ns = parse_time_ns(w.stop) if w.stop is not None else duration_ns
        if stop_ns <= start_ns:
            raise ScenarioError(f"{where}.stop", f"a {w.kind} flow must stop after it starts")
        if w.kind == "bulk":
            app: dict[str, Any] = {"kind": "bulk", "stop_ns": stop_ns}
        else:
            block = parse_size_bytes(w.block) if w.block is not None else 8192
            app = {"kind": "cbr", "rate_bps": parse_rate_bps(w.rate), "block_bytes": block, "stop_ns": stop_ns}
        return [(start_ns, dict(app)) for _ in range(int(w.count))]

    if w.kind == "messages":
        return [(start_ns, _messages_app(w, where, start_ns, duration_ns)) for _ in range(int(w.count))]
    if w.kind == "rpc":
        if start_ns >= duration_ns:
            raise ScenarioError(f"{where}.start", "the rpc flow starts at or after the end of the run")
        return [(start_ns, _rpc_app(w, where)) for _ in range(int(w.count))]
    if w.kind == "web":
        if w.page is not None:
            objects = page_objects(w.page)
        elif w.size is not None:
            objects = [parse_size_bytes(w.size)]
        else:
            objects = [parse_size_bytes(x) for x in w.objects or []]
        n = int(w.repeat)
        apps = [{"kind": "web", "objects_bytes": list(objects)} for _ in range(n)]
    else:
        sizes = [parse_size_bytes(w.size)] if w.size is not None else [parse_size_bytes(x) for x in w.sizes or []]
        n = int(w.repeat) * len(sizes)
        apps = [{"kind": "sized", "size_bytes": sizes[k % len(sizes)]} for k in range(n)]
    if w.arrival == "back_to_back":
        if start_ns >= duration_ns:
            raise ScenarioError(f"{where}.start", "the first flow starts at or after the end of the run")
        if w.reuse_connection:  # one connection: each transfer written once the previous is acknowledged
            return [(start_ns, {"kind": "transfers", "sizes_bytes": [a["size_bytes"] for a in apps]})]
        return [(start_ns if k == 0 else None, app) for k, app in enumerate(apps)]
    if w.arrival == "periodic":
        step = parse_time_ns(w.interval) if w.interval is not None else 0
        starts = [start_ns + k * step for k in range(n)]
    else:  # poisson: exponential gaps, first flow at `start`, drawn from the run seed
        rng = np.random.default_rng([int(s.seed), wi])
        gaps = rng.exponential(parse_time_ns(w.mean_gap), size=max(n - 1, 0))
        starts = [start_ns] + [start_ns + int(g) for g in np.cumsum(gaps)]
    if starts and starts[-1] >= duration_ns:
        raise ScenarioError(
            "duration",
            f"{where} starts its last flow at {starts[-1] / 1e9:g} s, at or after the end of the run "
            f"({duration_ns / 1e9:g} s); lengthen duration or shorten the arrivals",
        )
    if w.reuse_connection:  # one connection: transfer k written at its arrival time
        return [(start_ns, {"kind": "transfers", "sizes_bytes": [a["size_bytes"] for a in apps],
                            "offsets_ns": [t - start_ns for t in starts]})]
    return list(zip(starts, apps))
