"""The data-center study (`experiments/datacenter_short_flows/`, seed `003_`, Fujii): its raw
samples, our numbers and the figures shaped like the paper's.

Per completed short flow (the `class` of `SETTINGS`; Table 2's 70 KB flows are generated as the
``query`` kind) of each scenario file:

* ``fct_mean_ms`` / ``fct_std_ms`` / ``fct_p95_ms``: its FCT (ms), whose mean / standard
  deviation / 95th percentile are Table 2's three columns;
* ``slow_pct``: 100 when it took at least `SLOW_MS` (Table 3's two classes with packet loss,
  "delay with loss" 200-300 ms and "extreme delay" 300 ms and more), else 0: the mean is the
  share of flows in them (§4.3.3: MPTCP background puts more flows there);
* ``lossy_pct`` / ``rto_pct``: 100 when it retransmitted / had a retransmission timeout;
* ``fct_bin_mean_ms``: its FCT at the setting of its size bin (`SIZE_BINS`, ours: the paper's
  Figs. 8-10 print FCT per flow size without numbers), for Figs. 8-10.

The variant is the host interfaces: 4 is the paper's (Fig. 3: one interface per subflow), 1
(one link per host that every subflow shares) is ours.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from mpsched.experiments.samples import SAMPLE_COLUMNS, _rows

__all__ = ["SETTINGS", "SIZE_BINS", "SLOW_MS", "CLASSES_MS", "samples", "ours", "figures", "FIGURE_METRICS"]

#: scenario file stem -> (setting, flow class)
SETTINGS = {"table2": ("short flows", "query"), "query_nobg": ("query, no background", "query"),
            "query": ("query, background", "query"), "short_message": ("short message, background", "short_message")}
#: size bins (bytes, low inclusive, high exclusive but the last) of Figs. 8-10, per file stem:
#: four equal bins over 003_ §5.2's ranges (1-16 KB queries, 50 KB-1 MB short messages)
SIZE_BINS = {"query_nobg": (1_000, 4_000, 8_000, 12_000, 16_000), "query": (1_000, 4_000, 8_000, 12_000, 16_000),
             "short_message": (50_000, 250_000, 500_000, 750_000, 1_000_000)}
#: Table 3: flows that lost a packet took 200-300 ms ("delay with loss") or more ("extreme delay")
SLOW_MS = 200.0
#: Table 3's classes by FCT (ms): "full window" about 30, "intensive flow" about 60, "delay with
#: loss" 200-300, "extreme delay" 300 and more; the boundary between the first two (45 ms, the
#: midpoint) and the upper end of "intensive" (200 ms, where the lossy classes start) are ours
CLASSES_MS = (("full window (~30)", 0.0, 45.0), ("intensive (~60)", 45.0, 200.0),
              ("delay with loss (200-300)", 200.0, 300.0), ("extreme delay (300+)", 300.0, math.inf))
#: the metrics the study's own figures draw (the report's generic bars leave them out)
FIGURE_METRICS = ("slow_pct", "fct_bin_mean_ms", "lossy_pct", "rto_pct")
_PAPER_VARIANT = 4


def _bin_label(setting: str, lo: int, hi: int) -> str:
    return f"{setting}, {lo / 1000:g}-{hi / 1000:g} KB"


def bin_settings(stem: str) -> list[str]:
    """The size-bin settings of one scenario file, smallest first."""
    edges = SIZE_BINS[stem]
    return [_bin_label(SETTINGS[stem][0], lo, hi) for lo, hi in zip(edges, edges[1:])]


def _variant(runs: pl.DataFrame) -> pl.Expr:
    if "interfaces" not in runs.columns:
        return pl.lit("")
    return (pl.when(pl.col("interfaces") == _PAPER_VARIANT)
            .then(pl.format("{} interfaces (003_ Fig. 3)", pl.col("interfaces")))
            .otherwise(pl.format("{} interface(s) (ours)", pl.col("interfaces"))))


def _flows(res, stem: str) -> pl.DataFrame:
    """Completed flows of the file's short-flow class: variant, protocol (as `scheduler`), seed,
    flow, FCT (ms), size, whether it retransmitted and whether it had an RTO."""
    _, cls = SETTINGS[stem]
    runs = res.runs.select("run_id", pl.col("protocol").alias("scheduler"), _variant(res.runs).alias("variant"))
    rto = res.subflows.group_by("run_id", "flow_id").agg(pl.col("rto_count").sum().alias("rtos"))
    return (res.flows.drop("scheduler").filter((pl.col("class") == cls) & pl.col("completed"))
            .join(runs, on="run_id").join(rto, on=["run_id", "flow_id"], how="left")
            .with_columns((pl.col("fct_ns").cast(pl.Float64) / 1e6).alias("fct_ms"),
                          pl.col("rtos").fill_null(0)))


def samples(results: dict[str, Any]) -> pl.DataFrame:
    """003_ Table 2, Table 3, §5.2 and Figs. 7-10: one row per completed short flow and metric
    (`samples.SAMPLE_COLUMNS`), keyed by seed and flow."""
    key = pl.format("s{}/f{}", pl.col("seed"), pl.col("flow_id"))
    flag = lambda cond: pl.when(cond).then(100.0).otherwise(0.0)  # noqa: E731
    out = []
    for stem, res in results.items():
        setting, _ = SETTINGS[stem]
        f = _flows(res, stem)
        v = pl.col("variant")
        out += [_rows(f, v, f"fct_{m}_ms", setting, key, pl.col("fct_ms"), m) for m in ("mean", "std", "p95")]
        out += [_rows(f, v, "slow_pct", setting, key, flag(pl.col("fct_ms") >= SLOW_MS)),
                _rows(f, v, "lossy_pct", setting, key, flag(pl.col("bytes_retransmitted") > 0)),
                _rows(f, v, "rto_pct", setting, key, flag(pl.col("rtos") > 0))]
        if stem in SIZE_BINS:
            edges, labels = SIZE_BINS[stem], bin_settings(stem)
            label = pl.lit(labels[-1])
            for hi, lab in reversed(list(zip(edges[1:-1], labels[:-1]))):
                label = pl.when(pl.col("size_bytes") < hi).then(pl.lit(lab)).otherwise(label)
            out.append(_rows(f, v, "fct_bin_mean_ms", label, key, pl.col("fct_ms")))
    return pl.concat(out) if out else pl.DataFrame(schema=dict.fromkeys(SAMPLE_COLUMNS, pl.String))


_AGG = {"mean": pl.col("value").mean(), "std": pl.col("value").std(),
        "p95": pl.col("value").quantile(0.95, interpolation="linear")}


def ours(results: dict[str, Any]) -> pl.DataFrame:
    """Our numbers: each metric's statistic over its samples (seeds and flows pooled)."""
    s = samples(results)
    return pl.concat([s.filter(pl.col("statistic") == name).group_by("variant", "metric", "setting", "scheduler",
                                                                      maintain_order=True).agg(agg.alias("value"))
                      for name, agg in _AGG.items()])


