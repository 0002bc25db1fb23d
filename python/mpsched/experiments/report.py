"""A reproduction as a referee reads it: for each study its setup (the paper's parameters beside
ours), figures shaped like the paper's with the published values drawn on them, the claims with
verdicts and intervals, and how long it ran. `reproduce` runs a study and gathers all of it;
`mpsched.experiments.render` writes it as HTML and Markdown.
"""

from __future__ import annotations

import io
import math
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import polars as pl
from matplotlib.figure import Figure

from mpsched.experiments.claims import ClaimResult, judge_claims
from mpsched.experiments.studies import _variants, compare, load_published, ours_of, run_files, STUDIES

__all__ = ["Reproduction", "StudyFigure", "reproduce", "study_figures"]


@dataclass(frozen=True)
class StudyFigure:
    title: str
    caption: str
    png: bytes


@dataclass
class Reproduction:
    """Everything the report shows of one study."""

    name: str
    quick: bool
    published: dict[str, Any]
    ours: pl.DataFrame
    samples: pl.DataFrame
    figures_table: pl.DataFrame  # published figures beside ours (`studies.compare`)
    claims: list[ClaimResult]
    seconds: float  # this reproduction's wall time (stored runs reused, reductions, verdicts)
    out: Path
    run_seconds: float = 0.0  # the runs' own wall time when they ran (their meta.json)
    n_runs: int = 0
    figures: list[StudyFigure] = field(default_factory=list)

    def claims_frame(self) -> pl.DataFrame:
        """One row per claim: its text, source and, per variant, "verdict: detail"."""
        rows: dict[str, dict[str, str]] = {}
        for c in self.claims:
            row = rows.setdefault(c.claim["text"], {"claim": c.claim["text"], "source": c.claim["source"]})
            row[f"ours ({c.variant})" if c.variant else "ours"] = f"{c.verdict}: {c.detail}"
        return pl.DataFrame(list(rows.values()))

    def extra(self) -> pl.DataFrame:
        """Our numbers without a published counterpart."""
        return compare(self.published, self.ours)[2]

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(("holds", "magnitude off", "tie", "fails", "no data"), 0)
        for c in self.claims:
            out[c.verdict] = out.get(c.verdict, 0) + 1
        return out


def reproduce(name: str, out: str | Path, *, quick: bool = False, jobs: int = 1,
              on_file: Callable[[str, int], None] | None = None, figures: bool = True, client: Any = None) -> Reproduction:
    """Run study `name` into `out/<file stem>/` (stored runs of the same code are reused; on a
    Dask `client` when given), judge its claims on the samples and draw its figures."""
    published = load_published(name)
    start = time.monotonic()
    results = run_files(name, out, quick=quick, jobs=jobs, on_file=on_file, client=client)
    ours = ours_of(name, results)
    samples = STUDIES[name].samples(results)
    seconds = time.monotonic() - start
    figures_table, _, _ = compare(published, ours)
    metrics = {c["metric"] for c in published.get("claim", [])}
    claims = judge_claims(published, samples, _variants(ours, metrics))
    metas = [m for res in results.values() for m in res.meta.values()]
    rep = Reproduction(name, quick, published, ours, samples, figures_table, claims, seconds, Path(out),
                       sum(float(m.get("wall_time_s", 0.0)) for m in metas), len(metas))
    if figures:
        study = STUDIES[name]
        series = study.series(results) if study.series and published.get("series") else None
        rep.figures = study_figures(published, ours, samples, series, skip=set(study.figure_metrics))
        rep.figures += [StudyFigure(t, c, _png(f)) for t, c, f in (study.figures(published, samples) if study.figures else [])]
    return rep


# --- figures ----------------------------------------------------------------------------------------


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    return buf.getvalue()


