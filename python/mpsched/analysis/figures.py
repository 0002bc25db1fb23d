"""Figures from a study (matplotlib, no pyplot state: each function returns a `Figure`).

* `fct_boxplot`, `fct_cdf`: flow completion time per scheduler, one panel per swept setting.
* `subflow_timeseries`: per-subflow throughput, cwnd and smoothed RTT over time for one run.
* `ofo_timeseries`: receive-side out-of-order bytes over time, one panel per scheduler.
* `fct_cdf_by_class`, `link_utilisation_plot`: studies on a `[topology]`: FCT CDF per flow
  class, link utilisation per tier.

`save_all` writes every figure as PNG and SVG. Figures are rendered by the Agg backend through
`Figure.savefig`, so nothing here touches the user's interactive backend.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from mpsched.analysis.summary import group_keys, labelled_flows, throughput_series
from mpsched.study.results import Results

__all__ = ["fct_boxplot", "fct_cdf", "subflow_timeseries", "ofo_timeseries", "fct_cdf_by_class", "link_utilisation_plot",
           "save_all"]


def _panels(res: Results, flows: pl.DataFrame) -> list[tuple[str, pl.DataFrame]]:
    """Split completed flows by the swept settings other than scheduler and seed."""
    keys = [k for k in group_keys(res, flows) if k != "scheduler"]
    done = flows.filter(pl.col("completed"))
    if not keys:
        return [("all flows", done)]
    out = []
    for key, part in done.group_by(keys, maintain_order=True):
        title = ", ".join(f"{k}={v}" for k, v in zip(keys, key))
        out.append((title, part))
    return out


def _schedulers(flows: pl.DataFrame) -> list[str]:
    return flows.get_column("scheduler").unique(maintain_order=True).to_list() if "scheduler" in flows.columns else []


def _grid(n: int, *, width: float = 4.0, height: float = 3.2) -> tuple[Figure, list]:
    cols = min(n, 3)
    rows = (n + cols - 1) // cols
    fig = Figure(figsize=(width * cols, height * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel().tolist()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def fct_boxplot(res: Results) -> Figure:
    """Box plots of FCT (s) per scheduler; one panel per swept setting (e.g. flow size)."""
    flows = labelled_flows(res)
    panels = _panels(res, flows)
    scheds = _schedulers(flows)
    fig, axes = _grid(len(panels))
    for ax, (title, part) in zip(axes, panels):
        data = [part.filter(pl.col("scheduler") == s).get_column("fct_ns").to_numpy() / 1e9 for s in scheds]
        ax.boxplot(data, tick_labels=scheds, showfliers=True)
        ax.tick_params(axis="x", labelrotation=30, labelsize=8)  # long names must not overlap
        for label in ax.get_xticklabels():
            label.set_horizontalalignment("right")
        ax.set_title(title, fontsize=9)
        ax.set_ylabel("flow completion time (s)")
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle("Flow completion time per scheduler")
    return fig


def fct_cdf(res: Results) -> Figure:
    """Empirical CDFs of FCT (s), one line per scheduler; one panel per swept setting."""
    flows = labelled_flows(res)
    panels = _panels(res, flows)
    scheds = _schedulers(flows)
    fig, axes = _grid(len(panels))
    from mpsched.analysis.figures_compare import STYLES

    for ax, (title, part) in zip(axes, panels):
        drawn: dict[tuple, str] = {}  # curve -> the scheduler that drew it first
        for i, s in enumerate(scheds):
            one = part.filter(pl.col("scheduler") == s).sort("run_id", "flow_id") if "run_id" in part.columns else \
                part.filter(pl.col("scheduler") == s)
            x = np.sort(one.get_column("fct_ns").to_numpy() / 1e9)
            if not x.size:
                continue
            same = drawn.get(tuple(x))
            marker, ls = STYLES[i % len(STYLES)]
            every = max(1, x.size // 8)
            ax.step(x, np.arange(1, x.size + 1) / x.size, where="post", linestyle=ls, marker=marker, markevery=every,
                    ms=4, lw=1.6 if same is None else 1.0, color=f"C{i % 10}", alpha=0.9,
                    label=s if same is None else f"{s} (identical to {same})")
            drawn.setdefault(tuple(x), s)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("flow completion time (s)")
        ax.set_ylabel("CDF")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        if ax.get_lines():
            ax.legend(fontsize=7, loc="lower right")
    fig.suptitle("Flow completion time CDF")
    return fig


def _run_per_scheduler(res: Results, run_id: str | None = None) -> dict[str, str]:
    """scheduler -> the run to draw time series for: the setting and seed where the schedulers
    differ most, or that of `run_id` (`mpsched.analysis.figures_compare.contrast_runs`)."""
    from mpsched.analysis.figures_compare import contrast_runs

    return contrast_runs(res, run_id)


def _since_flow_start(res: Results, series: pl.DataFrame, run_id: str) -> pl.DataFrame:
    """Samples of one run while each flow is active, with `t_s`: seconds since its flow began
    (flows of a run are overlaid, so a run of many short flows stays readable)."""
    if series.is_empty():
        return series
    part = series.filter(pl.col("run_id") == run_id)
    spans = res.flows.filter(pl.col("run_id") == run_id).select(
        "flow_id", "start_ns", pl.col("end_ns").fill_null(2**62))  # an unfinished flow is active to the end
    part = part.join(spans, on="flow_id", how="inner")
    return part.filter((pl.col("time_ns") >= pl.col("start_ns")) & (pl.col("time_ns") <= pl.col("end_ns"))).with_columns(
        ((pl.col("time_ns") - pl.col("start_ns")).cast(pl.Float64) / 1e9).alias("t_s"))


def subflow_timeseries(res: Results, run_id: str | None = None) -> Figure:
    """Throughput (Mbit/s), cwnd (kB) and smoothed RTT (ms) of every subflow of one run, against
    the time since its flow started (the run's flows overlaid), coloured by path (default run:
    the first)."""
    if run_id is None:
        run_id = res.runs.get_column("run_id")[0] if res.runs.height else None
    part = _since_flow_start(res, throughput_series(res, [run_id]), run_id)
    fig = Figure(figsize=(9, 7), layout="constrained")
    axes = fig.subplots(3, 1, sharex=True)
    paths = part.get_column("path").unique(maintain_order=True).to_list() if "path" in part.columns else []
    colors = {p: f"C{i}" for i, p in enumerate(paths)}
    metrics = [("throughput_bps", 1e-6, "throughput (Mbit/s)"), ("cwnd_bytes", 1e-3, "cwnd (kB)"),
               ("srtt_ns", 1e-6, "smoothed RTT (ms)")]
    n_flows = part.get_column("flow_id").n_unique() if not part.is_empty() else 0
    alpha = max(0.15, min(0.9, 3.0 / max(n_flows, 1)))
    if not part.is_empty():
        for (_flow, _sub, path), g in part.group_by(["flow_id", "subflow", "path"], maintain_order=True):
            t = g.get_column("t_s").to_numpy()
            for ax, (col, scale, _label) in zip(axes, metrics):
                if col in g.columns:
                    y = g.get_column(col).cast(pl.Float64).to_numpy() * scale
                    ax.plot(t, y, color=colors[path], lw=0.8, alpha=alpha)
    for ax, (_col, _scale, label) in zip(axes, metrics):
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("time since the flow started (s)")
    for p, c in colors.items():
        axes[0].plot([], [], color=c, label=str(p))
    if colors:
        axes[0].legend(title="path", fontsize=8, loc="upper right")
    _mark_path_events(res, run_id, part, axes)
    sched = res.runs.filter(pl.col("run_id") == run_id).get_column("scheduler") if "scheduler" in res.runs.columns else None
    who = f"{sched[0]}, " if sched is not None and sched.len() else ""
    fig.suptitle(f"Subflows of {n_flows} flow(s), overlaid — {who}run {run_id}", fontsize=10)
    return fig


def _mark_path_events(res: Results, run_id: str, part: pl.DataFrame, axes) -> None:
    """Vertical lines where a path went down or up (the run's stored configuration), on the
    time axis of the run's first flow."""
    config = res.config(run_id)
    if not config or part.is_empty():
        return
    names = [p["name"] for p in config.get("paths", [])]
    start_ns = part.get_column("start_ns").min()
    for e in config.get("path_events", []):
        t = (e["at_ns"] - start_ns) / 1e9
        for ax in axes:
            ax.axvline(t, color="red" if not e.get("up") else "green", lw=0.8, ls="--")
        axes[0].annotate(f"{names[e['path']]} {'up' if e.get('up') else 'down'}", (t, 1), xycoords=("data", "axes fraction"),
                         fontsize=7, rotation=90, va="top", ha="right")


def ofo_timeseries(res: Results, runs: dict[str, str] | None = None) -> Figure:
    """Out-of-order bytes held by the receiver against the time since the flow started: one
    panel per scheduler (its run where the schedulers differ most), one line per flow."""
    runs = runs if runs is not None else _run_per_scheduler(res)
    fig, axes = _grid(max(len(runs), 1), width=4.5)
    for ax, (sched, run_id) in zip(axes, runs.items()):
        part = _since_flow_start(res, res.conn_series, run_id)
        if not part.is_empty():
            for _flow, g in part.group_by("flow_id", maintain_order=True):
                ax.plot(g.get_column("t_s").to_numpy(), g.get_column("ofo_bytes").cast(pl.Float64).to_numpy() / 1e3,
                        lw=0.8, alpha=0.6)
        if part.is_empty() or not (part.get_column("ofo_bytes") != 0).any():
            ax.text(0.5, 0.5, "no out-of-order data in this run", transform=ax.transAxes, ha="center", fontsize=8)
            ax.set_ylim(0, 1)
        ax.set_title(f"{sched} ({run_id})", fontsize=7)
        ax.set_xlabel("time since the flow started (s)")
        ax.set_ylabel("out-of-order bytes (kB)")
        ax.grid(alpha=0.3)
    fig.suptitle("Receive buffer: out-of-order data")
    return fig


def _setting_labels(res: Results, df: pl.DataFrame) -> pl.DataFrame:
    """`df` with `setting`: the swept values other than the seed (and the flow's protocol when
    the sweep does not already say it), e.g. "protocol=mptcp" or "cc=lia, mptcp"."""
    keys = [k for k in res.group_params if k in df.columns]
    parts = [pl.format(f"{k}={{}}", pl.col(k).cast(pl.String)) for k in keys]
    if "protocol" in df.columns and "protocol" not in keys:
        parts.append(pl.col("protocol"))
    if not parts:
        return df.with_columns(pl.lit("all").alias("setting"))
    return df.with_columns(pl.concat_str(parts, separator=", ").alias("setting"))


def fct_cdf_by_class(res: Results) -> Figure:
    """Data-center studies: empirical CDFs of FCT (ms) of completed sized flows, one panel per
    flow class, one line per swept setting and protocol."""
    flows = _setting_labels(res, res.flows.filter(pl.col("completed") & (pl.col("app") != "bulk")))
    classes = flows.get_column("class").unique(maintain_order=True).to_list() if not flows.is_empty() else []
    fig, axes = _grid(max(len(classes), 1))
    for ax, cls in zip(axes, classes):
        part = flows.filter(pl.col("class") == cls)
        for (setting,), g in part.group_by(["setting"], maintain_order=True):
            x = np.sort(g.get_column("fct_ns").to_numpy() / 1e6)
            ax.step(x, np.arange(1, x.size + 1) / x.size, where="post", label=str(setting))
        ax.set_xscale("log")
        ax.set_title(f"{cls} ({part.height} flows)", fontsize=9)
        ax.set_xlabel("flow completion time (ms)")
        ax.set_ylabel("CDF")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Flow completion time per class")
    return fig


def link_utilisation_plot(res: Results) -> Figure:
    """Data-center studies: utilisation of every link per tier (host, edge-aggregation, core;
    access and bottleneck on a dumbbell), a box per swept setting, seeds pooled."""
    from mpsched.analysis.summary import link_utilisation

    util = _setting_labels(res, link_utilisation(res))
    tiers = [t for t in ("host", "edge_agg", "agg_core", "access", "bottleneck")
             if not util.is_empty() and t in util.get_column("tier").to_list()]
    fig, axes = _grid(max(len(tiers), 1))
    for ax, tier in zip(axes, tiers):
        part = util.filter(pl.col("tier") == tier)
        settings = part.get_column("setting").unique(maintain_order=True).to_list()
        data = [part.filter(pl.col("setting") == st).get_column("utilisation").to_numpy() * 100 for st in settings]
        ax.boxplot(data, tick_labels=settings)
        ax.set_title(f"{tier.replace('_', '-')} links", fontsize=9)
        ax.set_ylabel("utilisation over the run (%)")
        ax.set_ylim(0, 105)
        ax.grid(axis="y", alpha=0.3)
        ax.tick_params(axis="x", labelsize=7)
    fig.suptitle("Link utilisation per tier")
    return fig


def resilience_plot(res: Results, summary: pl.DataFrame | None = None) -> Figure:
    """Per scheduler (one bar per setting, e.g. path event kind): the failover time of the
    message flows and their deadline-miss rate, each with its 95 % interval over seeds as an
    error bar, and the bytes sent per byte delivered (all flows), from
    `mpsched.analysis.resilience_summary`."""
    from mpsched.analysis.summary import resilience_summary

    s = resilience_summary(res) if summary is None else summary
    msg = s.filter(pl.col("app") == "messages") if "app" in s.columns else s
    settings = [c for c in s.columns if c not in ("scheduler", "app") and c in res.group_params]
    label = pl.concat_str([pl.col(c).cast(pl.String) for c in settings], separator=" ") if settings else pl.lit("")
    overhead = s.group_by(["scheduler", *settings], maintain_order=True).agg(pl.col("sent_per_delivered").mean())
    panels = [("failover time of the messages (ms)", msg, "failover_ms"),
              ("deadline-miss rate of the messages", msg, "deadline_miss_rate"),
              ("bytes sent / bytes delivered (all flows)", overhead, "sent_per_delivered")]
    fig, axes = _grid(3, width=6.0, height=3.4)
    scheds = list(dict.fromkeys(s["scheduler"].to_list()))
    for ax, (title, df, col) in zip(axes, panels):
        if col not in df.columns:
            ax.set_visible(False)
            continue
        df = df.with_columns(label.alias("_setting"))
        groups = list(dict.fromkeys(df["_setting"].to_list()))
        width = 0.8 / max(len(groups), 1)
        for gi, g in enumerate(groups):
            rows = {r["scheduler"]: r for r in df.filter(pl.col("_setting") == g).iter_rows(named=True)}
            ys, lows, highs = ([np.nan if rows.get(sc, {}).get(c) is None else rows[sc][c] for sc in scheds]
                               for c in (col, f"{col}_low", f"{col}_high"))
            # the 95 % interval over seeds where the summary has one (a bare bar where it has not)
            err = np.array([np.subtract(ys, lows), np.subtract(highs, ys)]) if f"{col}_low" in df.columns else None
            ax.bar(np.arange(len(scheds)) + gi * width, ys, width, label=g or None, yerr=err, capsize=2,
                   error_kw={"elinewidth": 0.8})
        ax.set_xticks(np.arange(len(scheds)) + 0.4 - width / 2, scheds, rotation=30, ha="right", fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
    if any(g for g in groups):
        axes[0].legend(fontsize=7)
    return fig


def save_all(res: Results, out: Path, run_id: str | None = None) -> list[Path]:
    """Write the standard figures into `out` as PNG and SVG; returns the files written: FCT box
    plots and CDFs, FCT against size and the difference from the baseline with intervals, and
    time series of the runs where the schedulers differ most (or of `run_id`'s setting and
    seed); a study on a [topology]: FCT CDF per class and link utilisation per tier."""
    from mpsched.analysis.figures_compare import metric_vs_size, vs_baseline
    from mpsched.analysis.summary import is_datacenter

    out.mkdir(parents=True, exist_ok=True)
    figures: dict[str, Figure] = {}
    if is_datacenter(res):
        if not res.flows.filter(pl.col("completed") & (pl.col("app") != "bulk")).is_empty():
            figures["fct_cdf_class"] = fct_cdf_by_class(res)
        figures["link_utilisation"] = link_utilisation_plot(res)
    elif not res.flows.is_empty() and res.flows.get_column("completed").any():
        figures["fct_box"] = fct_boxplot(res)
        figures["fct_cdf"] = fct_cdf(res)
        _comparison_figures(res, figures, metric_vs_size, vs_baseline)
    runs = _run_per_scheduler(res, run_id) if not is_datacenter(res) else {}
    if not res.subflow_series.is_empty():
        for sched, rid in runs.items():
            figures[f"subflows_{_safe(sched)}"] = subflow_timeseries(res, rid)
    if not res.conn_series.is_empty() and runs:
        figures["ofo"] = ofo_timeseries(res, runs)
    from mpsched.analysis.summary import has_resilience

    if has_resilience(res):
        figures["resilience"] = resilience_plot(res)
    written = []
    for name, fig in figures.items():
        for ext in ("png", "svg"):
            path = out / f"{name}.{ext}"
            fig.savefig(path, dpi=120)
            written.append(path)
    return written


def _comparison_figures(res: Results, figures: dict, metric_vs_size, vs_baseline) -> None:
    from mpsched.analysis.compare import compare

    try:
        cmp = compare(res)
    except ValueError:  # nothing to compare (no scheduler named)
        return
    if cmp.table.is_empty():
        return
    by_size = metric_vs_size(res, cmp)
    if by_size is not None:
        figures[f"{cmp.metric}_vs_size"] = by_size
    if cmp.table.get_column("scheduler").n_unique() > 1:
        figures["vs_baseline"] = vs_baseline(res, cmp)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-." else "_" for c in name)
