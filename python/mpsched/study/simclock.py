"""The simulated time of the runs going on, for the progress bar: the core reports it as a run
goes (`engines.sim.default_progress`), the bar reads it when it redraws, so a long run shows how
far it is (`sim 12.5 s / 100 s`). A local pool's workers write theirs into shared memory the
client reads (`pool_slots`); runs on other executors or a Dask cluster are not seen."""

from __future__ import annotations

from typing import Any

__all__ = ["SIM_CLOCK", "SimClock"]


class SimClock:
    """The latest (now_ns, duration_ns) the run of this process reported, (0, 0) between runs;
    plus, in a pool worker, a slot of shared memory it copies them to, and in the client, the
    pool's slots it reads."""

    def __init__(self) -> None:
        # one tuple, replaced whole: a reader in another thread never sees half an update
        self.state = (0, 0)
        self.slot: tuple[Any, int] | None = None  # (shared array, index): this worker's
        self.watched: Any = None  # the pool's shared array (client)

    def report(self, now_ns: int, duration_ns: int) -> None:
        self.state = (now_ns, duration_ns)
        if self.slot is not None:
            shared, i = self.slot
            shared[2 * i], shared[2 * i + 1] = now_ns, duration_ns

    def clear(self) -> None:
        self.report(0, 0)

    def pool_slots(self, ctx: Any, workers: int) -> tuple[Any, Any]:
        """Shared memory for a pool of `workers` (give it to `share` in each worker); this clock
        reads it until `unwatch`."""
        shared = ctx.Array("Q", 2 * workers, lock=False)
        self.watched = shared
        return shared, ctx.Value("i", 0)

    def share(self, slots: tuple[Any, Any]) -> None:
        """In a pool worker: take the next free slot of the client's shared memory."""
        shared, taken = slots
        with taken.get_lock():
            i = taken.value % (len(shared) // 2)
            taken.value += 1
        self.slot = (shared, i)

    def unwatch(self) -> None:
        self.watched = None

    def text(self) -> str:
        """`sim 12.5 s / 100 s` for the run with the most simulated time left, else empty."""
        runs = [self.state]
        shared = self.watched
        if shared is not None:
            values = shared[:]
            runs += list(zip(values[0::2], values[1::2]))
        runs = [r for r in runs if r[1]]
        if not runs:
            return ""
        now_ns, duration_ns = max(runs, key=lambda r: r[1] - r[0])
        return f"sim {_seconds(now_ns)} / {_seconds(duration_ns)}"


def _seconds(ns: int) -> str:
    s = ns / 1e9
    return f"{s:.3g} s" if s < 100 else f"{s:,.0f} s"


#: This process's clock (one simulator run at a time runs in a process).
SIM_CLOCK = SimClock()
