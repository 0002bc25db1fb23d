"""The builder of a `[topology]` of many hosts (a k-ary FatTree or a dumbbell, built by the core's
generator `crates/mpsched-sim/src/topology.rs`) and the traffic between its hosts, for the
topology step (`mpsched.scenario.network`): every flow with its own paths (the per-flow `paths`
override of `crates/mpsched-sim/src/config.rs`).

Workload kinds (`mpsched.scenario.workload.WorkloadSpec`), after `003_` §3.3 / §5 and Raiciu et al.
(SIGCOMM 2011, §4):

* ``query`` (2-20 KB), ``short_message`` (50 KB-1 MB), ``background`` (1-50 MB): senders
  (aggregators; by default pod 0 of the FatTree) send flows to receivers (workers; by default
  every other host), Poisson arrivals with mean gap `mean_gap` at each receiver, from a sender
  drawn at random; sizes uniform in the class's range, since `003_` gives only the ranges, or
  all of one `size` (`003_` Table 2's 70 KB flows).
  ``background`` without `mean_gap`: a `fraction` (default 0.5, as `003_` §5.2 loads half its
  workers) of the receivers each get one flow sending without end.
* ``empirical``: as ``query`` with sizes from `distribution` ``"dctcp"`` (web search), ``"vl2"``
  (data mining) or ``"fb"``: the CDFs of datacenter/empirical-traffic-gen (Apache-2.0, copied to
  `scenarios/data/datacenter-flowsize/` with their licence and provenance), sampled by inverting
  the piecewise-linear CDF as that repository's README describes.
* ``permutation``: every host sends without end to one other host, no host receiving twice.
* ``bulk`` on a dumbbell: each of `pairs` (default all) sends `count` endless flows from its
  sender to its receiver (one subflow per interface for MPTCP), all through the one bottleneck.

Random draws come from numpy's generator seeded with (run seed, workload index), so a scenario
and its seed always give the same flows. Each workload names a connection; MPTCP connections say
how many subflows a flow opens (`subflows`, default 8 as in Raiciu et al.) and how their paths
are chosen (`path_choice`: ``"ecmp"`` hashing or ``"core"``, one subflow per core path in turn as
`003_` does), so TCP and MPTCP flows mix in one run.

Each flow's hosts and class go to the `flows` table, each link's rate and tier to the `links`
table (`link_columns`; both as `Network.columns`), so link utilisation and FCT per class come
from the stored records alone (`mpsched.analysis.datacenter_summary`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mpsched import _core
from mpsched.scenario.fields import ScenarioError
from mpsched.scenario.topology import Network
from mpsched.scenario.units import parse_fraction, parse_rate_bps, parse_size_bytes, parse_time_ns

if TYPE_CHECKING:
    from mpsched.scenario.model import Scenario

__all__ = ["CLASSES", "DATA_DIR", "flow_size_cdf", "sample_sizes", "host_count", "partners", "flows", "build",
           "link_columns"]

#: The vendored flow-size distributions.
DATA_DIR = Path(__file__).resolve().parents[3] / "scenarios" / "data" / "datacenter-flowsize"
#: Flow-size ranges of the traffic classes of `003_` §3.3, bytes (KB = 1000 bytes).
CLASSES = {"query": (2_000, 20_000), "short_message": (50_000, 1_000_000), "background": (1_000_000, 50_000_000)}
_CDF_FILES = {"dctcp": "DCTCP_CDF", "vl2": "VL2_CDF", "fb": "FB_CDF"}
#: The random stream of ``pairing = "permutation"`` (beside the workloads' streams, which are
#: numbered by workload index, so adding a workload never moves the permutation).
_PAIRING_STREAM = 0x7A1F
#: Default subflows of an MPTCP flow on a topology: Raiciu et al. §4.1 find 8 enough to fill a
#: FatTree.
DEFAULT_SUBFLOWS = 8
#: Receivers loaded by background flows when no fraction is given (`003_` §5.2: half of them).
DEFAULT_BACKGROUND_FRACTION = 0.5


def flow_size_cdf(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(sizes in bytes, cumulative probabilities) of a vendored distribution: "dctcp", "vl2"
    or "fb"."""
    if name not in _CDF_FILES:
        raise ValueError(f"unknown flow-size distribution {name!r}; available: {', '.join(_CDF_FILES)}")
    rows = [line.split() for line in (DATA_DIR / _CDF_FILES[name]).read_text().splitlines() if line.strip()]
    return np.array([float(r[0]) for r in rows]), np.array([float(r[1]) for r in rows])


