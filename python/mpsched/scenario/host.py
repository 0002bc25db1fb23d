"""The endpoint timing model a user asks for: `[host_delay]` (`HostDelaySpec`)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, model_validator

from mpsched.scenario.fields import FixedPositiveTime, FixedTime, _checked, _FieldError, _Model
from mpsched.scenario.units import parse_fraction, parse_time_ns

#: A probability, not sweepable: `"1.4%"` or 0.014.
FixedProbability = Annotated[Any, BeforeValidator(_checked(parse_fraction, positive=True))]

#: The core's ceiling of the p99 (`crates/mpsched-sim/src/validate.rs`): a processing time.
MAX_HOST_DELAY_NS = 1_000_000_000


class HostStallSpec(_Model):
    """`[host_delay.stall]`: slow spells of a host. A share `probability` of the packets is
    stalled, in spells of `run_packets` packets on average (a two-state chain stepped per
    packet), and a stalled packet is handled a log-normal time with this median and p99 later
    instead of the body's (docs/testbed.md "Session 8: the ACKs' delay on the testbed")."""

    probability: FixedProbability
    median: FixedPositiveTime
    p99: FixedPositiveTime
    run_packets: int = 1

    @model_validator(mode="after")
    def _percentiles(self) -> HostStallSpec:
        if isinstance(self.run_packets, bool) or self.run_packets < 1:
            raise _FieldError("run_packets", f"must be a whole number of packets, at least 1, got {self.run_packets!r}")
        p = parse_fraction(self.probability)
        if p >= 1.0 or p / (1.0 - p) / self.run_packets > 1.0:
            raise _FieldError("probability", f"too high for spells of {self.run_packets} packets: "
                                             "probability / (1 - probability) / run_packets must be at most 1")
        p99 = parse_time_ns(self.p99)
        if p99 < parse_time_ns(self.median):
            raise _FieldError("p99", f"must be at least the stall's median ({self.median})")
        if p99 > MAX_HOST_DELAY_NS:
            raise _FieldError("p99", "at most 1s (a host's processing time, not a path delay)")
        return self

    def to_config(self) -> dict[str, int]:
        """The core's `HostStallConfig` (the probability in parts per million)."""
        per_million = max(1, round(parse_fraction(self.probability) * 1_000_000))
        return {"per_million": per_million, "run_packets": self.run_packets, "median_ns": parse_time_ns(self.median),
                "p99_ns": parse_time_ns(self.p99)}


class HostDelaySpec(_Model):
    """Per-packet host processing delay: every segment that reaches an endpoint (client or
    server) is handled a log-normal time later, with this median and 99th percentile, never
    before a segment that reached the same endpoint earlier. `p99 = median` is a constant delay.
    `floor`: no delay is shorter; the delay is the floor plus a log-normal, the median and p99
    still being the whole delay's (unset or 0: a pure log-normal). `stall`: rare long stalls
    instead of that delay (the median, p99 and floor are then the unstalled packets')."""

    median: FixedPositiveTime
    p99: FixedPositiveTime
    floor: FixedTime | None = None
    stall: HostStallSpec | None = None

    @model_validator(mode="after")
    def _percentiles(self) -> HostDelaySpec:
        p99 = parse_time_ns(self.p99)
        if p99 < parse_time_ns(self.median):
            raise _FieldError("p99", f"must be at least the median ({self.median})")
        if p99 > MAX_HOST_DELAY_NS:
            raise _FieldError("p99", "at most 1s (a host's processing time, not a path delay)")
        if self.floor is not None and parse_time_ns(self.floor) >= parse_time_ns(self.median):
            raise _FieldError("floor", f"must be below the median ({self.median}); 0 or unset for no floor")
        return self

    def to_config(self) -> dict[str, Any]:
        """The core's `HostDelayConfig` (a zero floor is left out: the same config as none)."""
        config: dict[str, Any] = {"median_ns": parse_time_ns(self.median), "p99_ns": parse_time_ns(self.p99)}
        if self.floor is not None and parse_time_ns(self.floor) > 0:
            config["floor_ns"] = parse_time_ns(self.floor)
        if self.stall is not None:
            config["stall"] = self.stall.to_config()
        return config
