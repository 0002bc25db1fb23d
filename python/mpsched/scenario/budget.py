"""The work and memory a scenario implies, estimated before anything runs, and refused above
stated limits unless the user says `--force` (`force=True`).

What is estimated, and why it is the cost:

* runs: the product of the swept lists times the design's samples (each run is normalized,
  checked and stored), counted without expanding them;
* hosts of a [topology] (each host has links, queues and endpoints);
* per run, events: every packet a link can carry in the run (its rate times the duration over
  one packet of the smallest MSS; each packet is a few events: enqueue, transmit, arrive, ack)
  plus every jitter update (one random draw per link per elapsed `jitter_period`: the smooth
  jitter of crates/mpsched-engine/src/net/jitter.rs catches up period by period);
* per run, time-series rows: samples (duration / record interval) times what is sampled (every
  link, every subflow of every flow, every connection); each row is a few tens of bytes.

The limits sit far above every shipped scenario and reproduction study (a test checks this),
and low enough that a typo ("1ns", a list of 10^5 seeds) is caught at `check`, not after an
hour or at 6 GB.
"""

from __future__ import annotations

from typing import Any

from mpsched.scenario.fields import ScenarioError

__all__ = ["LIMITS", "check_config_budget", "check_scenario_budget", "config_estimate", "runs_estimate"]

LIMITS = {
    "runs": 20_000,
    "hosts": 4_096,
    "events": 2_000_000_000,
    "series_rows": 50_000_000,
}
_FORCE = "pass --force (force=True) to run it anyway"
_BYTES_PER_ROW = 64


def runs_estimate(scenario: Any) -> int:
    """Runs of a scenario: swept list lengths multiplied, times the design's samples."""
    from mpsched.scenario.sweep import axes

    n = int(scenario.design.samples) if scenario.design is not None else 1
    for a in axes(scenario):
        n *= len(a.values)
    return n


def _hosts(scenario: Any) -> int:
    t = scenario.topology
    if t is None:
        return 2
    values = lambda v: v if isinstance(v, list) else [v]  # noqa: E731  (a sweep: the largest)
    if t.kind == "fattree":
        return max(int(k) ** 3 // 4 for k in values(t.k))
    return 2 * max(int(p) for p in values(t.pairs))


def check_scenario_budget(scenario: Any, force: bool = False) -> None:
    """Refuse a scenario whose number of runs or hosts is above the limits (before expanding it)."""
    if force:
        return
    n = runs_estimate(scenario)
    if n > LIMITS["runs"]:
        raise ScenarioError("", f"this scenario expands to {n:,} runs (the product of its swept lists"
                            f"{' and design samples' if scenario.design is not None else ''}); the limit is "
                            f"{LIMITS['runs']:,}: {_FORCE}")
    h = _hosts(scenario)
    if h > LIMITS["hosts"]:
        raise ScenarioError("topology", f"{h:,} hosts in one run; the limit is {LIMITS['hosts']:,}: {_FORCE}")


def config_estimate(config: dict[str, Any]) -> dict[str, float]:
    """Events and time-series rows of one normalized run (upper estimates)."""
    duration_ns = float(config.get("duration_ns", 0))
    mss = min([t.get("mss_bytes", 1448) for t in config.get("transports", [])] or [1448])
    packet_bits = 8.0 * (max(int(mss), 64) + 52)
    events = 0.0
    for link in config.get("links", []):
        events += 4.0 * link.get("rate_bps", 0) * duration_ns / 1e9 / packet_bits
        period = (link.get("jitter") or {}).get("period_ns") or 0
        if period > 0:
            events += duration_ns / period
    for x in config.get("cross_traffic", []):
        events += 2.0 * x.get("rate_bps", 0) * duration_ns / 1e9 / (8.0 * max(x.get("packet_bytes", 1500), 1))
    interval = (config.get("record") or {}).get("sample_interval_ns", 0)
    rows = 0.0
    if interval > 0:
        rows = duration_ns / interval * len(config.get("links", []))
        transports = config.get("transports", [])
        slowest = min([lk.get("rate_bps", 0) for lk in config.get("links", []) if lk.get("rate_bps", 0) > 0] or [1])
        for f in config.get("flows", []):
            t = transports[f["transport"]] if isinstance(f.get("transport"), int) and f["transport"] < len(transports) else {}
            rows += _lifetime_ns(f, duration_ns, slowest) / interval * (1 + len(f.get("paths") or t.get("paths") or [0]))
    return {"events": events, "series_rows": rows}


def _lifetime_ns(flow: dict[str, Any], duration_ns: float, slowest_bps: float) -> float:
    """How long a flow is sampled (the core samples a connection while it lives): to its stop
    or the run's end; a sized flow for four times its size over the slowest link, at least 1 s."""
    start = float(flow.get("start_ns", 0))
    app = flow.get("app") or {}
    end = float(app.get("stop_ns") or duration_ns)
    if app.get("size_bytes"):
        end = start + max(1e9, 4 * app["size_bytes"] * 8e9 / slowest_bps)
    return max(0.0, min(end, duration_ns) - start)


def check_config_budget(config: dict[str, Any], force: bool = False) -> None:
    """Refuse one run whose events or time-series rows are above the limits."""
    if force:
        return
    est = config_estimate(config)
    if est["series_rows"] > LIMITS["series_rows"]:
        rows = est["series_rows"]
        raise ScenarioError("record.interval", f"the time series would hold about {rows:.3g} rows "
                            f"(~{rows * _BYTES_PER_ROW / 1e9:.3g} GB) in one run: duration / interval samples "
                            f"of every link, subflow and connection; the limit is {LIMITS['series_rows']:.3g} rows: "
                            f"use a longer [record] interval (\"0\" turns the series off), a shorter duration, or {_FORCE}")
    if est["events"] > LIMITS["events"]:
        raise ScenarioError("duration", f"about {est['events']:.3g} simulated events in one run (link rates times "
                            f"duration over the packet size, plus jitter updates per jitter_period); the limit is "
                            f"{LIMITS['events']:.3g}: shorten the duration, lower the rates, lengthen "
                            f"jitter_period, or {_FORCE}")
