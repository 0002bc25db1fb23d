"""The raw samples behind our numbers: every repetition (seed x flow, or seed x block) a study's
reductions average over, so a claim is judged on all of them with a confidence interval, not on
two means (`mpsched.experiments.claims`).

One long table per study, columns `SAMPLE_COLUMNS`: `variant`, `metric`, `setting`, `scheduler`
as in our numbers (`mpsched.experiments.metrics`), `key` (what pairs a sample with the other
scheduler's: the same seed and flow of the same setting run the same workload), `value` (in the
published unit) and `statistic` (how the samples give the metric: the mean of per-flow FCTs
gives `fct_mean_s`, their 95th percentile `fct_p95_ms`). A metric derived from several
schedulers (a reduction over the default) has no samples of its own.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from mpsched.analysis.metrics import aggregation_benefit, block_delay, rtt_max
from mpsched.analysis.summary import labelled_flows

__all__ = ["SAMPLE_COLUMNS", "cfs_fct", "bwm_bufferbloat", "paasch_aggregation", "app_delay"]  # datacenter: experiments.datacenter

SAMPLE_COLUMNS = ("variant", "metric", "setting", "scheduler", "key", "value", "statistic")


def _rows(df: pl.DataFrame, variant: pl.Expr | str, metric: str, setting: pl.Expr | str, key: pl.Expr,
          value: pl.Expr, statistic: str = "mean") -> pl.DataFrame:
    lit = lambda x: pl.lit(x) if isinstance(x, str) else x  # noqa: E731
    return df.select(lit(variant).cast(pl.String).alias("variant"), pl.lit(metric).alias("metric"),
                     lit(setting).cast(pl.String).alias("setting"), pl.col("scheduler").cast(pl.String),
                     key.cast(pl.String).alias("key"), value.cast(pl.Float64).alias("value"),
                     pl.lit(statistic).alias("statistic"))


def _seed_flow() -> pl.Expr:
    return pl.format("s{}/f{}", pl.col("seed"), pl.col("flow_id"))


def cfs_fct(results: dict[str, Any]) -> pl.DataFrame:
    """000_ Tables 2, 4, 6, 7: each completed flow's FCT (s); the table's number is their mean."""
    from mpsched.experiments.metrics import cfs_fct as means  # the variant and setting labels
    from mpsched.scenario.pages import PAGES

    pages = {sum(sizes): name for name, sizes in PAGES.items()}
    frames = []
    for stem, res in results.items():
        f = labelled_flows(res).filter(pl.col("completed"))
        rate = pl.col("wlan.rate") if "wlan.rate" in f.columns else None
        if rate is None:
            labels = means({stem: res}).get_column("variant").unique()
            rate_label = labels[0] if labels.len() else ""
            variant = pl.lit(rate_label)
        else:
            variant = pl.format("WLAN {}" + (", reordering jitter" if stem == "reorder" else ""), rate)
        setting = pl.col("size") if "size" in f.columns else pl.col("size_bytes").replace_strict(pages, default="other")
        frames.append(_rows(f, variant, "fct_mean_s", setting, _seed_flow(), pl.col("fct_ns") / 1e9))
    return pl.concat(frames)


def bwm_bufferbloat(results: dict[str, Any]) -> pl.DataFrame:
    """002_ Table 1 and Fig. 7: per run (one connection per seed) the MB delivered, the average
    rate, the largest smoothed RTT and the split during the UDP bursts (`metrics.burst_split`);
    the table's numbers are their means over the seeds."""
    from mpsched.experiments.metrics import burst_split

    out = []
    for stem, res in results.items():
        f = labelled_flows(res)
        dur = pl.DataFrame({"run_id": list(res.meta), "dur_s": [m["engine_stats"]["end_ns"] / 1e9 for m in res.meta.values()]})
        rtt = rtt_max(res.subflow_series).group_by("run_id").agg(pl.col("srtt_max_ms").max())
        per_run = f.join(dur, on="run_id").join(rtt, on="run_id")
        if stem == "bwm_common_rtt":
            per_run = per_run.with_columns(pl.format("{} ({})", pl.col("scheduler"), pl.lit(stem)).alias("scheduler"))
        variant = "10 MB queues" if stem == "queue_10mb" else "unlimited queues"
        key = pl.format("s{}", pl.col("seed"))
        out += [_rows(per_run, variant, "total_traffic_MB", "50 s run", key, pl.col("bytes_delivered") / 1e6),
                _rows(per_run, variant, "throughput_mbps", "50 s run", key,
                      pl.col("bytes_delivered") * 8 / pl.col("dur_s") / 1e6),
                _rows(per_run, variant, "rtt_max_ms", "50 s run", key, pl.col("srtt_max_ms"))]
        split = per_run.join(burst_split(res), on="run_id")
        out += [_rows(split, variant, "burst_congested_share", "UDP bursts", key, pl.col("congested_share")),
                _rows(split, variant, "burst_free_path_mbps", "UDP bursts", key, pl.col("free_mbps"))]
    return pl.concat(out)


