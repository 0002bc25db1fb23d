"""Intervals and verdicts: one place where "is this difference real?" is decided.

Every comparison in mpsched (``mpsched compare``, the reproductions' claims) goes through here:
a statistic of one sample against a baseline sample, a bootstrap confidence interval of the
relative difference (scipy.stats.bootstrap, percentile method, a fixed seed so the same
results give the same interval), and a verdict read off the interval. A verdict of ``tie`` is
an answer, not a failure: the interval contains zero.

Samples are paired when both sides have one value per shared key (the same seed and flow of
the same setting: the workloads are identical, only the scheduler differs); pairing removes the
variation both sides share, as a paired test does. Unpaired samples are resampled apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np

__all__ = ["Interval", "relative_difference", "absolute_difference", "verdict", "claim_verdict", "mean_t_interval",
           "STATISTICS"]

Statistic = Literal["median", "mean", "p95", "p99", "std"]

#: statistic name -> function over the last axis (vectorized, as scipy's bootstrap wants it)
STATISTICS = {
    "median": lambda x, axis=-1: np.median(x, axis=axis),
    "mean": lambda x, axis=-1: np.mean(x, axis=axis),
    "p95": lambda x, axis=-1: np.percentile(x, 95, axis=axis),
    "p99": lambda x, axis=-1: np.percentile(x, 99, axis=axis),
    "std": lambda x, axis=-1: np.std(x, axis=axis, ddof=1),
}


@dataclass(frozen=True)
class Interval:
    """A relative difference ``stat(sample) / stat(baseline) - 1`` with its confidence interval.

    ``estimate``, ``low`` and ``high`` are fractions (0.1 = 10 % above the baseline); ``n`` and
    ``n_baseline`` are the sample sizes; ``identical`` says every value equals its baseline
    counterpart (no interval can be drawn: the difference is exactly zero).
    """

    estimate: float
    low: float
    high: float
    n: int
    n_baseline: int
    confidence: float
    paired: bool
    identical: bool = False
    relative: bool = True  # False: `stat(sample) - stat(baseline)` in the samples' unit

    @property
    def deterministic(self) -> bool:
        """No interval could be drawn: both samples are constant (one run each, or runs that
        cannot vary), so the estimate is a point."""
        return self.low == self.estimate == self.high and not math.isnan(self.estimate)

    @property
    def contains_zero(self) -> bool:
        return self.low <= 0.0 <= self.high

    def percent(self) -> str:
        """``+12.3 % [+8.1, +16.0]`` (or ``0 % (identical)``)."""
        if self.identical:
            return "0 % (identical)"
        if math.isnan(self.estimate):
            return "n/a"
        if not self.relative:
            if self.deterministic:
                return f"{self.estimate:+.3g}"
            return f"{self.estimate:+.3g} [{self.low:+.3g}, {self.high:+.3g}]"
        if self.deterministic:
            return f"{100 * self.estimate:+.1f} %"
        return f"{100 * self.estimate:+.1f} % [{100 * self.low:+.1f}, {100 * self.high:+.1f}]"


def relative_difference(sample: Sequence[float], baseline: Sequence[float], statistic: Statistic = "median", *,
                        paired: bool = False, confidence: float = 0.95, n_resamples: int = 2000,
                        seed: int = 0) -> Interval:
    """Bootstrap interval of ``statistic(sample) / statistic(baseline) - 1``.

    With ``paired=True`` the two sequences are aligned (value i of each comes from the same
    seed and flow) and resampled together. Deterministic for a given ``seed``.
    """
    return _interval(sample, baseline, statistic, True, paired, confidence, n_resamples, seed)


def absolute_difference(sample: Sequence[float], baseline: Sequence[float], statistic: Statistic = "median", *,
                        paired: bool = False, confidence: float = 0.95, n_resamples: int = 2000,
                        seed: int = 0) -> Interval:
    """Bootstrap interval of ``statistic(sample) - statistic(baseline)`` in the samples' unit:
    for a metric that can be zero or change sign (an aggregation benefit, a reduction in %),
    where a ratio means nothing. Same pairing and resampling as `relative_difference`."""
    return _interval(sample, baseline, statistic, False, paired, confidence, n_resamples, seed)


def _interval(sample, baseline, statistic, relative, paired, confidence, n_resamples, seed) -> Interval:
    a = np.asarray(sample, dtype=float)
    b = np.asarray(baseline, dtype=float)
    if paired:
        if a.shape != b.shape:
            raise ValueError(f"paired samples need equal lengths ({a.size} vs {b.size})")
        keep = np.isfinite(a) & np.isfinite(b)
        a, b = a[keep], b[keep]
    else:
        a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    nan = Interval(math.nan, math.nan, math.nan, int(a.size), int(b.size), confidence, paired, relative=relative)
    if a.size == 0 or b.size == 0:
        return nan
    fn = STATISTICS[statistic]
    base = float(fn(b))
    if relative and base == 0.0:
        return nan
    estimate = float(fn(a)) / base - 1.0 if relative else float(fn(a)) - base
    if paired and np.array_equal(a, b):
        return Interval(0.0, 0.0, 0.0, int(a.size), int(b.size), confidence, paired, identical=True, relative=relative)
    if np.all(a == a[0]) and np.all(b == b[0]):
        # Constant samples (deterministic runs): the bootstrap has nothing to resample.
        return Interval(estimate, estimate, estimate, int(a.size), int(b.size), confidence, paired,
                        identical=bool(a[0] == b[0]), relative=relative)
    from scipy.stats import bootstrap  # heavy import, only where an interval is drawn

    def ratio(x, y, axis=-1):
        denominator = fn(y, axis=axis)
        with np.errstate(divide="ignore", invalid="ignore"):
            return fn(x, axis=axis) / denominator - 1.0

    def minus(x, y, axis=-1):
        return fn(x, axis=axis) - fn(y, axis=axis)

    result = bootstrap((a, b), ratio if relative else minus, paired=paired, vectorized=True, n_resamples=n_resamples,
                       confidence_level=confidence, method="percentile", rng=np.random.default_rng(seed))
    low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    return Interval(estimate, min(low, estimate), max(high, estimate), int(a.size), int(b.size), confidence, paired,
                    relative=relative)


def verdict(interval: Interval, *, words: tuple[str, str] = ("faster", "slower")) -> str:
    """``words[0]`` when the whole interval is below zero (the sample's statistic is lower than
    the baseline's), ``words[1]`` when it is above, ``tie`` when it contains zero, ``n/a`` when
    there is nothing to compare. For a metric where higher is better pass e.g.
    ``("lower", "higher")`` and read it accordingly."""
    if math.isnan(interval.estimate):
        return "n/a"
    if interval.identical or interval.contains_zero:
        return "tie"
    return words[0] if interval.high < 0.0 else words[1]


def claim_verdict(interval: Interval, expected: float | None = None, *, tolerance: float = 0.5) -> str:
    """A published claim that the sample is *lower* than the baseline, judged on the interval
    of ``stat(sample) / stat(baseline) - 1``: ``holds`` (the interval is wholly below zero and,
    when the paper states a size ``expected`` (a negative fraction, e.g. -0.24 for "24 % less"),
    the estimate is within ``tolerance`` of it relatively: ``|est / expected - 1| <= tolerance``),
    ``magnitude off`` (below zero but outside that tolerance), ``tie`` (the interval contains
    zero) or ``fails`` (wholly above zero). For a claim that a sample is higher, swap the sides.
    """
    if math.isnan(interval.estimate):
        return "no data"
    if interval.identical or interval.contains_zero:
        return "tie"
    if interval.low > 0.0:
        return "fails"
    if expected is not None and expected != 0.0 and abs(interval.estimate / expected - 1.0) > tolerance:
        return "magnitude off"
    return "holds"


def mean_t_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """``(mean, low, high)``: the Student t interval of the mean of ``values`` (one per seed),
    ``mean ± t(1 - (1 - confidence) / 2, n - 1) · s / √n`` with the sample standard deviation
    ``s``. For a handful of independent repetitions (seeds) this is the interval the project
    reports for a mean over runs; a percentile bootstrap of ten values is too narrow (it cannot
    reach beyond the sample's extremes), and the t interval needs no resampling, so the same
    values give the same interval. Non-finite values are dropped; fewer than two values give
    no interval (NaN bounds), equal values a zero-width one."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return math.nan, math.nan, math.nan
    mean = float(x.mean())
    if x.size < 2:
        return mean, math.nan, math.nan
    from scipy.stats import t  # heavy import, only where an interval is drawn

    half = float(t.ppf(0.5 + confidence / 2.0, x.size - 1)) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return mean, mean - half, mean + half
