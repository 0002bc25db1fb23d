"""Summary tables and figures from a study (synthetic engine, so the expected values are known)."""

from __future__ import annotations

import polars as pl
import pytest

import mpsched
from mpsched.analysis import fct_summary, path_shares, throughput_series
from mpsched.analysis.figures import fct_boxplot, save_all

from conftest import SCENARIOS


@pytest.fixture
def quick(tmp_path, fake_engine):
    return mpsched.run(SCENARIOS / "quick.toml", tmp_path / "study")


def test_summary_groups_by_scheduler_and_size_in_sweep_order(quick):
    s = fct_summary(quick)
    assert s.select("scheduler", "size").rows() == [
        ("minrtt", "64KiB"), ("minrtt", "256KiB"), ("roundrobin", "64KiB"), ("roundrobin", "256KiB")]
    assert s.get_column("flows").to_list() == [3, 3, 3, 3]
    # synthetic FCT of a 64 KiB minRTT flow: base RTT of the first path (20 ms) + size over 25 Mbit/s
    expected = 0.020 + 65536 * 8 / 25e6
    row = s.row(0, named=True)
    assert row["fct_median_s"] == pytest.approx(expected) and row["fct_p95_s"] == pytest.approx(expected)
    assert s.row(2, named=True)["fct_median_s"] == pytest.approx(1.5 * expected)


def test_path_shares_follow_the_bytes_each_path_carried(quick):
    shares = path_shares(quick)
    assert {"share_fast", "share_slow"} <= set(shares.columns)
    # the synthetic engine splits bytes in proportion to the rates, 20:5
    assert shares.get_column("share_fast").to_list() == pytest.approx([0.8] * 4, abs=1e-4)
    total = shares.select(pl.col("share_fast") + pl.col("share_slow")).to_series().to_list()
    assert total == pytest.approx([1.0] * 4)


def test_throughput_is_the_growth_of_acked_bytes(quick):
    t = throughput_series(quick).drop_nulls("throughput_bps")
    run = quick.runs.get_column("run_id")[0]
    first = t.filter((pl.col("run_id") == run) & (pl.col("flow_id") == 0) & (pl.col("subflow") == 0)).sort("time_ns")
    rows = first.select("time_ns", "bytes_acked", "throughput_bps").rows()
    (t0, b0, _), (t1, b1, thr) = rows[0], rows[1]
    assert thr == pytest.approx((b1 - b0) * 8e9 / (t1 - t0))


def test_plots_write_png_and_svg(quick, tmp_path):
    files = save_all(quick, tmp_path / "fig")
    names = sorted(p.name for p in files)
    for stem in ("fct_box", "fct_cdf", "ofo", "subflows_minrtt", "subflows_roundrobin"):
        assert f"{stem}.png" in names and f"{stem}.svg" in names
    for p in files:
        assert p.stat().st_size > 1000
        head = p.read_bytes()[:8]
        assert head.startswith(b"\x89PNG") if p.suffix == ".png" else b"<?xml" in head or b"<svg" in head


def test_box_plot_has_one_panel_per_size_and_one_box_per_scheduler(quick):
    fig = fct_boxplot(quick)
    axes = [a for a in fig.axes if a.get_visible()]
    assert [a.get_title() for a in axes] == ["size=64KiB", "size=256KiB"]
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["minrtt", "roundrobin"]


def test_sql_over_the_tables_and_the_notebook_view(quick):
    df = quick.sql("SELECT flows.scheduler, count(*) AS n FROM flows JOIN runs USING (run_id) WHERE runs.engine = 'sim' GROUP BY 1 ORDER BY 1")
    assert df.rows() == [("minrtt", 6), ("roundrobin", 6)]
    html = quick._repr_html_()
    assert "4 runs" in html and "roundrobin" in html


def test_show_exports_csv_and_json(quick):
    import json

    from typer.testing import CliRunner

    from mpsched.cli import app

    r = CliRunner().invoke(app, ["show", str(quick.path), "--format", "csv"])
    assert r.exit_code == 0
    header, *rows = r.output.strip().splitlines()
    assert header.startswith("scheduler,size,flows,completed,fct_median_s") and len(rows) == 4
    r = CliRunner().invoke(app, ["show", str(quick.path), "--format", "json"])
    assert [row["size"] for row in json.loads(r.output)] == ["64KiB", "256KiB", "64KiB", "256KiB"]
