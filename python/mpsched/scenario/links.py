"""The links of the two-host topology: each `[[paths]]` entry becomes a link each way, in the
core's base units (`crates/mpsched-sim/src/config.rs`): rate, delay, queue, loss, jitter and
capacity (constant, a schedule, or a Mahimahi trace).
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path
from typing import Any

from mpsched.scenario.fields import NO_BURST, ScenarioError
from mpsched.scenario.paths import LinkOverride, PathSpec
from mpsched.scenario.units import parse_fraction, parse_queue, parse_rate_bps, parse_size_bytes, parse_time_ns

__all__ = ["path_links", "read_trace"]

#: Queue limit when a path gives none: Linux's default transmit queue length, 1000 packets
#: (DEFAULT_TX_QUEUE_LEN in include/net/pkt_sched.h).
DEFAULT_QUEUE = "1000 packets"
#: A BDP-sized queue never drops below one full-size packet, or nothing could pass at all.
MIN_QUEUE_BYTES = 1500
#: Bytes one Mahimahi delivery opportunity carries (mahimahi traces/README: one MTU).
TRACE_PACKET_BYTES = 1500
#: Largest framing overhead per packet the core accepts (MAX_OVERHEAD_BYTES in
#: crates/mpsched-engine/src/net/link.rs).
MAX_OVERHEAD_BYTES = 256


def path_links(p: PathSpec, where: str) -> list[dict[str, Any]]:
    """The two links of path `p`, down (server to client) then up."""
    delays = {d: _delay_ns(p, d) for d in ("down", "up")}
    rtt_ns = delays["down"] + delays["up"]
    return [_link(p, d, delays[d], rtt_ns, where) for d in ("down", "up")]


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
    q_value = _get(p, d, "queue")
    q = parse_queue(DEFAULT_QUEUE if q_value is None else q_value)  # a given 0 is refused, never the default
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
    _transmitter(p, d, link, field, shaped=trace is not None or bool(schedule))
    return link


def _transmitter(p: PathSpec, d: str, link: dict[str, Any], field: Any, shaped: bool) -> None:
    """The token bucket, the framing overhead and the impairments' place, when given."""
    overhead = _get(p, d, "overhead")
    overhead_bytes = parse_size_bytes(overhead) if overhead is not None else 0
    if overhead_bytes > MAX_OVERHEAD_BYTES:
        raise ScenarioError(field("overhead"), f"at most {MAX_OVERHEAD_BYTES} bytes of framing per packet "
                            f"(Ethernet: \"14B\"), got {overhead!r}")
    if overhead is not None:
        link["overhead_bytes"] = overhead_bytes
    burst = _get(p, d, "burst")
    if burst is not None and burst != NO_BURST:
        burst_bytes = parse_size_bytes(burst)
        if shaped:
            raise ScenarioError(field("burst"), "a token bucket needs a constant rate: remove the trace or "
                                "the rate schedule, or the burst")
        if burst_bytes < 1500 + overhead_bytes:
            raise ScenarioError(field("burst"), f"a token bucket must hold one full frame (1500 B + overhead = "
                                f"{1500 + overhead_bytes} B), got {burst!r} (tc's \"32k\" is \"32KiB\")")
        link["burst_bytes"] = burst_bytes
    place = _get(p, d, "impairments")
    if place is not None:
        link["impairments"] = place
    transmitter = _get(p, d, "transmitter")
    if transmitter is not None:
        if shaped and transmitter == "htb":
            raise ScenarioError(field("transmitter"), "an htb class needs a constant rate: remove the trace or "
                                "the rate schedule")
        link["transmitter"] = transmitter


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