def sample_sizes(rng: np.random.Generator, n: int, *, size_class: str | None = None, cdf: str | None = None) -> np.ndarray:
    """`n` flow sizes in bytes (at least 1): uniform in a class's range, or drawn from an
    empirical CDF by inverse transform with linear interpolation between its points."""
    if size_class is not None:
        lo, hi = CLASSES[size_class]
        return rng.integers(lo, hi + 1, size=n)
    if cdf is None:
        raise ValueError("give a size class or a cdf")
    sizes, probs = flow_size_cdf(cdf)
    return np.maximum(1, np.rint(np.interp(rng.random(n), probs, sizes))).astype(np.int64)


def _derangement(rng: np.random.Generator, n: int) -> list[int]:
    """A permutation without fixed points (rejection sampling: about e tries on average)."""
    while True:
        p = rng.permutation(n)
        if n < 2 or all(int(p[i]) != i for i in range(n)):
            return [int(x) for x in p]


def host_count(s: Scenario) -> int:
    """Hosts of the topology: k^3/4 in a FatTree, the number of pairs on a dumbbell."""
    t = s.topology
    return int(t.k) ** 3 // 4 if t.kind == "fattree" else int(t.pairs)


def _error(field: str, message: str) -> ScenarioError:
    return ScenarioError(field, message)


