"""The LTE queue beside the bulk (issue 15): for the VoIP bench's steady call beside the bulk
download (`voip_kernel_vs_sim.py`'s `none` case with `--bulk`), one run per seed on one engine,
the LTE downlink queue's level and drops and the bulk's LTE subflow's congestion window over the
steady part (2 s - 11 s), to compare the sawtooth that sets how long an LTE frame waits.

    .venv/bin/python benches/probe_voip_lte.py --engine sim --seed 1 --seed 2 --out /tmp/lte.jsonl
    flock /tmp/mpsched-testbed-queue.lock .venv/bin/python benches/probe_voip_lte.py --engine kernel \\
        --seed 1 --out /tmp/lte.jsonl
    .venv/bin/python benches/probe_voip_lte.py --table /tmp/lte.jsonl

Per run: the queue's mean and p10 / p50 / p90 (kB, as the qdisc counts them), packets dropped,
drop episodes (drops closer than 200 ms are one episode: one congestion event of the bulk), the
bulk's LTE cwnd p10 / p50 / p90 (kB) and in-flight / cwnd at the median, the cwnd just before and
after each episode, and the queue's mean per second (the sawtooth). `--series DIR` keeps the raw
series as Parquet. `--ss DIR` (kernel) also samples the server's sockets every 5 ms
(`probe_voip_frames.py`'s watcher, with its captures) and prints, for the bulk's two subflows,
the median send buffer (`ss` skmem `tb`, sk_sndbuf), queued memory (`w`, sk_wmem_queued), bytes
not yet sent (`notsent`), cwnd and the linger time w / pacing rate that `mptcp_subflow_get_send`
compares:

    flock /tmp/mpsched-testbed-queue.lock .venv/bin/python benches/probe_voip_lte.py --engine kernel \\
        --seed 1 --ss /tmp/lte_ss
"""

import argparse
import re
import sys
from pathlib import Path

import polars as pl

from benchio import emit, read_rows, spread
import mpsched
from mpsched import engines
from mpsched.scenario.normalize import to_config

sys.path.insert(0, str(Path(__file__).resolve().parent))
import voip_kernel_vs_sim as v  # noqa: E402

T0_NS, T1_NS = 2_000_000_000, 11_000_000_000
EPISODE_GAP_NS = 200_000_000


def _episodes(drop_times: list[int]) -> list[tuple[int, int]]:
    eps: list[list[int]] = []
    for t in drop_times:
        if eps and t - eps[-1][1] <= EPISODE_GAP_NS:
            eps[-1][1] = t
        else:
            eps.append([t, t])
    return [(a, b) for a, b in eps]


SS_SOCK = re.compile(r"10\.9\.0\.1:5201\s+(10\.0\.\d)\.1:(\d+)")
SS_FIELDS = {"tb": r"skmem:\(r\d+,rb\d+,t\d+,tb(\d+),", "w": r",w(\d+),", "notsent": r" notsent:(\d+)",
             "cwnd": r" cwnd:(\d+)", "sent": r" bytes_sent:(\d+)", "pacing": r"pacing_rate ([\d.]+)([KMG]?)bps"}


def ss_subflows(out: Path) -> pl.DataFrame:
    """The server's `ss` samples (from 2 s to 11 s) of the connection's two busiest subflows (the
    bulk's): per path the medians of sk_sndbuf, sk_wmem_queued, unsent bytes, cwnd and linger."""
    offset = int((out / "clock_offset_ns").read_text())
    epoch = int((out / "epoch_ns").read_text())
    rows, t = [], 0
    lines = (out / "ss_s.log").read_text().splitlines()
    for i, line in enumerate(lines):
        if line.startswith("@ "):
            t = int(line[2:]) - offset - epoch
            continue
        m = SS_SOCK.search(line)
        info = line + " " + (lines[i + 1] if i + 1 < len(lines) else "")
        g = {k: re.search(p, info) for k, p in SS_FIELDS.items()}
        if m and g["tb"] and g["w"] and g["pacing"]:
            unit = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}[g["pacing"].group(2)]
            rows.append({"t_ns": t, "path": "wlan" if m.group(1) == "10.0.1" else "lte", "port": int(m.group(2)),
                         **{k: int(g[k].group(1)) if g[k] else 0 for k in ("tb", "w", "notsent", "cwnd", "sent")},
                         "pacing_bps": float(g["pacing"].group(1)) * unit})
    df = pl.DataFrame(rows)
    bulk = df.group_by("port").agg(pl.col("sent").max()).sort("sent")["port"][-2:].to_list()
    return (df.filter(pl.col("port").is_in(bulk) & (pl.col("t_ns") >= T0_NS) & (pl.col("t_ns") <= T1_NS))
            .with_columns((pl.col("w") * 8e3 / pl.col("pacing_bps")).alias("linger_ms"))
            .group_by("path").agg(pl.len().alias("samples"), pl.col("tb").median(), pl.col("w").median(),
                                  pl.col("notsent").median(), pl.col("cwnd").median(), pl.col("linger_ms").median())
            .sort("path"))


