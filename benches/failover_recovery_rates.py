"""How fast a path's rate comes back after a path event, in 100 ms windows, on either engine.

Reads the series `benches/failover_kernel_vs_sim.py --keep DIR` wrote (one run's `.sub` and
`.events` parquet files each) and prints, over the runs in each DIR, the event path's delivery rate
in each of the first five 100 ms windows after the event's end as a share of its rate from 2 s to
3 s (before the event), the median over runs and each run's first two windows:

    .venv/bin/python benches/failover_recovery_rates.py /tmp/kernel_keep /tmp/sim_keep

`failback90_ms` is the first 200 ms window at 90 % of that rate: a threshold that a few points
of rate move by hundreds of ms (docs/testbed.md, "Session 11: the failover bench on a quiet
machine"); these shares show the recovery itself.
"""

import bisect
import glob
import statistics
import sys

import polars as pl

from mpsched.analysis.resilience import _path_acked

WINDOW_NS = 100_000_000


def shares(sub: pl.DataFrame, path: int, end_ns: int) -> list[float]:
    # The path's acknowledged bytes as the failback metrics count them (its subflows' growth,
    # summed), so these shares and `failback90_ms` read the same series.
    t, acked = _path_acked(sub, path)

    def rate(a: int, b: int) -> float:
        i, j = bisect.bisect_left(t, a), bisect.bisect_right(t, b) - 1
        return (acked[j] - acked[i]) / ((t[j] - t[i]) / 1e9)

    before = rate(2_000_000_000, 3_000_000_000)
    return [rate(end_ns + k * WINDOW_NS, end_ns + (k + 1) * WINDOW_NS) / before for k in range(5)]


def flight_ms(sub: pl.DataFrame, path: int, end_ns: int) -> list[float]:
    """The path's mean bytes in flight over its delivery rate in the 100-200 and 200-300 ms
    windows after the end, ms: with a window below the path's BDP, the time the path takes to
    carry a flight (its RTT without queue; docs/testbed.md "Session 12: rate_collapse's
    recovery")."""
    p = sub.filter(pl.col("path") == path).sort("time_ns")
    out = []
    for a, b in ((1, 2), (2, 3)):
        w = p.filter(pl.col("time_ns").is_between(end_ns + a * WINDOW_NS, end_ns + b * WINDOW_NS))
        rate = (w["bytes_acked"][-1] - w["bytes_acked"][0]) / (w["time_ns"][-1] - w["time_ns"][0])
        out.append(w["in_flight_bytes"].mean() / rate / 1e6)
    return out


def main() -> None:
    for folder in sys.argv[1:]:
        runs, flights = [], []
        for f in sorted(glob.glob(f"{folder}/*.sub.parquet")):
            ev = pl.read_parquet(f.replace(".sub.", ".events.")).row(0, named=True)
            sub = pl.read_parquet(f)
            runs.append(shares(sub, ev["path_index"], ev["end_ns"]))
            flights.append(flight_ms(sub, ev["path_index"], ev["end_ns"]))
        if not runs:
            print(f"{folder}: no runs (write them with failover_kernel_vs_sim.py --keep {folder})")
            continue
        print(f"{folder}: {len(runs)} runs; median share of the rate before, per 100 ms after the end:",
              [round(statistics.median(r[k] for r in runs), 2) for k in range(5)])
        for k in range(2):
            print(f"  {k * 100}-{(k + 1) * 100} ms, each run:", sorted(round(r[k], 2) for r in runs))
        for k in range(2):
            print(f"  flight / rate {(k + 1) * 100}-{(k + 2) * 100} ms (ms), each run:",
                  sorted(round(r[k], 1) for r in flights))


if __name__ == "__main__":
    main()
