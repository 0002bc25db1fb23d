"""Path events on the kernel testbed: which a run can play and how (`make_plan` calls these).

A path down / up (the original shape, or `kind = "down"`) takes the client's interface down and
back (`ip link set DEV down`, the routes through it re-added on the way up, as a host's network
manager does); a blackhole is DROP rules in the router's FORWARD chain, both ways or one; a rate
collapse is two steps of the affected links' htb rate; a loss ramp and an RTT spike are played by
the affected links' delayer queues (native/nfqdelay: `ramp=`, `spike=`, timed from the run's
epoch). `net.mptcp.stale_loss_cnt` is one value per host.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from mpsched.engines.kernel.errors import TestbedConfigError

__all__ = ["path_events", "collapse", "delayer_events", "delayer_event_keys", "stale_loss_cnt"]

PLAYED = ("blackhole", "rate_collapse", "loss_ramp", "rtt_spike")
#: End of an event without a recovery (it lasts to the end of the run), ns.
FOREVER_NS = 1 << 60


def path_events(entries: list[dict[str, Any]], n_paths: int) -> tuple[list, list, list]:
    """(interface down / up events as (at_ns, path, up), blackholes as (at_ns, path, up,
    direction), rate collapses, loss ramps and RTT spikes as (index, entry)) of the
    configuration's `path_events`."""
    events: list[tuple[int, int, bool]] = []
    drops: list[tuple[int, int, bool, str]] = []
    collapses: list[tuple[int, dict[str, Any]]] = []
    for e_i, e in enumerate(entries):
        if not 0 <= int(e["path"]) < n_paths:
            raise TestbedConfigError(f"path_events[{e_i}].path", f"no path {e['path']}")
        kind = e.get("kind")
        if kind is None:
            events.append((int(e["at_ns"]), int(e["path"]), bool(e["up"])))
        elif kind not in PLAYED:  # a down / up comes in the original shape
            raise TestbedConfigError(f"path_events[{e_i}].kind", f"the kernel engine plays down, blackhole, "
                                     f"rate_collapse, loss_ramp and rtt_spike, not a {kind}")
        elif kind in ("rate_collapse", "loss_ramp", "rtt_spike"):
            collapses.append((e_i, e))
        else:  # DROP rules in the router: the hosts see nothing
            at, end, path, d = int(e["at_ns"]), e.get("duration_ns"), int(e["path"]), e.get("direction", "both")
            drops += [(at, path, False, d)] + ([(at + int(end), path, True, d)] if end is not None else [])
    return events, drops, collapses


def collapse(links: list, collapses: list[tuple[int, dict[str, Any]]]) -> list:
    """The plan's links (`LinkPlan`) with each rate collapse as two steps of the affected links'
    htb rate: down to its rate, back to the link's own at its end. A link with a capacity
    schedule or a trace, or a second collapse of a link, is refused (the rate at the end would
    depend on both)."""
    links = list(links)
    for e_i, e in collapses:
        if e["kind"] != "rate_collapse":
            continue
        at, end, d = int(e["at_ns"]), e.get("duration_ns"), e.get("direction", "both")
        for k, lk in enumerate(links):
            if lk.path != int(e["path"]) or d not in ("both", lk.direction):
                continue
            if lk.rate_steps or lk.trace is not None:
                raise TestbedConfigError(f"path_events[{e_i}].kind", f"link {lk.name} has a capacity schedule, a "
                                         "trace or another rate collapse; the kernel engine collapses a "
                                         "constant-rate link once")
            steps = [(at, int(e["rate_bps"]))] + ([(at + int(end), lk.rate_bps)] if end is not None else [])
            links[k] = dataclasses.replace(lk, rate_steps=tuple(sorted(steps)))
    return links


def delayer_events(links: list, events: list[tuple[int, dict[str, Any]]]) -> list:
    """The plan's links (`LinkPlan`) with each loss ramp and RTT spike given to the affected
    links' delayer queue (`loss_ramp` = (at_ns, ramp_ns, end_ns, from_p, to_p), `rtt_spike` =
    (at_ns, end_ns, extra_delay_ns)). One of each kind per link: a second is refused (the
    delayer holds one schedule of each)."""
    links = list(links)
    for e_i, e in events:
        if e["kind"] not in ("loss_ramp", "rtt_spike"):
            continue
        at, d = int(e["at_ns"]), e.get("direction", "both")
        end = at + int(e["duration_ns"]) if e.get("duration_ns") is not None else FOREVER_NS
        for k, lk in enumerate(links):
            if lk.path != int(e["path"]) or d not in ("both", lk.direction):
                continue
            if e["kind"] == "loss_ramp":
                if lk.loss_ramp is not None:
                    raise TestbedConfigError(f"path_events[{e_i}].kind", f"link {lk.name} has a loss ramp already; "
                                             "the kernel engine plays one per link")
                ev = (at, int(e.get("ramp_ns", 0)), end, float(e.get("from_p", 0.0)), float(e["to_p"]))
                links[k] = dataclasses.replace(lk, loss_ramp=ev)
            else:
                if lk.rtt_spike is not None:
                    raise TestbedConfigError(f"path_events[{e_i}].kind", f"link {lk.name} has an RTT spike already; "
                                             "the kernel engine plays one per link")
                links[k] = dataclasses.replace(lk, rtt_spike=(at, end, int(e["extra_delay_ns"])))
    return links


def delayer_event_keys(loss_ramp: tuple | None, rtt_spike: tuple | None) -> str:
    """A link's `ramp=` and `spike=` keys of its nfqdelay `-q` spec (microseconds)."""
    out = ""
    if loss_ramp is not None:
        at, ramp, end, p0, p1 = loss_ramp
        out += f",ramp={at / 1e3:.3f}:{ramp / 1e3:.3f}:{end / 1e3:.3f}:{p0!r}:{p1!r}"
    if rtt_spike is not None:
        at, end, extra = rtt_spike
        out += f",spike={at / 1e3:.3f}:{end / 1e3:.3f}:{extra / 1e3:.3f}"
    return out


def stale_loss_cnt(transports: list[dict[str, Any]]) -> int:
    """`net.mptcp.stale_loss_cnt` is one value per network namespace: the connections of a run
    must agree on it (default 4, the kernel's)."""
    values = {int(t.get("stale_loss_cnt", 4)) for t in transports if t["protocol"] == "mptcp"}
    if len(values) > 1:
        raise TestbedConfigError("transports", "the kernel has one net.mptcp.stale_loss_cnt per host; give every "
                                 f"connection the same stale_loss_cnt (got {sorted(values)})")
    return values.pop() if values else 4
