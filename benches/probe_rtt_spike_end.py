"""Where the packets of `rtt_spike`'s end are lost (issue 15, fail15i): one run of
`failover_kernel_vs_sim.py`'s rtt_spike scenario on either engine; prints back to 90 %, each
link's drops (total, and when they happened around the spike's end, from the router's queue
samples or the simulator's link series) and WLAN's subflow series (cwnd, srtt, in flight) in
20 ms bins from 100 ms before the end to 600 ms after.

    flock /tmp/mpsched-testbed-queue.lock .venv/bin/python benches/probe_rtt_spike_end.py --engine kernel
    .venv/bin/python benches/probe_rtt_spike_end.py --engine sim --seed 3 [--impairments before_queue]

`--impairments` sets the paths' `impairments` (the bench leaves the core's default, after the
queue; the testbed's delayer acts before it). docs/testbed.md ("Session 13: rtt_spike's back to 90 %").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
import failover_kernel_vs_sim as fks  # noqa: E402
import mpsched  # noqa: E402
from mpsched import engines, metrics  # noqa: E402
from mpsched.scenario.normalize import to_config  # noqa: E402

MS = 1_000_000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", choices=("sim", "kernel"), default="sim")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--impairments", choices=("before_queue", "after_queue"))
    a = ap.parse_args()
    toml = fks.TOML.format(kind="rtt_spike", extra=fks.KINDS["rtt_spike"], seed=a.seed, at_ms=3000,
                           wlan_gso="gso = true",
                           impairments=f'impairments = "{a.impairments}"\n' if a.impairments else "")
    t = engines.run_config(to_config(mpsched.loads_scenario(toml)), a.engine)
    flows, conn = pl.DataFrame(t["flows"]), pl.DataFrame(t["conn_series"])
    events = pl.DataFrame(t["path_events"], schema_overrides={"end_ns": pl.Int64})
    sub = pl.DataFrame(t["subflow_series"])
    fo = metrics.failover(events, metrics.delivery_stalls(flows, pl.DataFrame(), conn), conn, sub).row(0, named=True)
    end_ns = events["end_ns"][0]
    print(f"engine {a.engine} seed {a.seed} impairments {a.impairments or 'default'}: back to 90 % "
          f"{fo['failback90_ms']:.0f} ms, failback {fo['failback_ms']:.0f} ms")
    print(pl.DataFrame(t["links"]).select("link", "packets_forwarded", "packets_dropped"))
    ls = pl.DataFrame(t.get("link_series") or {})
    if not ls.is_empty():
        # Drops per 20 ms bin around the end (the series' drop count is cumulative).
        d = (ls.filter(pl.col("link").str.starts_with("wlan"))
             .sort("time_ns").with_columns(pl.col("dropped_packets").diff().over("link").alias("new"))
             .filter((pl.col("new") > 0) & (pl.col("time_ns") > 2_900 * MS)))
        print("WLAN drops after 2.9 s (ms from the end, link, packets, queue bytes):")
        for r in d.iter_rows(named=True):
            print(f"  {(r['time_ns'] - end_ns) / MS:+8.1f} {r['link']:10s} {r['new']:4d} {r['queue_bytes']:7d}")
    w = sub.filter((pl.col("path") == 0) & (pl.col("time_ns") >= end_ns - 100 * MS)
                   & (pl.col("time_ns") <= end_ns + 600 * MS))
    w = w.with_columns(((pl.col("time_ns") - end_ns) // (20 * MS) * 20).alias("bin_ms"))
    g = (w.group_by("bin_ms").agg(pl.col("cwnd_bytes").max(), pl.col("srtt_ns").max() / MS,
                                  pl.col("in_flight_bytes").min().alias("min_flight"),
                                  pl.col("bytes_acked").max()).sort("bin_ms"))
    print("WLAN per 20 ms from the end: cwnd (max), srtt ms (max), in flight (min), acked (max, kB)")
    for r in g.iter_rows(named=True):
        print(f"  {r['bin_ms']:+5d} {r['cwnd_bytes']:7d} {r['srtt_ns']:7.1f} {r['min_flight']:7d} "
              f"{r['bytes_acked'] / 1e3:9.0f}")


if __name__ == "__main__":
    main()
