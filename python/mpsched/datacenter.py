"""Data-center and shared-bottleneck scenarios: a topology of many hosts (a k-ary FatTree or a
dumbbell, built by the core's generator `crates/mpsched-sim/src/topology.rs`) and traffic
between its hosts, turned into one normalized configuration with explicit flows.

The traffic of the `003_` seed (§3.3, §5) and of Raiciu et al. (SIGCOMM 2011, §4):

* ``partition_aggregate``: aggregator hosts (by default pod 0 of the FatTree) send flows to
  worker hosts (by default every other host), Poisson arrivals with mean gap `mean_gap` at each
  worker, from an aggregator drawn at random. Sizes: `class` ``"query"`` (2-20 KB),
  ``"short_message"`` (50 KB-1 MB) or ``"background"`` (1-50 MB), uniform in the range since
  `003_` gives only the ranges; or `cdf` ``"dctcp"`` (web search), ``"vl2"`` (data mining) or
  ``"fb"``: the empirical distributions of datacenter/empirical-traffic-gen (Apache-2.0, copied
  to `scenarios/data/datacenter-flowsize/` with their licence and provenance), sampled by
  inverting the piecewise-linear CDF as that repository's README describes.
* ``background``: a `fraction` of the workers each receive one flow sending without end
  (from an aggregator, in turn), as `003_` §5.2 loads 50 % of its workers.
* ``permutation``: every host sends without end to one other host, no host receiving twice.
* ``pairs`` (dumbbell): each listed pair's sender sends without end to its receiver over the
  pair's interfaces (one subflow per interface for MPTCP), all through the one bottleneck.

Random draws come from numpy's generator seeded with (run seed, traffic index), so a scenario
and its seed always give the same flows. Each traffic entry names a transport; MPTCP transports
say how many subflows a flow opens and how their paths are chosen (ECMP hashing or explicit
spreading over the core paths), so TCP and MPTCP flows can be mixed in one run.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, Literal

import numpy as np
import polars as pl
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mpsched.units import parse_rate_bps, parse_size_bytes, parse_time_ns

__all__ = ["DatacenterScenario", "load", "to_config", "run", "flow_size_cdf", "sample_sizes", "DATA_DIR", "CLASSES"]

#: The vendored flow-size distributions.
DATA_DIR = Path(__file__).resolve().parents[2] / "scenarios" / "data" / "datacenter-flowsize"
#: Flow-size ranges of the traffic classes of `003_` §3.3, bytes (KB = 1000 bytes).
CLASSES = {"query": (2_000, 20_000), "short_message": (50_000, 1_000_000), "background": (1_000_000, 50_000_000)}
_CDF_FILES = {"dctcp": "DCTCP_CDF", "vl2": "VL2_CDF", "fb": "FB_CDF"}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TopologySpec(_Model):
    """A FatTree (`k`, a rate per tier or one `oversubscription` ratio above the hosts, one
    delay and queue for every link) or a dumbbell (`pairs` of hosts with `interfaces` access
    links each, one bottleneck)."""

    kind: Literal["fattree", "dumbbell"]
    k: int = 4
    host_rate: str = "100Mbit"
    edge_agg_rate: str | None = None
    agg_core_rate: str | None = None
    oversubscription: float | None = None
    link_delay: str = "20us"
    queue: int = Field(default=100, ge=1)
    pairs: int = Field(default=2, ge=1)
    interfaces: int = Field(default=1, ge=1, le=32)
    access_rate: str = "1Gbit"
    access_delay: str = "1ms"
    bottleneck_rate: str = "20Mbit"
    bottleneck_delay: str = "10ms"

    @model_validator(mode="after")
    def _rates(self) -> TopologySpec:
        if self.kind == "fattree" and self.oversubscription is not None:
            if self.edge_agg_rate is not None or self.agg_core_rate is not None:
                raise ValueError("give either per-tier rates or an oversubscription ratio, not both")
            if self.oversubscription < 1:
                raise ValueError("oversubscription is at least 1 (1 = full bisection bandwidth)")
        for f in ("host_rate", "edge_agg_rate", "agg_core_rate", "access_rate", "bottleneck_rate"):
            if getattr(self, f) is not None:
                parse_rate_bps(getattr(self, f))
        for f in ("link_delay", "access_delay", "bottleneck_delay"):
            parse_time_ns(getattr(self, f))
        return self


class TransportSpec(_Model):
    """Connection settings; `subflows` and `path_choice` apply to MPTCP on a FatTree (on a
    dumbbell an MPTCP flow opens one subflow per interface)."""

    name: str
    protocol: Literal["mptcp", "tcp"] = "mptcp"
    scheduler: str = "minrtt"
    cc: str = "lia"
    subflows: int = Field(default=8, ge=1, le=32)
    path_choice: Literal["ecmp", "explicit"] = "explicit"
    rcv_buf: str = "6MiB"
    snd_buf: str = "4MiB"


class TrafficSpec(_Model):
    """One traffic pattern (see the module documentation)."""

    kind: Literal["partition_aggregate", "background", "permutation", "pairs"]
    transport: str
    size_class: Literal["query", "short_message", "background"] | None = Field(default=None, alias="class")
    cdf: Literal["dctcp", "vl2", "fb"] | None = None
    mean_gap: str | None = None
    aggregators: list[int] | None = None
    workers: list[int] | None = None
    fraction: float = Field(default=0.5, gt=0, le=1)
    pairs: list[int] | None = None
    start: str = "0s"
    stop: str | None = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _consistent(self) -> TrafficSpec:
        if self.kind == "partition_aggregate":
            if (self.size_class is None) == (self.cdf is None):
                raise ValueError("partition_aggregate traffic needs exactly one of class or cdf")
            if self.mean_gap is None:
                raise ValueError("partition_aggregate traffic needs mean_gap (per worker)")
        return self


class DatacenterScenario(_Model):
    """A whole data-center (or dumbbell) run."""

    name: str = "datacenter"
    description: str = ""
    seed: int = Field(default=1, ge=0)
    duration: str
    record_interval: str = "100ms"
    topology: TopologySpec
    transport: list[TransportSpec] = Field(min_length=1)
    traffic: list[TrafficSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _references(self) -> DatacenterScenario:
        names = [t.name for t in self.transport]
        if len(set(names)) != len(names):
            raise ValueError("transport names must be unique")
        for i, t in enumerate(self.traffic):
            if t.transport not in names:
                raise ValueError(f"traffic[{i}].transport: unknown transport {t.transport!r}; defined: {', '.join(names)}")
            if (t.kind == "pairs") != (self.topology.kind == "dumbbell"):
                raise ValueError(f"traffic[{i}]: 'pairs' traffic runs on a dumbbell, the others on a fattree")
        return self


def load(path: str | Path) -> DatacenterScenario:
    """Read and validate a data-center scenario TOML file (raises ValueError naming the field)."""
    p = Path(path)
    data = tomllib.loads(p.read_text(encoding="utf-8"))
    data.setdefault("name", p.stem)
    try:
        return DatacenterScenario.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise ValueError(f"{p}: {where}: {first['msg']}") from None


def flow_size_cdf(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(sizes in bytes, cumulative probabilities) of a vendored distribution: "dctcp",
    "vl2" or "fb"."""
    rows = [line.split() for line in (DATA_DIR / _CDF_FILES[name]).read_text().splitlines() if line.strip()]
    sizes = np.array([float(r[0]) for r in rows])
    probs = np.array([float(r[1]) for r in rows])
    return sizes, probs


