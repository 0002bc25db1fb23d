"""A paper's claims judged on every repetition, with a confidence interval: the verdicts a
referee can check.

A claim of `published.toml` (see `mpsched.experiments.studies` for its fields) becomes
comparisons of two schedulers on one metric at one setting: "a is lower than b" (`order` steps,
`lowest`, `highest`), "a is no higher than b by more than t" (`order` with `strict = false`) or
"a and b are within t of each other" (`similar`). Each comparison is a bootstrap interval of the
difference (`mpsched.analysis.stats`; paired by seed and flow where both sides share them) of the
statistic the metric is (the mean FCT, the 95th percentile, ...), over all the samples
(`mpsched.experiments.samples`), and gets one verdict:

* ``holds``: the interval lies where the paper says (below zero; within the tolerance), and
  where the paper states a size, our estimate is within `magnitude_tolerance` (relative,
  default 0.5) of it;
* ``magnitude off``: the direction holds but the size is outside that tolerance of the
  paper's: the size comes from `magnitude` (a fraction, ``stat(a) / stat(b) - 1``: -0.76 for 11
  against 46 Mbit/s; one per setting of `at`, or one for all) or else from the published
  tables with both schedulers at that setting (both tables when two print the metric: the
  claim's size matches if it matches either);
* ``tie``: the data cannot decide: the interval contains zero where the paper claims a
  difference, or straddles the tolerance where it claims similarity or "no worse";
* ``fails``: the interval lies wholly on the wrong side.

A claim's verdict is its worst comparison's (fails > tie > magnitude off > holds). Runs that
cannot vary (one seed of a deterministic path) give one number per side and no interval: the
verdict is read off the point and its text says "deterministic: no interval".

Differences are ratios (``stat(a) / stat(b) - 1``) unless the claim says ``scale =
"difference"`` or a side's statistic is not positive (an aggregation benefit below zero), where
``stat(a) - stat(b)`` in the metric's unit is used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from mpsched.analysis.stats import STATISTICS, Interval, absolute_difference, claim_verdict, relative_difference

__all__ = ["Comparison", "ClaimResult", "judge_claim", "judge_claims", "SEVERITY"]

#: the verdicts, best first; a claim takes its worst comparison's
SEVERITY = ("holds", "magnitude off", "tie", "fails")
DEFAULT_MAGNITUDE_TOLERANCE = 0.5


@dataclass(frozen=True)
class Comparison:
    """One step of a claim: `a` against `b` at `setting` ("mean": the claim's settings pooled)."""

    setting: str
    a: str
    b: str
    test: str  # "lower", "no worse", "similar"
    interval: Interval
    expected: tuple[float, ...]  # the paper's size(s) of the same difference, if it states one
    verdict: str

    def describe(self) -> str:
        iv = self.interval
        text = f"{self.setting}: {self.a} vs {self.b} {iv.percent()}"
        if self.expected:
            text += " (paper " + " / ".join(_size(e, iv.relative) for e in self.expected) + ")"
        if iv.n <= 1 and iv.n_baseline <= 1:
            text += "; deterministic: no interval"
        elif iv.deterministic and not iv.identical:
            text += f"; n={iv.n}, all equal: no interval"
        else:
            text += f"; n={iv.n}" + ("" if iv.n == iv.n_baseline else f"/{iv.n_baseline}") + (" paired" if iv.paired else "")
        return text


@dataclass
class ClaimResult:
    claim: dict[str, Any]
    variant: str
    verdict: str
    comparisons: list[Comparison] = field(default_factory=list)
    note: str = ""

    @property
    def deciding(self) -> Comparison | None:
        """The comparison that gave the verdict (the worst; the last one when all hold)."""
        hit = [c for c in self.comparisons if c.verdict == self.verdict]
        return hit[0] if hit and self.verdict != "holds" else (self.comparisons[-1] if self.comparisons else None)

    @property
    def detail(self) -> str:
        if not self.comparisons:
            return self.note
        bad = sum(c.verdict == self.verdict for c in self.comparisons)
        n = len(self.comparisons)
        head = f"{n} of {n}" if self.verdict == "holds" else f"{bad} of {n}"
        return f"{head}; {self.deciding.describe()}"


def _size(x: float, relative: bool) -> str:
    return f"{100 * x:+.1f} %" if relative else f"{x:+.3g}"


def _names(claim: dict[str, Any]) -> list[str]:
    return list(claim.get("order") or claim.get("similar") or claim.get("among"))


def _pairs(claim: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(a, b, test) steps of a claim."""
    if "order" in claim:
        test = "lower" if claim.get("strict", True) else "no worse"
        o = claim["order"]
        return [(x, y, test) for x, y in zip(o, o[1:])]
    if "similar" in claim:
        s = claim["similar"]
        return [(x, y, "similar") for i, x in enumerate(s) for y in s[i + 1:]]
    if "lowest" in claim:
        return [(claim["lowest"], o, "lower") for o in claim["among"] if o != claim["lowest"]]
    return [(o, claim["highest"], "lower") for o in claim["among"] if o != claim["highest"]]


def _expected(claim: dict[str, Any], published: dict[str, Any], a: str, b: str, settings: list[str],
              where: str, relative: bool) -> tuple[float, ...]:
    """The paper's size of ``a`` against ``b`` at `where` (a setting, or "mean" over `settings`)."""
    if "magnitude" in claim:
        m = claim["magnitude"]
        if isinstance(m, list):
            at = claim.get("at")
            return (float(m[at.index(where)]),) if isinstance(at, list) and where in at else ()
        return (float(m),)
    out = []
    for t in published.get("table", []):
        vals = t["values"]
        if t["metric"] != claim["metric"] or a not in vals or b not in vals:
            continue
        idx = [t["settings"].index(s) for s in (settings if where == "mean" else [where]) if s in t["settings"]]
        if not idx or (where == "mean" and len(idx) != len(settings)):
            continue
        pa = sum(vals[a][i] for i in idx) / len(idx)
        pb = sum(vals[b][i] for i in idx) / len(idx)
        if relative and pb > 0:
            out.append(pa / pb - 1.0)
        elif not relative:
            out.append(pa - pb)
    return tuple(out)


def _sides(rows: pl.DataFrame, a: str, b: str) -> tuple[list[float], list[float], bool]:
    """The two samples, aligned by key when both have the same keys (paired)."""
    ra = rows.filter(pl.col("scheduler") == a)
    rb = rows.filter(pl.col("scheduler") == b)
    ka, kb = ra.get_column("key"), rb.get_column("key")
    if ka.n_unique() == ka.len() and kb.n_unique() == kb.len() and set(ka.to_list()) == set(kb.to_list()):
        ra, rb = ra.sort("key"), rb.sort("key")
        return ra.get_column("value").to_list(), rb.get_column("value").to_list(), True
    return ra.get_column("value").to_list(), rb.get_column("value").to_list(), False


def _judge(test: str, iv: Interval, expected: tuple[float, ...], claim: dict[str, Any]) -> str:
    if math.isnan(iv.estimate):
        return "no data"
    if test == "lower":
        if not expected:
            return claim_verdict(iv)
        tol = float(claim.get("magnitude_tolerance", DEFAULT_MAGNITUDE_TOLERANCE))
        verdicts = [claim_verdict(iv, e, tolerance=tol) for e in expected]
        return "holds" if "holds" in verdicts else verdicts[0]
    tol = float(claim.get("tolerance", 0.0))
    if test == "no worse":  # stat(a) <= stat(b) * (1 + tol)
        return "holds" if iv.high <= tol else ("fails" if iv.low > tol else "tie")
    if iv.low >= -tol and iv.high <= tol:  # similar: the whole interval within +-tol
        return "holds"
    return "fails" if (iv.low > tol or iv.high < -tol) else "tie"


def judge_claim(claim: dict[str, Any], samples: pl.DataFrame, variant: str,
                published: dict[str, Any] | None = None) -> ClaimResult:
    """One claim on one variant of a study's samples (`SAMPLE_COLUMNS`)."""
    published = published or {}
    metric, names = claim["metric"], _names(claim)
    if samples.is_empty():
        return ClaimResult(claim, variant, "no data", note=f"no samples of {metric}")
    rows = samples.filter((pl.col("variant") == variant) & (pl.col("metric") == metric))
    at = claim.get("at", "each")
    candidates = at if isinstance(at, list) else rows.get_column("setting").unique(maintain_order=True).to_list()
    have = lambda s: set(rows.filter(pl.col("setting") == s).get_column("scheduler").to_list())  # noqa: E731
    settings = [s for s in candidates if set(names) <= have(s)]
    if not settings:
        return ClaimResult(claim, variant, "no data", note=f"no {metric} samples for {', '.join(names)}")
    if at == "mean":
        pooled = rows.filter(pl.col("setting").is_in(settings)).with_columns(
            pl.concat_str([pl.col("setting"), pl.col("key")], separator="|").alias("key"), pl.lit("mean").alias("setting"))
        groups = [("mean", pooled)]
    else:
        groups = [(s, rows.filter(pl.col("setting") == s)) for s in settings]
    comparisons = []
    for where, g in groups:
        statistic = g.get_column("statistic")[0]
        for a, b, test in _pairs(claim):
            xa, xb, paired = _sides(g, a, b)
            fn = STATISTICS[statistic]
            relative = claim.get("scale", "ratio") != "difference" and min(float(fn(xa)), float(fn(xb))) > 0
            diff = relative_difference if relative else absolute_difference
            iv = diff(xa, xb, statistic, paired=paired)
            expected = _expected(claim, published, a, b, settings, where, relative) if test == "lower" else ()
            comparisons.append(Comparison(where, a, b, test, iv, expected, _judge(test, iv, expected, claim)))
    judged = [c.verdict for c in comparisons if c.verdict in SEVERITY]
    if not judged:
        return ClaimResult(claim, variant, "no data", comparisons, note="nothing to compare")
    return ClaimResult(claim, variant, max(judged, key=SEVERITY.index), comparisons)


def judge_claims(published: dict[str, Any], samples: pl.DataFrame, variants: list[str]) -> list[ClaimResult]:
    """Every claim of a study on each variant that has samples of its metric (claim-major
    order; on every variant, each "no data", when none has)."""
    out = []
    for c in published.get("claim", []):
        held = set() if samples.is_empty() else set(
            samples.filter(pl.col("metric") == c["metric"]).get_column("variant").unique().to_list())
        out += [judge_claim(c, samples, v, published) for v in ([v for v in variants if v in held] or variants)]
    return out
