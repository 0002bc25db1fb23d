"""A path's `gso` on the kernel engine: whether the testbed carries the sender's TSO skbs whole
(the simulator's `PathConfig::gso`)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from mpsched.engines.kernel.errors import TestbedConfigError

if TYPE_CHECKING:
    from mpsched.engines.kernel.plan import LinkPlan


def lossy(lp: LinkPlan) -> bool:
    """The delayer drops or serves single packets on this link, so it segments GSO super-packets."""
    return lp.loss > 0 or lp.gilbert_elliott is not None or lp.trace is not None or lp.loss_ramp is not None


def with_gso(lp: LinkPlan, gso: bool | None, path: int) -> LinkPlan:
    """The path's `gso`: true keeps the sender's GSO super-packets whole through the delayer
    (NFQA_CFG_F_GSO) and the qdisc, as the testbed does by default; false segments them in
    the delayer. A lossy link is always segmented (loss hits single packets)."""
    if gso and lossy(lp):
        raise TestbedConfigError(f"paths[{path}].gso", "the kernel's delayer segments GSO super-packets on a link "
                                 "with loss or a trace (loss hits single packets): set gso = false on this path "
                                 "(or use the simulator)")
    if gso is False and not lp.needs_delayer:
        raise TestbedConfigError(f"paths[{path}].gso", "the testbed segments GSO super-packets in its delayer, "
                                 f"which the {lp.direction} link has no work for (no delay, jitter or loss): "
                                 "give it a delay, or use the simulator")
    return replace(lp, segment_gso=True) if gso is False else lp
