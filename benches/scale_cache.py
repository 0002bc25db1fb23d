#!/usr/bin/env python3
"""What a packet of a scale-bench row costs in a fixed cache model: instructions, L1 misses and
misses beyond a 512 KiB L2, a packet (a hop on the FatTree rows), whatever the host's load.

    benches/scale_cache.py SCALE_BIN "FatTree k=4 MPTCP" "FatTree k=8 MPTCP"
    benches/scale_cache.py SCALE_BIN "FatTree k=8 MPTCP" --against OTHER_SCALE_BIN --files 12

Issue 17's time targets are ratios between rows, and the rows that outgrow the caches move on
this machine with the share of the last-level cache that other guests leave us (benches/
RESULTS.md, sessions 19-21): a layout change of a few per cent gives a tie however many rounds
are timed. Cachegrind counts a run in a cache model that the host's load does not touch. Each row runs once under
`valgrind --tool=cachegrind` with an L1 of 32 KiB and a last level of 512 KiB (8-way, 64-byte
lines: one core's L1d and L2 on this host, `lscpu -C`), and once with `--build-only`, whose
counts are taken off, so what is left is the simulation's. A miss beyond the 512 KiB level is
a line that comes from the L3 or memory: what grows with a study's size.

The counts are not bit-exact across runs: where the allocator and std's hash maps put things
moves a little from run to run, and with it which lines conflict in the model. Measured
(Session 21): FatTree k=8 within 0.2 % over three runs (113.97-114.21 M misses beyond L2), but
k=4's small count ranged 0.81-1.05 a hop over six; compare rows whose counts are large.

A count, not a time: misses that a core overlaps (independent loads, as a loop over a
connection's subflows makes) cost less than the count says, and work added to save them can
cost more. Two changes that cut the count by 4 % and 11 % at k=8 timed as ties or slower
(Session 21): confirm a lead with paired timing before keeping it.

With `--against`, the same rows of a second binary, and the differences; `--files N` lists the
N source files with the most misses beyond L2 a packet (the largest differences with
`--against`). Cachegrind runs this code ~50-80x slower than native: FatTree k=8 takes ~1.5 min,
k=12 ~5 min. The scale binary is `cargo bench -p mpsched-sim --bench scale --no-run`'s.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from scale_rows import ROW_ENV, check_row, failure, packets, short_source

# The cache model: fixed, so that the counts do not depend on the host they are taken on.
MODEL = ("--I1=32768,8,64", "--D1=32768,8,64", "--LL=524288,8,64")
# A failing row says why in one line, not a backtrace (`failure`).
# The figures, each a sum of cachegrind events.
FIGURES = {
    "instructions": ("Ir",),
    "L1 misses": ("D1mr", "D1mw"),
    "beyond L2": ("DLmr", "DLmw"),
}


@dataclass
class Counts:
    """Cachegrind's events of one run, by source file."""

    events: list[str] = field(default_factory=list)
    by_file: dict[str, list[int]] = field(default_factory=dict)

    def figure(self, name: str, file: str | None = None) -> int:
        rows = [self.by_file.get(file, [])] if file is not None else list(self.by_file.values())
        index = [self.events.index(e) for e in FIGURES[name]]
        return sum(row[i] for row in rows if row for i in index)

    def minus(self, other: Counts) -> Counts:
        width = len(self.events)
        files = set(self.by_file) | set(other.by_file)
        zero = [0] * width
        return Counts(
            self.events,
            {f: [a - b for a, b in zip(self.by_file.get(f, zero), other.by_file.get(f, zero))] for f in files},
        )


def read_counts(path: Path) -> Counts:
    """A cachegrind output file's counts, summed by source file (`fl=` blocks)."""
    counts = Counts()
    sums: dict[str, list[int]] = defaultdict(list)
    current = None
    for line in path.read_text().splitlines():
        if line.startswith("events:"):
            counts.events = line.split()[1:]
        elif line.startswith("fl="):
            current = short_source(line[3:])
        elif current is not None and line[:1].isdigit():
            values = [int(v) for v in line.split()[1:]]
            total = sums[current]
            if len(total) < len(counts.events):
                total.extend([0] * (len(counts.events) - len(total)))
            for i, v in enumerate(values):
                total[i] += v
    counts.by_file = dict(sums)
    return counts


def cachegrind(binary: Path, args: list[str], out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=yes", f"--cachegrind-out-file={out}", *MODEL, str(binary), *args],
        capture_output=True, text=True, env=ROW_ENV,
    )