def paasch_aggregation(results: dict[str, Any]) -> pl.DataFrame:
    """004_ slides 18-22: per run on slide 18's paths (one connection per seed) the goodput
    (Mbit/s) and its aggregation benefit against plain TCP on each path alone (the single-path
    goodputs averaged over the seeds, as in our numbers); per point of each sweep design its
    aggregation benefit (`aggregation_benefit_median`: the samples are the design's points,
    paired across schedulers by the point)."""
    from mpsched.experiments.metrics import _goodput_mbps, sweep_benefit, sweep_setting

    fixed, base = _goodput_mbps(results["fixed"]), _goodput_mbps(results["fixed_tcp"])
    q = [c for c in ("slow.queue",) if c in fixed.columns]
    variant = pl.format("slow-path queue {}", pl.col(q[0])) if q else pl.lit("")
    single = base.group_by(q or pl.lit(0)).agg(
        pl.col("goodput_mbps").filter(pl.col("path") == "fast").mean().alias("c1"),
        pl.col("goodput_mbps").filter(pl.col("path") == "slow").mean().alias("c2"))
    g = fixed.join(single, on=q) if q else fixed.join(single.drop("literal"), how="cross")
    g = g.with_columns(pl.struct("goodput_mbps", "c1", "c2").map_elements(
        lambda r: aggregation_benefit(r["goodput_mbps"], [r["c1"], r["c2"]]), return_dtype=pl.Float64).alias("ab"))
    setting, key = "47+1 Mbit/s, 250 ms", pl.format("s{}", pl.col("seed"))
    out = [_rows(g, variant, "goodput_mbps", setting, key, pl.col("goodput_mbps")),
           _rows(g, variant, "aggregation_benefit", setting, key, pl.col("ab"))]
    for cls in ("low", "high"):
        j = sweep_benefit(results, cls)
        if j is not None:
            out.append(_rows(j, "", "aggregation_benefit_median", sweep_setting(cls, j), pl.col("point"), pl.col("ab"),
                             statistic="median"))
    return pl.concat(out)


def app_delay(results: dict[str, Any]) -> pl.DataFrame:
    """004_ slides 23-26: each block's delay (ms) and its absolute variation from the block
    before, blocks of each flow's first second left out (as in our numbers); block i of a seed
    carries the same application data under every scheduler."""
    res = results["scenario"]
    b = block_delay(res.blocks)
    keys = [c for c in ("run_id", "flow_id") if c in b.columns]
    b = b.filter(pl.col("sent_ns") >= pl.col("sent_ns").min().over(keys) + 1_000_000_000)
    runs = res.runs.select("run_id", "seed", *(c for c in ("rate",) if c in res.runs.columns))
    b = b.join(res.flows.select("run_id", "flow_id", "scheduler"), on=["run_id", "flow_id"]).join(runs, on="run_id")
    setting = pl.col("rate") if "rate" in b.columns else pl.lit("")
    key = pl.format("s{}/f{}/b{}", pl.col("seed"), pl.col("flow_id"), pl.col("block"))
    return pl.concat([_rows(b, "", "delay_mean_ms", setting, key, pl.col("delay_ms")),
                      _rows(b.filter(pl.col("variation_ms").is_not_null()), "", "variation_ms", setting, key,
                            pl.col("variation_ms").abs())])
