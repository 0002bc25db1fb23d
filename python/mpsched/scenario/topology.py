"""What a user writes about a network of many hosts, `[topology]` (`TopologySpec`), and what any
topology builds into (`Network`).

Two hosts joined by n disjoint paths is the default topology (`[[paths]]`, `mpsched.scenario.paths`);
the network of either is built by one step, `mpsched.scenario.network`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator
from pydantic import model_validator

from mpsched.scenario.fields import (
    SWEEP_COUNT, Count, FatTreeK, Rate, Ratio, Time, _FieldError, _given, _Model, _subflows, _sweepable,
)


class TopologySpec(_Model):
    """Many hosts instead of two (`mpsched.scenario.datacenter`; links and routes built by the core,
    crates/mpsched-sim/src/topology.rs).

    * ``kind = "fattree"``: a k-ary FatTree (k^3/4 hosts; k = 4 is the 16-host tree of `003_`),
      `host_rate` on host-edge links, `edge_agg_rate` and `agg_core_rate` above them (default:
      the host rate) or one `oversubscription` ratio for both; every link has `link_delay` and a
      drop-tail queue of `queue` packets. With `interfaces = n` every host has n interfaces:
      host-edge and edge-aggregation links are n parallel links and subflow s uses copy
      s mod n (`003_`'s setting: one interface, and one core switch, per subflow).
    * ``kind = "dumbbell"``: `pairs` sender/receiver pairs, each host with `interfaces` access
      links (`access_rate`, `access_delay`), all through one bottleneck (`bottleneck_rate`,
      `bottleneck_delay`, `queue` packets).
    """

    kind: Literal["fattree", "dumbbell"]
    k: FatTreeK = 4
    host_rate: Rate = "100Mbit"
    edge_agg_rate: Rate | None = None
    agg_core_rate: Rate | None = None
    oversubscription: Ratio | None = None
    link_delay: Time = "20us"
    queue: Count = 100
    pairs: Count = 2
    interfaces: Annotated[Any, BeforeValidator(_sweepable(_subflows)), SWEEP_COUNT] = 1
    access_rate: Rate = "1Gbit"
    access_delay: Time = "1ms"
    bottleneck_rate: Rate = "20Mbit"
    bottleneck_delay: Time = "10ms"

    @model_validator(mode="after")
    def _fields_of_kind(self) -> TopologySpec:
        fattree = {"k", "host_rate", "edge_agg_rate", "agg_core_rate", "oversubscription", "link_delay"}
        dumbbell = {"pairs", "access_rate", "access_delay", "bottleneck_rate", "bottleneck_delay"}
        other = dumbbell if self.kind == "fattree" else fattree
        fattree, dumbbell = fattree | {"interfaces"}, dumbbell | {"interfaces"}
        for f in sorted(_given(self) & other, key=list(type(self).model_fields).index):
            raise _FieldError(f, f"a {self.kind} does not take this field; it takes "
                              f"{', '.join(sorted((fattree if self.kind == 'fattree' else dumbbell) | {'queue'}))}")
        if self.oversubscription is not None and (self.edge_agg_rate is not None or self.agg_core_rate is not None):
            raise _FieldError("oversubscription", "give either per-tier rates (edge_agg_rate, agg_core_rate) or an "
                              "oversubscription ratio, not both")
        return self


@dataclass(frozen=True)
class Network:
    """A built topology with its flows placed (`mpsched.scenario.network.build`)."""

    links: list[dict[str, Any]]
    paths: list[dict[str, Any]]
    #: per connection: {"paths": [...], "backup_paths": [...]} (indices into `paths`)
    transport_paths: list[dict[str, list[int]]]
    flows: list[dict[str, Any]]
    chain: list[dict[str, int]] = field(default_factory=list)
    #: columns added to record tables, by table; the first column is the key matched against the
    #: engine's table (e.g. {"flows": {"flow_id": [...], "sender": [...]}})
    columns: dict[str, dict[str, list]] = field(default_factory=dict)