# --- figures ---------------------------------------------------------------------------------------


def _table(published: dict[str, Any], metric: str) -> dict[str, float]:
    """The paper's value per protocol of a Table 2 metric."""
    for t in published.get("table", []):
        if t["metric"] == metric:
            return {k: float(v[0]) for k, v in t["values"].items()}
    return {}


def _values(samples: pl.DataFrame, variant: str, metric: str, setting: str, proto: str) -> np.ndarray:
    s = samples.filter((pl.col("variant") == variant) & (pl.col("metric") == metric)
                       & (pl.col("setting") == setting) & (pl.col("scheduler") == proto))
    return s.get_column("value").to_numpy()


def _variants(samples: pl.DataFrame, metric: str) -> list[str]:
    variants = samples.filter(pl.col("metric") == metric).get_column("variant").unique(maintain_order=True).to_list()
    return sorted(variants, key=lambda v: "(ours)" in v)  # the paper's first


def _panels(samples: pl.DataFrame, metric: str, rows: int = 1, width: float = 5.0) -> tuple[Figure, list[str], Any]:
    variants = _variants(samples, metric)
    fig = Figure(figsize=(width * max(len(variants), 1), 3.6 * rows), layout="constrained")
    axes = fig.subplots(rows, max(len(variants), 1), squeeze=False)
    return fig, variants, axes


_COLORS = {"tcp": "C0", "mptcp": "C1"}
_LABELS = {"tcp": "TCP", "mptcp": "MPTCP"}


def _cdf(samples: pl.DataFrame, published: dict[str, Any]) -> Figure:
    """Fig. 7: CDF of the short flows' FCT beside TCP and MPTCP background, with Table 2's
    means and 95th percentiles and Table 3's class boundaries."""
    fig, variants, axes = _panels(samples, "fct_mean_ms")
    p95, mean = _table(published, "fct_p95_ms"), _table(published, "fct_mean_ms")
    for ax, variant in zip(axes[0], variants):
        for proto in ("tcp", "mptcp"):
            x = np.sort(_values(samples, variant, "fct_mean_ms", "short flows", proto))
            if x.size:
                ax.step(x, np.arange(1, x.size + 1) / x.size, where="post", color=_COLORS[proto],
                        label=f"{_LABELS[proto]} background (ours, n={x.size})")
            if proto in p95:
                ax.plot([p95[proto]], [0.95], "D", color=_COLORS[proto], markeredgecolor="black",
                        label=f"paper p95, {_LABELS[proto]} (Table 2)")
                ax.axvline(mean[proto], color=_COLORS[proto], ls=":", lw=1)
        for name, lo, _ in CLASSES_MS[1:]:
            ax.axvline(lo, color="grey", ls="--", lw=0.8)
            ax.text(lo, 0.02, f" {name}", rotation=90, fontsize=6, color="grey", va="bottom")
        ax.set_xscale("log")
        ax.set_xlabel("flow completion time (ms)", fontsize=8)
        ax.set_ylabel("CDF", fontsize=8)
        ax.set_title(variant, fontsize=9)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=6, loc="lower right")
    fig.suptitle("003_ Fig. 7: CDF of the 70 KB TCP flows' FCT beside TCP or MPTCP background", fontsize=9)
    return fig


