"""A rich progress bar for a study's runs, shared by the CLI and `mpsched.run(progress=True)`."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

__all__ = ["run_progress"]


@contextmanager
def run_progress(total: int, console: Console | None = None) -> Iterator[Callable[[int, int], None]]:
    """Yield an `on_progress(done, total)` callback drawing a bar on a terminal (or a notebook);
    on anything else (a log file, a pipe) it draws nothing."""
    console = console or Console(file=sys.stderr)
    if not (console.is_terminal or console.is_jupyter):
        yield lambda done, total: None
        return
    bar = Progress(TextColumn("[bold]runs"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TextColumn("eta"), TimeRemainingColumn(), console=console)
    task = bar.add_task("runs", total=total)
    with bar:
        yield lambda done, total: bar.update(task, completed=done, total=total)
