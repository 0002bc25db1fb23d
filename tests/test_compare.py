"""Scheduler comparisons (issue 13): the interval of a known difference, identical schedulers
collapsed with their reason, the RTO-plateau hint, and the table on 80 columns."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from rich.console import Console

from mpsched.analysis.compare import compare
from mpsched.analysis.report import print_comparison
from mpsched.study.results import Results


def _results(fct_ms: dict[str, np.ndarray], *, seeds: int = 3, rtos: dict[str, np.ndarray] | None = None,
             second_path: dict[str, float] | None = None) -> Results:
    """A study of one setting (size=1MiB): for each scheduler, `fct_ms` gives one FCT per
    (seed, flow) in seed-major order; subflows on paths "a" and "b"."""
    flows, subflows = [], []
    for sched, values in fct_ms.items():
        per_seed = len(values) // seeds
        for i, v in enumerate(values):
            seed, flow = divmod(i, per_seed)
            run = f"{sched}_s{seed}"
            flows.append({"run_id": run, "scheduler": sched, "size": "1MiB", "seed": seed, "flow_id": flow,
                          "protocol": "mptcp", "app": "sized", "completed": True, "fct_ns": int(v * 1e6),
                          "start_ns": 0, "end_ns": int(v * 1e6), "bytes_delivered": 1000, "bytes_sent": 1000,
                          "bytes_retransmitted": 0, "bytes_redundant": 0})
            b = int(1000 * (second_path or {}).get(sched, 0.0))
            rto = int((rtos or {}).get(sched, np.zeros(len(values)))[i])
            subflows += [{"run_id": run, "flow_id": flow, "subflow": 0, "path": "a", "bytes_sent": 1000 - b,
                          "bytes_acked": 1000 - b, "bytes_retransmitted": 0, "rto_count": rto},
                         {"run_id": run, "flow_id": flow, "subflow": 1, "path": "b", "bytes_sent": b,
                          "bytes_acked": b, "bytes_retransmitted": 0, "rto_count": 0}]
    fl = pl.DataFrame(flows)
    runs = fl.select("run_id", "scheduler", "size", "seed").unique(maintain_order=True)
    tables = {"flows": fl, "subflows": pl.DataFrame(subflows)}
    return Results(tables, runs, ["scheduler", "size", "seed"], {})


def test_a_known_20_percent_difference_is_found_with_an_interval_that_excludes_zero():
    rng = np.random.default_rng(7)
    a = rng.lognormal(np.log(100.0), 0.3, size=90)  # 30 flows x 3 seeds
    b = a * 1.2 * rng.normal(1.0, 0.05, size=90)  # the same flows, 20 % slower, with noise
    c = compare(_results({"A": a, "B": b}), baseline="A")
    row = c.table.filter(pl.col("scheduler") == "B").to_dicts()[0]
    assert row["paired"] is True
    assert row["low"] < 0.20 < row["high"] and row["low"] > 0.0
    assert row["verdict"] == "slower"
    assert c.table.filter(pl.col("scheduler") == "A").get_column("verdict").to_list() == ["baseline"]
    # the other way round: A is faster than B
    back = compare(_results({"A": a, "B": b}), baseline="B").table.filter(pl.col("scheduler") == "A").to_dicts()[0]
    assert back["verdict"] == "faster" and back["high"] < 0


def test_noise_alone_is_a_tie():
    rng = np.random.default_rng(3)
    a = rng.lognormal(np.log(100.0), 0.3, size=60)
    b = rng.lognormal(np.log(100.0), 0.3, size=60)  # different flows, same distribution
    row = compare(_results({"A": a, "B": b}), baseline="A").table.filter(pl.col("scheduler") == "B").to_dicts()[0]
    assert row["low"] <= 0 <= row["high"] and row["verdict"] == "tie"


def test_identical_schedulers_share_one_row_with_the_reason_from_the_records():
    rng = np.random.default_rng(1)
    a = rng.lognormal(np.log(100.0), 0.3, size=30)
    res = _results({"minrtt": a, "ecf": a.copy(), "cfs": a.copy(), "redundant": a * 0.9})
    t = compare(res).table
    assert t.get_column("scheduler").to_list() == ["minrtt = ecf = cfs", "redundant"]
    assert "one subflow" in t.get_column("note")[0]  # no flow sent on path b
    assert t.get_column("verdict").to_list() == ["baseline", "faster"]
    # when the second subflow is used, the reason says so instead
    res = _results({"minrtt": a, "ecf": a.copy()}, second_path={"minrtt": 0.3, "ecf": 0.3})
    t = compare(res).table
    assert t.height == 1 and "100% of flows sent on a second subflow" in t.get_column("note")[0]


def test_a_plateau_of_fcts_after_rtos_gets_a_hint():
    rng = np.random.default_rng(2)
    a = rng.lognormal(np.log(100.0), 0.2, size=40)
    b = a.copy()
    b[:30] = 360.0 + rng.uniform(0, 0.5, size=30)  # 75 % at 0.360 s, after an RTO
    rto = np.zeros(40)
    rto[:30] = 1
    t = compare(_results({"A": a, "B": b}, seeds=1, rtos={"B": rto}), baseline="A").table
    note = t.filter(pl.col("scheduler") == "B").get_column("note")[0]
    assert "75% of flows end at 0.360 s" in note and "RTO" in note
    assert t.filter(pl.col("scheduler") == "A").get_column("note")[0] == ""


def test_by_pools_the_other_settings_and_unknown_parameters_are_refused():
    rng = np.random.default_rng(4)
    a = rng.lognormal(np.log(100.0), 0.3, size=30)
    res = _results({"A": a, "B": a * 1.5})
    assert compare(res, baseline="A", by=[]).table.height == 2
    with pytest.raises(ValueError, match="not a swept parameter"):
        compare(res, by=["rate"])
    with pytest.raises(ValueError, match="baseline 'nope'"):
        compare(res, baseline="nope")


def test_the_printed_comparison_fits_80_columns_and_explains_its_columns():
    rng = np.random.default_rng(5)
    a = rng.lognormal(np.log(100.0), 0.3, size=30)
    res = _results({"minrtt": a, "ecf": a.copy(), "roundrobin": a * 1.1, "redundant": a * 0.9},
                   second_path={"roundrobin": 0.4, "redundant": 0.5})
    console = Console(width=80, record=True)
    print_comparison(compare(res), console)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    for word in ("roundrobin", "redundant", "minrtt +1", "vs minrtt %", "slower", "faster",
                 "[95 % bootstrap interval]", "retx%:", "reinj%:", "a% / b%: share of the bytes", "[1] minrtt, ecf identical"):
        assert word in text, word


def test_flows_that_end_before_the_join_are_named_as_the_reason_and_the_join_time_is_measured():
    rng = np.random.default_rng(6)
    a = rng.lognormal(np.log(100.0), 0.3, size=30)
    res = _results({"minrtt": a, "ecf": a.copy()})
    series = []
    for r in res.flows.iter_rows(named=True):  # the second subflow's first RTT sample 1 ms after the end
        series.append({"run_id": r["run_id"], "flow_id": r["flow_id"], "subflow": 1, "path": "b",
                       "time_ns": r["end_ns"] + 1_000_000, "srtt_ns": 200_000_000})
    res.tables["subflow_series"] = pl.DataFrame(series)
    row = compare(res).table.to_dicts()[0]
    assert row["before_join"] == 1.0 and row["join_ms"] is None
    assert "every flow ended before the second subflow joined" in row["note"]
    # joined 40 ms after the start of every flow: the median join time says so
    res.tables["subflow_series"] = pl.DataFrame(series).with_columns(
        (pl.col("time_ns") * 0 + 40_000_000).alias("time_ns"))
    row = compare(res).table.to_dicts()[0]
    assert row["join_ms"] == pytest.approx(40.0) and row["before_join"] == 0.0
