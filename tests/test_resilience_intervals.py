"""The resilience summary's intervals: a 95 % Student t interval of the mean over seeds, drawn
from each seed's own value (its flows' mean first), for the call's failover time and its share
of missed deadlines (`mpsched show`, scenarios/resilience/README.md)."""

from __future__ import annotations

import math

import polars as pl
import pytest

import mpsched
from mpsched import metrics
from mpsched.analysis.stats import mean_t_interval
from mpsched.analysis.summary import _seed_intervals
from mpsched.cli.results import _with_intervals

from conftest import has_core_runner


def test_the_t_interval_of_a_known_sample():
    # mean 3, s = sqrt(2.5), t(0.975, 4) = 2.776445: half-width 2.776445 * 1.581139 / sqrt(5)
    mean, low, high = mean_t_interval([1.0, 2.0, 3.0, 4.0, 5.0])
    assert mean == 3.0
    assert low == pytest.approx(3.0 - 1.963243, abs=1e-5)
    assert high == pytest.approx(3.0 + 1.963243, abs=1e-5)
    # equal values: a zero-width interval; one value or none: no interval
    assert mean_t_interval([7.0, 7.0, 7.0]) == (7.0, 7.0, 7.0)
    assert math.isnan(mean_t_interval([7.0])[1]) and math.isnan(mean_t_interval([])[0])
    # non-finite values are dropped, not counted
    assert mean_t_interval([1.0, 2.0, 3.0, 4.0, 5.0, math.nan]) == mean_t_interval([1.0, 2.0, 3.0, 4.0, 5.0])


def test_the_interval_is_over_seeds_not_over_flows():
    # Group "x": seed r1 has two flows (100 and 300 ms: its value is 200), r2 400, r3 300. Over
    # seeds: mean 300, s = 100, t(0.975, 2) = 4.302653: 300 +- 248.41 (pooled over the four
    # flows it would be 275 +- 185.6). The miss share likewise (0.2 +- 0.2484); lower bounds
    # are clipped at 0, a miss share's upper bound at 1.
    per_flow = pl.DataFrame({
        "scheduler": ["x", "x", "x", "x", "y", "y"],
        "run_id": ["r1", "r1", "r2", "r3", "r4", "r5"],
        "failover_ms": [100.0, 300.0, 400.0, 300.0, 0.0, 1000.0],
        "deadline_miss_rate": [0.1, 0.1, 0.2, 0.3, 0.9, 1.0],
    })
    out = _seed_intervals(per_flow, ["scheduler"])
    x = out.row(0, named=True)
    assert x["scheduler"] == "x" and x["seeds"] == 3
    assert x["failover_ms_low"] == pytest.approx(300.0 - 248.4138, abs=1e-3)
    assert x["failover_ms_high"] == pytest.approx(300.0 + 248.4138, abs=1e-3)
    assert x["deadline_miss_rate_low"] == 0.0  # 0.2 - 0.2484 clipped: a share is not negative
    assert x["deadline_miss_rate_high"] == pytest.approx(0.2 + 0.2484138, abs=1e-6)
    y = out.row(1, named=True)
    assert y["seeds"] == 2 and y["failover_ms_low"] == 0.0 and y["deadline_miss_rate_high"] == 1.0


def test_the_show_table_puts_each_interval_beside_its_mean():
    df = pl.DataFrame({"scheduler": ["linux", "one seed"], "failover_ms": [1339.4, 541.0],
                       "failover_ms_low": [1210.2, None], "failover_ms_high": [1460.0, None],
                       "deadline_miss_rate": [0.1221, 0.037], "deadline_miss_rate_low": [0.11, None],
                       "deadline_miss_rate_high": [0.1344, None]})
    shown = _with_intervals(df)
    assert shown.columns == ["scheduler", "failover_ms", "deadline_miss_rate"]
    assert shown["failover_ms"].to_list() == ["1339 [1210, 1460]", "541"]
    assert shown["deadline_miss_rate"].to_list() == ["12.2 % [11.0, 13.4]", "3.7 %"]


STUDY = """
duration = "7s"
seed = [1, 2, 3]
[[paths]]
name = "a"
rate = "10Mbit"
delay = "10ms"
jitter = "2ms"
jitter_mode = "smooth"
queue = "100 packets"
[[paths]]
name = "b"
rate = "10Mbit"
delay = "40ms"
queue = "100 packets"
[connection]
scheduler = "linux"
cc = "cubic"
[[workload]]
kind = "messages"
size = "300B"
interval = "20ms"
deadline = "150ms"
stop = "6s"
[[path_events]]
kind = "blackhole"
path = "a"
at = "2s"
duration = "2s"
[record]
interval = "10ms"
"""


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """STUDY's three seeds, run once for the tests that read them."""
    if not has_core_runner():
        pytest.skip("needs the compiled core")
    return mpsched.run(mpsched.loads_scenario(STUDY), tmp_path_factory.mktemp("study") / "s", jobs=1)


def test_a_studys_summary_draws_its_interval_from_each_seeds_run(study):
    res = study
    row = mpsched.analysis.resilience_summary(res).row(0, named=True)
    assert row["seeds"] == 3
    stalls = metrics.delivery_stalls(res.flows, res.blocks, res.conn_series)
    fo = metrics.failover(res.path_events, stalls, res.conn_series, res.subflow_series)
    per_seed = fo.group_by("run_id").agg(pl.col("failover_ms").mean())["failover_ms"].to_list()
    assert len(per_seed) == 3 and len(set(per_seed)) > 1  # the jitter draws from the seed
    mean, low, high = mean_t_interval(per_seed)
    assert row["failover_ms"] == pytest.approx(mean)
    assert row["failover_ms_low"] == pytest.approx(max(low, 0.0)) and row["failover_ms_high"] == pytest.approx(high)
    b = res.blocks.group_by("run_id").agg(pl.col("deadline_missed").mean())
    _, low, high = mean_t_interval(b["deadline_missed"].to_list())
    assert row["deadline_miss_rate_low"] == pytest.approx(max(low, 0.0))
    assert row["deadline_miss_rate_high"] == pytest.approx(min(high, 1.0))


def test_the_resilience_figure_draws_each_interval_over_seeds_as_an_error_bar(study):
    from matplotlib.container import BarContainer

    from mpsched.analysis.figures import resilience_plot

    res = study
    row = mpsched.analysis.resilience_summary(res).row(0, named=True)
    fig = resilience_plot(res)
    for ax, col in zip(fig.axes, ("failover_ms", "deadline_miss_rate")):
        (bars,) = [c for c in ax.containers if isinstance(c, BarContainer)]
        (segment,) = bars.errorbar.lines[2][0].get_segments()  # the one bar's vertical line
        assert [y for _, y in segment] == pytest.approx([row[f"{col}_low"], row[f"{col}_high"]])
