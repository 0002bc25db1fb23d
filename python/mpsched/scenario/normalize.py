"""Turn one concrete scenario into the core's normalized run configuration (a JSON-able dict).

The target schema is the serde structs of `crates/mpsched-sim/src/config.rs` (canonical; every
struct denies unknown fields): base units only (bit/s, ns, bytes), links indexed from paths,
transports indexed from flows. The network (links, paths, flows placed on hosts) comes from the
one topology step, `mpsched.scenario.network.build`; this module adds what every topology
shares: transports, cross traffic, path events, recording.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mpsched.scenario.fields import ScenarioError
from mpsched.scenario.model import Scenario
from mpsched.scenario.network import build, engines_for
from mpsched.scenario.sweep import axes
from mpsched.scenario.units import parse_fraction, parse_rate_bps, parse_size_bytes, parse_time_ns

__all__ = ["RunConfig", "normalize", "to_config", "to_run"]


@dataclass(frozen=True)
class RunConfig:
    """One run, normalized: the core's configuration, the back-to-back chain (see `to_run`),
    per-row columns for the record tables, and the engines that can run it."""

    config: dict[str, Any]
    chain: list[dict[str, int]]
    columns: dict[str, dict[str, list]]
    engines: tuple[str, ...]


def to_config(scenario: Scenario) -> dict[str, Any]:
    """The normalized configuration of a concrete scenario (no list left in a sweepable field).

    Back-to-back flows whose start depends on an earlier flow's end wait at the end of the run
    (`start_ns = duration_ns`) here; `to_run` also returns the chain that places them.
    Raises `ScenarioError` for what only shows once units are resolved (a jitter larger than the
    delay, flows starting after the end, a malformed trace).
    """
    return normalize(scenario).config


def to_run(scenario: Scenario) -> tuple[dict[str, Any], list[dict[str, int]]]:
    """The normalized configuration and its flow chain: a list of ``{"flow", "after", "gap_ns"}``,
    meaning flow `flow` starts `gap_ns` after flow `after` completes (back-to-back arrivals; the
    core has no such dependency, so `mpsched.engines.run_chained` resolves it by re-running)."""
    r = normalize(scenario)
    return r.config, r.chain


def normalize(scenario: Scenario) -> RunConfig:
    """The whole normalized run of a concrete scenario."""
    _check_concrete(scenario)
    s = scenario
    duration_ns = parse_time_ns(s.duration)
    net = build(s)
    transports = [
        {"protocol": c.protocol, "scheduler": c.scheduler, "scheduler_params": dict(c.scheduler_params), "cc": c.cc,
         **net.transport_paths[i],
         "rcv_buf_bytes": parse_size_bytes(c.rcv_buf), "snd_buf_bytes": parse_size_bytes(c.snd_buf),
         "mss_bytes": parse_size_bytes(c.mss), "init_cwnd_segments": int(c.init_cwnd),
         "rcv_buf_autotuning": bool(c.rcv_buf_autotuning), "join_timing": c.join_timing,
         "stale_loss_cnt": int(c.stale_loss_cnt), "loss_recovery": c.loss_recovery}
        for i, c in enumerate(s.connection)
    ]
    index = {p["name"]: i for i, p in enumerate(net.paths)}
    cross = []
    for xi, x in enumerate(s.cross_traffic):
        path = net.paths[index[x.path]]
        start, stop = parse_time_ns(x.start), parse_time_ns(x.stop) if x.stop is not None else duration_ns
        if stop <= start:
            raise ScenarioError(f"cross_traffic[{xi}].stop", "cross traffic must stop after it starts (default stop: the duration)")
        cross.append({"links": list(path[x.direction]), "rate_bps": parse_rate_bps(x.rate),
                      "packet_bytes": parse_size_bytes(x.packet), "start_ns": start, "stop_ns": stop})
    events = [x for i, e in enumerate(s.path_events) for x in _path_event(e, index[e.path], duration_ns, f"path_events[{i}]")]
    config = {
        "seed": int(s.seed),
        "duration_ns": duration_ns,
        "links": net.links,
        "paths": net.paths,
        "transports": transports,
        "flows": net.flows,
        "cross_traffic": cross,
        "path_events": events,
        "record": {"sample_interval_ns": parse_time_ns(s.record.interval)},
    }
    if s.host_delay is not None:
        config["host_delay"] = s.host_delay.to_config()
    return RunConfig(config, net.chain, net.columns, engines_for(s))


def _path_event(e: Any, path: int, duration_ns: int, where: str) -> list[dict[str, Any]]:
    """The core's entries for one `[[path_events]]` entry. A path going down (the original
    ``up`` form, or ``kind = "down"``) is emitted in the original shape, one entry going down and
    one coming back, which both engines read; the impairments carry their `kind`."""
    at_ns = parse_time_ns(e.at)
    if at_ns >= duration_ns:
        raise ScenarioError(f"{where}.at", "the event starts at or after the end of the run")
    if e.kind is None:
        return [{"at_ns": at_ns, "path": path, "up": bool(e.up)}]
    dur_ns = parse_time_ns(e.duration) if e.duration is not None else None
    if e.kind == "down":
        out = [{"at_ns": at_ns, "path": path, "up": False}]
        return out + ([{"at_ns": at_ns + dur_ns, "path": path, "up": True}] if dur_ns is not None else [])
    ev: dict[str, Any] = {"kind": e.kind, "at_ns": at_ns, "path": path, "direction": e.direction or "both"}
    if dur_ns is not None:
        ev["duration_ns"] = dur_ns
    if e.kind == "loss_ramp":
        ev |= {"ramp_ns": parse_time_ns(e.ramp) if e.ramp is not None else 0,
               "from_p": parse_fraction(e.from_loss) if e.from_loss is not None else 0.0,
               "to_p": parse_fraction(e.to_loss)}
    elif e.kind == "rtt_spike":
        ev["extra_delay_ns"] = parse_time_ns(e.extra_delay)
    elif e.kind == "rate_collapse":
        ev["rate_bps"] = parse_rate_bps(e.rate)
    return [ev]


def _check_concrete(s: Scenario) -> None:
    if s.design is not None:
        raise ScenarioError("design", "a scenario with a design stands for many runs; expand it first (Scenario.expand())")
    ax = axes(s)
    if ax:
        raise ScenarioError(
            ".".join(str(x) for x in ax[0].path),
            "this field still holds a sweep list; expand the scenario first (Scenario.expand())",
        )
