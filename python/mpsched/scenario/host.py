"""The endpoint timing model a user asks for: `[host_delay]` (`HostDelaySpec`)."""

from __future__ import annotations

from pydantic import model_validator

from mpsched.scenario.fields import FixedPositiveTime, FixedTime, _FieldError, _Model
from mpsched.scenario.units import parse_time_ns

#: The core's ceiling of the p99 (`crates/mpsched-sim/src/validate.rs`): a processing time.
MAX_HOST_DELAY_NS = 1_000_000_000


class HostDelaySpec(_Model):
    """Per-packet host processing delay: every segment that reaches an endpoint (client or
    server) is handled a log-normal time later, with this median and 99th percentile, never
    before a segment that reached the same endpoint earlier. `p99 = median` is a constant delay.
    `floor`: no delay is shorter; the delay is the floor plus a log-normal, the median and p99
    still being the whole delay's (unset or 0: a pure log-normal)."""

    median: FixedPositiveTime
    p99: FixedPositiveTime
    floor: FixedTime | None = None

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

    def to_config(self) -> dict[str, int]:
        """The core's `HostDelayConfig` (a zero floor is left out: the same config as none)."""
        config = {"median_ns": parse_time_ns(self.median), "p99_ns": parse_time_ns(self.p99)}
        if self.floor is not None and parse_time_ns(self.floor) > 0:
            config["floor_ns"] = parse_time_ns(self.floor)
        return config
