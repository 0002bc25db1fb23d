"""Turn one concrete scenario into the core's normalized run configuration (a JSON-able dict).

The target schema is the serde structs of `crates/mpsched-sim/src/config.rs` (canonical; every
struct denies unknown fields): base units only (bit/s, ns, bytes), links indexed from paths,
transports indexed from flows. Path `i` becomes links `2i` (down, server to client) and `2i+1`
(up), named "<path>.down" / "<path>.up". A scenario with a `[topology]` is normalized by
`mpsched.datacenter` instead (the core builds its links and paths; every flow has its own).
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from mpsched.scenario import LinkOverride, PathSpec, Scenario, ScenarioError
from mpsched.units import parse_fraction, parse_queue, parse_rate_bps, parse_size_bytes, parse_time_ns

__all__ = ["to_config", "to_run", "read_trace"]

#: Queue limit when a path gives none: Linux's default transmit queue length, 1000 packets
#: (DEFAULT_TX_QUEUE_LEN in include/net/pkt_sched.h).
DEFAULT_QUEUE = "1000 packets"
#: A BDP-sized queue never drops below one full-size packet, or nothing could pass at all.
MIN_QUEUE_BYTES = 1500
#: Bytes one Mahimahi delivery opportunity carries (mahimahi traces/README: one MTU).
TRACE_PACKET_BYTES = 1500


def to_config(scenario: Scenario) -> dict[str, Any]:
    """The normalized configuration of a concrete scenario (no list left in a sweepable field).

    Back-to-back flows whose start depends on an earlier flow's end wait at the end of the run
    (`start_ns = duration_ns`) here; `to_run` also returns the chain that places them.
    Raises `ScenarioError` for what only shows once units are resolved (a jitter larger than the
    delay, flows starting after the end, a malformed trace).
    """
    return to_run(scenario)[0]


def to_run(scenario: Scenario) -> tuple[dict[str, Any], list[dict[str, int]]]:
    """The normalized configuration and its flow chain: a list of ``{"flow", "after", "gap_ns"}``,
    meaning flow `flow` starts `gap_ns` after flow `after` completes (back-to-back arrivals; the
    core has no such dependency, so `mpsched.engines.run_chained` resolves it by re-running)."""
    _check_concrete(scenario)
    if scenario.topology is not None:  # many hosts: links, paths and flows from mpsched.datacenter
        from mpsched import datacenter

        return datacenter.to_run(scenario)
    duration_ns = parse_time_ns(scenario.duration)
    links: list[dict[str, Any]] = []
    paths: list[dict[str, Any]] = []
    for i, p in enumerate(scenario.paths):
        delays = {d: _delay_ns(p, d) for d in ("down", "up")}
        rtt_ns = delays["down"] + delays["up"]
        for d in ("down", "up"):
            links.append(_link(p, d, delays[d], rtt_ns, f"paths[{i}]"))
        paths.append({"name": p.name, "down": [2 * i], "up": [2 * i + 1]})
    index = {p.name: i for i, p in enumerate(scenario.paths)}

    transports = []
    for c in scenario.connection:
        default = [p.name for p in scenario.paths][: 1 if c.protocol == "tcp" else None]
        used = [index[n] for n in (c.paths or default)]
        transports.append(
            {
                "protocol": c.protocol,
                "scheduler": c.scheduler,
                "scheduler_params": dict(c.scheduler_params),
                "cc": c.cc,
                "paths": used,
                "backup_paths": [index[n] for n in c.backup],
                "rcv_buf_bytes": parse_size_bytes(c.rcv_buf),
                "snd_buf_bytes": parse_size_bytes(c.snd_buf),
                "mss_bytes": parse_size_bytes(c.mss),
                "init_cwnd_segments": int(c.init_cwnd),
                "rcv_buf_autotuning": bool(c.rcv_buf_autotuning),
                "join_timing": c.join_timing,
            }
        )
    conn_index = {c.name: i for i, c in enumerate(scenario.connection)}

    flows: list[dict[str, Any]] = []
    chain: list[dict[str, int]] = []
    for wi, w in enumerate(scenario.workload):
        transport = conn_index[w.connection] if w.connection is not None else 0
        first = len(flows)
        for start_ns, app in _workload_flows(scenario, wi, duration_ns):
            if start_ns is None:  # back to back: after the previous flow of this workload
                chain.append({"flow": len(flows), "after": len(flows) - 1,
                              "gap_ns": parse_time_ns(w.gap) if w.gap is not None else 0})
                start_ns = duration_ns
            flows.append(
                {"id": len(flows), "transport": transport, "start_ns": start_ns, "direction": w.direction, "app": app}
            )

    cross = []
    for xi, x in enumerate(scenario.cross_traffic):
        i = index[x.path]
        start, stop = parse_time_ns(x.start), parse_time_ns(x.stop) if x.stop is not None else duration_ns
        if stop <= start:
            raise ScenarioError(f"cross_traffic[{xi}].stop", "cross traffic must stop after it starts (default stop: the duration)")
        cross.append(
            {
                "links": [2 * i if x.direction == "down" else 2 * i + 1],
                "rate_bps": parse_rate_bps(x.rate),
                "packet_bytes": parse_size_bytes(x.packet),
                "start_ns": start,
                "stop_ns": stop,
            }
        )
    events = [{"at_ns": parse_time_ns(e.at), "path": index[e.path], "up": e.up} for e in scenario.path_events]
    config = {
        "seed": int(scenario.seed),
        "duration_ns": duration_ns,
        "links": links,
        "paths": paths,
        "transports": transports,
        "flows": flows,
        "cross_traffic": cross,
        "path_events": events,
        "record": {"sample_interval_ns": parse_time_ns(scenario.record.interval)},
    }
    return config, chain


def _check_concrete(s: Scenario) -> None:
    from mpsched.sweep import axes

    if s.design is not None:
        raise ScenarioError("design", "a scenario with a design stands for many runs; expand it first (Scenario.expand())")
    ax = axes(s)
    if ax:
        raise ScenarioError(
            ".".join(str(x) for x in ax[0].path),
            "this field still holds a sweep list; expand the scenario first (Scenario.expand())",
        )


def _get(p: PathSpec, d: str, field: str) -> Any:
    """The direction's own setting if given, else the path-level one."""
    o: LinkOverride = getattr(p, d)
    v = getattr(o, field)
    return v if v is not None else getattr(p, field)


