#!/usr/bin/env python3
"""Is binary B faster than binary A on one row of the scale bench? A ratio with an interval.

    benches/scale_pair.py MAIN_SCALE_BIN LEAD_SCALE_BIN "FatTree k=12 MPTCP" --rounds 16

A change to the core's memory layout moves a FatTree hop by a few per cent, while this host moves
it by 15-20 % from one minute to the next (other guests share its last-level cache and memory;
benches/RESULTS.md, Sessions 19-22). Runs one after the other see different minutes, so their
ratio has that spread. Here each round starts A and B at the same moment, one on each of two
CPUs (swapped every round, so neither binary keeps the better core), so both see the same
minute of the host; the ratio B/A of their CPU time a packet (a hop) then varies far less.

It prints each round as it finishes, then the median ratio with a distribution-free 95 %
interval (`scale_rows.median_interval`) and a verdict: B faster (the interval lies under 1),
B slower (over 1), or a tie (it contains 1). Give the same binary twice (A/A) to see the
method's own spread on the host of the day. Ctrl-C stops both runs and summarises the rounds
that finished.

What it measures: the two binaries beside each other, each with the other as its neighbour in
the shared cache. A change that shrinks the working set may gain more here than alone; a ratio
is still a ratio of two programs under the same conditions. With one CPU, `--serial` runs the
two one after the other, alternating the order (the method of Sessions 20 and 21).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from scale_rows import MIN_ROUNDS_FOR_INTERVAL, ROW_ENV, check_row, cpu_ns_per_packet, failure, median_interval, positive


def start(binary: str, row: str, reps: int, cpu: int | None) -> subprocess.Popen:
    pin = (lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None
    return subprocess.Popen([binary, f"--row={row}", f"--reps={reps}"], env=ROW_ENV, preexec_fn=pin,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(child: subprocess.Popen, binary: str, row: str) -> float:
    """CPU ns a packet (a hop) of the child's median repetition; exits in one line if it failed."""
    out, err = child.communicate()
    ns = cpu_ns_per_packet(out)
    if child.returncode != 0 or ns is None:
        sys.exit(f"scale_pair: {binary} failed on the row {row!r}: {failure(err, child.returncode)}")
    return ns


def one_round(index: int, args, cpus: list[int]) -> tuple[float, float]:
    """(A's, B's) ns a packet in round `index` (from 0)."""
    first_a = index % 2 == 0
    if args.serial:
        # Kept by role, not by path: A/A gives the same path twice.
        def timed(binary: str) -> float:
            return finish(start(binary, args.row, args.reps, None), binary, args.row)

        if first_a:
            a_ns = timed(args.a)
            return a_ns, timed(args.b)
        b_ns = timed(args.b)
        return timed(args.a), b_ns
    cpu_a, cpu_b = (cpus[0], cpus[1]) if first_a else (cpus[1], cpus[0])
    children = [start(args.a, args.row, args.reps, cpu_a), start(args.b, args.row, args.reps, cpu_b)]
    try:
        return finish(children[0], args.a, args.row), finish(children[1], args.b, args.row)
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()


def verdict(interval: tuple[float, float] | None) -> str:
    if interval is None:
        return f"no interval (fewer than {MIN_ROUNDS_FOR_INTERVAL} rounds)"
    low, high = interval
    if high < 1:
        return "B faster (the interval lies under 1)"
    if low > 1:
        return "B slower (the interval lies over 1)"
    return "a tie (the interval contains 1)"


def summarise(rounds: list[tuple[float, float]], row: str) -> None:
    if not rounds:
        print(f"\n{row}: no rounds finished")
        return
    ratios = [b / a for a, b in rounds]
    interval = median_interval(ratios)
    shown = f"{interval[0]:.3f}-{interval[1]:.3f}" if interval else "–"
    a_ns = statistics.median(a for a, _ in rounds)
    b_ns = statistics.median(b for _, b in rounds)
    print()
    print("| row | rounds | A ns | B ns | B/A median | 95 % interval | verdict |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {row} | {len(rounds)} | {a_ns:.1f} | {b_ns:.1f} | {statistics.median(ratios):.3f} | {shown} | "
          f"{verdict(interval)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", help="the reference scale bench binary (A)")
    parser.add_argument("b", help="the scale bench binary to compare with it (B)")
    parser.add_argument("row", help="the row's name, e.g. 'FatTree k=12 MPTCP'")
    parser.add_argument("--rounds", type=positive(int), default=16, help="rounds (default 16; 6 or more for an interval)")
    parser.add_argument("--reps", type=positive(int), default=1, help="repetitions of the row a run (default 1)")
    parser.add_argument("--serial", action="store_true", help="run A and B one after the other, not at once")
    args = parser.parse_args()
    for name, binary in (("A", args.a), ("B", args.b)):
        if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
            sys.exit(f"scale_pair: {name}, {binary}, is not an executable scale bench binary "
                     "(build it with `cargo bench -p mpsched-sim --bench scale --no-run`)")
    cpus = sorted(os.sched_getaffinity(0))
    if not args.serial and len(cpus) < 2:
        sys.exit("scale_pair: running A and B at once takes two CPUs and this process may use one; "
                 "give --serial to run them one after the other")
    check_row(args.a, args.row, "scale_pair")
    how = "one after the other" if args.serial else f"at once on CPUs {cpus[0]} and {cpus[1]}"
    print(f"`benches/scale_pair.py {args.a} {args.b} '{args.row}' --rounds {args.rounds} --reps {args.reps}"
          f"{' --serial' if args.serial else ''}`: A and B {how}")
    print()
    print("| round | time (UTC) | A ns | B ns | B/A |")
    print("|---|---|---|---|---|")
    rounds: list[tuple[float, float]] = []
    try:
        for index in range(args.rounds):
            clock = time.strftime("%H:%M:%S", time.gmtime())
            a_ns, b_ns = one_round(index, args, cpus)
            rounds.append((a_ns, b_ns))
            print(f"| {index + 1} | {clock} | {a_ns:.1f} | {b_ns:.1f} | {b_ns / a_ns:.3f} |", flush=True)
    except KeyboardInterrupt:
        print(f"\n(interrupted: {len(rounds)} of {args.rounds} rounds finished)")
    summarise(rounds, args.row)


if __name__ == "__main__":
    main()
