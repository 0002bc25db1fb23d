#!/usr/bin/env python3
"""How much slower a packet is in a large row of the scale bench than in a small one, with an interval.

    benches/scale_ratio.py SCALE_BIN "dumbbell 100 flows:21" "dumbbell 10000 flows:3" --target 1.3
    benches/scale_ratio.py SCALE_BIN "FatTree k=4 MPTCP:9" "FatTree k=16 MPTCP:1" --target 1.5

Issue 17's targets are ratios of the CPU time a packet (a hop on the FatTree rows) between two
rows. On this machine the rows that outgrow the caches move with the share of the last-level
cache that other guests of the host leave us, minute by minute (benches/RESULTS.md, Session 19),
so one pair of runs says little. This runs ROUNDS rounds; each round runs `benches/memlat.c`
(load latency in a 1, 8 and 128 MiB buffer: which memory the host gives us that minute) and both
rows, each in its own process (the scale binary's `--row=NAME --reps=N` mode), the order of the
two rows alternating between rounds. It prints each round as it finishes, then the median ratio
with a distribution-free 95 % interval (the order statistics around the median, `scipy.stats.
quantile_test`), over all rounds and over the rounds whose 8 MiB probe read as an L3 hit
(`--l3-hit-ns`), a verdict against `--target` for each ("met": the interval lies under it, "not
met": over it, "undecided": it contains it), and the rank correlation of the ratio with the probe.
Ctrl-C stops it and summarises the rounds that finished.

The scale binary is `cargo bench -p mpsched-sim --bench scale --no-run`'s (target/*/release/deps/
scale-<hash>; `make bench` runs this script on the profile-guided build).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from scale_rows import MIN_ROUNDS_FOR_INTERVAL, ROW_ENV, cpu_ns_per_packet, failure, median_interval, positive, row_arg
from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
MEMLAT_SOURCE = ROOT / "benches" / "memlat.c"
# Millions of dependent loads per probe buffer: ~1 s for the three, short beside a row.
PROBE_MILLION_LOADS = 2


@dataclass
class Round:
    probe_ns: tuple[float, float, float]  # 1 MiB, 8 MiB, 128 MiB, just before the large row
    small_ns: float
    large_ns: float

    @property
    def ratio(self) -> float:
        return self.large_ns / self.small_ns


def build_memlat(out_dir: Path) -> Path:
    """benches/memlat.c compiled into `out_dir` (once; rebuilt when the source is newer)."""
    binary = out_dir / "memlat"
    if binary.exists() and binary.stat().st_mtime >= MEMLAT_SOURCE.stat().st_mtime:
        return binary
    out_dir.mkdir(parents=True, exist_ok=True)
    built = subprocess.run(["cc", "-O2", "-o", str(binary), str(MEMLAT_SOURCE)], capture_output=True, text=True)
    if built.returncode != 0:
        sys.exit(f"scale_ratio: cannot compile {MEMLAT_SOURCE} with cc: {built.stderr.strip()[-300:]}")
    return binary


def probe(memlat: Path) -> tuple[float, float, float]:
    out = subprocess.run([str(memlat), str(PROBE_MILLION_LOADS)], capture_output=True, text=True, check=True).stdout
    values = [float(v) for v in re.findall(r"MiB ([0-9.]+)", out)]
    if len(values) != 3:
        sys.exit(f"scale_ratio: memlat printed {out!r}, not three latencies")
    return values[0], values[1], values[2]


def row_ns(binary: str, name: str, reps: int) -> float:
    """CPU ns a packet (a hop) of the row's median repetition, run in its own process."""
    run = subprocess.run([binary, f"--row={name}", f"--reps={reps}"], env=ROW_ENV, capture_output=True, text=True)
    ns = cpu_ns_per_packet(run.stdout)
    if run.returncode != 0 or ns is None:
        sys.exit(f"scale_ratio: the row {name!r} failed: {failure(run.stderr, run.returncode)}")
    return ns


def verdict(interval: tuple[float, float] | None, target: float) -> str:
    if interval is None:
        return f"no interval (fewer than {MIN_ROUNDS_FOR_INTERVAL} rounds)"
    low, high = interval
    if high <= target:
        return f"met (the interval lies at or under {target})"
    if low > target:
        return f"not met (the interval lies over {target})"
    return f"undecided (the interval contains {target})"