def _half_width(samples: pl.DataFrame, variant: str, metric: str, setting: str, scheduler: str) -> float:
    """95 % normal half-width of a mean from its samples (0 when it is not a mean or cannot vary)."""
    if samples.is_empty():
        return 0.0
    s = samples.filter((pl.col("variant") == variant) & (pl.col("metric") == metric) & (pl.col("setting") == setting)
                       & (pl.col("scheduler") == scheduler))
    if s.height < 2 or s.get_column("statistic")[0] != "mean":
        return 0.0
    sd = s.get_column("value").std()
    return 0.0 if sd is None or math.isnan(sd) else 1.96 * sd / math.sqrt(s.height)


def _value(ours: pl.DataFrame, variant: str, metric: str, setting: str, scheduler: str) -> float:
    hit = ours.filter((pl.col("variant") == variant) & (pl.col("metric") == metric) & (pl.col("setting") == setting)
                      & (pl.col("scheduler") == scheduler))
    return math.nan if hit.is_empty() else float(hit.get_column("value")[0])


def _bars(title: str, metric: str, unit: str, settings: list[str], schedulers: list[str], labels: dict[str, str],
          ours: pl.DataFrame, samples: pl.DataFrame, published: dict[str, list[float]] | None) -> Figure:
    """Grouped bars of our numbers per setting (one panel per variant), 95 % intervals of the
    means, the paper's value of each bar as a black diamond."""
    variants = _variants(ours, {metric})[:4]
    fig = Figure(figsize=(max(min(4.2 * len(variants), 12.0), 6.0), 3.6), layout="constrained")
    axes = fig.subplots(1, len(variants), squeeze=False).ravel()
    width = 0.8 / max(len(schedulers), 1)
    colors = [f"C{i}" for i in range(len(schedulers))]
    for ax, variant in zip(axes, variants):
        for j, sched in enumerate(schedulers):
            xs = [i + (j - (len(schedulers) - 1) / 2) * width for i in range(len(settings))]
            ys = [_value(ours, variant, metric, s, sched) for s in settings]
            err = [_half_width(samples, variant, metric, s, sched) for s in settings]
            ax.bar(xs, ys, width * 0.92, yerr=err, capsize=2, color=colors[j], label=f"{labels.get(sched, sched)} (ours)")
            if published and sched in published:
                ax.plot(xs, published[sched], "D", color="black", markersize=5,
                        label="paper" if j == 0 else None)
        ax.set_xticks(range(len(settings)), settings, fontsize=8, rotation=15 if len(settings) > 3 else 0)
        ax.set_ylabel(f"{metric} ({unit})" if unit else metric, fontsize=8)
        ax.set_title(variant or "ours", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=7, loc="best")
    fig.suptitle(textwrap.fill(textwrap.shorten(title, 150, placeholder=" …"), 80), fontsize=9)
    return fig


def _cdfs(metric: str, dist: pl.DataFrame) -> Figure:
    """Empirical CDFs of `metric`'s samples, one panel per setting (a design), one line per
    scheduler (LowRTT and its extensions solid, the others dashed)."""
    import numpy as np

    settings = dist.get_column("setting").unique(maintain_order=True).to_list()
    fig = Figure(figsize=(min(5.2 * len(settings), 12.0), 4.0), layout="constrained")
    axes = fig.subplots(1, len(settings), squeeze=False, sharey=True).ravel()
    for ax, setting in zip(axes, settings):
        rows = dist.filter(pl.col("setting") == setting)
        for j, sched in enumerate(rows.get_column("scheduler").unique(maintain_order=True).to_list()):
            xs = np.sort(rows.filter(pl.col("scheduler") == sched).get_column("value").to_numpy())
            ax.step(xs, np.arange(1, xs.size + 1) / xs.size, where="post", color=f"C{j % 10}",
                    linestyle="-" if sched.startswith("minrtt") else "--", label=sched)
        ax.axhline(0.5, color="grey", linestyle=":", linewidth=0.8)
        ax.axvline(0.0, color="grey", linewidth=0.8)  # the best path alone
        ax.set_xlabel(metric.removesuffix("_median").replace("_", " "), fontsize=8)
        ax.set_title(setting, fontsize=9)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("share of points", fontsize=8)
    axes[0].legend(fontsize=7, loc="upper left")
    return fig


