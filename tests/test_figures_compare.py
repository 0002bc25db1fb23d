"""Figures that show the difference (issue 13), on the synthetic engine (round-robin 1.5x the
FCT of minRTT on every flow): FCT against size and % against the baseline with the known
difference, CDFs that say which curves coincide, time series of the setting that differs most."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import mpsched
from mpsched.analysis.compare import compare
from mpsched.analysis.figures import fct_cdf, save_all
from mpsched.analysis.figures_compare import contrast_runs, metric_vs_size, vs_baseline
from mpsched.study.results import Results

from conftest import SCENARIOS


@pytest.fixture
def quick(tmp_path, fake_engine):
    return mpsched.run(SCENARIOS / "quick.toml", tmp_path / "study")


def test_fct_against_size_draws_each_scheduler_at_each_size(quick):
    fig = metric_vs_size(quick)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["minrtt", "roundrobin"]
    ys = {c.get_label(): np.asarray(c.lines[0].get_ydata()) for c in ax.containers}
    assert all(len(y) == 2 for y in ys.values())  # both sizes
    assert np.allclose(ys["roundrobin"] / ys["minrtt"], 1.5)


def test_the_difference_from_the_baseline_is_drawn_where_it_is(quick):
    cmp = compare(quick)
    assert cmp.table.filter(pl.col("scheduler") == "roundrobin").get_column("diff").to_list() == pytest.approx([0.5, 0.5])
    fig = vs_baseline(quick, cmp)
    ys = [y for ln in fig.axes[0].get_lines() for y in np.atleast_1d(ln.get_ydata()) if len(ln.get_xdata()) == 1]
    assert len(ys) >= 2 and ys == pytest.approx([50.0] * len(ys))  # points and caps: no spread


def test_cdf_curves_that_coincide_say_so():
    flows = pl.DataFrame({"run_id": ["a"] * 3 + ["b"] * 3, "flow_id": [0, 1, 2] * 2, "scheduler": ["x"] * 3 + ["y"] * 3,
                          "completed": [True] * 6, "fct_ns": [1, 2, 3] * 2, "protocol": ["mptcp"] * 6})
    res = Results({"flows": flows, "subflows": pl.DataFrame()}, flows.select("run_id", "scheduler").unique(), ["scheduler"], {})
    labels = [t.get_text() for t in fct_cdf(res).axes[0].get_legend().get_texts()]
    assert labels == ["x", "y (identical to x)"]
    styles = {ln.get_label(): (ln.get_linestyle(), ln.get_marker()) for ln in fct_cdf(res).axes[0].get_lines()}
    assert styles["x"] != styles["y (identical to x)"]


def test_time_series_come_from_the_setting_where_schedulers_differ_most(tmp_path, fake_engine):
    res = mpsched.run(SCENARIOS / "quick.toml", tmp_path / "s")
    flows = res.flows.with_columns(  # make the 256 KiB setting the one that differs most
        pl.when((pl.col("scheduler") == "roundrobin") & (pl.col("size") == "256KiB"))
        .then(pl.col("fct_ns") * 3).otherwise(pl.col("fct_ns")).alias("fct_ns"))
    res.tables["flows"] = flows
    chosen = contrast_runs(res)
    sizes = set(res.runs.filter(pl.col("run_id").is_in(list(chosen.values()))).get_column("size"))
    assert set(chosen) == {"minrtt", "roundrobin"} and sizes == {"256KiB"}


def test_save_all_writes_the_comparison_figures(quick, tmp_path):
    names = {p.name for p in save_all(quick, tmp_path / "fig")}
    for stem in ("fct_vs_size", "vs_baseline", "fct_cdf", "fct_box", "ofo", "subflows_minrtt"):
        assert f"{stem}.png" in names
