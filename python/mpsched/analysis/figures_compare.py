"""Figures that show the difference between schedulers (`mpsched.analysis.compare`):

* `metric_vs_size`: the median FCT (or goodput, block delay) against the flow size, one line per
  scheduler with its bootstrap 95 % interval, one panel per other swept setting;
* `vs_baseline`: each scheduler's difference from the baseline in % with its interval, per
  setting; zero (no difference) drawn, ties hollow;
* `contrast_runs`: the runs to draw time series for: the setting and seed where the schedulers'
  median differs most (or the setting of a named run).

Identical schedulers are drawn once, labelled ``a = b``.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from mpsched.analysis.compare import Comparison, compare, metric_values
from mpsched.analysis.stats import STATISTICS
from mpsched.analysis.summary import labelled_flows
from mpsched.study.results import Results

__all__ = ["metric_vs_size", "vs_baseline", "contrast_runs", "STYLES"]

#: (marker, linestyle) per line, so coinciding curves stay distinguishable in print and for
#: colour-blind readers
STYLES = [("o", "-"), ("s", "--"), ("^", "-."), ("D", ":"), ("v", (0, (5, 1))), ("P", (0, (3, 1, 1, 1))),
          ("X", "-"), ("*", "--")]


def _style(i: int) -> dict:
    marker, ls = STYLES[i % len(STYLES)]
    return {"marker": marker, "linestyle": ls, "color": f"C{i % 10}"}


def _median_interval(x: np.ndarray, seed: int = 0, n: int = 1000) -> tuple[float, float]:
    """Percentile bootstrap 95 % interval of the median (numpy, fixed seed)."""
    if x.size < 2 or np.all(x == x[0]):
        return float(np.median(x)), float(np.median(x))
    rng = np.random.default_rng(seed)
    meds = STATISTICS["median"](x[rng.integers(0, x.size, size=(n, x.size))], axis=-1)
    return float(np.percentile(meds, 2.5)), float(np.percentile(meds, 97.5))


def _panels(cmp: Comparison, x_key: str | None) -> list[tuple[str, pl.DataFrame]]:
    keys = [k for k in cmp.by if k != x_key]
    if not keys:
        return [("", cmp.table)]
    return [(", ".join(f"{k}={v}" for k, v in zip(keys, key)), part)
            for key, part in cmp.table.group_by(keys, maintain_order=True)]


def _grid(n: int, width: float = 4.6, height: float = 3.4) -> tuple[Figure, list]:
    cols = min(n, 2)
    rows = (n + cols - 1) // cols
    fig = Figure(figsize=(width * cols, height * rows + 0.6), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel().tolist()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def _individual(cmp: Comparison) -> list[str]:
    """Every scheduler of the comparison, in order (groups of identical ones split)."""
    out: list[str] = []
    for label in cmp.table.get_column("scheduler").to_list():
        out += [s for s in label.split(" = ") if s not in out]
    return out


def metric_vs_size(res: Results, cmp: Comparison | None = None) -> Figure | None:
    """Median of the metric against the flow size (log-log), one line per scheduler with its
    95 % interval (coinciding points side by side, each scheduler its own marker and line
    style); one panel per other swept setting. None without a swept size."""
    cmp = cmp or compare(res)
    if "size" not in cmp.by:
        return None
    _, vals = metric_values(res, cmp.metric)
    size_bytes = dict(res.flows.select("size", "size_bytes").unique().iter_rows()) if "size_bytes" in res.flows.columns else {}
    panels = _panels(cmp, "size")
    fig, axes = _grid(len(panels))
    names = _individual(cmp)
    for ax, (title, part) in zip(axes, panels):
        others = {k: part.get_column(k)[0] for k in cmp.by if k != "size"}
        here = vals.filter(pl.all_horizontal([pl.col(k) == v for k, v in others.items()] or [pl.lit(True)]))
        for i, name in enumerate(names):
            xs, ys, lo, hi = [], [], [], []
            for size in part.get_column("size").unique(maintain_order=True).to_list():
                x = here.filter((pl.col("scheduler") == name) & (pl.col("size") == size)).get_column("value").to_numpy()
                if not x.size:
                    continue
                a, b = _median_interval(x)
                shift = 1.0 + 0.025 * (i - (len(names) - 1) / 2)  # identical points side by side
                xs.append(size_bytes.get(size, np.nan) / 1024 * shift)
                ys.append(float(np.median(x)))
                lo.append(ys[-1] - a)
                hi.append(b - ys[-1])
            order = np.argsort(xs)
            ax.errorbar(np.array(xs)[order], np.array(ys)[order], yerr=[np.array(lo)[order], np.array(hi)[order]],
                        label=name, capsize=2, lw=1.0, ms=4, alpha=0.85, **_style(i))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("flow size (KiB)")
        ax.set_ylabel(f"median {cmp.label}")
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    fig.suptitle(f"{cmp.label.split(' (')[0]} against flow size (median, bars: 95 % bootstrap interval)", fontsize=10)
    return fig


def vs_baseline(res: Results, cmp: Comparison | None = None) -> Figure:
    """Each scheduler's median against the baseline's, in %, with its 95 % interval: one group
    per setting along x (the flow size when swept), one panel per other setting. Hollow: a tie;
    a cross on zero: identical to the baseline on every flow."""
    cmp = cmp or compare(res)
    x_key = "size" if "size" in cmp.by else None
    panels = _panels(cmp, x_key)
    fig, axes = _grid(len(panels), width=5.2)
    names = [n for n in _individual(cmp) if n != cmp.baseline]
    width = 0.8 / max(len(names), 1)

    def key(r: dict) -> str:
        return str(r[x_key]) if x_key else (" ".join(str(r[k]) for k in cmp.by) or "all")

    settings = list(dict.fromkeys(key(r) for r in cmp.table.to_dicts()))
    for ax, (title, part) in zip(axes, panels):
        for row in part.to_dicts():
            for name in row["scheduler"].split(" = "):
                if name == cmp.baseline:
                    continue
                i = names.index(name)
                x = settings.index(key(row)) - 0.4 + width * (i + 0.5)
                st = _style(i + 1)
                if row["verdict"] == "baseline":  # identical to the baseline
                    ax.plot([x], [0.0], marker="x", color=st["color"], ms=6, linestyle="none")
                    continue
                if row["diff"] is None or np.isnan(row["diff"]):
                    continue
                d, lo, hi = 100 * row["diff"], 100 * row["low"], 100 * row["high"]
                ax.errorbar([x], [d], yerr=[[d - lo], [hi - d]], marker=st["marker"], color=st["color"], capsize=3,
                            ms=6, lw=1.2, mfc="white" if row["verdict"] == "tie" else st["color"], linestyle="none")
        for i, name in enumerate(names):
            st = _style(i + 1)
            ax.plot([], [], marker=st["marker"], color=st["color"], linestyle="none", label=name)
        ax.plot([], [], marker="x", color="grey", linestyle="none", label=f"identical to {cmp.baseline}")
        ax.axhline(0, color="k", lw=0.8)
        ax.set_xticks(range(len(settings)), settings, rotation=30 if len(settings) > 4 else 0,
                      ha="right" if len(settings) > 4 else "center", fontsize=8)
        ax.set_xlim(-0.6, len(settings) - 0.4)
        ax.set_ylabel(f"median {cmp.label.split(' (')[0]} vs {cmp.baseline} (%)")
        ax.set_xlabel(x_key or "setting")
        ax.set_title(title, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"Difference from {cmp.baseline} (bars: 95 % bootstrap interval; hollow: tie)", fontsize=10)
    return fig


def contrast_runs(res: Results, run_id: str | None = None) -> dict[str, str]:
    """scheduler -> run to draw time series for: the runs of the setting and seed where the
    schedulers' median FCT (or the workload's metric) differs most, relative to the smallest;
    with `run_id`, the runs sharing that run's setting and seed."""
    flows = labelled_flows(res)
    if flows.is_empty() or "scheduler" not in flows.columns:
        return {}
    runs = res.runs
    params = [p for p in res.params if p != "scheduler" and p in runs.columns]
    if run_id is not None:
        if run_id not in runs.get_column("run_id").to_list():
            raise ValueError(f"no run {run_id!r} in these results")
        chosen = runs.filter(pl.col("run_id") == run_id).select(params).row(0) if params else ()
    else:
        _, vals = metric_values(res)
        if vals.is_empty():
            chosen = runs.select(params).row(0) if params else ()
        else:
            med = vals.group_by([*params, "scheduler"], maintain_order=True).agg(pl.col("value").median().alias("m"))
            spread = med.group_by(params, maintain_order=True).agg((pl.col("m").max() / pl.col("m").min()).alias("r")) if params \
                else med.select((pl.col("m").max() / pl.col("m").min()).alias("r"))
            best = spread.sort("r", descending=True, maintain_order=True).row(0, named=True)
            chosen = tuple(best[p] for p in params)
    sel = runs.filter(pl.all_horizontal([pl.col(p) == v for p, v in zip(params, chosen)] or [pl.lit(True)]))
    labels = flows.select("run_id", "scheduler").unique(subset="run_id", maintain_order=True)
    sel = sel.drop("scheduler", strict=False).join(labels, on="run_id", how="inner")
    return dict(zip(sel.get_column("scheduler").to_list(), sel.get_column("run_id").to_list()))