def _series(spec: dict[str, Any], series: pl.DataFrame) -> Figure:
    """One panel per scheduler: our time series of `spec["quantity"]` per path, the levels the
    paper states (`[[series.mark]]`) as black dashed segments over their time spans."""
    rows = series.filter(pl.col("quantity") == spec["quantity"])
    scheds = [x for x in spec.get("schedulers") or rows.get_column("scheduler").unique(maintain_order=True).to_list()
              if x in set(rows.get_column("scheduler").to_list())] or ["(none)"]
    fig = Figure(figsize=(12.0, 3.9), layout="constrained")
    axes = fig.subplots(1, len(scheds), squeeze=False, sharey=True).ravel()
    for ax, sched in zip(axes, scheds):
        r = rows.filter(pl.col("scheduler") == sched)
        for j, path in enumerate(r.get_column("path").unique(maintain_order=True).to_list()):
            p = r.filter(pl.col("path") == path)
            ax.plot(p.get_column("time_s").to_list(), p.get_column("value").to_list(), color=f"C{j}", lw=1,
                    label=f"{path} (ours)")
        seen: set[str] = set()
        for m in (x for x in spec.get("mark", []) if x.get("scheduler") == sched):
            ax.hlines(m["value"], m["from_s"], m["to_s"], colors="black", linestyles="--", lw=1.6,
                      label=None if m["text"] in seen else f"paper: {m['text']}")
            seen.add(m["text"])
        ax.set_title(spec.get("labels", {}).get(sched, sched), fontsize=9)
        ax.set_xlabel("time (s)", fontsize=8)
        ax.grid(alpha=0.3)
        # below the panel, so it hides neither our lines nor the paper's levels ("best" is slow)
        ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    axes[0].set_ylabel(f"{spec['quantity']} ({spec['unit']})", fontsize=8)
    fig.suptitle(f"{spec['source']}: {spec['what']}", fontsize=9)
    return fig


