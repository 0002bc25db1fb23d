"""Request / response latency, simulator beside the kernel testbed: the RPC scenario
(`scenarios/workloads/rpc.toml`: WLAN 20 Mbit/s 20 ms + LTE 10 Mbit/s 60 ms, 300 B requests,
16 KB responses, 50 a second) steady, and with WLAN going down (the client's interface) from
5 s to 8 s.

Run (root for the kernel; keep each kernel command short and wrap it in the testbed lock):

    flock /tmp/mpsched-testbed-queue.lock .venv/bin/python benches/rpc_kernel_vs_sim.py \\
        --engine kernel --case steady --case down --reps 2 --out /tmp/rpc.jsonl
    .venv/bin/python benches/rpc_kernel_vs_sim.py --engine sim --reps 2 --out /tmp/rpc.jsonl
    .venv/bin/python benches/rpc_kernel_vs_sim.py --table /tmp/rpc.jsonl

Each run appends one JSON line per phase (case, engine, scheduler, repetition, phase, requests,
answered, latency p10 / p50 / p90 / p99 in ms over the requests issued in the phase, and the
share of the run's response bytes sent on LTE). Phases by issue time: `all`,
`before` (< 5 s), `during` (5-8 s), `after` (from 9 s: a second after WLAN is back, past its
backed-off retransmission). The kernel runs its default scheduler for `linux` and `minrtt`
alike (upstream has one), so it runs once per case. The simulator's repetitions use seeds
1..reps with the endpoint timing model (`[host_delay]`), as the failover bench.
"""

import argparse
import statistics
from pathlib import Path

import polars as pl

from benchio import emit, read_rows
import mpsched
from mpsched import engines
from mpsched.scenario.normalize import to_config

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "workloads" / "rpc.toml"
DOWN = """
[[path_events]]
kind = "down"
path = "wlan"
at = "5s"
duration = "3s"
"""
TIMING = """
[host_delay]
median = "68us"
p99 = "417us"
"""
PHASES = {"all": (0, None), "before": (0, 5e9), "during": (5e9, 8e9), "after": (9e9, None)}
MS = 1e6


def scenario_text(case: str, scheduler: str, seed: int) -> str:
    text = SCENARIO.read_text()
    text = text.replace('scheduler = ["minrtt", "blest", "redundant", "linux"]', f'scheduler = "{scheduler}"')
    text = text.replace("seed = 1", f"seed = {seed}")
    return text + TIMING + (DOWN if case == "down" else "")


def one_run(case: str, engine: str, scheduler: str, seed: int) -> list[dict]:
    cfg = to_config(mpsched.loads_scenario(scenario_text(case, scheduler, seed)))
    t = engines.run_config(cfg, engine)
    b = pl.DataFrame(t["blocks"])
    sub = pl.DataFrame(t["subflows"])
    lte = sub.filter(pl.col("path") == 1)["bytes_sent"].sum() / max(sub["bytes_sent"].sum(), 1)
    out = []
    for phase, (lo, hi) in PHASES.items():
        p = b.filter(pl.col("sent_ns") >= lo)
        if hi is not None:
            p = p.filter(pl.col("sent_ns") < hi)
        lat = p["delay_ns"].drop_nulls().cast(pl.Float64) / MS
        qs = {f"p{int(q * 100)}_ms": (lat.quantile(q, interpolation="linear") if len(lat) else None)
              for q in (0.1, 0.5, 0.9, 0.99)}
        out.append({"case": case, "engine": engine, "scheduler": scheduler, "seed": seed, "phase": phase,
                    "requests": p.height, "answered": len(lat), **qs, "lte_share": lte})
    return out


def table(path: str) -> None:
    rows = read_rows(path)
    print("| case | phase | engine | scheduler | runs | answered | p10 (ms) | p50 (ms) | p90 (ms) | p99 (ms) | LTE share |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    keys = sorted({(r["case"], r["phase"], r["engine"], r["scheduler"]) for r in rows},
                  key=lambda k: (k[0], list(PHASES).index(k[1]), k[2], k[3]))
    for case, phase, eng, sched in keys:
        rs = [r for r in rows if (r["case"], r["phase"], r["engine"], r["scheduler"]) == (case, phase, eng, sched)]

        def med(k: str) -> str:
            v = [r[k] for r in rs if r[k] is not None]
            return f"{statistics.median(v):.1f}" if v else "–"
        answered = f"{sum(r['answered'] for r in rs)} / {sum(r['requests'] for r in rs)}"
        print(f"| {case} | {phase} | {eng} | {sched} | {len(rs)} | {answered} | {med('p10_ms')} | {med('p50_ms')} "
              f"| {med('p90_ms')} | {med('p99_ms')} | {statistics.median(r['lte_share'] for r in rs):.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", choices=("sim", "kernel"), default="sim")
    ap.add_argument("--case", choices=("steady", "down"), action="append")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--out")
    ap.add_argument("--table")
    a = ap.parse_args()
    if a.table:
        table(a.table)
        return
    schedulers = ("linux",) if a.engine == "kernel" else ("linux", "minrtt")
    for case in a.case or ("steady", "down"):
        for sched in schedulers:
            for rep in range(1, a.reps + 1):
                for r in one_run(case, a.engine, sched, rep):
                    emit(r, a.out)


if __name__ == "__main__":
    main()