def _hosts(w, wi: int, s: Scenario) -> tuple[list[int], list[int]]:
    """Senders and receivers of a workload: by default pod 0 sends to every other host."""
    n = host_count(s)
    pod = (int(s.topology.k) // 2) ** 2
    senders = list(w.senders) if w.senders is not None else list(range(pod))
    receivers = list(w.receivers) if w.receivers is not None else [h for h in range(n) if h not in senders]
    for field, hosts in (("senders", senders), ("receivers", receivers)):
        bad = [h for h in hosts if h >= n]
        if bad:
            raise _error(f"workload[{wi}].{field}", f"host {bad[0]} does not exist; the topology has {n} hosts (0 to {n - 1})")
        if not hosts:
            raise _error(f"workload[{wi}].{field}", "give at least one host")
    if len(set(senders)) == 1 and senders[0] in receivers:
        raise _error(f"workload[{wi}].receivers", f"host {senders[0]} is the only sender and also a receiver, "
                     "but a host does not send to itself; give another sender or leave it out of the receivers")
    return senders, receivers


def partners(s: Scenario) -> dict[int, int]:
    """Each host's one receiver under ``pairing = "permutation"``: a permutation of every host
    without fixed points, drawn from the run seed alone so all the run's paired workloads
    share it (no host receives from two senders)."""
    perm = _derangement(np.random.default_rng([int(s.seed), _PAIRING_STREAM]), host_count(s))
    return dict(enumerate(perm))


def _paired_senders(s: Scenario) -> None:
    """The paired workloads split the hosts: a host sends one of them only (003_ §4.1: a third
    of the hosts run the background, the others the short flows)."""
    seen: dict[int, int] = {}
    n = host_count(s)
    for wi, w in enumerate(s.workload):
        if w.pairing is None:
            continue
        for h in w.senders:
            if h >= n:
                raise _error(f"workload[{wi}].senders", f"host {h} does not exist; the topology has {n} hosts (0 to {n - 1})")
            if h in seen and seen[h] != wi:
                raise _error(f"workload[{wi}].senders", f"host {h} already sends workload[{seen[h]}]; with "
                             "pairing = \"permutation\" each host sends one workload to its partner, so the "
                             "paired workloads' senders must be disjoint")
            seen[h] = wi


def _size(w, rng: np.random.Generator, size_class: str | None) -> int:
    """One flow's size: `size`, uniform in `size_range`, or drawn from the class / distribution."""
    if w.size is not None:  # one size for every flow (003_ Table 2: 70 KB)
        return parse_size_bytes(w.size)
    if w.size_range is not None:  # 003_ §5.2.1: queries of 1-16 KB
        lo, hi = (parse_size_bytes(x) for x in w.size_range)
        return int(rng.integers(lo, hi + 1))
    return int(sample_sizes(rng, 1, size_class=size_class, cdf=w.distribution)[0])


def flows(s: Scenario) -> list[dict[str, Any]]:
    """Every flow of a concrete topology scenario, in start order: sender and receiver host,
    connection index, workload index, class, start and application."""
    duration_ns = parse_time_ns(s.duration)
    conn_index = {c.name: i for i, c in enumerate(s.connection)}
    out: list[dict[str, Any]] = []
    _paired_senders(s)
    pair = partners(s) if any(w.pairing is not None for w in s.workload) else {}
    for wi, w in enumerate(s.workload):
        rng = np.random.default_rng([int(s.seed), wi])
        start_ns = parse_time_ns(w.start)
        stop_ns = parse_time_ns(w.stop) if w.stop is not None else duration_ns
        if stop_ns <= start_ns:
            raise _error(f"workload[{wi}].stop", "the workload must stop after it starts (default stop: the duration)")
        base = {"connection": conn_index[w.connection] if w.connection is not None else 0, "workload": wi,
                "class": w.distribution if w.kind == "empirical" else w.kind}
        if w.nodelay is not None:  # else the engine's default for sized and endless flows (Nagle on)
            base["nodelay"] = w.nodelay
        endless = {"kind": "bulk", "stop_ns": stop_ns}
        if w.kind == "bulk":  # dumbbell pairs
            pairs = list(w.pairs) if w.pairs is not None else list(range(host_count(s)))
            for p in pairs:
                if p >= host_count(s):
                    raise _error(f"workload[{wi}].pairs", f"pair {p} does not exist; the dumbbell has {host_count(s)} pairs")
                out += [{**base, "sender": p, "receiver": p, "start_ns": start_ns, "app": dict(endless)}
                        for _ in range(int(w.count))]
        elif w.kind == "permutation":
            out += [{**base, "sender": src, "receiver": dst, "start_ns": start_ns, "app": dict(endless)}
                    for src, dst in enumerate(_derangement(rng, host_count(s)))]
        elif w.pairing is not None and w.kind == "background" and w.mean_gap is None:
            out += [{**base, "sender": h, "receiver": pair[h], "start_ns": start_ns, "app": dict(endless)}
                    for h in sorted(w.senders)]
        elif w.pairing is not None:  # Poisson arrivals per sender, each to its partner
            gap_ns = parse_time_ns(w.mean_gap)
            size_class = None if w.kind == "empirical" else w.kind
            for h in sorted(w.senders):
                at = start_ns
                while True:
                    at += int(rng.exponential(gap_ns))
                    if at >= stop_ns:
                        break
                    out.append({**base, "sender": h, "receiver": pair[h], "start_ns": at,
                                "app": {"kind": "sized", "size_bytes": _size(w, rng, size_class)}})
        elif w.kind == "background" and w.mean_gap is None:
            senders, receivers = _hosts(w, wi, s)
            fraction = parse_fraction(w.fraction) if w.fraction is not None else DEFAULT_BACKGROUND_FRACTION
            n = max(1, round(fraction * len(receivers)))
            chosen = sorted(int(x) for x in rng.choice(receivers, size=n, replace=False))
            for i, r in enumerate(chosen):
                src = [h for h in senders if h != r][i % len([h for h in senders if h != r])]
                out.append({**base, "sender": src, "receiver": r, "start_ns": start_ns, "app": dict(endless)})
        else:  # Poisson arrivals per receiver, sizes of a class or an empirical distribution
            senders, receivers = _hosts(w, wi, s)
            gap_ns = parse_time_ns(w.mean_gap)
            size_class = None if w.kind == "empirical" else w.kind
            for r in receivers:
                others = [h for h in senders if h != r]
                at = start_ns
                while others:
                    at += int(rng.exponential(gap_ns))
                    if at >= stop_ns:
                        break
                    size = _size(w, rng, size_class)  # the size is drawn before the sender
                    out.append({**base, "sender": others[int(rng.integers(len(others)))], "receiver": r,
                                "start_ns": at, "app": {"kind": "sized", "size_bytes": size}})
    out.sort(key=lambda f: f["start_ns"])  # stable: equal starts keep workload order
    return out


def _fattree(s: Scenario) -> dict[str, Any]:
    t = s.topology
    host_bps = parse_rate_bps(t.host_rate)
    if t.oversubscription is not None:
        # the tiers above the hosts run 1/ratio of the host rate
        ea = ac = max(1, round(host_bps / float(t.oversubscription)))
    else:
        ea = parse_rate_bps(t.edge_agg_rate) if t.edge_agg_rate is not None else host_bps
        ac = parse_rate_bps(t.agg_core_rate) if t.agg_core_rate is not None else host_bps
    return {"k": int(t.k), "host_rate_bps": host_bps, "edge_agg_rate_bps": ea, "agg_core_rate_bps": ac,
            "link_delay_ns": parse_time_ns(t.link_delay), "queue_packets": int(t.queue),
            "host_interfaces": int(t.interfaces)}


def build(s: Scenario) -> Network:
    """The network of a concrete topology scenario: the core builds links, paths and the routes
    of each flow; no back-to-back arrivals here."""
    fl = flows(s)
    t = s.topology
    conns = s.connection
    if t.kind == "fattree":
        routes = []
        for i, f in enumerate(fl):
            c = conns[f["connection"]]
            mp = c.protocol == "mptcp"
            routes.append({"sender": f["sender"], "receiver": f["receiver"], "flow_id": i,
                           "subflows": int(c.subflows or DEFAULT_SUBFLOWS) if mp else 1,
                           "choice": "explicit" if mp and (c.path_choice or "core") == "core" else "ecmp"})
        request = {"kind": "fattree", "tree": _fattree(s), "flows": routes}
    else:
        request = {"kind": "dumbbell", "dumbbell": {
            "pairs": int(t.pairs), "interfaces": int(t.interfaces),
            "access_rate_bps": parse_rate_bps(t.access_rate), "access_delay_ns": parse_time_ns(t.access_delay),
            "bottleneck_rate_bps": parse_rate_bps(t.bottleneck_rate),
            "bottleneck_delay_ns": parse_time_ns(t.bottleneck_delay), "queue_packets": int(t.queue)}}
    try:
        built = json.loads(_core.topology_json(json.dumps(request)))
    except ValueError as e:  # the core's own check (e.g. a k it cannot build)
        raise _error("topology", str(e)) from None
    if t.kind == "fattree":
        flow_paths = built["flow_paths"]
    else:
        m = int(t.interfaces)
        flow_paths = []
        for f in fl:
            c = conns[f["connection"]]
            n = min(m, int(c.subflows or m)) if c.protocol == "mptcp" else 1
            flow_paths.append([f["sender"] * m + j for j in range(n)])
    links = built["links"]
    # per flow (by flow_id): hosts, class (the workload kind, or an empirical distribution) and
    # connection name, so FCT per class comes from the stored records alone
    per_flow = {"flow_id": list(range(len(fl))), "sender": [f["sender"] for f in fl],
                "receiver": [f["receiver"] for f in fl], "class": [f["class"] for f in fl],
                "connection": [conns[f["connection"]].name for f in fl]}
    return Network(
        links=links,
        paths=built["paths"],
        transport_paths=[{"paths": [0], "backup_paths": []} for _ in conns],  # every flow has its own
        flows=[{"id": i, "transport": f["connection"], "start_ns": f["start_ns"], "direction": "download",
                "paths": flow_paths[i], "app": f["app"], **({"nodelay": f["nodelay"]} if "nodelay" in f else {})}
               for i, f in enumerate(fl)],
        columns={"flows": per_flow, "links": link_columns(links, parse_time_ns(s.duration))},
    )


def _tier(name: str) -> str:
    """The tier of a link from the core's names: "h3->e1" host, "e1->a0" edge_agg,
    "a0->c2" agg_core; on a dumbbell "bottleneck..." and access links."""
    ends = name.split("->")
    if len(ends) == 2:
        kinds = {ends[0][:1], ends[1][:1]}
        return "host" if "h" in kinds else "agg_core" if "c" in kinds else "edge_agg"
    return "bottleneck" if "bottleneck" in name else "access"


def link_columns(links: list[dict[str, Any]], duration_ns: int) -> dict[str, list]:
    """Per link (by name): `rate_bps`, `tier` and the run's `duration_ns`, so utilisation
    (bytes forwarded x 8 / (rate x duration)) needs no other file."""
    return {"link": [lk["name"] for lk in links], "rate_bps": [int(lk["rate_bps"]) for lk in links],
            "tier": [_tier(lk["name"]) for lk in links], "duration_ns": [int(duration_ns)] * len(links)}
