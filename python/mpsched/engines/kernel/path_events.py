"""Path events on the kernel testbed: which a run can play and how (`make_plan` calls these).

A path down / up (the original shape, or `kind = "down"`) takes the client's interface down and
back (`ip link set DEV down`, the routes through it re-added on the way up, as a host's network
manager does); a blackhole is DROP rules in the router's FORWARD chain, both ways or one; a rate
collapse is two steps of the affected links' htb rate. Loss ramps and RTT spikes are refused.
`net.mptcp.stale_loss_cnt` is one value per host.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from mpsched.engines.kernel.errors import TestbedConfigError

__all__ = ["path_events", "collapse", "stale_loss_cnt"]

PLAYED = ("blackhole", "rate_collapse")


def path_events(entries: list[dict[str, Any]], n_paths: int) -> tuple[list, list, list]:
    """(interface down / up events as (at_ns, path, up), blackholes as (at_ns, path, up,
    direction), rate collapses as (index, entry)) of the configuration's `path_events`."""
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
            raise TestbedConfigError(f"path_events[{e_i}].kind", f"the kernel engine plays down, blackhole and "
                                     f"rate_collapse, not a {kind} yet; run it on the simulator")
        elif kind == "rate_collapse":
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


def stale_loss_cnt(transports: list[dict[str, Any]]) -> int:
    """`net.mptcp.stale_loss_cnt` is one value per network namespace: the connections of a run
    must agree on it (default 4, the kernel's)."""
    values = {int(t.get("stale_loss_cnt", 4)) for t in transports if t["protocol"] == "mptcp"}
    if len(values) > 1:
        raise TestbedConfigError("transports", "the kernel has one net.mptcp.stale_loss_cnt per host; give every "
                                 f"connection the same stale_loss_cnt (got {sorted(values)})")
    return values.pop() if values else 4
