"""Benchmark of the kernel testbed's delayer: release error (lateness: release time minus target
time, from nfqdelay's histogram) and throughput, at the rates the testbed is meant for and
unshaped. Needs root. Prints a Markdown section (for benches/RESULTS.md).

    python -m mpsched.engines.kernel.bench [--quick]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

from mpsched.engines.kernel.probe import ping_paths
from mpsched.engines.kernel.run import run_once

MS = 1_000_000


def _link(name: str, rate_bps: int, delay_ns: int, queue_bytes: int) -> dict:
    return {"name": name, "rate_bps": rate_bps, "delay_ns": delay_ns, "queue_bytes": queue_bytes}


def single_path(rate_bps: int, one_way_ns: int, seconds: float) -> dict:
    bdp = max(rate_bps * 2 * one_way_ns // 8 // 1_000_000_000, 100_000)
    return {
        "seed": 1, "duration_ns": int((seconds + 2) * 1e9),
        "links": [_link("down", rate_bps, one_way_ns, bdp), _link("up", rate_bps, one_way_ns, bdp)],
        "paths": [{"name": "p", "down": [0], "up": [1]}],
        "transports": [{"protocol": "tcp", "scheduler": "linux", "cc": "cubic", "paths": [0],
                        "rcv_buf_bytes": 32 << 20, "snd_buf_bytes": 32 << 20}],
        "flows": [{"id": 1, "transport": 0, "start_ns": 0, "app": {"kind": "bulk", "stop_ns": int(seconds * 1e9)}}],
        "record": {"sample_interval_ns": 0},
    }


def table_a(reps: int) -> dict:
    """Reference table A (docs/testbed.md): 50 Mbit/s 20 ms RTT + 15 Mbit/s 200 ms RTT; 1 MB and 16 MB downloads."""
    flows, t = [], 0
    for i in range(reps):
        flows.append({"id": 100 + i, "transport": 0, "start_ns": t, "app": {"kind": "sized", "size_bytes": 1 << 20}})
        t += 1000 * MS
    for i in range(reps):
        flows.append({"id": 200 + i, "transport": 0, "start_ns": t, "app": {"kind": "sized", "size_bytes": 16 << 20}})
        t += 4000 * MS
    return {
        "seed": 1, "duration_ns": t + 2000 * MS,
        "links": [_link("wlan.down", 50_000_000, 10 * MS, 250_000), _link("wlan.up", 50_000_000, 10 * MS, 250_000),
                  _link("lte.down", 15_000_000, 100 * MS, 500_000), _link("lte.up", 15_000_000, 100 * MS, 500_000)],
        "paths": [{"name": "wlan", "down": [0], "up": [1]}, {"name": "lte", "down": [2], "up": [3]}],
        "transports": [{"protocol": "mptcp", "scheduler": "linux", "cc": "cubic", "paths": [0, 1],
                        "rcv_buf_bytes": 16 << 20, "snd_buf_bytes": 16 << 20}],
        "flows": flows,
    }


def _lat(q: dict) -> str:
    lat = q["lateness_ns"]
    us = lambda v: f"{v / 1e3:.0f}"  # noqa: E731
    return f"{us(lat['p50'])} / {us(lat['p90'])} / {us(lat['p99'])} / {us(lat['p999'])} / {us(lat['max'])}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="fewer repetitions and shorter transfers")
    args = ap.parse_args()
    secs = 4.0 if args.quick else 8.0
    reps = 2 if args.quick else 5
    lines = []
    lines.append(f"Machine: {platform.node()} {platform.release()}, {time.strftime('%Y-%m-%d')}. Lateness = "
                 "release time minus target time (upper edge of nfqdelay's ~19 %-wide histogram bucket), "
                 "in µs. Goodput = bytes delivered to the application / transfer time.\n")
    lines.append("| case | goodput (Mbit/s) | down-queue lateness p50 / p90 / p99 / p99.9 / max (µs) | "
                 "packets through delayer | delayer CPU (% of one core) |")
    lines.append("|---|---|---|---|---|")
    cases = [("TCP 50 Mbit/s, RTT 20 ms", 50_000_000, 10 * MS), ("TCP 150 Mbit/s, RTT 20 ms", 150_000_000, 10 * MS),
             ("TCP 150 Mbit/s, RTT 200 ms", 150_000_000, 100 * MS), ("TCP 500 Mbit/s, RTT 20 ms", 500_000_000, 10 * MS),
             ("TCP unshaped (10 Gbit/s htb), RTT 2 ms", 10_000_000_000, 1 * MS)]
    for name, rate, owd in cases:
        tables, diag = run_once(single_path(rate, owd, secs))
        delivered = tables["flows"]["bytes_delivered"][0]
        goodput = delivered * 8 / secs / 1e6
        qs = {q["qnum"]: q for q in diag["delayer"]["queues"]}
        down = qs[1]
        cpu = (f"{100 * diag['delayer_cpu_s'] / diag['delayer_wall_s']:.0f}"
               if diag.get("delayer_cpu_s") is not None and diag.get("delayer_wall_s") else "?")
        lines.append(f"| {name} | {goodput:.1f} | {_lat(down)} | {down['packets']} | {cpu} |")
        print(lines[-1], flush=True)
    lines.append("")
    lines.append("Round-trip time of UDP probes on idle paths (`mpxfer ping` / `echo`, one every 10 ms; "
                 "the feasibility study measured ping 20.132 / 20.303 / 22.159 / 0.131 and 200.138 / 200.262 / 202.230 / "
                 "0.139 ms):\n")
    lines.append("| configured RTT | probes | min / mean / max / sd (ms) |")
    lines.append("|---|---|---|")
    probes = 100 if args.quick else 300
    rtts = ping_paths(table_a(0), count=probes)
    for path, base in ((0, "20 ms"), (1, "200 ms")):
        ms = [r / 1e6 for r in rtts[path]]
        lines.append(f"| {base} | {len(ms)} | {min(ms):.3f} / {statistics.fmean(ms):.3f} / {max(ms):.3f} / "
                     f"{statistics.pstdev(ms):.3f} |")
    tables, diag = run_once(table_a(reps))
    f = tables["flows"]
    rows = [dict(zip(f, v)) for v in zip(*f.values())]
    lines.append("")
    lines.append(f"Reference table A (docs/testbed.md) on our testbed (MPTCP, default scheduler, cubic; {reps} runs of each size, "
                 "sequential):\n")
    lines.append("| size | FCT min / median / max (s) | feasibility study |")
    lines.append("|---|---|---|")
    ref = {1 << 20: "0.251 / 0.253 / 0.254", 16 << 20: "2.572 / 3.037 / 3.220"}
    for size in (1 << 20, 16 << 20):
        fct = sorted(r["fct_ns"] / 1e9 for r in rows if r["size_bytes"] == size and r["completed"])
        if fct:
            lines.append(f"| {size >> 20} MiB | {fct[0]:.3f} / {statistics.median(fct):.3f} / {fct[-1]:.3f} | {ref[size]} |")
    lines.append("")
    lines.append("Delayer lateness in that run, per queue (µs, p50 / p90 / p99 / p99.9 / max):\n")
    names = {1: "wlan.down", 2: "wlan.up", 3: "lte.down", 4: "lte.up"}
    for q in diag["delayer"]["queues"]:
        lines.append(f"- {names.get(q['qnum'], q['qnum'])}: {_lat(q)} ({q['packets']} packets)")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
