"""Scheduler comparisons that answer "which is better here, by how much, and is it real?".

`compare(res, baseline="minrtt", by=["size"])` gives, per setting (the swept values in `by`;
the other swept values and the seeds pooled), one row per scheduler: median / mean / p95 of
what the workload measures (flow completion time of sized flows, goodput of bulk flows,
application delay of CBR blocks), the relative difference of the median from the baseline's
with a bootstrap 95 % interval (`mpsched.analysis.stats`, paired by (pooled setting, seed,
flow) when both sides have the same flows) and a verdict (faster / slower / tie).

Schedulers whose every flow gives the same value are one row (``ecf = cfs``), with the reason
read off the records (e.g. no flow ever sent on a second subflow). Beside it, the diagnostics
that explain a difference: retransmitted and reinjected bytes, RTOs, the share of bytes per
path, how many flows used a second subflow, and a hint when many flows end at the same time
after an RTO (a retransmission-timeout plateau, not a scheduler effect).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from mpsched.analysis.stats import relative_difference, verdict
from mpsched.analysis.summary import labelled_flows
from mpsched.study.results import Results

__all__ = ["Comparison", "compare", "metric_values", "METRICS"]

#: metric -> (column label, unit, higher is better)
METRICS = {
    "fct": ("FCT", "ms", False),
    "goodput": ("goodput", "Mbit/s", True),
    "block_delay": ("block delay", "ms", False),
}

#: A plateau: at least this share of a row's flows end within 1 ms of each other, after an RTO.
PLATEAU_SHARE = 0.2


@dataclass
class Comparison:
    """`table`: one row per setting and scheduler group (see `compare`); `by`: the swept
    parameters that make a setting; `paths`: the path names of the `on_<path>` columns."""

    table: pl.DataFrame
    metric: str
    baseline: str
    by: list[str]
    paths: list[str] = field(default_factory=list)
    pooled: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        name, unit, _ = METRICS[self.metric]
        return f"{name} ({unit})"


def _default_metric(res: Results, flows: pl.DataFrame) -> str:
    apps = set(flows.get_column("app").unique().to_list()) if "app" in flows.columns else {"sized"}
    if apps == {"cbr"} and not res.tables.get("blocks", pl.DataFrame()).is_empty():
        return "block_delay"
    if "sized" not in apps and ("bulk" in apps or apps == {"cbr"}):
        return "goodput"
    return "fct"


#: The flows' columns a comparison reads (besides the swept parameters): scanned from the store,
#: the rest of the table is never read.
FLOW_COLUMNS = ["run_id", "flow_id", "seed", "app", "completed", "fct_ns", "start_ns", "end_ns", "bytes_delivered",
                "bytes_retransmitted", "bytes_redundant"]


def _flows(res: Results) -> pl.DataFrame:
    return labelled_flows(res, [*FLOW_COLUMNS, *res.params])


def _scan(res: Results, name: str, columns: list[str]) -> pl.DataFrame:
    """The columns of `columns` that table `name` has, scanned (no other column read)."""
    return res.columns(name, columns)


def metric_values(res: Results, metric: str | None = None) -> tuple[str, pl.DataFrame]:
    """The metric and one value per unit measured (`value`: a completed flow's FCT in ms, a
    flow's goodput in Mbit/s, a block's delay in ms) with `scheduler`, the swept parameters,
    `seed`, `flow_id` (and `block`) as keys."""
    flows = _flows(res)
    metric = metric or _default_metric(res, flows)
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; use one of {', '.join(METRICS)}")
    if metric == "fct":
        vals = flows.filter(pl.col("completed")).with_columns((pl.col("fct_ns").cast(pl.Float64) / 1e6).alias("value"))
    elif metric == "goodput":
        dur = (pl.col("end_ns") - pl.col("start_ns")).cast(pl.Float64) / 1e9
        vals = flows.filter(pl.col("end_ns").is_not_null() & (dur > 0)).with_columns(
            (pl.col("bytes_delivered").cast(pl.Float64) * 8 / dur / 1e6).alias("value"))
    else:
        blocks = res.tables["blocks"].drop("scheduler", strict=False).join(
            flows.select("run_id", "flow_id", "scheduler"), on=["run_id", "flow_id"], how="left")
        vals = blocks.filter(pl.col("delay_ns").is_not_null()).with_columns(
            (pl.col("delay_ns").cast(pl.Float64) / 1e6).alias("value"))
    return metric, vals


def _diagnostics(res: Results, flows: pl.DataFrame, keys: list[str]) -> tuple[pl.DataFrame, list[str]]:
    """Per `keys` (setting + scheduler): retransmitted and reinjected bytes as a share of the
    delivered, RTOs per flow, the share of flows with an RTO, the share of flows that sent on
    more than one subflow, and the share of bytes on each path (`on_<path>`)."""
    delivered = pl.col("bytes_delivered").sum().cast(pl.Float64)
    aggs = [pl.len().alias("flows"), pl.col("completed").sum().alias("completed")]
    if "bytes_retransmitted" in flows.columns:
        aggs.append((pl.col("bytes_retransmitted").sum() / delivered).alias("retx"))
    if "bytes_redundant" in flows.columns:
        aggs.append((pl.col("bytes_redundant").sum() / delivered).alias("reinj"))
    diag = flows.group_by(keys, maintain_order=True).agg(aggs)
    sub = _scan(res, "subflows", ["run_id", "flow_id", "rto_count", "bytes_sent", "path", *keys])
    paths: list[str] = []
    if sub.is_empty() or not {"flow_id", "bytes_sent"} <= set(sub.columns):
        return diag, paths
    sub = sub.drop([c for c in keys if c in sub.columns]).join(
        flows.select("run_id", "flow_id", *keys), on=["run_id", "flow_id"], how="inner")
    per_flow = sub.group_by(["run_id", "flow_id", *keys], maintain_order=True).agg(
        (pl.col("rto_count").sum() if "rto_count" in sub.columns else pl.lit(0)).alias("rtos"),
        (pl.col("bytes_sent") > 0).sum().alias("used"))
    diag = diag.join(per_flow.group_by(keys, maintain_order=True).agg(
        pl.col("rtos").mean().alias("rto_per_flow"), (pl.col("rtos") > 0).mean().alias("rto_flows"),
        (pl.col("used") > 1).mean().alias("multi")), on=keys, how="left", maintain_order="left")
    if "path" in sub.columns:
        paths = [str(p) for p in sub.get_column("path").unique(maintain_order=True).to_list()]
        share = sub.group_by([*keys, "path"], maintain_order=True).agg(pl.col("bytes_sent").sum()).with_columns(
            (pl.col("bytes_sent") / pl.col("bytes_sent").sum().over(keys)).alias("share"),
            pl.format("on_{}", pl.col("path").cast(pl.String)).alias("column"))
        wide = share.pivot(on="column", index=keys, values="share", maintain_order=True)
        diag = diag.join(wide, on=keys, how="left", maintain_order="left")
    joins = _joins(res, flows, keys)
    if joins is not None:
        diag = diag.join(joins, on=keys, how="left", maintain_order="left")
    return diag, paths


def _joins(res: Results, flows: pl.DataFrame, keys: list[str]) -> pl.DataFrame | None:
    """Per `keys`: `join_ms`, the median time from a flow's start until a second subflow had
    its first RTT sample (its MP_JOIN handshake done), over the flows where that happened
    before they ended, and `before_join`, the share of flows that ended first."""
    s = _scan(res, "subflow_series", ["run_id", "flow_id", "subflow", "srtt_ns", "time_ns"])
    if s.is_empty() or not {"subflow", "srtt_ns", "flow_id"} <= set(s.columns) or "start_ns" not in flows.columns:
        return None
    first = s.filter((pl.col("subflow") > 0) & (pl.col("srtt_ns") > 0)).group_by("run_id", "flow_id").agg(
        pl.col("time_ns").min().alias("_join_at"))
    f = flows.select("run_id", "flow_id", *keys, "start_ns", "end_ns").join(first, on=["run_id", "flow_id"], how="left")
    joined = pl.col("_join_at").is_not_null() & (pl.col("end_ns").is_null() | (pl.col("_join_at") < pl.col("end_ns")))
    return f.group_by(keys, maintain_order=True).agg(
        ((pl.col("_join_at") - pl.col("start_ns")).filter(joined).cast(pl.Float64) / 1e6).median().alias("join_ms"),
        (~joined).mean().alias("before_join"))


def _plateau(values: np.ndarray, rto_of: np.ndarray) -> str | None:
    """A hint when at least `PLATEAU_SHARE` of the values lie within 1 ms of the most common
    one and most of those flows had an RTO."""
    if values.size < 5:
        return None
    ms = np.round(values).astype(np.int64)
    uniq, counts = np.unique(ms, return_counts=True)
    best = uniq[np.argmax(counts)]
    near = np.abs(values - best) <= 1.0
    if near.mean() < PLATEAU_SHARE or rto_of.size != values.size or rto_of[near].mean() < 0.5:
        return None
    return (f"{near.mean():.0%} of flows end at {best / 1e3:.3f} s ± 1 ms after an RTO "
            "(a retransmission-timeout plateau, not the scheduler)")


def _reason(diag_rows: list[dict]) -> str:
    """Why schedulers gave identical results, read off their diagnostics."""
    multi = [r.get("multi") for r in diag_rows]
    if diag_rows and all(r.get("before_join") == 1.0 for r in diag_rows):
        return "one subflow: every flow ended before the second subflow joined"
    if multi and all(m is not None and m == 0 for m in multi):
        return "one subflow: no flow sent data on a second subflow (each ended before the join or never needed it)"
    shares = [min(v for k, v in r.items() if k.startswith("on_") and v is not None)
              for r in diag_rows if any(k.startswith("on_") and v is not None for k, v in r.items())]
    if shares and max(shares) < 0.01:
        return (f"one path: the other carried under {max(max(shares), 1e-4):.2%} of the bytes, "
                "too little to change any decision")
    used = max((m for m in multi if m is not None), default=0.0)
    return (f"{used:.0%} of flows sent on a second subflow, yet each flow ended at the same time "
            "under all of them: they chose alike")


def compare(res: Results, baseline: str | None = None, by: list[str] | None = None, metric: str | None = None,
            *, confidence: float = 0.95, n_resamples: int = 2000) -> Comparison:
    """The comparison table (see the module's doc). Columns: the `by` settings, `scheduler`
    (several joined by " = " when identical), `n` (values), `median`, `mean`, `p95`, `diff`,
    `low`, `high` (fractions vs the baseline's median; null on the baseline row), `paired`,
    `verdict`, diagnostics (`retx`, `reinj`, `rto_per_flow`, `rto_flows`, `multi`,
    `on_<path>`, `join_ms`, `before_join`), `flows`, `completed` and `note`."""
    metric, vals = metric_values(res, metric)
    flows = _flows(res)
    if "scheduler" not in flows.columns:
        raise ValueError("these results name no scheduler: nothing to compare")
    swept = [p for p in res.group_params if p not in ("scheduler", "protocol")]
    by = swept if by is None else list(by)
    unknown = [b for b in by if b not in swept]
    if unknown:
        raise ValueError(f"--by {', '.join(unknown)}: not a swept parameter; swept: {', '.join(swept) or 'none'}")
    scheds = flows.get_column("scheduler").unique(maintain_order=True).to_list()
    baseline = baseline or ("minrtt" if "minrtt" in scheds else scheds[0])
    if baseline not in scheds:
        raise ValueError(f"baseline {baseline!r} is not in these results; schedulers: {', '.join(map(str, scheds))}")
    pooled = [p for p in swept if p not in by] + (["seed"] if "seed" in vals.columns else [])
    unit_keys = [*pooled, "flow_id"] + (["block"] if metric == "block_delay" else [])
    keys = [*by, "scheduler"]
    diag, paths = _diagnostics(res, flows, keys)
    rto_flow = _flow_rtos(res, flows)
    higher_better = METRICS[metric][2]
    rows: list[dict] = []
    settings = vals.select(by).unique(maintain_order=True).iter_rows() if by else [()]
    for setting in settings:
        part = vals.filter(pl.all_horizontal([pl.col(k) == v for k, v in zip(by, setting)])) if by else vals
        part = part.sort([*unit_keys])
        per: dict[str, pl.DataFrame] = {s: part.filter(pl.col("scheduler") == s) for s in scheds}
        per = {s: d for s, d in per.items() if d.height}
        groups = _identical_groups(per, unit_keys)
        base_df = next((per[g[0]] for g in groups if baseline in g), None)
        for group in groups:
            d = per[group[0]]
            x = d.get_column("value").to_numpy()
            drow = [r for r in diag.filter(pl.all_horizontal([pl.col(k) == v for k, v in zip(by, setting)])
                                           if by else pl.lit(True)).iter_rows(named=True) if r["scheduler"] in group]
            row = {**dict(zip(by, setting)), "scheduler": " = ".join(group), "n": int(x.size),
                   "median": float(np.median(x)), "mean": float(np.mean(x)), "p95": float(np.percentile(x, 95))}
            if baseline in group or base_df is None:
                row.update(diff=None, low=None, high=None, paired=None, verdict="baseline" if baseline in group else "n/a")
            else:
                iv = _interval(d, base_df, unit_keys, confidence, n_resamples)
                words = ("slower", "faster") if higher_better else ("faster", "slower")
                row.update(diff=iv.estimate, low=iv.low, high=iv.high, paired=iv.paired, verdict=verdict(iv, words=words))
            first = drow[0] if drow else {}
            for k, v in first.items():
                if k not in keys:
                    row[k] = v
            notes = []
            if len(group) > 1:
                notes.append(f"identical: {_reason(drow)}")
            if metric == "fct" and rto_flow is not None:
                rto = d.join(rto_flow, on=["run_id", "flow_id"], how="left").get_column("rtos").fill_null(0).to_numpy()
                hint = _plateau(x, rto > 0)
                if hint:
                    notes.append(hint)
            row["note"] = "; ".join(notes)
            rows.append(row)
    table = pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame()
    return Comparison(table, metric, baseline, by, paths, [p for p in pooled if p != "seed"])


def _flow_rtos(res: Results, flows: pl.DataFrame) -> pl.DataFrame | None:
    sub = _scan(res, "subflows", ["run_id", "flow_id", "rto_count"])
    if sub.is_empty() or "rto_count" not in sub.columns:
        return None
    return sub.group_by(["run_id", "flow_id"]).agg(pl.col("rto_count").sum().alias("rtos"))


def _identical_groups(per: dict[str, pl.DataFrame], unit_keys: list[str]) -> list[list[str]]:
    """Schedulers whose values are equal unit by unit (same units, same values), in order."""
    groups: list[list[str]] = []
    signature: list[tuple] = []
    for s, d in per.items():
        sig = (tuple(d.select(unit_keys).rows()), tuple(d.get_column("value").to_list()))
        for i, other in enumerate(signature):
            if other == sig:
                groups[i].append(s)
                break
        else:
            groups.append([s])
            signature.append(sig)
    return groups


def _interval(sample: pl.DataFrame, base: pl.DataFrame, unit_keys: list[str], confidence: float, n_resamples: int):
    """The relative difference of the medians, paired when both sides measured the same units."""
    a = sample.select(*unit_keys, "value")
    b = base.select(*unit_keys, "value")
    both = a.join(b, on=unit_keys, how="inner", suffix="_base")
    if both.height == a.height == b.height:
        return relative_difference(both.get_column("value").to_numpy(), both.get_column("value_base").to_numpy(),
                                   "median", paired=True, confidence=confidence, n_resamples=n_resamples)
    return relative_difference(a.get_column("value").to_numpy(), b.get_column("value").to_numpy(), "median",
                               paired=False, confidence=confidence, n_resamples=n_resamples)
