"""Sweeps: list grids and space-filling designs, and the columns they give the results."""

from __future__ import annotations

import math

import polars as pl
import pytest

import mpsched
from mpsched.study import describe, plan
from mpsched.scenario import Scenario, ScenarioError
from mpsched.scenario.sweep import axes, expand

BASE = {
    "duration": "10s",
    "paths": [{"name": "wlan", "rate": "50Mbit", "rtt": "20ms"}, {"name": "lte", "rate": "10Mbit", "rtt": "80ms"}],
    "connection": {"scheduler": ["minrtt", "ecf"]},
    "workload": {"size": "64KiB", "interval": "1s"},
}


def with_design(**design):
    return Scenario.from_dict({**BASE, "seed": [1, 2], "design": design})


def test_list_labels_are_short_or_named_and_seed_varies_fastest():
    s = Scenario.from_dict({**BASE, "seed": [5, 6], "paths": [
        {"name": "wlan", "rate": ["50Mbit", "100Mbit"], "rtt": "20ms"}, {"name": "lte", "rate": "10Mbit", "rtt": "80ms"}]})
    assert [a.label for a in axes(s)] == ["wlan.rate", "scheduler", "seed"]
    runs = expand(s)
    assert len(runs) == 8
    assert [r.params["seed"] for r in runs[:4]] == [5, 6, 5, 6]
    assert runs[0].params == {"wlan.rate": "50Mbit", "scheduler": "minrtt", "seed": 5}
    assert runs[-1].scenario.paths[0].rate == "100Mbit" and runs[-1].scenario.connection[0].scheduler == "ecf"


def test_two_connections_sweeping_the_same_field_get_named_labels():
    s = Scenario.from_dict({**BASE, "connection": [{"name": "a", "scheduler": ["minrtt", "ecf"]},
                                                   {"name": "b", "scheduler": ["blest", "redundant"]}]})
    assert [a.label for a in axes(s)] == ["a.scheduler", "b.scheduler"]
    assert len(expand(s)) == 4


@pytest.mark.parametrize("kind", ["sobol", "lhs", "halton", "random", "wsp"])
def test_a_design_draws_its_points_inside_the_ranges(kind):
    s = with_design(kind=kind, samples=8, seed=3,
                    ranges={"lte.rate": ["1Mbit", "100Mbit"], "lte.rtt": ["20ms", "400ms"], "wlan.loss": ["0%", "2%"]},
                    log=["lte.rate"])
    tasks = plan(s)
    assert len(tasks) == 2 * 8 * 2 == describe(s)["runs"]
    points = {(t.params["lte.rate_bps"], t.params["lte.rtt_ns"], t.params["wlan.loss"]) for t in tasks}
    assert len(points) == 8  # each point runs for both schedulers and both seeds
    for t in tasks:
        lte_down = t.config["links"][2]
        assert 1e6 <= lte_down["rate_bps"] == t.params["lte.rate_bps"] <= 1e8
        assert 10_000_000 <= lte_down["delay_ns"] <= 200_000_000  # half the drawn RTT
        assert lte_down["delay_ns"] == t.params["lte.rtt_ns"] // 2
        p = t.config["links"][0]["loss"].get("p", 0.0)
        assert p == pytest.approx(t.params["wlan.loss"])
        assert 0 <= p <= 0.02
    assert plan(s)[5].params == tasks[5].params  # deterministic for a design seed