def summary_line(label: str, rounds: list[Round], target: float) -> str:
    if not rounds:
        return f"| {label} | 0 | – | – | no rounds |"
    ratios = [r.ratio for r in rounds]
    interval = median_interval(ratios)
    shown = f"{interval[0]:.2f}-{interval[1]:.2f}" if interval else "–"
    return f"| {label} | {len(rounds)} | {statistics.median(ratios):.2f} | {shown} | {verdict(interval, target)} |"


def summarise(rounds: list[Round], small: str, large: str, target: float, l3_hit_ns: float) -> None:
    print()
    print(f"{large} / {small}, CPU time a packet; target {target}x:")
    print()
    print("| rounds | n | median ratio | 95 % interval of the median | verdict |")
    print("|---|---|---|---|---|")
    print(summary_line("all", rounds, target))
    hits = [r for r in rounds if r.probe_ns[1] <= l3_hit_ns]
    print(summary_line(f"8 MiB probe <= {l3_hit_ns:g} ns (the L3 was ours)", hits, target))
    if len(rounds) >= 3 and len({r.probe_ns[1] for r in rounds}) > 1:
        rho, p = stats.spearmanr([r.probe_ns[1] for r in rounds], [r.ratio for r in rounds])
        print()
        print(f"Rank correlation of the ratio with the 8 MiB probe: Spearman rho {rho:.2f} (p {p:.3f}, n {len(rounds)}).")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary", help="the scale bench binary")
    parser.add_argument("small", type=row_arg, help="the smaller row, NAME:REPS")
    parser.add_argument("large", type=row_arg, help="the larger row, NAME:REPS")
    parser.add_argument("--rounds", type=positive(int), default=8, help="rounds (default 8; 6 or more for an interval)")
    parser.add_argument("--target", type=positive(float), default=1.3, help="the ratio to judge against (default 1.3)")
    parser.add_argument("--l3-hit-ns", type=positive(float), default=30.0,
                        help="an 8 MiB probe at or under this many ns counts as an L3 hit (default 30)")
    parser.add_argument("--memlat-dir", type=Path, default=ROOT / "target" / "memlat",
                        help="where memlat is compiled (default target/memlat)")
    args = parser.parse_args()
    if not (os.path.isfile(args.binary) and os.access(args.binary, os.X_OK)):
        sys.exit(f"scale_ratio: {args.binary} is not an executable scale bench binary "
                 "(build it with `cargo bench -p mpsched-sim --bench scale --no-run`)")
    memlat = build_memlat(args.memlat_dir)
    (small, small_reps), (large, large_reps) = args.small, args.large
    print(f"`benches/scale_ratio.py {args.binary} '{small}:{small_reps}' '{large}:{large_reps}' "
          f"--rounds {args.rounds} --target {args.target}`")
    print()
    print("| round | time (UTC) | probe 1 MiB ns | 8 MiB | 128 MiB | small ns | large ns | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    rounds: list[Round] = []
    try:
        for index in range(1, args.rounds + 1):
            clock = time.strftime("%H:%M:%S", time.gmtime())
            if index % 2:
                small_ns = row_ns(args.binary, small, small_reps)
                probe_ns = probe(memlat)
                large_ns = row_ns(args.binary, large, large_reps)
            else:
                probe_ns = probe(memlat)
                large_ns = row_ns(args.binary, large, large_reps)
                small_ns = row_ns(args.binary, small, small_reps)
            done = Round(probe_ns, small_ns, large_ns)
            rounds.append(done)
            l2, l3, dram = probe_ns
            print(f"| {index} | {clock} | {l2:.1f} | {l3:.1f} | {dram:.1f} | {small_ns:.1f} | {large_ns:.1f} | "
                  f"{done.ratio:.2f} |", flush=True)
    except KeyboardInterrupt:
        print(f"\n(interrupted: {len(rounds)} of {args.rounds} rounds finished)")
    summarise(rounds, small, large, args.target, args.l3_hit_ns)


if __name__ == "__main__":
    main()
