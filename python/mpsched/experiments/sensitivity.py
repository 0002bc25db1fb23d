"""Sensitivity runs: what a study's headline result does when an assumption the paper does not
state changes (queue, congestion control, receive buffer, base RTT, ...).

Each study may have `experiments/<study>/sensitivity/*.toml`: its scenario reduced to seconds
(one seed, fewer sizes), `baseline.toml` unchanged otherwise, and one file per assumption that
changes only that (a list sweeps it). `run_sensitivity` runs them (stored runs are reused) and
reduces each to the study's headline numbers per swept value and scheduler (`HEADLINES`); the
README's setup table and `published.toml`'s `[[setup]]` entries quote them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import polars as pl

from mpsched.analysis.metrics import block_delay_summary, rtt_max
from mpsched.analysis.summary import labelled_flows
from mpsched.experiments.metrics import _goodput_mbps
from mpsched.experiments.studies import ROOT

__all__ = ["HEADLINES", "sensitivity_files", "run_sensitivity", "headline"]


def _swept(res) -> list[str]:
    """The parameters a file varies (a one-value list is not a variation)."""
    return [p for p in res.group_params if p != "scheduler" and p in res.runs.columns and res.runs[p].n_unique() > 1]


def _bwm(res) -> pl.DataFrame:
    """Total traffic (MB) and largest sRTT (ms) per run: 002_ Table 1's two columns."""
    rtt = rtt_max(res.subflow_series).group_by("run_id").agg(pl.col("srtt_max_ms").max().alias("rtt_max_ms"))
    f = labelled_flows(res).join(rtt, on="run_id")
    return f.select(*_swept(res), "scheduler", (pl.col("bytes_delivered") / 1e6).alias("total_MB"), "rtt_max_ms")


def _goodput(res) -> pl.DataFrame:
    """Goodput (Mbit/s) and RTOs per run: slide 18's number, and whether timeouts made it."""
    rtos = res.subflows.group_by("run_id").agg(pl.col("rto_count").sum().alias("rtos"))
    return _goodput_mbps(res).join(rtos, on="run_id").select(*_swept(res), "scheduler", "goodput_mbps", "rtos")


def _fct(res) -> pl.DataFrame:
    """Mean FCT (s) per size or page: 000_'s tables."""
    from mpsched.scenario.pages import PAGES

    pages = {sum(sizes): name for name, sizes in PAGES.items()}
    f = labelled_flows(res).filter(pl.col("completed"))
    setting = pl.col("size") if "size" in f.columns else pl.col("size_bytes").replace_strict(pages, default="other")
    keep = [p for p in _swept(res) if p != "size"]
    return f.select(*keep, setting.cast(pl.String).alias("setting"), "scheduler",
                    (pl.col("fct_ns") / 1e9).alias("fct_mean_s"))


def _app_delay(res) -> pl.DataFrame:
    """Mean block delay and its mean variation (ms), the first second left out: slides 23-26."""
    s = block_delay_summary(res.blocks, skip_s=1.0).join(res.flows.select("run_id", "flow_id", "scheduler"),
                                                          on=["run_id", "flow_id"])
    s = s.join(res.runs.select("run_id", *(p for p in _swept(res) if p in res.runs.columns)), on="run_id")
    return s.select(*_swept(res), "scheduler", pl.col("delay_mean_ms"), pl.col("variation_mean_abs_ms").alias("variation_ms"))


#: per study: the reduction of one sensitivity file's results to its headline numbers
HEADLINES: dict[str, Callable[[Any], pl.DataFrame]] = {
    "bwm_bufferbloat": _bwm, "cfs_short_flows": _fct, "cfs_large_flows": _fct, "cfs_web": _fct,
    "paasch_aggregation": _goodput, "paasch_app_delay": _app_delay}


def sensitivity_files(name: str) -> list[Path]:
    """The study's sensitivity scenario files, `baseline.toml` first."""
    files = sorted((ROOT / name / "sensitivity").glob("*.toml"))
    return sorted(files, key=lambda f: f.stem != "baseline")


def headline(name: str, res) -> pl.DataFrame:
    """One file's results as the study's headline numbers: the swept value(s) as `setting`
    (with the size or page where the study has them), one column per scheduler, per metric."""
    rows = HEADLINES[name](res)
    keys = list(dict.fromkeys(c for c in (*_swept(res), "setting") if c in rows.columns and c != "size"))
    metrics = [c for c in rows.columns if c not in keys and c != "scheduler"]
    long = rows.unpivot(metrics, index=[*keys, "scheduler"], variable_name="metric").group_by(
        [*keys, "metric", "scheduler"], maintain_order=True).agg(pl.col("value").mean())
    label = pl.concat_str([pl.format("{}={}", pl.lit(k), pl.col(k).cast(pl.String)) for k in keys], separator=", ") \
        if keys else pl.lit("as the study")
    wide = long.with_columns(label.alias("setting")).pivot("scheduler", index=["setting", "metric"], values="value")
    return wide


def run_sensitivity(name: str, out: str | Path, *, jobs: int = 1,
                    on_file: Callable[[str, int], None] | None = None) -> list[tuple[str, str, pl.DataFrame]]:
    """Run every sensitivity file of study `name` into `out/<file stem>/`: per file its stem,
    what it changes (the scenario's description) and its headline numbers."""
    from mpsched.scenario import load_scenario
    from mpsched.study import plan, run

    if name not in HEADLINES:
        raise KeyError(f"study {name!r} has no sensitivity runs")
    out_list = []
    for f in sensitivity_files(name):
        scenario = load_scenario(f)
        if on_file:
            on_file(f.name, len(plan(scenario)))
        res = run(scenario, Path(out) / f.stem, jobs=jobs)
        what = scenario.description.split(": ", 1)[-1]
        out_list.append((f.stem, what, headline(name, res)))
    return out_list
