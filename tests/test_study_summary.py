"""The closing summary read from the store: the same values, rows and bytes as the summary of the
rows the tasks built (what the client held before it stopped keeping them), with no run's rows
held by the client while the study runs."""

from __future__ import annotations

import shutil
import textwrap

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import mpsched
from mpsched.analysis.compare import compare
from mpsched.analysis.summary import fct_summary
from mpsched.study import execute, load, plan_stream
from mpsched.study import store as st
from mpsched.study.results import Results, order_rows
from mpsched.study.store import concat

STUDY = textwrap.dedent("""
    name = "summary_small"
    duration = "3s"
    seed = [1, 2]

    [[paths]]
    name = "wlan"
    rate = "20Mbit"
    rtt = "20ms"

    [[paths]]
    name = "lte"
    rate = ["4Mbit", "8Mbit"]
    rtt = "60ms"

    [connection]
    scheduler = ["minrtt", "roundrobin", "redundant"]

    [workload]
    kind = "sized"
    size = ["64KiB", "512KiB"]
    arrival = "periodic"
    interval = "1s"
""")


@pytest.fixture
def study(tmp_path, monkeypatch):
    """A small study run in this process, with the tables each task built captured (the rows
    the tasks returned to the client before)."""
    built: list[dict[str, pl.DataFrame]] = []
    real = st.batch_frames

    def capture(records):
        frames = real(records)
        built.append(frames)
        return frames

    monkeypatch.setattr(st, "batch_frames", capture)
    path = tmp_path / "study.toml"
    path.write_text(STUDY)
    out = tmp_path / "out"
    res = mpsched.run(mpsched.load_scenario(path), out, jobs=1)
    return res, built, out


def _as_returned(res: Results, built: list[dict[str, pl.DataFrame]], out) -> Results:
    """The results as the client assembled them before: the summary tables the tasks returned
    (flows, subflows, links, run: concatenated in the order they came back, then put in run
    order), the other tables read whole from the store."""
    order = res.runs.select("run_id")
    stored = load(out)
    tables = {name: order_rows(concat([b[name] for b in built if name in b]), order)
              if name in ("flows", "subflows", "links") else stored.tables[name] for name in stored.tables}
    runs = concat([b["run"] for b in built]).sort("index", "run_id")
    return Results(tables, runs, res.params, {})


def test_the_closing_summary_from_the_store_equals_the_summary_of_the_returned_rows(study):
    res, built, out = study
    assert len(res) == 24 and len(built) >= 1
    old = _as_returned(res, built, out)
    new = res.summary()
    assert new.height == 12  # 3 schedulers x 2 sizes x 2 LTE rates, seeds pooled
    assert_frame_equal(new, fct_summary(old))
    assert new.write_csv() == fct_summary(old).write_csv()  # the report's bytes
    # the comparison (what `mpsched run` prints) and its bootstrap inputs: the same too
    assert_frame_equal(compare(res).table, compare(old).table)
    # the summary read only the columns it needed: no table was loaded whole
    assert res.tables.loaded() == []


def test_a_study_returns_the_rows_its_tasks_built_in_run_order(study):
    res, built, out = study
    old = _as_returned(res, built, out)
    for name in ("flows", "subflows", "links"):
        assert_frame_equal(res.tables[name], old.tables[name])
        assert_frame_equal(res.scan(name).collect(), old.tables[name])  # the scan: the same rows, same order
    assert_frame_equal(res.runs, old.runs)
    assert res.runs.get_column("index").to_list() == list(range(24))
    # read back, and after a resume that recomputed one batch: the same rows
    again = load(out)
    assert_frame_equal(again.flows, res.flows)
    # the first and the last batch lost: their runs run again in one batch, which then holds runs
    # from both ends of the study (its rows out of run order, put back in order when read)
    batches = st.Store(out).batches()
    assert len(batches) >= 3
    for b in (batches[0], batches[-1]):
        shutil.rmtree(out / b.name)
    resumed = mpsched.run(mpsched.load_scenario(out.parent / "study.toml"), out, jobs=1)
    assert resumed.study_stats["ran"] == len(batches[0].runs) + len(batches[-1].runs)
    for name in ("flows", "subflows", "links"):
        assert_frame_equal(resumed.tables[name], old.tables[name])
        assert_frame_equal(resumed.scan(name).collect(), old.tables[name])
    assert_frame_equal(resumed.runs, old.runs)
    assert_frame_equal(resumed.summary(), res.summary())
    assert_frame_equal(compare(resumed).table, compare(old).table)


def test_the_client_keeps_no_run_rows_and_no_per_run_strings(tmp_path, monkeypatch):
    """The tasks return no tables (the client could only have kept them), and the plan holds its
    run ids as one string column, not a Python object per run."""
    returned = []
    real = execute.execute_batch

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        returned.append(out)
        return out

    monkeypatch.setattr(execute, "execute_batch", spy)
    path = tmp_path / "study.toml"
    path.write_text(STUDY)
    scenario = mpsched.load_scenario(path)
    tasks = plan_stream(scenario)
    assert isinstance(tasks.run_ids.series, pl.Series) and len(tasks.run_ids) == 24
    assert list(tasks.run_ids) == [t.run_id for t in plan_stream(scenario)]
    res = mpsched.run(scenario, tmp_path / "out", jobs=1, tasks=tasks)
    assert returned and all("frames" not in r and r["records"] is None for r in returned)
    assert sum(len(r["runs"]) for r in returned) == 24 == len(res)