def _delay_ns(p: PathSpec, d: str) -> int:
    o: LinkOverride = getattr(p, d)
    if o.delay is not None:
        return parse_time_ns(o.delay)
    if p.delay is not None:
        return parse_time_ns(p.delay)
    return parse_time_ns(p.rtt) // 2  # validated: rtt is set when no delay is


def _link(p: PathSpec, d: str, delay_ns: int, rtt_ns: int, where: str) -> dict[str, Any]:
    field = lambda f: f"{where}.{d}.{f}" if getattr(getattr(p, d), f) is not None else f"{where}.{f}"  # noqa: E731
    trace = _get(p, d, "trace")
    schedule = _get(p, d, "schedule")
    if trace is not None and schedule is not None:
        raise ScenarioError(field("schedule"), "give a trace or a capacity schedule, not both")
    if trace is not None:
        opportunities = read_trace(trace, field("trace"))
        period = _get(p, d, "trace_period")
        period_ms = math.ceil(parse_time_ns(period) / 1e6) if period is not None else None
        span_ms = period_ms or max(opportunities[-1], 1)
        # The core ignores rate_bps for a trace; the trace's mean rate sizes BDP queues.
        rate_bps = max(1, round(len(opportunities) * TRACE_PACKET_BYTES * 8 * 1000 / span_ms))
        capacity: dict[str, Any] = {"kind": "trace", "opportunities_ms": opportunities, "packet_bytes": TRACE_PACKET_BYTES}
        if period_ms is not None:
            capacity["period_ms"] = period_ms
    else:
        rate_bps = parse_rate_bps(_get(p, d, "rate"))
        capacity = {"kind": "constant"}
        if schedule:
            capacity = {
                "kind": "schedule",
                "steps": [{"at_ns": parse_time_ns(s.at), "rate_bps": parse_rate_bps(s.rate)} for s in schedule],
            }

    link: dict[str, Any] = {"name": f"{p.name}.{d}", "rate_bps": rate_bps, "delay_ns": delay_ns}
    q = parse_queue(_get(p, d, "queue") or DEFAULT_QUEUE)
    if q.packets is not None:
        link["queue_packets"] = q.packets
    elif q.bytes is not None:
        link["queue_bytes"] = q.bytes
    elif q.bdp is not None:
        bdp_bytes = q.bdp * rate_bps * rtt_ns / 8e9
        if bdp_bytes > 2**63 - 1:
            raise ScenarioError(field("queue"), f"{q.bdp:g} BDP is {bdp_bytes:.3g} bytes, more than the core can hold")
        link["queue_bytes"] = max(MIN_QUEUE_BYTES, math.ceil(bdp_bytes))
    elif q.time_ns is not None:
        held_bytes = q.time_ns * rate_bps / 8e9
        if held_bytes > 2**63 - 1:
            raise ScenarioError(field("queue"), f"{q.time_ns} ns of buffering is {held_bytes:.3g} bytes, more than the core can hold")
        link["queue_bytes"] = max(MIN_QUEUE_BYTES, math.ceil(held_bytes))

    loss = _get(p, d, "loss")
    link["loss"] = _loss(loss)
    link["jitter"] = _jitter(p, d, delay_ns, field("jitter"))
    link["capacity"] = capacity
    return link


