"""What the scripts beside the scale bench share: a row argument, the line a row's child prints,
why it failed, and how a profiler's source path is shown.

The scale binary run as `--row=NAME --reps=N` prints one line, `packets cpu_s wall_s reps
peak_rss_bytes` (crates/mpsched-sim/benches/scale.rs, `run_row`); `growth_profile.py`,
`scale_ratio.py` and `scale_cache.py` read it here, so the format is known in one place on this side.
"""

from __future__ import annotations

import argparse
from pathlib import PurePath


def row_arg(text: str) -> tuple[str, int]:
    """`NAME:REPS` as (name, reps), for argparse."""
    name, sep, reps = text.rpartition(":")
    if not sep or not name or not reps.isdigit() or int(reps) < 1:
        raise argparse.ArgumentTypeError(f"row {text!r}: write NAME:REPS, e.g. 'FatTree k=4 MPTCP:9'")
    return name, int(reps)


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


def short_source(path: str) -> str:
    """A profiler's source path as the tables show it: from `crates/` on (ours), `library/`
    (std) or `mimalloc/` (the allocator), else the file's name (libc's and others'); a
    `:line` suffix is kept."""
    for anchor in ("/crates/", "/library/", "/mimalloc/"):
        if anchor in path:
            return anchor.strip("/") + "/" + path.split(anchor, 1)[1]
    return PurePath(path).name