def measure(binary: Path, row: str, work: Path) -> tuple[int, Counts]:
    """(packets, the row's counts less its configuration's build) of one repetition."""
    run_out, build_out = work / "run.cg", work / "build.cg"
    ran = cachegrind(binary, [f"--row={row}", "--reps=1"], run_out)
    n = packets(ran.stdout)
    if ran.returncode != 0 or n is None:
        sys.exit(f"scale_cache: row {row!r} of {binary} failed under cachegrind: {failure(ran.stderr, ran.returncode)}")
    built = cachegrind(binary, [f"--row={row}", "--build-only"], build_out)
    if built.returncode != 0:
        sys.exit(f"scale_cache: row {row!r} of {binary} --build-only failed: {failure(built.stderr, built.returncode)}")
    return n, read_counts(run_out).minus(read_counts(build_out))


def per_packet(counts: Counts, n: int, name: str, file: str | None = None) -> float:
    return counts.figure(name, file) / max(n, 1)


def report(row: str, mine: tuple[int, Counts], other: tuple[int, Counts] | None, files: int) -> None:
    n, counts = mine
    unit = "packet-hops; figures a hop" if "FatTree" in row else "packets; figures a packet"
    print(f"\n### {row} ({n:,} {unit})\n".replace(",", " "))
    if other is None:
        print("| figure | SCALE_BIN |\n|---|---|")
        for name in FIGURES:
            print(f"| {name} | {per_packet(counts, n, name):.2f} |")
    else:
        m, theirs = other
        print("| figure | SCALE_BIN | --against | difference |\n|---|---|---|---|")
        for name in FIGURES:
            a, b = per_packet(counts, n, name), per_packet(theirs, m, name)
            print(f"| {name} | {a:.2f} | {b:.2f} | {b - a:+.2f} ({(b / a - 1) * 100 if a else 0:+.1f} %) |")
    if files <= 0:
        return
    names = set(counts.by_file) | (set(other[1].by_file) if other else set())
    if other is None:
        ranked = sorted(names, key=lambda f: -counts.figure("beyond L2", f))
        print("\n| source file | beyond L2 | L1 misses |\n|---|---|---|")
        for f in ranked[:files]:
            print(f"| {f} | {per_packet(counts, n, 'beyond L2', f):.3f} | {per_packet(counts, n, 'L1 misses', f):.3f} |")
    else:
        m, theirs = other

        def change(f: str) -> float:
            return per_packet(theirs, m, "beyond L2", f) - per_packet(counts, n, "beyond L2", f)

        print("\n| source file | beyond L2, SCALE_BIN | --against | difference |\n|---|---|---|---|")
        for f in sorted(names, key=lambda f: -abs(change(f)))[:files]:
            print(f"| {f} | {per_packet(counts, n, 'beyond L2', f):.3f} | {per_packet(theirs, m, 'beyond L2', f):.3f} | {change(f):+.3f} |")


def files_arg(text: str) -> int:
    """`--files N`: a whole number, 0 or more."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: give how many files to list, 0 or more")
    return int(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scale_bin", type=Path, help="the scale bench binary")
    parser.add_argument("rows", nargs="+", help="row names, e.g. 'FatTree k=8 MPTCP'")
    parser.add_argument("--against", type=Path, help="a second scale binary: its counts and the differences")
    parser.add_argument("--files", type=files_arg, default=0, help="list this many source files by misses beyond L2")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("scale_cache: valgrind is not installed (Debian: apt-get install valgrind)")
    binaries = [args.scale_bin] + ([args.against] if args.against else [])
    for binary in binaries:
        if not binary.is_file():
            sys.exit(f"scale_cache: no scale binary at {binary} (cargo bench -p mpsched-sim --bench scale --no-run)")
        for row in args.rows:
            check_row(binary, row, "scale_cache")
    print(f"Cache model: {' '.join(MODEL)} (cachegrind; counts less the row's --build-only run)")
    try:
        with tempfile.TemporaryDirectory(prefix="scale_cache.") as tmp:
            for row in args.rows:
                mine = measure(args.scale_bin, row, Path(tmp))
                other = measure(args.against, row, Path(tmp)) if args.against else None
                report(row, mine, other, args.files)
                sys.stdout.flush()
    except KeyboardInterrupt:
        sys.exit("scale_cache: interrupted; the rows above finished")


if __name__ == "__main__":
    main()
