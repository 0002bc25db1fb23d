"""What a user writes about the paths between two hosts: `[[paths]]` (`PathSpec`, with `down` /
`up` overrides and rate schedules), `[[cross_traffic]]` and `[[path_events]]`.

Each model checks what can be checked inside its own table; checks across tables belong to
`mpsched.scenario.model.Scenario`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationInfo
from pydantic import field_validator, model_validator

from mpsched.scenario.fields import (
    Burst, FixedRate, FixedSize, FixedTime, ImpairmentPlace, Loss, Name, Overhead, PositiveTime, Queue, Rate, Time,
    _FieldError, _Model,
)
from mpsched.scenario.units import parse_time_ns


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