def test_space_filling_designs_cover_each_dimension_evenly():
    s = with_design(kind="lhs", samples=10, ranges={"lte.rtt": ["0ms", "100ms"]})
    rtts = sorted({t.params["lte.rtt_ns"] for t in plan(s)})
    # Latin hypercube: exactly one of the 10 points in each tenth of the range
    assert [int(r // 10_000_000) for r in rtts] == list(range(10))


def test_log_scale_spreads_points_over_decades():
    s = with_design(kind="lhs", samples=9, ranges={"lte.rate": ["1Mbit", "1000Mbit"]}, log=["lte.rate"])
    decades = sorted({int(math.log10(t.params["lte.rate_bps"])) for t in plan(s)})
    assert decades == [6, 7, 8]


def test_a_design_draws_queues_as_buffering_time_at_the_drawn_rate():
    # Paasch et al. sweep each path's buffering in ms (0-100 ms, 0-2000 ms): the queue holds
    # what the link sends in that time, whatever rate the same point draws.
    s = with_design(kind="lhs", samples=6, ranges={"lte.queue": ["0ms", "2000ms"], "lte.rate": ["1Mbit", "50Mbit"]})
    for t in plan(s):
        lte_down = t.config["links"][2]
        want = max(1500, math.ceil(t.params["lte.queue_ns"] * lte_down["rate_bps"] / 8e9))
        assert lte_down["queue_bytes"] == want
        assert 0 <= t.params["lte.queue_ns"] <= 2_000_000_000


@pytest.mark.parametrize(
    "design, field",
    [
        ({"samples": 4, "ranges": {"lte.speed": ["1Mbit", "2Mbit"]}}, "design.ranges.lte.speed"),
        ({"samples": 4, "ranges": {"scheduler": ["a", "b"]}}, "design.ranges.scheduler"),
        ({"samples": 4, "ranges": {"lte.rate": ["2Mbit", "1Mbit"]}}, "design.ranges.lte.rate"),
        ({"samples": 4, "ranges": {"lte.rtt": ["0ms", "9ms"]}, "log": ["lte.rtt"]}, "design.ranges.lte.rtt"),
        ({"samples": 4, "ranges": {"lte.rate": ["1Mbit"]}}, "design.ranges.lte.rate"),
        ({"samples": 4, "ranges": {"lte.queue": ["10KB", "100KB"]}}, "design.ranges.lte.queue"),
        ({"samples": 0, "ranges": {"lte.rate": ["1Mbit", "2Mbit"]}}, "design.samples"),
        ({"samples": 4, "ranges": {"lte.rate": ["1Mbit", "2Mbit"]}, "log": ["wlan.rate"]}, "design.log[0]"),
    ],
)
def test_bad_designs_name_the_field(design, field):
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict({**BASE, "design": design})
    assert e.value.field == field, str(e.value)


def test_a_field_cannot_be_both_a_list_and_a_design_range():
    data = {**BASE, "paths": [{"name": "lte", "rate": ["1Mbit", "2Mbit"], "rtt": "80ms"}],
            "design": {"samples": 2, "ranges": {"lte.rate": ["1Mbit", "9Mbit"]}}}
    with pytest.raises(ScenarioError, match="already swept"):
        Scenario.from_dict(data)


def test_design_scenarios_round_trip_and_results_carry_unit_columns(tmp_path, fake_engine):
    s = with_design(samples=4, ranges={"lte.rate": ["1Mbit", "100Mbit"], "rcv_buf": ["256KiB", "8MiB"]})
    assert mpsched.loads_scenario(s.to_toml()) == s
    res = mpsched.run(s, tmp_path)
    assert {"lte.rate_bps", "rcv_buf_bytes", "scheduler", "seed"} <= set(res.flows.columns)
    assert res.flows.get_column("lte.rate_bps").n_unique() == 4
    with pytest.raises(ScenarioError):
        from mpsched.scenario.normalize import to_config

        to_config(s)  # a design is many runs


def test_a_python_scheduler_class_goes_where_a_name_goes(tmp_path):
    from test_pysched import RoundRobin  # the documented example of mpsched.sched

    from conftest import has_core_runner

    s = Scenario.from_dict({**BASE, "connection": {"scheduler": ["minrtt", RoundRobin]},
                            "workload": {"size": "2MB", "interval": "5s"}})
    assert s.connection[0].scheduler == ["minrtt", "py:RoundRobin"]
    assert mpsched.loads_scenario(s.to_toml()) == s  # the name round-trips within this process
    with pytest.raises(ScenarioError, match="not defined in this process"):
        Scenario.from_dict({**BASE, "connection": {"scheduler": "py:Nowhere"}})
    with pytest.raises(ScenarioError, match="takes its settings in the class"):
        Scenario.from_dict({**BASE, "connection": {"scheduler": RoundRobin, "scheduler_params": {"x": 1}}})
    with pytest.raises(ScenarioError, match="simulator only"):
        plan(s, engine="kernel")
    if not has_core_runner():
        return
    res = mpsched.run(s, tmp_path, jobs=2)  # runs in this process: the class lives here
    by = dict(res.flows.group_by("scheduler").agg(pl.col("completed").all()).iter_rows())
    assert by == {"minrtt": True, "py:RoundRobin": True}
    shares = res.summary().filter(pl.col("scheduler") == "py:RoundRobin")
    assert shares.get_column("share_lte").item() > 0  # alternating puts bytes on the slow path too


def test_wsp_points_are_further_apart_than_random_ones_and_fill_the_cube():
    """WSP keeps no two points closer than its exclusion distance: its smallest pairwise distance
    beats uniform random draws and a Sobol sequence of the same size, and its points still reach
    every part of the cube (each axis split in four holds some)."""
    import numpy as np

    from mpsched.scenario.designs import draw

    def min_distance(p):
        d = np.sqrt(((p[:, None, :] - p[None, :, :]) ** 2).sum(axis=2))
        return d[np.triu_indices(len(p), 1)].min()

    w = draw("wsp", 100, 3, 0)
    assert w.shape == (100, 3) and ((w >= 0) & (w < 1)).all()
    assert len({tuple(r) for r in w}) == 100
    assert min_distance(w) > min_distance(draw("random", 100, 3, 0))
    assert min_distance(w) > min_distance(draw("sobol", 100, 3, 0))
    for axis in range(3):
        assert set(np.floor(w[:, axis] * 4).astype(int)) == {0, 1, 2, 3}


def test_a_cached_design_gives_the_points_drawn_afresh(tmp_path, monkeypatch):
    """Designs are drawn once and kept in the cache; what the cache gives back is what scipy
    draws, bit for bit, and an unwritable cache only costs drawing again."""
    import numpy as np

    from mpsched.scenario import designs
    from mpsched.scenario.sweep import unit_design

    monkeypatch.setenv("MPSCHED_CACHE_DIR", str(tmp_path / "cache"))
    fresh = designs.draw("sobol", 64, 4, 7)
    first = unit_design("sobol", 64, 4, 7)
    assert list((tmp_path / "cache" / "designs").glob("*.npy"))
    calls = []
    monkeypatch.setattr(designs, "draw", lambda *a: calls.append(a))
    again = unit_design("sobol", 64, 4, 7)
    assert calls == [] and np.array_equal(first, fresh) and np.array_equal(again, fresh)
    monkeypatch.setenv("MPSCHED_CACHE_DIR", "/proc/no-such-dir")
    monkeypatch.setattr(designs, "draw", lambda *a: fresh)
    assert np.array_equal(unit_design("sobol", 64, 4, 7), fresh)
