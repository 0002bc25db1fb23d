#!/usr/bin/env python3
"""Where the time a packet grows between two rows of the scale bench, by source line.

    benches/growth_profile.py SCALE_BIN "dumbbell 100 flows:21" "dumbbell 10000 flows:3" [--top 40]

Runs each row once under `perf record -e cpu-clock` (a software clock: it needs no hardware
counters, which this VM does not expose), splits each row's samples by source line
(`perf report --sort srcline`), turns each line's share into nanoseconds a packet (a hop on the
FatTree rows) with the CPU time and packet count the row prints, and lists the lines whose cost
grows most from the first row to the second. A sample lands a few instructions after the one
that stalled (skid), so a line names where a stall shows, not always the load that caused it;
read `perf annotate` of the function for the instruction before it.

The scale binary is `cargo bench -p mpsched-sim --bench scale --no-run`'s (target/*/release/deps/
scale-<hash>); build it with debug line tables (the bench profile has them) for lines to resolve.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from scale_rows import ROW_ENV, cpu_ns_per_packet, failure, row_arg, short_source


def profile(binary: str, row: str, reps: int, out_dir: Path, hz: int) -> tuple[float, dict[str, float]]:
    """(ns a packet of the row's median repetition, ns a packet by source line)."""
    data = out_dir / f"{row.replace(' ', '_').replace('=', '')}.data"
    run = subprocess.run(
        ["perf", "record", "-q", "-e", "cpu-clock", "-F", str(hz), "-o", str(data), binary, f"--row={row}", f"--reps={reps}"],
        env=ROW_ENV, capture_output=True, text=True,
    )
    ns_per_packet = cpu_ns_per_packet(run.stdout)
    if run.returncode != 0 or ns_per_packet is None:
        sys.exit(f"growth_profile: the row {row!r} failed: {failure(run.stderr, run.returncode)}")
    report = subprocess.run(
        ["perf", "report", "-i", str(data), "--no-children", "--sort", "srcline", "--full-source-path", "--stdio", "-g", "none"],
        capture_output=True, text=True, check=True,
    ).stdout
    by_line: dict[str, float] = {}
    for text in report.splitlines():
        parts = text.split()
        if len(parts) >= 2 and parts[0].endswith("%"):
            share = float(parts[0].rstrip("%")) / 100
            line = short_source(parts[1])
            by_line[line] = by_line.get(line, 0.0) + share * ns_per_packet
    return ns_per_packet, by_line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary", help="the scale bench binary")
    parser.add_argument("small", type=row_arg, help="the smaller row, NAME:REPS")
    parser.add_argument("large", type=row_arg, help="the larger row, NAME:REPS")
    parser.add_argument("--top", type=int, default=40, help="lines to list (default 40)")
    parser.add_argument("--hz", type=int, default=2000, help="samples a second (default 2000)")
    args = parser.parse_args()
    if shutil.which("perf") is None:
        sys.exit("growth_profile: `perf` is not installed (Debian: apt-get install linux-perf)")
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"growth_profile: {args.binary} is not an executable scale bench binary")
    with tempfile.TemporaryDirectory(prefix="growth-profile.") as tmp:
        small_ns, small = profile(args.binary, *args.small, Path(tmp), args.hz)
        large_ns, large = profile(args.binary, *args.large, Path(tmp), args.hz)
    print(f"{args.small[0]}: {small_ns:.1f} ns a packet; {args.large[0]}: {large_ns:.1f} ns "
          f"({large_ns / small_ns:.2f}x)")
    print(f"{'growth':>7} {'small':>7} {'large':>7}  source line (ns a packet)")
    for line in sorted(set(small) | set(large), key=lambda l: small.get(l, 0) - large.get(l, 0))[: args.top]:
        s, g = small.get(line, 0.0), large.get(line, 0.0)
        print(f"{g - s:7.1f} {s:7.1f} {g:7.1f}  {line}")


if __name__ == "__main__":
    main()
