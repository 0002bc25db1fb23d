"""What a user writes about the paths between two hosts: `[[paths]]` (`PathSpec`, with `down` /
`up` overrides and rate schedules), `[[cross_traffic]]` and `[[path_events]]`.

Each model checks what can be checked inside its own table; checks across tables belong to
`mpsched.scenario.model.Scenario`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, ValidationInfo
from pydantic import field_validator, model_validator

from mpsched.scenario.fields import (
    SWEEP_OTHER, Burst, FixedRate, FixedSize, FixedTime, ImpairmentPlace, Loss, Name, Overhead, PositiveTime, Queue,
    Rate, Time, TransmitterKind, _checked, _FieldError, _Model, _sweepable,
)
from mpsched.scenario.units import parse_fraction, parse_rate_bps, parse_time_ns


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
    #: Token-bucket depth (Linux tbf `burst`; tc's "32k" is "32KiB"); absent or "none": the
    #: link serialises every packet at its rate (htb on the kernel engine).
    burst: Burst | None = None
    #: Framing bytes per packet counted by the rate and the byte queue limit ("14B": Ethernet).
    overhead: Overhead | None = None
    #: Where loss, delay and jitter act: "after_queue" (the core's default) or "before_queue".
    impairments: ImpairmentPlace | None = None
    #: Without a `burst`: "serialise" (the core's default: a wire) or "htb" (Linux htb, the
    #: kernel engine's shaper of such a link, tc's default burst of 1600 B: a packet leaves while
    #: the class owes no tokens and is charged after). A `burst` makes the link a tbf either way.
    transmitter: TransmitterKind | None = None

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
    try:
        p = Path(v).expanduser()
        if not p.is_absolute():
            p = base / p
        if p.is_dir():
            raise ValueError(f"trace {str(p.absolute())!r} is a folder; give the trace file in it (one line per "
                             "packet delivery opportunity, in whole milliseconds)")
        if not p.is_file():
            raise ValueError(f"trace file not found: {str(p.absolute())!r} (a relative path is resolved against the "
                             "scenario file's folder)")
        return str(p.resolve(strict=True))
    except (OSError, RuntimeError) as e:  # a symlink loop, a name too long, no permission
        raise ValueError(f"trace file {v!r} cannot be used: {e}") from None


class PathSpec(LinkOverride):
    """A path between client and server: a link each way. Path-level settings apply to both
    directions; `down` / `up` override them for one direction.

    Delay is given either as `rtt` (split evenly between the directions) or as one-way `delay`.
    `jitter` is the one-way delay variation amplitude of each direction (an RTT of
    "200ms ± 150ms" is `rtt = "200ms"`, `jitter = "75ms"`).
    """

    name: Name
    rtt: Time | None = None
    #: The path carries the sender's TSO skbs whole (true: a veth testbed, where GSO
    #: super-packets of `tcp_tso_autosize` segments are queued, shaped and acknowledged as one
    #: packet) or every segment as a packet of its own (false, the simulator's default; the
    #: kernel engine keeps them whole unless the path is lossy).
    gso: bool | None = None
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


class CrossTrafficSpec(_Model):
    """Constant-bit-rate traffic (no congestion control) through one direction of a path."""

    path: Name
    direction: Literal["down", "up"] = "down"
    rate: Rate
    packet: FixedSize = 1500
    start: FixedTime = 0
    stop: FixedTime | None = None


#: Path event kinds and the fields each takes besides `kind`, `at`, `path` and `duration`.
EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "down": (),
    "blackhole": ("direction",),
    "loss_ramp": ("direction", "ramp", "from_loss", "to_loss"),
    "rtt_spike": ("direction", "extra_delay"),
    "rate_collapse": ("direction", "rate"),
}
#: Fields a kind cannot do without.
_EVENT_REQUIRED = {"loss_ramp": ("to_loss",), "rtt_spike": ("extra_delay",), "rate_collapse": ("rate",)}


def _event_kind(v: Any) -> str:
    if v not in EVENT_FIELDS:
        raise ValueError(f"unknown path event kind {v!r}; kinds: {', '.join(EVENT_FIELDS)}")
    return v


def concrete_event(data: dict[str, Any]) -> dict[str, Any]:
    """A `[[path_events]]` entry of an expanded run (plain data, one kind): the parameters of
    the other kinds a swept `kind` listed are dropped."""
    kind = data.get("kind")
    if not isinstance(kind, str):
        return data
    keep = {"at", "path", "kind", "up", "duration", *EVENT_FIELDS[kind]}
    return {k: v for k, v in data.items() if k in keep}


class PathEventSpec(_Model):
    """Something happening to a path at time `at`, undone `duration` later (recovery; without
    it the event lasts to the end of the run). Events compose: several may overlap on a path.

    * ``kind = "down"``: the client's interface goes away and comes back (hosts on the
      out-of-tree kernel's schedulers see it; upstream ``linux`` does not).
    * ``kind = "blackhole"``: every packet is silently lost; the hosts see no change.
    * ``kind = "loss_ramp"``: extra random loss rising linearly from `from_loss` (default 0) to
      `to_loss` over `ramp` (default 0: at once), then held.
    * ``kind = "rtt_spike"``: `extra_delay` more one-way delay on each affected direction
      (both directions: the RTT grows by twice `extra_delay`).
    * ``kind = "rate_collapse"``: the affected directions serialise at `rate`.

    `kind` sweeps: a list runs each kind in turn (give the parameters of all of them; each run
    keeps those of its kind). Impairments (all but ``down``) take `direction`: ``"both"`` (default), ``"down"`` (server to
    client) or ``"up"``. The original form without `kind`, ``up = false`` / ``up = true``,
    still takes a path down or brings it back.
    """

    at: FixedTime
    path: Name
    kind: Annotated[Any, BeforeValidator(_sweepable(_event_kind)), SWEEP_OTHER] | None = None
    up: bool | None = None
    duration: PositiveTime | None = None
    direction: Literal["both", "down", "up"] | None = None
    ramp: FixedTime | None = None
    from_loss: Annotated[Any, BeforeValidator(_checked(parse_fraction))] | None = None
    to_loss: Annotated[Any, BeforeValidator(_checked(parse_fraction))] | None = None
    extra_delay: PositiveTime | None = None
    rate: Annotated[Any, BeforeValidator(_checked(parse_rate_bps, positive=True))] | None = None

    @model_validator(mode="after")
    def _kind_fields(self) -> PathEventSpec:
        if self.kind is None:
            if self.up is None:
                raise _FieldError("kind", "a path event needs a kind (down, blackhole, loss_ramp, rtt_spike, "
                                  "rate_collapse), or up = true / false")
            for f in ("duration", *{f for fs in EVENT_FIELDS.values() for f in fs}):
                if getattr(self, f) is not None:
                    raise _FieldError(f, "an up = true / false event takes no other field; give a kind instead")
            return self
        if self.up is not None:
            raise _FieldError("up", "an event with a kind is undone by its duration, not by up; drop up")
        kinds = self.kind if isinstance(self.kind, list) else [self.kind]
        allowed = {f for k in kinds for f in EVENT_FIELDS[k]}
        for f in ("direction", "ramp", "from_loss", "to_loss", "extra_delay", "rate"):
            if f not in allowed and getattr(self, f) is not None:
                takes = ", ".join(sorted(allowed)) or "only at, path and duration"
                raise _FieldError(f, f"a {' / '.join(kinds)} event does not take this field; it takes {takes}")
        for k in kinds:
            for f in _EVENT_REQUIRED.get(k, ()):
                if getattr(self, f) is None:
                    raise _FieldError(f, f"a {k} event needs {f}")
        if "loss_ramp" in kinds and self.duration is not None and self.ramp is not None:
            if parse_time_ns(self.duration) < parse_time_ns(self.ramp):
                raise _FieldError("duration", "a loss ramp lasts at least its ramp")
        return self

    @property
    def end(self) -> Any:
        """The time the event is undone (`at` + `duration`) in ns, or None."""
        return None if self.duration is None else parse_time_ns(self.at) + parse_time_ns(self.duration)
