"""Sensitivity of 003_'s headline claims (Table 2: the short flows' mean and 95th-percentile FCT
beside TCP and MPTCP background; §5.2.1: queries with background) to the assumptions the paper
does not print: queue size, TCP's congestion control, number of subflows, host interfaces,
Raiciu et al.'s 4:1 oversubscription that 003_ §4.1 quotes but Table 1's rates do not give,
whether the applications set TCP_NODELAY, and the MPTCP scheduler (v0.86's minRTT or 6.18's).

    .venv/bin/python experiments/datacenter_short_flows/sensitivity.py [-o DIR] [--seeds 1,2,3]
        [--duration 10s] [--only NAME,...]

Each variant is the study's file with a few fields changed; its runs go to DIR/<file>/<variant>
(reused when stored), and one Markdown row per variant and claim is printed: TCP-background and
MPTCP-background statistic, the difference with its 95 % bootstrap interval and the verdict
(`mpsched.experiments.claims`), with the queue drops and RTOs behind it.
"""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path

import polars as pl

from mpsched.analysis.stats import STATISTICS
from mpsched.experiments import load_published
from mpsched.experiments import datacenter as dc
from mpsched.experiments.claims import judge_claim
from mpsched.scenario import Scenario
from mpsched.study import run

HERE = Path(__file__).resolve().parent
#: variant -> field changes (dotted; `connection.N.field` for a [[connection]] list)
VARIANTS = {
    "paper (4 interfaces)": {},
    "1 interface (ours)": {"topology.interfaces": 1},
    "queue 20": {"topology.queue": 20},
    "queue 1000": {"topology.queue": 1000},
    "TCP cubic": {"tcp_cc": "cubic"},
    "8 subflows": {"subflows": 8},
    "4:1 oversubscribed": {"topology.oversubscription": 4, "topology.edge_agg_rate": None,
                           "topology.agg_core_rate": None},
    # dc11: every application sets TCP_NODELAY (003_ names none; the files keep Nagle)
    "TCP_NODELAY": {"nodelay": True},
    # dc11: Linux 6.18's scheduler (linger time = queued bytes / pacing rate) instead of the
    # v0.86 kernel's minRTT, which locks an endless MPTCP flow onto one subflow
    "upstream scheduler": {"mptcp_scheduler": "linux"},
}
#: the claims judged per variant (by text prefix) and the file each one needs
CLAIMS = {"table2.toml": ("Short flows finish later", "... and their tail", "MPTCP background puts more"),
          "query.toml": ("With background, queries",)}


def _conns(data: dict) -> list[dict]:
    return data["connection"] if isinstance(data["connection"], list) else [data["connection"]]


def _apply(data: dict, changes: dict, proto: str) -> dict:
    """The file's scenario with the protocol sweep fixed to `proto` and the variant's changes."""
    for c in _conns(data):
        if isinstance(c.get("protocol"), list):  # the swept one: Table 2's background, §5.2's every flow
            c["protocol"] = [proto]  # a one-value sweep: the runs table keeps the protocol column
    for key, value in changes.items():
        if key == "tcp_cc":  # every plain TCP connection; MPTCP keeps LIA
            for c in _conns(data):
                if c["protocol"] in ("tcp", ["tcp"]):
                    c["cc"] = value
        elif key == "mptcp_scheduler":  # every MPTCP connection (a swept protocol is fixed above)
            for c in _conns(data):
                if c["protocol"] in ("mptcp", ["mptcp"]):
                    c["scheduler"] = value
        elif key == "nodelay":  # every workload's writer
            for w in data["workload"]:
                w["nodelay"] = value
        elif key == "subflows":
            for c in _conns(data):
                if "subflows" in c:
                    c["subflows"] = value
        else:
            *head, last = key.split(".")
            d = data
            for h in head:
                d = d[h]
            if value is None:
                d.pop(last, None)
            else:
                d[last] = value
    return data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", default="results/dc_sensitivity")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--duration", default="10s")
    ap.add_argument("--only", default="", help="variants to run (comma-separated names), default all")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    args = ap.parse_args()
    published = load_published("datacenter_short_flows")
    seeds = [int(s) for s in args.seeds.split(",")]
    names = [n for n in VARIANTS if not args.only or n in args.only.split(",")]
    print("| variant | claim | TCP bg | MPTCP bg | difference [95 %] | verdict | drops / run (TCP, MPTCP) | RTOs / run |")
    print("|---|---|---:|---:|---|---|---|---|")
    for name in names:
        for file, prefixes in CLAIMS.items():
            frames, counters = [], {}
            for proto in ("tcp", "mptcp"):
                data = tomllib.loads((HERE / file).read_text())
                data["seed"] = seeds
                data["duration"] = args.duration
                stop = f"{max(0.5, float(args.duration.rstrip('s')) - 1):g}s"
                for w in data["workload"]:
                    w["stop"] = stop
                data["topology"]["interfaces"] = 4
                data = _apply(data, VARIANTS[name], proto)
                res = run(Scenario.from_dict(data, base_dir=HERE),
                          Path(args.out) / Path(file).stem / _slug(name) / proto, jobs=args.jobs)
                frames.append(dc.samples({Path(file).stem: res}))
                counters[proto] = _counters(res)
            samples = pl.concat(frames).with_columns(pl.lit("").alias("variant"))
            drops = ", ".join(counters[p]["drops"] for p in ("tcp", "mptcp"))
            rtos = ", ".join(counters[p]["rtos"] for p in ("tcp", "mptcp"))
            for claim in published["claim"]:
                if not claim["text"].startswith(prefixes):
                    continue
                r = judge_claim(claim, samples, "", published)
                c = r.deciding
                rows = samples.filter(pl.col("metric") == claim["metric"])
                stat = STATISTICS[rows.get_column("statistic")[0]]  # the claim's statistic (mean, p95)
                v = {p: float(stat(rows.filter(pl.col("scheduler") == p).get_column("value").to_numpy()))
                     for p in ("tcp", "mptcp")}
                iv = c.interval.percent() if c else "–"
                print(f"| {name} | {claim['text'][:48]} | {v.get('tcp', float('nan')):.1f} | "
                      f"{v.get('mptcp', float('nan')):.1f} | {iv} | {r.verdict} | {drops} | {rtos} |")


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name).strip("_")


def _counters(res) -> dict[str, str]:
    """Queue drops and RTOs per run (every link, every subflow)."""
    n = res.runs.height
    return {"drops": f"{res.links.get_column('packets_dropped').sum() / n:.0f}",
            "rtos": f"{res.subflows.get_column('rto_count').sum() / n:.0f}"}


if __name__ == "__main__":
    main()