def _classes(samples: pl.DataFrame) -> Figure:
    """Table 3: share of the short flows in each FCT class, and of those the share that lost a
    packet (the paper: none in the first two classes, all in the last two)."""
    fig, variants, axes = _panels(samples, "fct_mean_ms", width=4.6)
    for ax, variant in zip(axes[0], variants):
        for j, proto in enumerate(("tcp", "mptcp")):
            fct = _values(samples, variant, "fct_mean_ms", "short flows", proto)
            lossy = _values(samples, variant, "lossy_pct", "short flows", proto) > 0
            bottom = 0.0
            for i, (name, lo, hi) in enumerate(CLASSES_MS):
                inside = (fct >= lo) & (fct < hi)
                share = 100.0 * inside.mean() if fct.size else 0.0
                ax.bar(j, share, 0.6, bottom=bottom, color=f"C{i + 2}", label=name if j == 0 else None)
                if share >= 4:
                    ax.text(j, bottom + share / 2, f"{share:.0f} %, {100 * lossy[inside].mean():.0f} % lossy",
                            ha="center", va="center", fontsize=6)
                bottom += share
        ax.set_xticks([0, 1], ["TCP bg", "MPTCP bg"], fontsize=8)
        ax.set_ylabel("share of short flows (%)", fontsize=8)
        ax.set_title(variant, fontsize=9)
    axes[0][0].legend(fontsize=6, loc="upper right")
    fig.suptitle("003_ Table 3: the short flows' FCT classes (ms)\nand the share of each that retransmitted", fontsize=9)
    return fig


def _by_size(samples: pl.DataFrame) -> Figure:
    """Figs. 8-10: mean FCT per flow size bin, TCP and MPTCP, 99 % intervals (the paper's)."""
    variants = _variants(samples, "fct_bin_mean_ms")
    panels = (("query_nobg", "Fig. 8"), ("query", "Fig. 9"), ("short_message", "Fig. 10"))
    fig = Figure(figsize=(13, 3.4 * max(len(variants), 1)), layout="constrained")
    axes = fig.subplots(max(len(variants), 1), 3, squeeze=False)
    for r, variant in enumerate(variants):
        for c, (stem, name) in enumerate(panels):
            ax, settings = axes[r][c], bin_settings(stem)
            for j, proto in enumerate(("tcp", "mptcp")):
                xs, ys, err = [], [], []
                for i, s in enumerate(settings):
                    v = _values(samples, variant, "fct_bin_mean_ms", s, proto)
                    if v.size:
                        xs.append(i + (j - 0.5) * 0.2)
                        ys.append(v.mean())
                        err.append(2.576 * v.std(ddof=1) / math.sqrt(v.size) if v.size > 1 else 0.0)
                ax.errorbar(xs, ys, yerr=err, fmt="o", capsize=3, color=_COLORS[proto], label=_LABELS[proto])
            ax.set_xticks(range(len(settings)), [s.rsplit(", ", 1)[1] for s in settings], fontsize=7)
            ax.set_title(f"{name}: {SETTINGS[stem][0]} ({variant})", fontsize=8)
            ax.set_ylabel("mean FCT (ms)", fontsize=8)
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle("003_ Figs. 8-10: FCT by flow size, 99 % intervals of the mean (the paper prints no numbers)",
                 fontsize=9)
    return fig


def figures(published: dict[str, Any], samples: pl.DataFrame) -> list[tuple[str, str, Figure]]:
    """(title, caption, figure) of Fig. 7, Table 3 and Figs. 8-10, each drawn where its data ran."""
    out = []
    have = lambda m, s: not samples.filter((pl.col("metric") == m) & (pl.col("setting") == s)).is_empty()  # noqa: E731
    if have("fct_mean_ms", "short flows"):
        out.append(("003_ Fig. 7", "CDF of the short flows' FCT (ms, log scale); diamonds: Table 2's 95th "
                    "percentiles, dotted lines: its means; dashed: Table 3's class boundaries", _cdf(samples, published)))
        out.append(("003_ Table 3", "share of the short flows per FCT class and, in each, the share that "
                    "retransmitted; the paper gives the classes, not their shares", _classes(samples)))
    if not samples.filter(pl.col("metric") == "fct_bin_mean_ms").is_empty():
        out.append(("003_ Figs. 8-10", "mean FCT per size bin (bins ours) with 99 % intervals, as the paper's "
                    "error bars; the paper's figures print no readable numbers", _by_size(samples)))
    return out
