"""How the kernel testbed shapes a link: an htb class at the link's rate, or a tbf bucket when
the link has a `burst`; the framing a qdisc counts. Refuses what it cannot build, names what it
builds differently from the simulator's default (a link without a burst or `transmitter` is an
htb class here and a wire in the simulator: scenarios/README.md says why the default stays)."""

from __future__ import annotations

from typing import Any

from mpsched.engines.kernel.errors import TestbedConfigError

#: Framing a qdisc on a veth counts per packet: skb->len at egress includes the Ethernet header
#: (qdisc_pkt_len_init), so "overhead_bytes = 14" is what the kernel does natively.
KERNEL_OVERHEAD_BYTES = 14


def link_shaping(lk: dict[str, Any], where: str, kind: str, loss: bool, jitter: bool) -> tuple[int | None, int]:
    """The link's token bucket and framing overhead as the kernel builds them (refuses the rest).
    The delayer (NFQUEUE in FORWARD) acts before the egress qdisc; a constant delay commutes
    with a FIFO, so only loss and jitter make "after_queue" impossible here."""
    overhead = int(lk.get("overhead_bytes", 0))
    if overhead not in (0, KERNEL_OVERHEAD_BYTES):
        raise TestbedConfigError(f"{where}.overhead_bytes", f"a qdisc on a veth counts the {KERNEL_OVERHEAD_BYTES}-byte "
                                 f"Ethernet header of every packet, nothing else: overhead 14 (or 0, the limit "
                                 f"converted to frames) runs on the kernel engine, {overhead} only in the simulator")
    if lk.get("impairments") == "after_queue" and (loss or jitter):
        raise TestbedConfigError(f"{where}.impairments", "the kernel engine's delayer drops and delays packets before "
                                 "the router's queue: use impairments = 'before_queue' (or the simulator)")
    burst = lk.get("burst_bytes")
    if burst is None:
        if lk.get("transmitter") == "serialise":
            raise TestbedConfigError(f"{where}.transmitter", "the kernel engine shapes a link without a burst with an "
                                     "htb class, not a wire: use transmitter = 'htb' (or leave it out), or the simulator")
        return None, overhead
    if kind != "constant" or int(burst) < 1500 + KERNEL_OVERHEAD_BYTES:
        raise TestbedConfigError(f"{where}.burst_bytes", f"a tbf bucket needs a constant rate (no schedule or trace) "
                                 f"and must hold a full frame ({1500 + KERNEL_OVERHEAD_BYTES} B on a veth), got {burst}")
    return int(burst), overhead

