"""A VoIP call's message delays, simulator beside the kernel testbed: the resilience study's paths
(`scenarios/resilience/dying_wlan.toml`: WLAN 20 Mbit/s 20 ms ±1 ms + LTE 10 Mbit/s 60 ms ±3 ms,
one BDP of queue each, cubic) and its call (a 160-byte frame every 20 ms until 11 s, deadline
150 ms), under the `linux` scheduler, with no event (`none`) or a WLAN blackhole from 4 s to 8 s
(`blackhole`); `--bulk` adds the study's bulk download on its own connection, as in the study.

Run (root for the kernel; keep each kernel command short and wrap it in the testbed lock):

    flock /tmp/mpsched-testbed-queue.lock .venv/bin/python benches/voip_kernel_vs_sim.py \\
        --engine kernel --case none --case blackhole --reps 3 --out /tmp/voip.jsonl
    .venv/bin/python benches/voip_kernel_vs_sim.py --engine sim --reps 10 --out /tmp/voip.jsonl
    .venv/bin/python benches/voip_kernel_vs_sim.py --table /tmp/voip.jsonl

Each run appends one JSON line (case, engine, bulk, seed; the call's messages, delivered, delay
p50 / p99 / p99.9 ms, deadline-miss rate, the share of its bytes sent on LTE, its failover and failback times and longest stall, ms).
The simulator's repetitions use seeds 1..reps with the endpoint timing model (`[host_delay]`),
as the other kernel-vs-simulator benches. The table gives per cell the median [min–max] over runs
of p50 and p99, and the mean miss rate with a 95 % t interval over runs.
"""

import argparse
import re
import statistics
from pathlib import Path

import polars as pl
from scipy import stats

from benchio import emit, read_rows, spread
import mpsched
from mpsched import engines, metrics
from mpsched.scenario.normalize import to_config

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "resilience" / "dying_wlan.toml"
TIMING = """
[host_delay]
median = "68us"
p99 = "417us"
"""
BULK = '\n[[workload]]\nkind = "bulk"\nstop = "11s"\n'


def scenario_text(case: str, seed: int, bulk: bool) -> str:
    text = SCENARIO.read_text()
    head, events = text.split("[[path_events]]")
    head = head.replace('scheduler = ["linux", "minrtt", "minrtt+rp", "redundant", "blest", "ecf", "cfs"]',
                        'scheduler = "linux"')
    head = re.sub(r"(?m)^seed = \[[0-9, ]*\]$", f"seed = {seed}", head)  # the study's seed list, one seed here
    assert 'scheduler = "linux"' in head and f"seed = {seed}" in head, "dying_wlan.toml changed: update this bench"
    if not bulk:
        head = head.replace(BULK, "\n")
    record = events[events.index("[record]"):]
    event = '[[path_events]]\npath = "wlan"\nkind = "blackhole"\nat = "4s"\nduration = "4s"\n\n'
    return head + (event if case == "blackhole" else "") + record + TIMING


def one_run(case: str, engine: str, seed: int, bulk: bool) -> dict:
    cfg = to_config(mpsched.loads_scenario(scenario_text(case, seed, bulk)))
    t = engines.run_config(cfg, engine)
    flows, blocks = pl.DataFrame(t["flows"]), pl.DataFrame(t["blocks"])
    call = flows.filter(pl.col("app") == "messages")["flow_id"][0]
    d = metrics.message_delay(blocks.filter(pl.col("flow_id") == call)).row(0, named=True)
    conn, sub = pl.DataFrame(t["conn_series"]), pl.DataFrame(t["subflow_series"])
    stalls = metrics.delivery_stalls(flows, blocks, conn).filter(pl.col("flow_id") == call)
    mine = pl.DataFrame(t["subflows"]).filter(pl.col("flow_id") == call)
    lte_share = mine.filter(pl.col("path") == 1)["bytes_sent"].sum() / max(mine["bytes_sent"].sum(), 1)
    fo: dict = {}
    events = pl.DataFrame(t["path_events"], schema_overrides={"end_ns": pl.Int64})
    if not events.is_empty():
        fo = metrics.failover(events, stalls, conn, sub).filter(pl.col("flow_id") == call).row(0, named=True)
    return {"case": case, "engine": engine, "bulk": bulk, "seed": seed,
            **{k: d[k] for k in ("messages", "delivered", "delay_p50_ms", "delay_p99_ms", "delay_p999_ms",
                                 "deadline_miss_rate")},
            "lte_share": lte_share, "failover_ms": fo.get("failover_ms"), "failback_ms": fo.get("failback_ms"),
            "longest_stall_ms": stalls["stall_ns"].max() / 1e6 if not stalls.is_empty() else 0.0}


def _mean_ci(v: list) -> str:
    """Mean in % with a 95 % t interval over the runs (the runs are the independent samples:
    the messages of one run are not)."""
    v = [100 * x for x in v if x is not None]
    if len(v) < 2:
        return f"{v[0]:.1f}" if v else "–"
    m, h = statistics.mean(v), stats.t.ppf(0.975, len(v) - 1) * statistics.stdev(v) / len(v) ** 0.5
    return f"{m:.1f} [{max(m - h, 0):.1f}–{min(m + h, 100):.1f}]"


def table(path: str) -> None:
    rows = read_rows(path)
    print("| case | bulk | engine | runs | delivered | delay p50 (ms) | delay p99 (ms) | deadline misses (%) "
          "| failover (ms) | failback (ms) | longest stall (ms) | call bytes on LTE |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted({(r["case"], r["bulk"], r["engine"]) for r in rows}, key=lambda k: (k[0] != "none", *k[1:])):
        rs = [r for r in rows if (r["case"], r["bulk"], r["engine"]) == key]
        col = lambda k: [r[k] for r in rs]  # noqa: E731
        print(f"| {key[0]} | {'yes' if key[1] else 'no'} | {key[2]} | {len(rs)} | {sum(col('delivered'))} / "
              f"{sum(col('messages'))} | {spread(col('delay_p50_ms'))} | {spread(col('delay_p99_ms'))} | "
              f"{_mean_ci(col('deadline_miss_rate'))} | {spread(col('failover_ms'))} | {spread(col('failback_ms'))} "
              f"| {spread(col('longest_stall_ms'))} | {spread([r.get('lte_share') for r in rs], 2)} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", choices=("sim", "kernel"), default="sim")
    ap.add_argument("--case", choices=("none", "blackhole"), action="append")
    ap.add_argument("--bulk", action="store_true", help="add the study's bulk download (its own connection)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out")
    ap.add_argument("--table")
    a = ap.parse_args()
    if a.table:
        table(a.table)
        return
    for case in a.case or ("none", "blackhole"):
        for rep in range(1, a.reps + 1):
            emit(one_run(case, a.engine, rep, a.bulk), a.out)


if __name__ == "__main__":
    main()
