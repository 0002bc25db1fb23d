"""The statistics behind every comparison: intervals that contain a known difference and
exclude zero, ties that are called ties, deterministic resampling."""

import numpy as np
import pytest

from mpsched.analysis.stats import claim_verdict, relative_difference, verdict


def _samples(shift: float, n: int = 60, seed: int = 1):
    rng = np.random.default_rng(seed)
    base = rng.lognormal(mean=0.0, sigma=0.2, size=n)
    return base * (1 + shift) * rng.lognormal(0.0, 0.02, size=n), base


def test_a_known_20_percent_difference_is_inside_the_interval_and_zero_is_not():
    slower, base = _samples(0.20)
    iv = relative_difference(slower, base, "median", paired=True)
    assert iv.low <= 0.20 <= iv.high
    assert iv.low > 0.10 and iv.high < 0.30
    assert verdict(iv) == "slower"
    assert iv.n == iv.n_baseline == 60


def test_unpaired_interval_is_wider_than_the_paired_one_on_shared_variation():
    slower, base = _samples(0.05)
    paired = relative_difference(slower, base, "median", paired=True)
    unpaired = relative_difference(slower, base, "median", paired=False)
    assert (paired.high - paired.low) < (unpaired.high - unpaired.low)
    assert verdict(paired) == "slower"


def test_noise_without_a_difference_is_a_tie():
    rng = np.random.default_rng(7)
    a, b = rng.normal(10, 1, 200), rng.normal(10, 1, 200)
    iv = relative_difference(a, b, "mean")
    assert iv.contains_zero
    assert verdict(iv) == "tie"


def test_identical_samples_are_an_exact_tie_without_resampling():
    a = [0.36, 0.36, 0.125, 0.4]
    iv = relative_difference(a, list(a), "median", paired=True)
    assert iv.identical and (iv.low, iv.estimate, iv.high) == (0.0, 0.0, 0.0)
    assert verdict(iv) == "tie" and iv.percent() == "0 % (identical)"


def test_constant_but_different_samples_give_a_point_not_a_fake_interval():
    iv = relative_difference([2.0] * 5, [1.0] * 5, "median")
    assert iv.low == iv.estimate == iv.high == pytest.approx(1.0)
    assert verdict(iv) == "slower"


def test_the_interval_is_the_same_for_the_same_seed_and_data():
    slower, base = _samples(0.1)
    assert relative_difference(slower, base, seed=3) == relative_difference(slower, base, seed=3)


def test_empty_or_zero_baseline_gives_no_verdict():
    assert verdict(relative_difference([], [1.0, 2.0])) == "n/a"
    assert claim_verdict(relative_difference([1.0], [0.0, 0.0])) == "no data"


def test_claim_verdicts_hold_tie_fail_and_magnitude():
    faster, base = _samples(-0.20)
    iv = relative_difference(faster, base, paired=True)
    assert claim_verdict(iv) == "holds"
    assert claim_verdict(iv, expected=-0.24) == "holds"        # within half of the paper's size
    assert claim_verdict(iv, expected=-0.90, tolerance=0.5) == "magnitude off"
    assert claim_verdict(relative_difference(base, faster, paired=True)) == "fails"
    assert claim_verdict(relative_difference(base, list(base), paired=True)) == "tie"


def test_an_absolute_difference_keeps_the_unit_and_handles_a_sign_change():
    from mpsched.analysis.stats import absolute_difference

    rng = np.random.default_rng(2)
    base = rng.normal(0.05, 0.02, 80)          # around zero: a ratio would mean nothing
    lower = base - 0.5 + rng.normal(0, 0.01, 80)
    iv = absolute_difference(lower, base, "mean", paired=True)
    assert not iv.relative and iv.low <= -0.5 <= iv.high and iv.high < 0
    assert verdict(iv) == "faster"
    point = absolute_difference([-0.7], [0.2], "mean")
    assert point.deterministic and point.estimate == pytest.approx(-0.9) and point.percent() == "-0.9"


def test_a_point_prints_without_a_fake_interval():
    iv = relative_difference([2.0] * 3, [1.0] * 3, "mean")
    assert iv.deterministic and iv.percent() == "+100.0 %"
