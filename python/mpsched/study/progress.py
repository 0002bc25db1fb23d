"""A rich progress bar for a study's runs, shared by the CLI and `mpsched.run(progress=True)`:
runs done of all, failed, running, runs per second, the simulated time of the run going on in
this process (a long run shows how far it is) and the time left."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import Iterator

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)
from rich.text import Text

from mpsched.study.simclock import SIM_CLOCK, SimClock

__all__ = ["SimTimeColumn", "StudyProgress", "run_progress"]


class SimTimeColumn(ProgressColumn):
    """The simulated time of the run going on in this process (`sim 12.5 s / 100 s`), read from
    the clock the core updates each time the bar redraws (rich redraws ten times a second)."""

    def __init__(self, clock: SimClock = SIM_CLOCK):
        super().__init__()
        self.clock = clock

    def render(self, task) -> Text:
        return Text(self.clock.text(), style="cyan")


class StudyProgress:
    """An `on_progress(done, total)` callback that also takes the failed and running counts
    (`status`) and draws them, with the rate of runs since the study started."""

    def __init__(self, bar: Progress | None, total: int):
        self.bar = bar
        self.task = bar.add_task("runs", total=total, failed=0, running=0, rate="") if bar else None
        self.started = time.perf_counter()
        self.first: int | None = None

    def __call__(self, done: int, total: int) -> None:
        self.status(done, total, 0, 0)

    def status(self, done: int, total: int, failed: int, running: int) -> None:
        if self.first is None:
            self.first = done  # runs found in the store: not counted in the rate
        if self.bar is None:
            return
        elapsed = time.perf_counter() - self.started
        ran = done - self.first
        rate = f"{ran / elapsed:.0f} runs/s" if ran and elapsed > 0 else ""
        self.bar.update(self.task, completed=done, total=total, failed=failed, running=running, rate=rate)


@contextmanager
def run_progress(total: int, console: Console | None = None) -> Iterator[StudyProgress]:
    """Yield a `StudyProgress` drawing a bar on a terminal (or a notebook); on anything else (a
    log file, a pipe) it draws nothing."""
    console = console or Console(file=sys.stderr)
    if not (console.is_terminal or console.is_jupyter):
        yield StudyProgress(None, total)
        return
    bar = Progress(TextColumn("[bold]runs"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("[red]{task.fields[failed]} failed[/] {task.fields[running]} running {task.fields[rate]}"),
                   SimTimeColumn(), TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), console=console)
    with bar:
        yield StudyProgress(bar, total)
