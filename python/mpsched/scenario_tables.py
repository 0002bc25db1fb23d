"""The tables of a scenario: one pydantic model per TOML table a user writes.

`[[paths]]` (`PathSpec`, with `down` / `up` overrides and rate schedules), `[connection]`
(`ConnectionSpec`), `[[workload]]` (`WorkloadSpec`), `[[cross_traffic]]`, `[[path_events]]`,
`[record]`, `[design]` and `[topology]`. Each model checks what can be checked inside its own table
(a field that only some kinds take, a missing rate, an unknown scheduler parameter); checks
across tables (names that refer to a path or connection, paths versus a topology) belong to
`mpsched.scenario.Scenario`, which assembles these and is where users import them from. Kept apart
so the scenario module reads as the whole scenario and its loading, this one as its parts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo
from pydantic import field_validator, model_validator

from mpsched import registry
from mpsched.fields import (
    SWEEP_COUNT, CcName, Count, FatTreeK, FixedRate, FixedSize, FixedTime, Flag, Fraction, JoinTiming, Loss, Name,
    PositiveTime, Protocol, Queue, Rate, Ratio, SchedulerName, Size, Time, _count, _FieldError, _seed, _subflows,
    _sweepable,
)
from mpsched.units import parse_time_ns


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _given(m: BaseModel) -> set[str]:
    """Fields of `m` that differ from their defaults (what the user set: `model_fields_set`
    would also count defaults written back by a sweep's expansion)."""
    return {n for n, f in type(m).model_fields.items() if getattr(m, n) != f.get_default(call_default_factory=True)}


# --- paths -------------------------------------------------------------------------------------


class RateStepSpec(_Model):
    """One step of a capacity schedule: from `at` on, the link runs at `rate` ("0" = down)."""

    at: FixedTime
    rate: FixedRate


class LinkOverride(_Model):
    """Settings of one direction of a path that differ from the path-level ones."""

    rate: Rate | None = None
    delay: Time | None = None
    jitter: Time | None = None
    jitter_mode: Literal["smooth", "reorder"] | None = None
    jitter_distribution: Literal["uniform", "normal"] | None = None
    jitter_period: PositiveTime | None = None
    queue: Queue | None = None
    loss: Loss | None = None
    trace: str | None = None
    trace_period: PositiveTime | None = None
    schedule: list[RateStepSpec] | None = None

    @field_validator("trace")
    @classmethod
    def _trace_exists(cls, v: str | None, info: ValidationInfo) -> str | None:
        return None if v is None else _resolve_trace(v, info)

    @field_validator("schedule")
    @classmethod
    def _schedule_ordered(cls, v: list[RateStepSpec] | None) -> list[RateStepSpec] | None:
        if v:
            times = [parse_time_ns(s.at) for s in v]
            for i in range(1, len(times)):
                if times[i] <= times[i - 1]:
                    raise _FieldError(f"[{i}].at", "schedule steps must be in increasing time order")
        return v


def _resolve_trace(v: str, info: ValidationInfo) -> str:
    """Resolve a trace path relative to the scenario file (or the working directory) and check
    the file exists; the absolute path is kept so an expanded run does not depend on its cwd."""
    base = Path((info.context or {}).get("base_dir", "."))
    p = Path(v).expanduser()
    if not p.is_absolute():
        p = base / p
    if not p.is_file():
        raise ValueError(f"trace file not found: {str(p.resolve())!r} (a relative path is resolved against the scenario file's folder)")
    return str(p.resolve())


class PathSpec(LinkOverride):
    """A path between client and server: a link each way. Path-level settings apply to both
    directions; `down` / `up` override them for one direction.

    Delay is given either as `rtt` (split evenly between the directions) or as one-way `delay`.
    `jitter` is the one-way delay variation amplitude of each direction (an RTT of
    "200ms ± 150ms" is `rtt = "200ms"`, `jitter = "75ms"`).
    """

    name: Name
    rtt: Time | None = None
    down: LinkOverride = Field(default_factory=LinkOverride)
    up: LinkOverride = Field(default_factory=LinkOverride)

    @model_validator(mode="after")
    def _complete(self) -> PathSpec:
        if self.rtt is not None and self.delay is not None:
            raise _FieldError("rtt", "give either rtt (round trip) or delay (one way), not both")
        for d in ("down", "up"):
            o: LinkOverride = getattr(self, d)
            if self.rtt is None and self.delay is None and o.delay is None:
                raise _FieldError("rtt", f"no delay for the {d} direction: set rtt, delay or {d}.delay")
            has_trace = (o.trace or self.trace) is not None
            if not has_trace and o.rate is None and self.rate is None:
                raise _FieldError("rate", f"no rate for the {d} direction: set rate, {d}.rate or a trace")
        return self


# --- connections, workload, the rest -------------------------------------------------------------


class ConnectionSpec(_Model):
    """Transport settings of the connections a workload opens (one fresh connection per flow).

    Defaults follow Linux: receive buffer 6 MiB and send buffer 4 MiB (the maxima of
    net.ipv4.tcp_rmem = "4096 131072 6291456" and tcp_wmem = "4096 16384 4194304"), MSS 1448 B
    (1500 B MTU minus IP, TCP and timestamp option), initial window 10 segments (RFC 6928).
    `rcv_buf_autotuning` (Linux dynamic right-sizing: the window starts at tcp_rmem[1] / 2 and
    grows with what the application reads, up to `rcv_buf`) and `join_timing` ("oot": joins at
    the SYN-ACK as the out-of-tree kernel; "fully_established": once the connection is fully
    established, as upstream Linux) are off / "oot" by default; the kernel engine always does
    the Linux thing.
    """

    name: Name = "main"
    protocol: Protocol = "mptcp"
    scheduler: SchedulerName = "minrtt"
    scheduler_params: dict[str, Any] = Field(default_factory=dict)
    cc: CcName = "cubic"
    paths: list[Name] | None = None
    backup: list[Name] = Field(default_factory=list)
    rcv_buf: Size = "6MiB"
    snd_buf: Size = "4MiB"
    mss: FixedSize = 1448
    init_cwnd: Annotated[Any, BeforeValidator(_count)] = 10
    rcv_buf_autotuning: Flag = False
    join_timing: JoinTiming = "oot"
    subflows: Annotated[Any, BeforeValidator(_sweepable(_subflows)), SWEEP_COUNT] | None = None
    path_choice: Literal["ecmp", "core"] | None = None

    @model_validator(mode="after")
    def _tcp_single_path(self) -> ConnectionSpec:
        protocols = self.protocol if isinstance(self.protocol, list) else [self.protocol]
        if "tcp" in protocols:
            if self.paths is not None and len(self.paths) != 1:
                raise _FieldError("paths", "plain TCP uses exactly one path (default: the first path)")
            if self.backup:
                raise _FieldError("backup", "plain TCP has no backup subflows")
        return self

    @model_validator(mode="after")
    def _params_known(self) -> ConnectionSpec:
        names = self.scheduler if isinstance(self.scheduler, list) else [self.scheduler]
        for n in names:
            if n.startswith("py:"):
                if self.scheduler_params:
                    raise _FieldError("scheduler_params", f"{n} is a Python class: it takes its settings in the "
                                      "class itself (the simulator creates it without arguments)")
                continue
            try:
                registry.check_scheduler_params(n, self.scheduler_params)
            except ValueError as e:
                raise _FieldError("scheduler_params", str(e)) from None
        return self


#: Workload kinds that move data between the hosts of a `[topology]` (`mpsched.datacenter`).
DATACENTER_KINDS = ("query", "short_message", "background", "empirical", "permutation")


class WorkloadSpec(_Model):
    """What the application does.

    * ``kind = "sized"``: flows of `size` bytes (sweepable), or of each of `sizes` in turn within
      one run, `repeat` times, each on a fresh connection. Arrivals: ``"periodic"`` (a flow
      every `interval`), ``"poisson"`` (exponential gaps with mean `mean_gap`, drawn from the
      run seed) or ``"back_to_back"`` (the next flow starts `gap` after the previous one ends;
      simulator only). With ``reuse_connection = true`` the transfers run one after another on
      one long-lived connection instead (back to back: each written once the previous one is
      acknowledged; periodic or poisson: each written at its arrival time); the flow record's
      `units` column counts them and the `blocks` table holds each transfer's times.
    * ``kind = "bulk"``: `count` flows sending without end from `start` until `stop` (default:
      the scenario duration).
    * ``kind = "web"``: page fetches as wget / curl do them, `repeat` times (periodic or poisson
      arrivals; one fetch needs no interval), each on a fresh connection: a request goes up, the
      object comes down, one object at a time. The page is a `page` preset (see
      `mpsched.workloads.PAGES`: the four pages of the CFS paper's Table 5 and a median web
      page), a single file of `size`, or a list of `objects` sizes.
    * ``kind = "cbr"``: `count` constant-bit-rate flows of `rate` in blocks of `block` bytes
      (8 KiB by default) from `start` until `stop`; each block's application delay is recorded.

    On a `[topology]` (see `mpsched.datacenter`): ``"query"`` (2-20 KB), ``"short_message"``
    (50 KB-1 MB) and ``"background"`` (1-50 MB) flows of `003_` §3.3 from `senders` to
    `receivers` with Poisson arrivals of mean `mean_gap` per receiver (``"background"`` without
    `mean_gap`: a `fraction` of the receivers each get one flow sending without end);
    ``"empirical"``: the same with sizes from `distribution` (``"dctcp"``, ``"vl2"``, ``"fb"``);
    ``"permutation"``: every host sends without end to one other host; ``"bulk"`` on a dumbbell:
    the `pairs` listed (default all) send without end through the bottleneck.
    """

    kind: Literal["sized", "bulk", "web", "cbr", "query", "short_message", "background", "empirical", "permutation"] = "sized"
    connection: Name | None = None
    direction: Literal["download", "upload"] = "download"
    size: Size | None = None
    sizes: list[FixedSize] | None = None
    repeat: Count = 1
    arrival: Literal["periodic", "poisson", "back_to_back"] = "periodic"
    interval: PositiveTime | None = None
    mean_gap: PositiveTime | None = None
    gap: Time | None = None
    start: FixedTime = 0
    stop: FixedTime | None = None
    count: Annotated[Any, BeforeValidator(_count)] = 1
    reuse_connection: bool = False
    page: Name | None = None
    objects: list[FixedSize] | None = None
    rate: Rate | None = None
    block: FixedSize | None = None
    distribution: Literal["dctcp", "vl2", "fb"] | None = None
    fraction: Fraction | None = None
    senders: list[Annotated[int, Field(ge=0)]] | None = None
    receivers: list[Annotated[int, Field(ge=0)]] | None = None
    pairs: list[Annotated[int, Field(ge=0)]] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> WorkloadSpec:
        if self.kind in DATACENTER_KINDS:
            return self._datacenter()
        for f in ("distribution", "fraction", "senders", "receivers") + (("pairs",) if self.kind != "bulk" else ()):
            if getattr(self, f) is not None:
                raise _FieldError(f, f"a {self.kind} workload does not take this field (it belongs to the "
                                  f"data-center kinds: {', '.join(DATACENTER_KINDS)})")
        if self.kind in ("web", "cbr"):
            return self._web_or_cbr()
        for f in ("page", "objects", "rate", "block"):
            if getattr(self, f) is not None:
                raise _FieldError(f, f"only a {'web' if f in ('page', 'objects') else 'cbr'} workload takes this field")
        if self.reuse_connection and self.kind != "sized":
            raise _FieldError("reuse_connection", "only a sized workload runs its transfers on one connection")
        if self.reuse_connection and self.gap is not None:
            raise _FieldError("gap", "transfers on one connection follow each other without a gap")
        if self.kind == "sized":
            if (self.size is None) == (self.sizes is None):
                raise _FieldError("size", "a sized workload needs exactly one of size (sweepable) or sizes (a list within one run)")
            if self.sizes is not None and not self.sizes:
                raise _FieldError("sizes", "give at least one size")
            if self.arrival == "periodic" and self.interval is None:
                raise _FieldError("interval", "periodic arrivals need an interval, e.g. interval = \"2s\"")
            if self.arrival == "poisson" and self.mean_gap is None:
                raise _FieldError("mean_gap", "poisson arrivals need a mean_gap, e.g. mean_gap = \"500ms\"")
            if self.gap is not None and self.arrival != "back_to_back":
                raise _FieldError("gap", "gap is the pause between back-to-back flows; use interval or mean_gap here")
        else:
            for f in ("size", "sizes", "interval", "mean_gap", "gap"):
                if getattr(self, f) is not None:
                    raise _FieldError(f, "only a sized workload takes this field")
        return self

    def _datacenter(self) -> WorkloadSpec:
        """Flows between the hosts of a topology: Poisson arrivals per receiver, or without end."""
        allowed = {"kind", "connection", "start", "stop", "mean_gap", "senders", "receivers", "direction"}
        allowed |= {"empirical": {"distribution"}, "background": {"fraction"}}.get(self.kind, set())
        if self.kind in ("query", "short_message", "background"):
            allowed |= {"size"}  # every flow of this size instead of the class's range
        if self.kind == "permutation":
            allowed -= {"mean_gap", "senders", "receivers"}
        for f in sorted(_given(self) - allowed, key=list(type(self).model_fields).index):
            raise _FieldError(f, f"a {self.kind} workload does not take this field; it takes "
                              f"{', '.join(sorted(allowed - {'kind'}))}")
        if self.direction != "download":
            raise _FieldError("direction", "data-center flows go from sender to receiver; choose them with senders / receivers")
        if self.kind == "empirical" and self.distribution is None:
            raise _FieldError("distribution", "an empirical workload needs a distribution: \"dctcp\" (web search), "
                              "\"vl2\" (data mining) or \"fb\"")
        if self.kind in ("query", "short_message", "empirical") and self.mean_gap is None:
            raise _FieldError("mean_gap", f"{self.kind} flows arrive as a Poisson process per receiver; give its "
                              "mean_gap, e.g. mean_gap = \"200ms\"")
        if self.kind == "background" and self.mean_gap is None and self.size is not None:
            raise _FieldError("size", "endless background flows have no size; give mean_gap for Poisson background "
                              "flows of this size")
        if self.kind == "background" and self.mean_gap is not None and self.fraction is not None:
            raise _FieldError("fraction", "background flows are either Poisson (mean_gap) or one endless flow to a "
                              "fraction of the receivers, not both")
        return self

    def _web_or_cbr(self) -> WorkloadSpec:
        allowed = {"web": {"size", "interval", "mean_gap", "page", "objects"}, "cbr": {"rate", "block"}}[self.kind]
        for f in ("size", "sizes", "interval", "mean_gap", "gap", "page", "objects", "rate", "block"):
            if f not in allowed and getattr(self, f) is not None:
                raise _FieldError(f, f"a {self.kind} workload does not take this field")
        if self.reuse_connection:
            raise _FieldError("reuse_connection", "only a sized workload runs its transfers on one connection")
        if self.kind == "cbr":
            if self.rate is None:
                raise _FieldError("rate", "a cbr workload needs a rate, e.g. rate = \"4Mbit\"")
            return self
        given = [f for f in ("page", "size", "objects") if getattr(self, f) is not None]
        if len(given) != 1:
            raise _FieldError("page", "a web workload needs exactly one of page (a preset), size (one file) or objects (a list)")
        if self.objects is not None and not self.objects:
            raise _FieldError("objects", "give at least one object size")
        if self.page is not None:
            from mpsched.workloads import PAGES

            if self.page not in PAGES:
                raise _FieldError("page", f"unknown page {self.page!r}; presets: {', '.join(PAGES)}")
        if self.direction != "download":
            raise _FieldError("direction", "a web page is a download")
        if self.arrival == "back_to_back":
            raise _FieldError("arrival", "web fetches arrive periodically or as a Poisson process")
        if self.arrival == "periodic" and self.interval is None and self.repeat != 1:
            raise _FieldError("interval", "periodic arrivals need an interval, e.g. interval = \"2s\"")
        if self.arrival == "poisson" and self.mean_gap is None:
            raise _FieldError("mean_gap", "poisson arrivals need a mean_gap, e.g. mean_gap = \"500ms\"")
        return self


class CrossTrafficSpec(_Model):
    """Constant-bit-rate traffic (no congestion control) through one direction of a path."""

    path: Name
    direction: Literal["down", "up"] = "down"
    rate: Rate
    packet: FixedSize = 1500
    start: FixedTime = 0
    stop: FixedTime | None = None


class PathEventSpec(_Model):
    """A path going down (`up = false`) or coming back (`up = true`) at time `at`."""

    at: FixedTime
    path: Name
    up: bool


class RecordSpec(_Model):
    """Sampling interval of the time series ("0" turns them off)."""

    interval: FixedTime = "10ms"


class DesignSpec(_Model):
    """A space-filling design over continuous fields (scipy.stats.qmc): `samples` points drawn
    in `ranges` (field label -> [low, high], labels as in result columns: "lte.rate",
    "wlan.rtt", "rcv_buf", ...), each run at one point. `log` lists the labels drawn on a log
    scale. Combines with list sweeps: every point runs for every combination of the lists."""

    kind: Literal["sobol", "lhs", "halton", "random"] = "sobol"
    samples: Annotated[Any, BeforeValidator(_count)]
    seed: Annotated[Any, BeforeValidator(_seed)] = 0
    ranges: dict[str, list[Any]] = Field(min_length=1)
    log: list[str] = Field(default_factory=list)


class TopologySpec(_Model):
    """Many hosts instead of two (`mpsched.datacenter`; links and routes built by the core,
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