def sample_sizes(rng: np.random.Generator, n: int, *, size_class: str | None = None, cdf: str | None = None) -> np.ndarray:
    """`n` flow sizes in bytes (at least 1): uniform in a class's range, or drawn from an
    empirical CDF by inverse transform with linear interpolation between its points."""
    if size_class is not None:
        lo, hi = CLASSES[size_class]
        return rng.integers(lo, hi + 1, size=n)
    if cdf is None:
        raise ValueError("give a size class or a cdf")
    sizes, probs = flow_size_cdf(cdf)
    u = rng.random(n)
    return np.maximum(1, np.rint(np.interp(u, probs, sizes))).astype(np.int64)


def _derangement(rng: np.random.Generator, n: int) -> list[int]:
    while True:
        p = rng.permutation(n)
        if n < 2 or all(int(p[i]) != i for i in range(n)):
            return [int(x) for x in p]


def _fattree_hosts(k: int) -> int:
    return k**3 // 4


def _flows(s: DatacenterScenario, duration_ns: int) -> list[dict[str, Any]]:
    """(sender, receiver, transport, start, app) of every flow, before routing."""
    topo = s.topology
    tindex = {t.name: i for i, t in enumerate(s.transport)}
    out: list[dict[str, Any]] = []
    hosts = _fattree_hosts(topo.k) if topo.kind == "fattree" else topo.pairs
    pod_size = (topo.k // 2) ** 2
    for ti, t in enumerate(s.traffic):
        rng = np.random.default_rng([s.seed, ti])
        start_ns = parse_time_ns(t.start)
        stop_ns = parse_time_ns(t.stop) if t.stop is not None else duration_ns
        fattree = topo.kind == "fattree"
        aggs = t.aggregators if t.aggregators is not None else list(range(pod_size)) if fattree else []
        workers = t.workers if t.workers is not None else [h for h in range(hosts) if h not in aggs] if fattree else []
        for h in [*aggs, *workers, *(t.pairs or [])]:
            if not 0 <= h < hosts:
                raise ValueError(f"traffic[{ti}]: host {h} does not exist ({hosts} hosts)")
        base = {"transport": tindex[t.transport]}
        if t.kind == "partition_aggregate":
            gap_ns = parse_time_ns(t.mean_gap)
            for w in workers:
                at = start_ns
                while True:
                    at += int(rng.exponential(gap_ns))
                    if at >= stop_ns:
                        break
                    size = int(sample_sizes(rng, 1, size_class=t.size_class, cdf=t.cdf)[0])
                    sender = aggs[int(rng.integers(len(aggs)))]
                    out.append({**base, "sender": sender, "receiver": w, "start_ns": at,
                                "app": {"kind": "sized", "size_bytes": size}})
        elif t.kind == "background":
            n = max(1, round(t.fraction * len(workers)))
            chosen = sorted(int(x) for x in rng.choice(workers, size=n, replace=False))
            for i, w in enumerate(chosen):
                out.append({**base, "sender": aggs[i % len(aggs)], "receiver": w, "start_ns": start_ns,
                            "app": {"kind": "bulk", "stop_ns": stop_ns}})
        elif t.kind == "permutation":
            for src, dst in enumerate(_derangement(rng, hosts)):
                out.append({**base, "sender": src, "receiver": dst, "start_ns": start_ns,
                            "app": {"kind": "bulk", "stop_ns": stop_ns}})
        else:  # pairs on a dumbbell
            for p in t.pairs if t.pairs is not None else range(hosts):
                out.append({**base, "sender": p, "receiver": p, "start_ns": start_ns,
                            "app": {"kind": "bulk", "stop_ns": stop_ns}})
    out.sort(key=lambda f: f["start_ns"])
    return out


def to_config(s: DatacenterScenario) -> dict[str, Any]:
    """The normalized configuration of a data-center scenario (the schema of
    `crates/mpsched-sim/src/config.rs`), every flow with its own paths."""
    from mpsched import _core

    duration_ns = parse_time_ns(s.duration)
    flows = _flows(s, duration_ns)
    topo = s.topology
    if topo.kind == "fattree":
        host_bps = parse_rate_bps(topo.host_rate)
        if topo.oversubscription is not None:
            upper = max(1, round(host_bps / topo.oversubscription))
            ea = ac = upper
        else:
            ea = parse_rate_bps(topo.edge_agg_rate) if topo.edge_agg_rate else host_bps
            ac = parse_rate_bps(topo.agg_core_rate) if topo.agg_core_rate else host_bps
        tree = {"k": topo.k, "host_rate_bps": host_bps, "edge_agg_rate_bps": ea, "agg_core_rate_bps": ac,
                "link_delay_ns": parse_time_ns(topo.link_delay), "queue_packets": topo.queue}
        routes = []
        for i, f in enumerate(flows):
            t = s.transport[f["transport"]]
            mp = t.protocol == "mptcp"
            routes.append({"sender": f["sender"], "receiver": f["receiver"], "flow_id": i,
                           "subflows": t.subflows if mp else 1, "choice": t.path_choice if mp else "ecmp"})
        built = json.loads(_core.topology_json(json.dumps({"kind": "fattree", "tree": tree, "flows": routes})))
        flow_paths = built["flow_paths"]
    else:
        d = {"pairs": topo.pairs, "interfaces": topo.interfaces,
             "access_rate_bps": parse_rate_bps(topo.access_rate), "access_delay_ns": parse_time_ns(topo.access_delay),
             "bottleneck_rate_bps": parse_rate_bps(topo.bottleneck_rate),
             "bottleneck_delay_ns": parse_time_ns(topo.bottleneck_delay), "queue_packets": topo.queue}
        built = json.loads(_core.topology_json(json.dumps({"kind": "dumbbell", "dumbbell": d})))
        flow_paths = []
        for f in flows:
            t = s.transport[f["transport"]]
            n = topo.interfaces if t.protocol == "mptcp" else 1
            flow_paths.append([f["sender"] * topo.interfaces + m for m in range(n)])
    transports = [
        {"protocol": t.protocol, "scheduler": t.scheduler, "scheduler_params": {}, "cc": t.cc, "paths": [0],
         "backup_paths": [], "rcv_buf_bytes": parse_size_bytes(t.rcv_buf), "snd_buf_bytes": parse_size_bytes(t.snd_buf),
         "mss_bytes": 1448, "init_cwnd_segments": 10}
        for t in s.transport
    ]
    return {
        "seed": s.seed,
        "duration_ns": duration_ns,
        "links": built["links"],
        "paths": built["paths"],
        "transports": transports,
        "flows": [
            {"id": i, "transport": f["transport"], "start_ns": f["start_ns"], "direction": "download",
             "paths": flow_paths[i], "app": f["app"]}
            for i, f in enumerate(flows)
        ],
        "cross_traffic": [],
        "path_events": [],
        "record": {"sample_interval_ns": parse_time_ns(s.record_interval)},
    }


def run(s: DatacenterScenario | str | Path) -> dict[str, pl.DataFrame]:
    """Run a data-center scenario in the simulator; its tables as polars DataFrames. The
    flows table gains `sender`, `receiver` and `transport` columns (host indices and the
    transport's name)."""
    from mpsched.engines import run_config

    if not isinstance(s, DatacenterScenario):
        s = load(s)
    cfg = to_config(s)
    tables = run_config(cfg)
    out = {k: pl.DataFrame(v) for k, v in tables.items() if not k.startswith("_")}
    flows = _flows(s, parse_time_ns(s.duration))
    meta = pl.DataFrame({
        "flow_id": list(range(len(flows))),
        "sender": [f["sender"] for f in flows],
        "receiver": [f["receiver"] for f in flows],
        "transport": [s.transport[f["transport"]].name for f in flows],
    })
    out["flows"] = out["flows"].join(meta, on="flow_id", how="left")
    return out
