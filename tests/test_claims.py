"""Claims judged on samples with an interval: a known difference of the paper's size holds, no
difference is a tie, the right direction at five times the size is 'magnitude off', the wrong
direction fails, and one run per side is read as a point ("deterministic: no interval")."""

import numpy as np
import pytest
import polars as pl

from mpsched.experiments.claims import judge_claim
from mpsched.experiments.samples import SAMPLE_COLUMNS


def _samples(values: dict[str, np.ndarray], metric="fct", setting="64K", statistic="mean") -> pl.DataFrame:
    rows = [("", metric, setting, sched, f"s1/f{i}", float(v), statistic)
            for sched, vs in values.items() for i, v in enumerate(vs)]
    return pl.DataFrame(rows, schema=list(SAMPLE_COLUMNS), orient="row")


def _base(n=40, seed=3):
    rng = np.random.default_rng(seed)
    return rng.lognormal(0.0, 0.3, n)


#: a paper saying a is 20 % faster than b (1.0 s against 1.25 s)
CLAIM = {"text": "a is faster", "source": "T", "metric": "fct", "order": ["a", "b"]}
PUBLISHED = {"table": [{"metric": "fct", "settings": ["64K"], "values": {"a": [1.0], "b": [1.25]}}]}


def test_a_known_20_percent_difference_holds_with_an_interval_around_it():
    b = _base()
    a = b * 0.8 * np.random.default_rng(4).lognormal(0.0, 0.02, b.size)
    r = judge_claim(CLAIM, _samples({"a": a, "b": b}), "", PUBLISHED)
    assert r.verdict == "holds", r.detail
    (c,) = r.comparisons
    assert c.interval.paired and c.interval.low < -0.2 < c.interval.high < 0
    assert c.expected == (pytest.approx(-0.2),)
    assert "paper -20.0 %" in r.detail


def test_identical_samples_are_a_tie_not_a_win():
    b = _base()
    r = judge_claim(CLAIM, _samples({"a": b, "b": b.copy()}), "", PUBLISHED)
    assert r.verdict == "tie"


def test_noise_without_a_difference_is_a_tie():
    rng = np.random.default_rng(9)
    r = judge_claim(CLAIM, _samples({"a": rng.normal(10, 1, 50), "b": rng.normal(10, 1, 50)}), "", PUBLISHED)
    assert r.verdict == "tie"


def test_the_right_direction_at_five_times_the_size_is_magnitude_off():
    b = _base()
    # the paper: a is 4 % faster; ours: 20 % faster (5x the size)
    published = {"table": [{"metric": "fct", "settings": ["64K"], "values": {"a": [0.96], "b": [1.0]}}]}
    r = judge_claim(CLAIM, _samples({"a": b * 0.8, "b": b}), "", published)
    assert r.verdict == "magnitude off", r.detail
    # a stated magnitude overrides the tables, and its tolerance is the claim's
    assert judge_claim({**CLAIM, "magnitude": -0.2}, _samples({"a": b * 0.8, "b": b}), "", published).verdict == "holds"
    assert judge_claim({**CLAIM, "magnitude_tolerance": 5.0}, _samples({"a": b * 0.8, "b": b}), "",
                       published).verdict == "holds"


def test_the_wrong_direction_fails_and_highest_swaps_the_sides():
    b = _base()
    r = judge_claim(CLAIM, _samples({"a": b * 1.3, "b": b}), "", PUBLISHED)
    assert r.verdict == "fails"
    highest = {"text": "t", "source": "s", "metric": "fct", "highest": "a", "among": ["a", "b"]}
    assert judge_claim(highest, _samples({"a": b * 1.3, "b": b}), "").verdict == "holds"


def test_one_run_per_side_is_a_point_and_says_so():
    r = judge_claim(CLAIM, _samples({"a": np.array([1.0]), "b": np.array([1.25])}), "", PUBLISHED)
    assert r.verdict == "holds" and "deterministic: no interval" in r.detail
    assert r.comparisons[0].interval.low == r.comparisons[0].interval.high


def test_similar_and_no_worse_claims_use_their_tolerance():
    b = _base()
    similar = {"text": "t", "source": "s", "metric": "fct", "similar": ["a", "b"], "tolerance": 0.05}
    assert judge_claim(similar, _samples({"a": b * 1.01, "b": b}), "").verdict == "holds"
    assert judge_claim(similar, _samples({"a": b * 1.5, "b": b}), "").verdict == "fails"
    no_worse = {"text": "t", "source": "s", "metric": "fct", "order": ["a", "b"], "strict": False, "tolerance": 0.01}
    assert judge_claim(no_worse, _samples({"a": b, "b": b}), "").verdict == "holds"
    assert judge_claim(no_worse, _samples({"a": b * 1.2, "b": b}), "").verdict == "fails"


def test_a_metric_that_changes_sign_is_compared_as_a_difference():
    lowest = {"text": "t", "source": "s", "metric": "ab", "lowest": "a", "among": ["a", "b"]}
    s = _samples({"a": np.array([-0.7, -0.8, -0.75]), "b": np.array([0.1, -0.05, 0.2])}, metric="ab")
    r = judge_claim(lowest, s, "")
    assert r.verdict == "holds" and not r.comparisons[0].interval.relative


def test_missing_schedulers_give_no_data():
    r = judge_claim({**CLAIM, "order": ["a", "zzz"]}, _samples({"a": _base(), "b": _base()}), "")
    assert r.verdict == "no data"
