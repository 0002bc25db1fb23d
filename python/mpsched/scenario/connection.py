"""What a user writes about the transport: `[connection]` / `[[connection]]` (`ConnectionSpec`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field
from pydantic import model_validator

from mpsched import registry
from mpsched.scenario.fields import (
    SWEEP_COUNT, SWEEP_SIZE, CcName, FixedSize, Flag, JoinTiming, LossRecovery, Name, Protocol, SchedulerName, Size, _count,
    _checked, _FieldError, _Model, _subflows, _sweepable,
)
from mpsched.scenario.units import parse_size_bytes

#: RFC 7323's largest window, `65535 << 14` bytes: no receiver can offer more, so no flight is
#: larger (the simulator's sequence offsets rely on a flight under 4 GiB).
MAX_RCV_BUF_BYTES = 65_535 << 14


_size = _checked(parse_size_bytes, positive=True)


def _rcv_buf(v: Any) -> Any:
    """A receive buffer: a positive size (as `Size` checks it), at most the largest window TCP
    can announce."""
    v = _size(v)
    n = parse_size_bytes(v)
    if n > MAX_RCV_BUF_BYTES:
        raise ValueError(f"{v!r} is {n} bytes, more than TCP's largest window ({MAX_RCV_BUF_BYTES} bytes = 65535 << 14, "
                         f"RFC 7323): no receiver can offer it; use \"1023MiB\" or less")
    return v


def _stale_loss_cnt(v: Any) -> int:
    """`net.mptcp.stale_loss_cnt`: 0 (never stale) to 255 (the core keeps it in a byte)."""
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 255:
        raise ValueError(f"stale_loss_cnt is a whole number from 0 (never stale) to 255, got {v!r}")
    return v


class ConnectionSpec(_Model):
    """Transport settings of the connections a workload opens (one fresh connection per flow).

    Defaults follow Linux: receive buffer 6 MiB and send buffer 4 MiB (the maxima of
    net.ipv4.tcp_rmem = "4096 131072 6291456" and tcp_wmem = "4096 16384 4194304"), MSS 1448 B
    (1500 B MTU minus IP, TCP and timestamp option), initial window 10 segments (RFC 6928).
    `rcv_buf_autotuning` (Linux dynamic right-sizing: the window starts at tcp_rmem[1] / 2 and
    grows with what the application reads, up to `rcv_buf`) and `join_timing` ("oot": joins at
    the SYN-ACK as the out-of-tree kernel; "fully_established": once the connection is fully
    established, as upstream Linux) are off / "oot" by default; the kernel engine always does
    the Linux thing. `loss_recovery`: "rack_tlp" (Linux's default since 4.18, RFC 8985) or
    "rfc6675" (DupThresh marking, a lost tail waits for the RTO).
    `stale_loss_cnt` is upstream Linux's ``net.mptcp.stale_loss_cnt`` (default 4): with the
    `linux` scheduler, a subflow without an ACK for more than this many MPTCP retransmission-
    timer periods is stale, avoided while another is active, its pending data sent again on
    the others; 0 never marks a subflow stale. Other schedulers ignore it.
    """

    name: Name = "main"
    protocol: Protocol = "mptcp"
    scheduler: SchedulerName = "minrtt"
    scheduler_params: dict[str, Any] = Field(default_factory=dict)
    cc: CcName = "cubic"
    paths: list[Name] | None = None
    backup: list[Name] = Field(default_factory=list)
    rcv_buf: Annotated[Any, BeforeValidator(_sweepable(_rcv_buf)), SWEEP_SIZE] = "6MiB"
    snd_buf: Size = "4MiB"
    mss: FixedSize = 1448
    init_cwnd: Annotated[Any, BeforeValidator(_count)] = 10
    rcv_buf_autotuning: Flag = False
    join_timing: JoinTiming = "oot"
    stale_loss_cnt: Annotated[Any, BeforeValidator(_sweepable(_stale_loss_cnt)), SWEEP_COUNT] = 4
    loss_recovery: LossRecovery = "rack_tlp"
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