def one_run(engine: str, seed: int, series_dir: str | None, ss_dir: str | None = None) -> dict:
    cfg = to_config(mpsched.loads_scenario(v.scenario_text("none", seed, True)))
    if ss_dir:
        import probe_voip_frames as frames
        from benchio import watching
        frames.SS_ON = True
        Path(ss_dir).mkdir(parents=True, exist_ok=True)
        with watching(frames.watch, Path(ss_dir)):
            t = engines.run_config(cfg, engine)
        print(ss_subflows(Path(ss_dir)))
    else:
        t = engines.run_config(cfg, engine)
    flows = pl.DataFrame(t["flows"])
    bulk = flows.filter(pl.col("app") != "messages")["flow_id"][0]
    ls = pl.DataFrame(t["link_series"])
    sub = pl.DataFrame(t["subflow_series"])
    if series_dir:
        Path(series_dir).mkdir(parents=True, exist_ok=True)
        ls.write_parquet(f"{series_dir}/{engine}_{seed}_links.parquet")
        sub.write_parquet(f"{series_dir}/{engine}_{seed}_subflows.parquet")
        pl.DataFrame(t["conn_series"]).write_parquet(f"{series_dir}/{engine}_{seed}_conns.parquet")
    lte_links = ["lte.down"]
    q = ls.filter(pl.col("link") == lte_links[0]).sort("time_ns")
    steady = q.filter((pl.col("time_ns") >= T0_NS) & (pl.col("time_ns") <= T1_NS))
    d = q.with_columns(pl.col("dropped_packets").diff().fill_null(0).alias("dd"))
    drops = d.filter((pl.col("dd") > 0) & (pl.col("time_ns") >= T0_NS) & (pl.col("time_ns") <= T1_NS))
    eps = _episodes(drops["time_ns"].to_list())
    cw = sub.filter((pl.col("flow_id") == bulk) & (pl.col("path") == 1)).sort("time_ns")
    cws = cw.filter((pl.col("time_ns") >= T0_NS) & (pl.col("time_ns") <= T1_NS))
    around = []
    for a, b in eps:
        before = cw.filter(pl.col("time_ns") < a)["cwnd_bytes"]
        after = cw.filter((pl.col("time_ns") > b) & (pl.col("time_ns") < b + 400_000_000))["cwnd_bytes"]
        around.append((round(a / 1e9, 2), before[-1] / 1e3 if len(before) else None,
                       after.min() / 1e3 if len(after) else None))
    per_s = (steady.with_columns((pl.col("time_ns") // 1_000_000_000).alias("s")).group_by("s")
             .agg(pl.col("queue_bytes").mean() / 1e3).sort("s"))
    qb = steady["queue_bytes"]
    return {"engine": engine, "seed": seed, "link": lte_links[0],
            "q_mean_kb": qb.mean() / 1e3, "q_p10_kb": qb.quantile(0.1) / 1e3, "q_p50_kb": qb.median() / 1e3,
            "q_p90_kb": qb.quantile(0.9) / 1e3, "drops": int(drops["dd"].sum()), "episodes": len(eps),
            "episode_cwnd_kb": around,
            "cwnd_p10_kb": cws["cwnd_bytes"].quantile(0.1) / 1e3, "cwnd_p50_kb": cws["cwnd_bytes"].median() / 1e3,
            "cwnd_p90_kb": cws["cwnd_bytes"].quantile(0.9) / 1e3,
            "inflight_over_cwnd_p50": (cws["in_flight_bytes"] / cws["cwnd_bytes"]).median(),
            "srtt_p50_ms": cws["srtt_ns"].median() / 1e6,
            "q_per_s_kb": [round(x, 1) for x in per_s["queue_bytes"].to_list()]}


def table(path: str) -> None:
    rows = read_rows(path)
    print("| engine | runs | LTE queue mean (kB) | p10 / p50 / p90 (kB) | drops | episodes | bulk LTE cwnd p10 / p50 / "
          "p90 (kB) | in flight / cwnd | bulk LTE srtt (ms) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for eng in sorted({r["engine"] for r in rows}):
        rs = [r for r in rows if r["engine"] == eng]
        col = lambda k: [r[k] for r in rs]  # noqa: E731
        print(f"| {eng} | {len(rs)} | {spread(col('q_mean_kb'))} | {spread(col('q_p10_kb'))} / {spread(col('q_p50_kb'))} / "
              f"{spread(col('q_p90_kb'))} | {spread(col('drops'), 0)} | {spread(col('episodes'), 0)} | "
              f"{spread(col('cwnd_p10_kb'))} / {spread(col('cwnd_p50_kb'))} / {spread(col('cwnd_p90_kb'))} | "
              f"{spread(col('inflight_over_cwnd_p50'), 2)} | {spread(col('srtt_p50_ms'))} |")
    for r in rows:
        print(r["engine"], r["seed"], "queue per s (kB):", r["q_per_s_kb"], "episodes (s, cwnd kB before, min after):",
              r["episode_cwnd_kb"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", choices=("sim", "kernel"), default="sim")
    ap.add_argument("--seed", type=int, action="append")
    ap.add_argument("--out")
    ap.add_argument("--series")
    ap.add_argument("--table")
    ap.add_argument("--ss", help="kernel: sample the server's sockets into this directory")
    ap.add_argument("--ss-only", help="only summarise the `ss` samples already in this directory")
    a = ap.parse_args()
    if a.ss_only:
        print(ss_subflows(Path(a.ss_only)))
        return
    if a.table:
        table(a.table)
        return
    for seed in a.seed or (1,):
        emit(one_run(a.engine, seed, a.series, a.ss if a.engine == "kernel" else None), a.out)


if __name__ == "__main__":
    main()
