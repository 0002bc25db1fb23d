"""The topology step: a concrete scenario's network, built in one place for every topology.

A topology is the hosts, the links between them and the paths a flow can take. Two hosts joined
by n disjoint paths (`[[paths]]`, each a link each way) is one topology; a k-ary FatTree and a
dumbbell (`[topology]`, built by the core's generator `crates/mpsched-sim/src/topology.rs`) are
others. Each builder returns a `Network`: the links and paths of the core's run configuration,
the paths each connection may use, the flows placed on the hosts (each with its own paths where
the topology routes per flow), per-row columns for the record tables, and the engines that can
run it. Nothing downstream asks which topology it was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from mpsched.scenario import datacenter
from mpsched.scenario.fields import ScenarioError
from mpsched.scenario.flows import workload_flows
from mpsched.scenario.links import path_links
from mpsched.scenario.topology import Network
from mpsched.scenario.units import parse_time_ns

if TYPE_CHECKING:
    from mpsched.scenario.model import Scenario

__all__ = ["BUILDERS", "Network", "build", "engines_for", "check_engine", "topology_kind"]


def topology_kind(s: Scenario) -> str:
    """"paths" (two hosts, n disjoint paths), "fattree" or "dumbbell"."""
    return "paths" if s.topology is None else s.topology.kind


def _two_hosts(s: Scenario) -> Network:
    """Path `i` becomes links `2i` (down, server to client) and `2i+1` (up), named
    "<path>.down" / "<path>.up"; a connection uses the paths it names (TCP: the first)."""
    links: list[dict[str, Any]] = []
    paths: list[dict[str, Any]] = []
    for i, p in enumerate(s.paths):
        links += path_links(p, f"paths[{i}]")
        paths.append({"name": p.name, "down": [2 * i], "up": [2 * i + 1]})
        if p.gso is not None:
            paths[-1]["gso"] = p.gso
    index = {p.name: i for i, p in enumerate(s.paths)}
    transport_paths = []
    for c in s.connection:
        default = [p.name for p in s.paths][: 1 if c.protocol == "tcp" else None]
        transport_paths.append({"paths": [index[n] for n in (c.paths or default)],
                                "backup_paths": [index[n] for n in c.backup]})
    flows, chain = workload_flows(s, parse_time_ns(s.duration))
    columns = {}
    if any(c.backup for c in s.connection):  # which configuration ran: "linux" with a backup path is another
        backup = [",".join(c.backup) for c in s.connection]
        columns["flows"] = {"flow_id": [f["id"] for f in flows], "backup": [backup[f["transport"]] for f in flows]}
    return Network(links, paths, transport_paths, flows, chain, columns)


#: The one table of topologies: kind -> (builder, engines that can run it).
BUILDERS: dict[str, tuple[Callable[[Scenario], Network], tuple[str, ...]]] = {
    "paths": (_two_hosts, ("sim", "kernel")),
    "fattree": (datacenter.build, ("sim",)),
    "dumbbell": (datacenter.build, ("sim",)),
}


def build(s: Scenario) -> Network:
    """The network of a concrete scenario (raises `ScenarioError` for what only shows once units
    are resolved)."""
    builder, _ = BUILDERS[topology_kind(s)]
    return builder(s)


def engines_for(s: Scenario) -> tuple[str, ...]:
    """The engines that can run the scenario's topology."""
    return BUILDERS[topology_kind(s)][1]


def check_engine(s: Scenario, engine: str) -> None:
    """Refuse a topology the engine cannot emulate (before the engine's own checks of the
    machine, so the scenario's problem is the one reported)."""
    if engine not in engines_for(s):
        raise ScenarioError("topology", f"a [topology] of many hosts runs on the simulator only; the {engine} "
                            "engine emulates two hosts joined by one link per path direction ([[paths]])")
