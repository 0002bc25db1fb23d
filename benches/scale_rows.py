"""What the scripts beside the scale bench share: a row argument, the line a row's child prints,
why it failed, how a profiler's source path is shown, and the interval of a median ratio.

The scale binary run as `--row=NAME --reps=N` prints one line, `packets cpu_s wall_s reps
peak_rss_bytes` (crates/mpsched-sim/benches/scale.rs, `run_row`); `growth_profile.py`,
`scale_ratio.py` and `scale_cache.py` read it here, so the format is known in one place on this side.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import PurePath

from scipy import stats

MIN_ROUNDS_FOR_INTERVAL = 6  # below, the order statistics give no 95 % interval
# A row child's environment: a panic is its one message line, with no backtrace (`failure`).
ROW_ENV = {**os.environ, "SCALE_CALLGRIND": "0", "RUST_BACKTRACE": "0"}


def row_arg(text: str) -> tuple[str, int]:
    """`NAME:REPS` as (name, reps), for argparse."""
    name, sep, reps = text.rpartition(":")
    if not sep or not name or not reps.isdigit() or int(reps) < 1:
        raise argparse.ArgumentTypeError(f"row {text!r}: write NAME:REPS, e.g. 'FatTree k=4 MPTCP:9'")
    return name, int(reps)


def positive(kind: type):
    """An argparse type: a positive `kind` (int or float), or one line saying what to give."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r}: give a positive {kind.__name__}")
        return value

    return parse


def median_interval(values: list[float]) -> tuple[float, float] | None:
    """Distribution-free 95 % interval of the median: the order statistics around it
    (`scipy.stats.quantile_test`); None below MIN_ROUNDS_FOR_INTERVAL values."""
    if len(values) < MIN_ROUNDS_FOR_INTERVAL:
        return None
    ci = stats.quantile_test(values, q=statistics.median(values), p=0.5).confidence_interval(0.95)
    return float(ci.low), float(ci.high)


def _row_fields(stdout: str) -> list[str] | None:
    """The five fields of a row child's last line, or None."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    fields = lines[-1].split() if lines else []
    return fields if len(fields) == 5 else None


def cpu_ns_per_packet(stdout: str) -> float | None:
    """CPU ns a packet (a hop on the FatTree rows) of the median repetition, from a row child's
    output; None if its last line is not the five fields it prints."""
    fields = _row_fields(stdout)
    if fields is None:
        return None
    return float(fields[1]) / max(int(fields[0]), 1) * 1e9


def packets(stdout: str) -> int | None:
    """The packets (FatTree: packet-hops) of a row child's run, or None as above."""
    fields = _row_fields(stdout)
    return int(fields[0]) if fields else None


def failure(stderr: str, returncode: int) -> str:
    """Why a row's child failed, in one line: the last it said (a panic's message comes before a
    note on backtraces), or its exit status. Run it with RUST_BACKTRACE=0."""
    said = [line for line in stderr.strip().splitlines() if line and not line.startswith("note:")]
    return said[-1] if said else f"exit {returncode}"


def check_row(binary: str | PurePath, row: str, tool: str) -> None:
    """Exits with one line, `tool: ` and the binary's own message, for a row the binary does not
    have: its `--build-only` run takes a second, before any long run."""
    p = subprocess.run([str(binary), f"--row={row}", "--build-only"], capture_output=True, text=True, env=ROW_ENV)
    if p.returncode != 0:
        sys.exit(f"{tool}: {failure(p.stderr, p.returncode)}")


def short_source(path: str) -> str:
    """A profiler's source path as the tables show it: from `crates/` on (ours), `library/`
    (std) or `mimalloc/` (the allocator), else the file's name (libc's and others'); a
    `:line` suffix is kept."""
    for anchor in ("/crates/", "/library/", "/mimalloc/"):
        if anchor in path:
            return anchor.strip("/") + "/" + path.split(anchor, 1)[1]
    return PurePath(path).name