def _distribution(spec: dict[str, Any], published: dict[str, Any], ours: pl.DataFrame, samples: pl.DataFrame) -> Figure:
    """Box plots of a metric's samples per setting and scheduler (one panel per variant), the
    paper's mean of each (the table `spec["table"]`) as a black diamond, ours as a white dot."""
    table = next((t for t in published.get("table", []) if t["source"] == spec.get("table")), None)
    rows = samples.filter(pl.col("metric") == spec["metric"]) if not samples.is_empty() else samples
    variants = _variants(ours, {spec["metric"]})[:3]
    fig = Figure(figsize=(12.0, 3.6), layout="constrained")
    axes = fig.subplots(1, len(variants), squeeze=False).ravel()
    for ax, variant in zip(axes, variants):
        r = rows.filter(pl.col("variant") == variant) if not rows.is_empty() else rows
        settings = list(table["settings"]) if table else r.get_column("setting").unique(maintain_order=True).to_list()
        scheds = list(table["values"]) if table else r.get_column("scheduler").unique(maintain_order=True).to_list()
        width = 0.8 / max(len(scheds), 1)
        for j, sched in enumerate(scheds):
            xs = [i + (j - (len(scheds) - 1) / 2) * width for i in range(len(settings))]
            groups = r.filter(pl.col("scheduler") == sched).group_by("setting").agg("value") if not r.is_empty() else r
            by = dict(groups.iter_rows()) if not groups.is_empty() else {}
            have = [(x, by[s]) for x, s in zip(xs, settings) if by.get(s)]
            if have:  # one call per scheduler: matplotlib's boxplot is slow per call
                ax.boxplot([v for _, v in have], positions=[x for x, _ in have], widths=width * 0.85, patch_artist=True,
                           boxprops={"facecolor": f"C{j}", "alpha": 0.6}, medianprops={"color": "black"},
                           flierprops={"markersize": 2}, manage_ticks=False)
                ax.plot([x for x, _ in have], [sum(v) / len(v) for _, v in have], "o", color="white", mec="black", ms=3)
            if table:
                ax.plot(xs, table["values"][sched], "D", color="black", ms=5)
            ax.plot([], [], "s", color=f"C{j}", label=f"{(table or {}).get('labels', {}).get(sched, sched)} (ours)")
        if table:
            ax.plot([], [], "D", color="black", label=f"paper's mean ({table['source']})")
        ax.set_xticks(range(len(settings)), settings, fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel(f"each flow's value ({spec['unit']})", fontsize=8)
        ax.set_title(variant or "ours", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=6, loc="upper left")
    fig.suptitle(f"{spec['source']}: {spec['what']}", fontsize=9)
    return fig


def study_figures(published: dict[str, Any], ours: pl.DataFrame, samples: pl.DataFrame,
                  series: pl.DataFrame | None = None, skip: set[str] = frozenset()) -> list[StudyFigure]:
    """One figure per published table (ours against the paper's, per setting), one per claimed
    metric no table prints (ours only) and the study's own figures do not draw (`skip`), then the
    `[[distribution]]` box plots and, when the study has `series`, the `[[series]]` time series."""
    figs = []
    for t in published.get("table", []):
        scheds = list(t["values"])
        fig = _bars(f"{t['source']}: {t['what']}", t["metric"], t["unit"], list(t["settings"]), scheds,
                    t.get("labels", {}), ours, samples, t["values"])
        figs.append(StudyFigure(t["source"], f"{t['what']} ({t['unit']}); bars: ours (95 % interval of the mean "
                                             f"where it varies); diamonds: the paper's" +
                                ("; the paper's values are approximate" if t.get("approximate") else ""), _png(fig)))
    tabled = {t["metric"] for t in published.get("table", [])} | set(skip)
    for metric in dict.fromkeys(c["metric"] for c in published.get("claim", []) if c["metric"] not in tabled):
        claims = [c for c in published["claim"] if c["metric"] == metric]
        dist = samples.filter((pl.col("metric") == metric) & (pl.col("statistic") == "median")) \
            if not samples.is_empty() else samples
        if not dist.is_empty():  # a median over many points (a sweep): their whole distribution
            figs.append(StudyFigure(metric, f"{metric}: distribution over each design's points per scheduler "
                                            "(empirical CDF; the dotted line is the median)", _png(_cdfs(metric, dist))))
            continue
        scheds = list(dict.fromkeys(n for c in claims for n in (c.get("order") or c.get("similar") or c.get("among"))))
        rows = ours.filter(pl.col("metric") == metric)
        settings = rows.get_column("setting").unique(maintain_order=True).to_list()
        if not settings:
            continue
        fig = _bars(f"{metric}: ours (the paper prints no number)", metric, "", settings, scheds, {}, ours, samples, None)
        figs.append(StudyFigure(metric, f"our {metric} per scheduler; the paper states the claim in words only", _png(fig)))
    for d in published.get("distribution", []):
        if samples.is_empty() or samples.filter(pl.col("metric") == d["metric"]).is_empty():
            continue
        figs.append(StudyFigure(d["source"], f"{d['what']} ({d['unit']}, log scale); boxes: our samples (quartiles, "
                                             f"whiskers 1.5 IQR), white dots: our means; diamonds: the paper's means "
                                             f"({d.get('table', 'none printed')})", _png(_distribution(d, published, ours, samples))))
    for f in published.get("series", []) if series is not None else []:
        figs.append(StudyFigure(f["source"], f"{f['what']} ({f['unit']}), first seed; lines: ours per path; dashed "
                                             f"black: the levels the paper states", _png(_series(f, series))))
    return figs
