"""Our numbers for each reproduction study (`mpsched.experiments`): a study's results reduced to
a long table with columns `variant` (a setting the paper did not vary, e.g. our WLAN rate),
`metric`, `setting` (what the paper's table is indexed by: a flow size, a page, a rate),
`scheduler` (or protocol) and `value`, in the unit of the published figure it is compared with.

Each function takes the study's results by scenario file stem (`Results` of `mpsched.run`).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from mpsched.analysis.summary import labelled_flows
from mpsched.analysis.metrics import aggregation_benefit, block_delay_summary, rtt_max

__all__ = ["cfs_fct", "bwm_bufferbloat", "burst_split", "bwm_series", "paasch_aggregation", "app_delay"]  # datacenter: experiments.datacenter


def _rows(df: pl.DataFrame, variant: pl.Expr | str, metric: str, setting: pl.Expr | str, value: pl.Expr) -> pl.DataFrame:
    lit = lambda x: pl.lit(x) if isinstance(x, str) else x  # noqa: E731
    return df.select(lit(variant).cast(pl.String).alias("variant"), pl.lit(metric).alias("metric"),
                     lit(setting).cast(pl.String).alias("setting"), pl.col("scheduler").cast(pl.String),
                     value.cast(pl.Float64).alias("value"))


def cfs_fct(results: dict[str, Any]) -> pl.DataFrame:
    """000_ Tables 2-4, 6-7: mean FCT (s) of completed flows per scheduler and size (or page),
    the reduction over minRTT (%, Table 3's "reduced percentage"), and how many flows did not
    complete (none should); one variant per WLAN rate and jitter model."""
    from mpsched.scenario.pages import PAGES

    pages = {sum(sizes): name for name, sizes in PAGES.items()}
    frames = []
    for stem, res in results.items():  # scenario.toml (smooth jitter), reorder.toml (netem's reordering jitter)
        f = labelled_flows(res)
        rate = pl.col("wlan.rate") if "wlan.rate" in f.columns else pl.lit(_path_field(res, "wlan", "rate"))
        variant = pl.format("WLAN {}" + (", reordering jitter" if stem == "reorder" else ""), rate)
        setting = pl.col("size") if "size" in f.columns else pl.col("size_bytes").replace_strict(pages, default="other")
        frames.append(f.select(variant.alias("variant"), setting.cast(pl.String).alias("setting"), "scheduler",
                               "fct_ns", "completed"))
    f = pl.concat(frames)
    g = f.group_by(["variant", "setting", "scheduler"], maintain_order=True).agg(
        (pl.col("fct_ns").filter(pl.col("completed")).mean() / 1e9).alias("fct"),
        (~pl.col("completed")).sum().alias("incomplete"))
    base = g.filter(pl.col("scheduler") == "minrtt").select("variant", "setting", pl.col("fct").alias("base"))
    g = g.join(base, on=["variant", "setting"], how="left", maintain_order="left")
    out = [_rows(g, pl.col("variant"), "fct_mean_s", pl.col("setting"), pl.col("fct")),
           _rows(g.filter(pl.col("scheduler") != "minrtt"), pl.col("variant"), "fct_reduction_pct", pl.col("setting"),
                 100 * (1 - pl.col("fct") / pl.col("base")))]
    bad = g.filter(pl.col("incomplete") > 0)
    if not bad.is_empty():
        out.append(_rows(bad, pl.col("variant"), "incomplete_flows", pl.col("setting"), pl.col("incomplete")))
    return pl.concat(out)


def _path_field(res, path: str, key: str) -> str:
    """A path's field as the stored scenario of the study's first run gives it (not swept)."""
    import tomllib

    scenario = tomllib.loads(res.scenario_toml(res.runs.get_column("run_id")[0]))
    return str(next(p[key] for p in scenario["paths"] if p["name"] == path))


def bwm_bufferbloat(results: dict[str, Any]) -> pl.DataFrame:
    """002_ Table 1 and §4.2: bytes delivered in order during the run (MB = 10^6 B, as iperf's
    totals match the paper's average rates), the average rate (Mbit/s) and the largest smoothed
    RTT of any subflow (ms), each a mean over the seeds."""
    out = []
    for stem, res in results.items():
        f = labelled_flows(res)
        dur_s = _run_seconds(res)
        rtt = rtt_max(res.subflow_series).group_by("run_id").agg(pl.col("srtt_max_ms").max())
        per_run = f.join(dur_s, on="run_id").join(rtt, on="run_id")
        if stem == "bwm_common_rtt":  # a scheduler variant, not the paper's
            per_run = per_run.with_columns(pl.format("{} ({})", pl.col("scheduler"), pl.lit(stem)).alias("scheduler"))
        variant = "10 MB queues" if stem == "queue_10mb" else "unlimited queues"
        g = per_run.group_by("scheduler", maintain_order=True).agg(
            (pl.col("bytes_delivered").mean() / 1e6).alias("mb"),
            (pl.col("bytes_delivered") * 8 / pl.col("dur_s") / 1e6).mean().alias("mbps"),
            pl.col("srtt_max_ms").mean().alias("rtt"))
        out += [_rows(g, variant, "total_traffic_MB", "50 s run", pl.col("mb")),
                _rows(g, variant, "throughput_mbps", "50 s run", pl.col("mbps")),
                _rows(g, variant, "rtt_max_ms", "50 s run", pl.col("rtt"))]
        split = burst_split(res).join(f.select("run_id", "scheduler").unique("run_id"), on="run_id")
        if stem == "bwm_common_rtt":
            split = split.with_columns(pl.format("{} ({})", pl.col("scheduler"), pl.lit(stem)).alias("scheduler"))
        g = split.group_by("scheduler", maintain_order=True).agg(pl.col("congested_share").mean(), pl.col("free_mbps").mean())
        out += [_rows(g, variant, "burst_congested_share", "UDP bursts", pl.col("congested_share")),
                _rows(g, variant, "burst_free_path_mbps", "UDP bursts", pl.col("free_mbps"))]
    return pl.concat(out)


def _bursts(res, run_id: str) -> list[tuple[str, float, float]]:
    """(path, start s, stop s) of each cross-traffic source of a run, from its stored scenario."""
    import tomllib

    from mpsched.scenario.units import parse_time_ns

    scenario = tomllib.loads(res.scenario_toml(run_id))
    return [(c["path"], parse_time_ns(c["start"]) / 1e9, parse_time_ns(c["stop"]) / 1e9)
            for c in scenario.get("cross_traffic", [])]


def burst_split(res) -> pl.DataFrame:
    """002_ Fig. 7 and §4.2: how a connection splits its data while cross traffic loads one
    path. Per run (`run_id`): `congested_share`, the share of the bytes acknowledged during the
    bursts that went over the loaded path (the paper: BWM about 2 in 12, 20 of 120 Mbit/s;
    round-robin half), and `free_mbps`, the rate the other paths carried meanwhile (the paper:
    BWM keeps them at 100 Mbit/s). Bytes acknowledged per subflow are read from the series at
    the burst's start and stop (the samples nearest below them)."""
    s = res.subflow_series
    rows = []
    for run_id in res.runs.get_column("run_id").to_list():
        r = s.filter(pl.col("run_id") == run_id)
        congested = free = 0.0
        free_s = 0.0
        for path, start, stop in _bursts(res, run_id):
            at = lambda t: r.filter(pl.col("time_ns") <= int(t * 1e9)).group_by("path").agg(  # noqa: E731
                pl.col("bytes_acked").sort_by("time_ns").last())
            moved = at(stop).join(at(start), on="path", how="left", suffix="_0").with_columns(
                (pl.col("bytes_acked") - pl.col("bytes_acked_0").fill_null(0)).cast(pl.Float64).alias("b"))
            congested += moved.filter(pl.col("path") == path).get_column("b").sum()
            free += moved.filter(pl.col("path") != path).get_column("b").sum()
            free_s += stop - start
        total = congested + free
        rows.append({"run_id": run_id, "congested_share": congested / total if total else float("nan"),
                     "free_mbps": free * 8 / free_s / 1e6 if free_s else float("nan")})
    return pl.DataFrame(rows, schema={"run_id": pl.String, "congested_share": pl.Float64, "free_mbps": pl.Float64})


def bwm_series(results: dict[str, Any]) -> pl.DataFrame:
    """002_ Figs. 7-8 as time series of the first seed of `scenario.toml`: per scheduler and
    path, every sample's smoothed RTT (`srtt_ms`) and the rate acknowledged since the sample
    before (`throughput_mbps`), long: `scheduler`, `path`, `time_s`, `quantity`, `value`."""
    from mpsched.analysis.metrics import subflow_throughput

    res = results["scenario"]
    first = res.runs.filter(pl.col("seed") == res.runs.get_column("seed").min()) if "seed" in res.runs.columns else res.runs
    runs = first.select("run_id").join(labelled_flows(res).select("run_id", "scheduler").unique("run_id"), on="run_id")
    s = subflow_throughput(res.subflow_series.join(runs, on="run_id"))
    s = s.group_by("scheduler", "path", "time_ns", maintain_order=True).agg(
        (pl.col("srtt_ns").max().cast(pl.Float64) / 1e6).alias("srtt_ms"),
        (pl.col("throughput_bps").sum() / 1e6).alias("throughput_mbps"))
    return s.with_columns((pl.col("time_ns").cast(pl.Float64) / 1e9).alias("time_s")).unpivot(
        ["srtt_ms", "throughput_mbps"], index=["scheduler", "path", "time_s"], variable_name="quantity").sort(
        "scheduler", "path", "quantity", "time_s")


def _run_seconds(res) -> pl.DataFrame:
    """How long each run lasted (s), from its meta.json."""
    return pl.DataFrame({"run_id": list(res.meta), "dur_s": [m["engine_stats"]["end_ns"] / 1e9 for m in res.meta.values()]})


def _goodput_mbps(res) -> pl.DataFrame:
    """Per bulk flow: bytes delivered in order x 8 over the run's duration (Mbit/s; the flows
    send from the start to the end of the run), with its path (the first subflow's)."""
    paths = res.subflows.group_by("run_id", "flow_id").agg(pl.col("path").first())
    return labelled_flows(res).join(paths, on=["run_id", "flow_id"], how="left").join(_run_seconds(res), on="run_id") \
        .with_columns((pl.col("bytes_delivered").cast(pl.Float64) * 8 / pl.col("dur_s") / 1e6).alias("goodput_mbps"))


def paasch_aggregation(results: dict[str, Any]) -> pl.DataFrame:
    """004_ slides 18-22: goodput (Mbit/s) of each scheduler on slide 18's paths, and the
    aggregation benefit (slide 19) against plain TCP on each path alone: per scheduler its
    value on slide 18's paths, and over each design (low- / high-BDP) the median and the share of points where it did not fall below the best path alone (benefit
    >= -0.05: a 5 % allowance for the MPTCP options and the extra handshake)."""
    out = []
    fixed, base = _goodput_mbps(results["fixed"]), _goodput_mbps(results["fixed_tcp"])
    q = [c for c in ("slow.queue",) if c in fixed.columns]
    variant = pl.format("slow-path queue {}", pl.col(q[0])) if q else pl.lit("")
    single = base.group_by(q or pl.lit(0)).agg(
        pl.col("goodput_mbps").filter(pl.col("path") == "fast").mean().alias("c1"),
        pl.col("goodput_mbps").filter(pl.col("path") == "slow").mean().alias("c2"))
    g = fixed.group_by([*q, "scheduler"], maintain_order=True).agg(pl.col("goodput_mbps").mean())
    g = (g.join(single, on=q) if q else g.join(single.drop("literal"), how="cross")).with_columns(variant.alias("variant"))
    g = g.with_columns(pl.struct("goodput_mbps", "c1", "c2").map_elements(
        lambda r: aggregation_benefit(r["goodput_mbps"], [r["c1"], r["c2"]]), return_dtype=pl.Float64).alias("ab"))
    setting = "47+1 Mbit/s, 250 ms"
    out.append(_rows(g, pl.col("variant"), "goodput_mbps", setting, pl.col("goodput_mbps")))
    out.append(_rows(g, pl.col("variant"), "aggregation_benefit", setting, pl.col("ab")))
    for cls in ("low", "high"):
        j = sweep_benefit(results, cls)
        if j is None:
            continue
        s = j.with_columns(pl.lit(sweep_setting(cls, j)).alias("setting")) \
            .group_by("setting", "scheduler", maintain_order=True).agg(
                pl.col("ab").median().alias("median"), (pl.col("ab") >= -0.05).mean().alias("share"))
        out.append(_rows(s, "", "aggregation_benefit_median", pl.col("setting"), pl.col("median")))
        out.append(_rows(s, "", "share_not_below_best_path", pl.col("setting"), pl.col("share")))
    return pl.concat(out)


#: the design parameters that identify a point of the Paasch sweeps (the MPTCP and TCP runs share them)
SWEEP_KEYS = ("p1.rate_bps", "p2.rate_bps", "p1.rtt_ns", "p2.rtt_ns", "p1.queue_ns", "p2.queue_ns")


def sweep_benefit(results: dict[str, Any], cls: str) -> pl.DataFrame | None:
    """One row per scheduler and point of the `cls` ("low" / "high") BDP design: the MPTCP
    goodput, the TCP goodputs on each path alone at the same point (`c1`, `c2`), the aggregation
    benefit `ab` and `point` (the design parameters as text, what pairs schedulers); None when
    the design did not run."""
    if f"sweep_{cls}" not in results:
        return None
    mp, sp = _goodput_mbps(results[f"sweep_{cls}"]), _goodput_mbps(results[f"sweep_{cls}_tcp"])
    keys = [c for c in SWEEP_KEYS if c in mp.columns]
    single = sp.group_by(keys).agg(pl.col("goodput_mbps").filter(pl.col("path") == "p1").first().alias("c1"),
                                   pl.col("goodput_mbps").filter(pl.col("path") == "p2").first().alias("c2"))
    return mp.join(single, on=keys, how="inner").with_columns(
        pl.struct("goodput_mbps", "c1", "c2").map_elements(
            lambda r: aggregation_benefit(r["goodput_mbps"], [r["c1"], r["c2"]]), return_dtype=pl.Float64).alias("ab"),
        pl.concat_str([pl.col(k).cast(pl.String) for k in keys], separator="/").alias("point"))


def sweep_setting(cls: str, j: pl.DataFrame) -> str:
    """The setting label of a design: "low-BDP design, 400 points"."""
    return f"{cls}-BDP design, {j.height // max(j['scheduler'].n_unique(), 1)} points"


def app_delay(results: dict[str, Any]) -> pl.DataFrame:
    """004_ slides 23-26: application delay of the CBR blocks (ms): mean, 95th percentile and the
    mean absolute variation between consecutive blocks, blocks of the first second (handshake,
    slow start) left out, per scheduler and application rate, seeds pooled."""
    res = results["scenario"]
    s = block_delay_summary(res.blocks, skip_s=1.0)
    runs = res.runs.select("run_id", *(c for c in ("rate",) if c in res.runs.columns))
    sched = res.flows.select("run_id", "flow_id", "scheduler")
    s = s.join(sched, on=["run_id", "flow_id"]).join(runs, on="run_id")
    setting = pl.col("rate") if "rate" in s.columns else pl.lit("")
    g = s.group_by([setting.alias("setting"), "scheduler"], maintain_order=True).agg(
        ((pl.col("delay_mean_ms") * pl.col("blocks")).sum() / pl.col("blocks").sum()).alias("mean"),
        pl.col("delay_p95_ms").mean().alias("p95"), pl.col("variation_mean_abs_ms").mean().alias("var"))
    return pl.concat([_rows(g, "", f"delay_{m}_ms" if m != "var" else "variation_ms", pl.col("setting"), pl.col(m))
                      for m in ("mean", "p95", "var")])