def _loss(v: Any) -> dict[str, Any]:
    if v is None:
        return {"model": "none"}
    if isinstance(v, dict):
        out: dict[str, Any] = {"model": v["model"]}
        out.update({k: parse_fraction(x) for k, x in v.items() if k != "model"})
        return out
    p = parse_fraction(v)
    return {"model": "none"} if p == 0 else {"model": "bernoulli", "p": p}


def _jitter(p: PathSpec, d: str, delay_ns: int, where: str) -> dict[str, Any]:
    j = _get(p, d, "jitter")
    jitter_ns = parse_time_ns(j) if j is not None else 0
    if jitter_ns == 0:
        return {"mode": "none"}
    mode = _get(p, d, "jitter_mode") or "smooth"
    dist = _get(p, d, "jitter_distribution") or "uniform"
    if jitter_ns > delay_ns and not (mode == "reorder" and dist == "normal"):
        raise ScenarioError(
            where,
            f"jitter ({jitter_ns / 1e6:g} ms) exceeds the one-way delay ({delay_ns / 1e6:g} ms), so the delay "
            "would go negative; jitter is the one-way amplitude (an RTT of 200ms ± 150ms is jitter = \"75ms\")",
        )
    if mode == "reorder":
        return {"mode": "reorder", "jitter_ns": jitter_ns, "distribution": dist}
    period = _get(p, d, "jitter_period")
    if period is not None:
        period_ns = parse_time_ns(period)
    else:
        # testbed.md §4d: smooth jitter was run with period = 2 x one-way delay (10 ± 7.5 ms at
        # 20 ms, 100 ± 75 ms at 200 ms); keep the delay slope 2J/period below 1 in any case.
        period_ns = max(2 * delay_ns, 2 * jitter_ns + 1_000_000)
    return {"mode": "smooth", "jitter_ns": jitter_ns, "period_ns": period_ns}


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

    if w.kind == "web":
        from mpsched.workloads import page_objects

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


def read_trace(path: str, field: str = "trace") -> list[int]:
    """Read a Mahimahi trace (one millisecond timestamp per line, non-decreasing)."""
    st = os.stat(path)
    return list(_read_trace_cached(path, st.st_mtime_ns, st.st_size, field))


@functools.lru_cache(maxsize=16)
def _read_trace_cached(path: str, _mtime_ns: int, _size: int, field: str) -> tuple[int, ...]:
    out = []
    for lineno, line in enumerate(Path(path).read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        try:
            t = int(line)
        except ValueError:
            raise ScenarioError(field, f"{path}:{lineno}: expected one whole number of milliseconds per line, got {line!r}") from None
        if t < 0 or (out and t < out[-1]):
            raise ScenarioError(field, f"{path}:{lineno}: timestamps must be non-negative and never decrease")
        out.append(t)
    if not out:
        raise ScenarioError(field, f"{path}: the trace is empty")
    return tuple(out)
