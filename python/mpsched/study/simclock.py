"""The simulated time of the run this process is running, for the progress bar: the core reports
it as the run goes (`engines.sim.run(progress=...)`), the bar reads it when it redraws, so a long
run shows how far it is (`sim 12.5 s / 100 s`). Runs in pool workers are not seen here."""

from __future__ import annotations

__all__ = ["SIM_CLOCK", "SimClock"]


class SimClock:
    """The latest (now_ns, duration_ns) a running simulation reported; (0, 0) between runs."""

    def __init__(self) -> None:
        # one tuple, replaced whole: a reader in another thread never sees half an update
        self.state = (0, 0)

    def report(self, now_ns: int, duration_ns: int) -> None:
        self.state = (now_ns, duration_ns)

    def clear(self) -> None:
        self.state = (0, 0)

    def text(self) -> str:
        """`sim 12.5 s / 100 s` while a run is reporting, else empty."""
        now_ns, duration_ns = self.state
        if not duration_ns:
            return ""
        return f"sim {_seconds(now_ns)} / {_seconds(duration_ns)}"


def _seconds(ns: int) -> str:
    s = ns / 1e9
    return f"{s:.3g} s" if s < 100 else f"{s:,.0f} s"


#: This process's clock (one simulator run at a time runs here).
SIM_CLOCK = SimClock()
