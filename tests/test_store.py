"""The results store: atomic run directories, resume, and reading a study back (DuckDB, polars)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import duckdb
import polars as pl
import pytest

import mpsched
from mpsched.study import store
from mpsched.study import plan

from conftest import SCENARIOS, synthetic_tables


def _stored_runs(out):
    """run id -> its line of runs.jsonl, over every complete batch of a study directory."""
    docs = {}
    for b in sorted(p for p in out.iterdir() if not p.name.startswith(".")):
        for line in (b / "runs.jsonl").read_text().splitlines():
            doc = json.loads(line)
            assert doc["run_id"] not in docs  # a run is in one batch only
            docs[doc["run_id"]] = doc
    return docs


def test_a_run_writes_every_table_with_run_id_and_swept_columns(tmp_path, fake_engine):
    res = mpsched.run(SCENARIOS / "quick.toml", tmp_path)
    assert len(res) == 4 and len(fake_engine) == 4
    batches = sorted(p for p in tmp_path.iterdir() if not p.name.startswith("."))
    assert 1 <= len(batches) <= 4
    ids = []
    for b in batches:
        for name in (*store.TABLES, "run"):
            assert (b / f"{name}.parquet").is_file()
        doc = json.loads((b / "batch.json").read_text())
        assert doc["failures"] == {} and pl.read_parquet(b / "run.parquet").get_column("run_id").to_list() == doc["runs"]
        ids += doc["runs"]
    assert sorted(ids) == sorted(t.run_id for t in plan(mpsched.load_scenario(SCENARIOS / "quick.toml")))
    docs = _stored_runs(tmp_path)
    assert sorted(docs) == sorted(ids)
    for run_id, doc in docs.items():
        meta = doc["meta"]
        assert meta["run_id"] == run_id and meta["engine"] == "sim" and meta["seed"] == 1
        assert meta["scenario_hash"] == store.config_hash(doc["config"])
        assert meta["engine_stats"] == {"events": 1}  # `_stats` goes to meta, not to a table
        assert mpsched.__version__ in meta["code_version"]
        assert res.meta[run_id] == meta
        # the stored scenario is the concrete run: it loads, and is not a sweep any more
        assert len(mpsched.loads_scenario(doc["scenario_toml"]).expand()) == 1
        assert res.scenario_toml(run_id) == doc["scenario_toml"]
    flows = pl.read_parquet(tmp_path / "*" / "flows.parquet")
    assert flows.height == 4 * 3
    assert {"run_id", "scheduler", "size", "seed"} <= set(flows.columns)
    # the synthetic engine completes every flow; the swept size label matches the flow's bytes
    sizes = dict(flows.select("size", "size_bytes").unique().iter_rows())
    assert sizes == {"64KiB": 65536, "256KiB": 262144}


def test_duckdb_queries_the_study_by_glob(tmp_path, fake_engine):
    mpsched.run(SCENARIOS / "quick.toml", tmp_path)
    rows = duckdb.sql(
        f"SELECT scheduler, size, count(*) AS n, median(fct_ns) AS m FROM '{tmp_path}/*/flows.parquet' "
        "GROUP BY ALL ORDER BY scheduler, size"
    ).fetchall()
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("minrtt", "256KiB", 3), ("minrtt", "64KiB", 3), ("roundrobin", "256KiB", 3), ("roundrobin", "64KiB", 3)]
    # synthetic FCT: round-robin is 1.5x minRTT on the same flows
    m = {(r[0], r[1]): r[3] for r in rows}
    assert m[("roundrobin", "64KiB")] == pytest.approx(1.5 * m[("minrtt", "64KiB")], rel=1e-6)


def test_results_load_back_equal_and_resume_skips_done_runs(tmp_path, fake_engine):
    first = mpsched.run(SCENARIOS / "quick.toml", tmp_path)
    again = mpsched.run(SCENARIOS / "quick.toml", tmp_path)
    assert len(fake_engine) == 4  # the second call found every run complete
    loaded = mpsched.load(tmp_path)
    assert loaded.params == ["scheduler", "size", "seed"]
    for name in store.TABLES:
        assert loaded.tables[name].equals(first.tables[name]), name
        assert again.tables[name].equals(first.tables[name]), name


def test_in_memory_run_returns_results_without_a_directory(fake_engine):
    res = mpsched.run(mpsched.load_scenario(SCENARIOS / "quick.toml"))
    assert res.path is None and res.flows.height == 12
    s = res.summary()
    assert s.height == 4 and s.get_column("completed").to_list() == [3, 3, 3, 3]


_INTERRUPTED_WRITER = textwrap.dedent(
    """
    import os, sys
    import polars as pl
    from mpsched.study import store
    from mpsched.study import plan
    from mpsched.scenario import load_scenario
    sys.path.insert(0, {tests!r})
    from conftest import synthetic_tables
    from pathlib import Path

    calls = 0
    real = Path.write_bytes
    def dying(self, *a, **k):
        global calls
        calls += 1
        if calls == 3:
            os._exit(9)  # the process dies mid-batch, like a kill -9 or a power cut
        return real(self, *a, **k)
    Path.write_bytes = dying
    tasks = plan(load_scenario({scenario!r}))[:2]
    records = [store.RunRecord(t.run_id, t.index, t.params, synthetic_tables(t.config),
                               {{"engine": "sim", "index": t.index, "scenario_hash": "x"}}, t.scenario_toml, t.config)
               for t in tasks]
    store.Store({out!r}).write_batch(records, {{}}, "v1")
    """
)


def test_a_batch_killed_mid_write_leaves_no_visible_directory(tmp_path, fake_engine):
    from conftest import REPO

    script = _INTERRUPTED_WRITER.format(tests=str(REPO / "tests"), scenario=str(SCENARIOS / "quick.toml"), out=str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 9, proc.stderr
    visible = [p for p in tmp_path.iterdir() if not p.name.startswith(".")]
    assert visible == []
    leftovers = list((tmp_path / ".tmp").iterdir())
    assert len(leftovers) == 1 and (leftovers[0] / "flows.parquet").exists()  # the half batch is hidden
    assert not list(tmp_path.glob("*/flows.parquet"))
    assert len(mpsched.load(tmp_path)) == 0
    # the next run cleans the dead writer's leftovers and completes the study
    res = mpsched.run(SCENARIOS / "quick.toml", tmp_path)
    assert len(res) == 4
    assert list((tmp_path / ".tmp").iterdir()) == []


def test_a_failing_write_removes_its_temporary_directory(tmp_path, monkeypatch):
    from pathlib import Path

    t = plan(mpsched.load_scenario(SCENARIOS / "quick.toml"))[0]
    real = Path.write_bytes
    calls = []

    def failing(self, *a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk full")
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "write_bytes", failing)
    record = store.RunRecord(t.run_id, 0, t.params, synthetic_tables(t.config),
                             {"engine": "sim", "index": 0, "scenario_hash": "x"}, t.scenario_toml, t.config)
    with pytest.raises(OSError, match="disk full"):
        store.Store(tmp_path).write_batch([record], {}, "v1")
    assert [p for p in tmp_path.iterdir() if not p.name.startswith(".")] == []
    assert list((tmp_path / ".tmp").iterdir()) == []


def test_run_ids_are_deterministic_and_readable():
    tasks = plan(mpsched.load_scenario(SCENARIOS / "quick.toml"))
    again = plan(mpsched.load_scenario(SCENARIOS / "quick.toml"))
    assert [t.run_id for t in tasks] == [t.run_id for t in again]
    assert tasks[0].run_id.startswith("minrtt_64KiB_s1_")
    # the kernel runs only its own scheduler (and plan now refuses what the engine would)
    linux = mpsched.loads_scenario((SCENARIOS / "quick.toml").read_text().replace('["minrtt", "roundrobin"]', '"linux"'))
    assert plan(linux)[0].run_id != plan(linux, engine="kernel")[0].run_id  # the engine is part of what ran


def test_empty_and_partial_tables_keep_their_columns(tmp_path):
    df = store.to_frame({}, {"run_id": "r", "seed": 3})
    assert df.columns == ["run_id", "seed"] and df.height == 0
    df = store.to_frame({"flow_id": [1, 2], "end_ns": [5, None], "completed": [True, False]}, {"run_id": "r"})
    assert df.schema["end_ns"] == pl.Int64 and df.get_column("run_id").to_list() == ["r", "r"]


def test_runs_go_to_a_given_executor_and_failures_are_collected(tmp_path, fake_engine, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    from mpsched import engines

    with ThreadPoolExecutor(2) as pool:
        res = mpsched.run(SCENARIOS / "quick.toml", tmp_path / "ok", executor=pool)
    assert len(res) == 4 and len(fake_engine) == 4

    def flaky(config, engine="sim"):
        if config["transports"][0]["scheduler"] == "roundrobin":
            raise engines.EngineError("roundrobin exploded")
        return synthetic_tables(config)

    monkeypatch.setattr(engines, "run_config", flaky)
    with ThreadPoolExecutor(2) as pool, pytest.raises(mpsched.RunFailed) as e:
        mpsched.run(SCENARIOS / "quick.toml", tmp_path / "half", executor=pool)
    assert len(e.value.failures) == 2 and "roundrobin exploded" in str(e.value)
    assert len(mpsched.load(tmp_path / "half")) == 2  # the good runs are kept


def test_runs_from_another_code_version_are_run_again_and_replaced(tmp_path, fake_engine, monkeypatch):
    from mpsched.study import execute as runner

    mpsched.run(SCENARIOS / "quick.toml", tmp_path)
    assert len(fake_engine) == 4
    monkeypatch.setattr(runner, "code_version", lambda: "9.9.9+git.new")
    res = mpsched.run(SCENARIOS / "quick.toml", tmp_path)
    assert len(fake_engine) == 8  # every run again
    assert {m["code_version"] for m in res.meta.values()} == {"9.9.9+git.new"}
    # replaced, not added: every run is stored once, by the new version
    assert {d["meta"]["code_version"] for d in _stored_runs(tmp_path).values()} == {"9.9.9+git.new"}
    assert len(_stored_runs(tmp_path)) == 4 and pl.read_parquet(tmp_path / "*" / "flows.parquet").height == 12
    assert list((tmp_path / ".tmp").iterdir()) == []
    mpsched.run(SCENARIOS / "quick.toml", tmp_path)
    assert len(fake_engine) == 8  # and now reused


def test_back_to_back_flows_start_when_the_previous_one_ends(tmp_path, fake_engine):
    s = mpsched.Scenario.from_dict({
        "duration": "30s", "paths": [{"name": "a", "rate": "10Mbit", "rtt": "10ms"}],
        "workload": {"sizes": ["100KB", "1MB"], "repeat": 2, "arrival": "back_to_back", "gap": "50ms", "start": "1s"}})
    res = mpsched.run(s, tmp_path)
    flows = res.flows.sort("flow_id")
    starts, ends = flows.get_column("start_ns").to_list(), flows.get_column("end_ns").to_list()
    assert starts[0] == 1_000_000_000
    assert [b - a for a, b in zip(ends, starts[1:])] == [50_000_000] * 3
    assert flows.get_column("size_bytes").to_list() == [100_000, 1_000_000, 100_000, 1_000_000]
    assert len(fake_engine) == 4  # one pass per placed flow, plus the final one


def test_back_to_back_stops_at_a_flow_that_never_completes(tmp_path, monkeypatch):
    from mpsched import engines

    def second_flow_hangs(config, engine="sim"):
        t = synthetic_tables(config)
        f = t["flows"]
        for i, fid in enumerate(f["flow_id"]):
            if fid == 1 or f["start_ns"][i] >= config["duration_ns"]:
                f["completed"][i], f["end_ns"][i], f["fct_ns"][i] = False, None, None
        return t

    monkeypatch.setattr(engines, "run_config", second_flow_hangs)
    monkeypatch.setattr(engines, "check_engine", lambda engine: None)
    s = mpsched.Scenario.from_dict({
        "duration": "30s", "paths": [{"name": "a", "rate": "10Mbit", "rtt": "10ms"}],
        "workload": {"size": "100KB", "repeat": 4, "arrival": "back_to_back"}})
    flows = mpsched.run(s, tmp_path).flows.sort("flow_id")
    assert flows.get_column("completed").to_list() == [True, False, False, False]
    assert flows.get_column("start_ns").to_list()[2:] == [30_000_000_000] * 2  # never placed


def test_tables_beyond_the_standard_ones_are_stored_and_read_back(tmp_path, fake_engine):
    res = mpsched.run(SCENARIOS / "quick.toml", tmp_path)
    assert res.blocks.height == 12 and {"run_id", "scheduler", "size"} <= set(res.blocks.columns)
    assert pl.read_parquet(tmp_path / "*" / "blocks.parquet").height == 12
    with pytest.raises(AttributeError, match="tables: flows"):
        res.nonexistent


def test_a_batch_frame_equals_its_runs_frames_concatenated():
    """The batch's tables are built from the runs' columns in one go; they hold exactly the rows,
    columns and dtypes of the runs' own frames put together."""
    parts = [({"flow_id": [1, 2], "fct_ns": [5, None], "completed": [True, False], "x": [1.5, 2.0]},
              {"run_id": "a", "size": "64KiB", "seed": 1}),
             ({}, {"run_id": "b", "size": "1KiB", "seed": 2}),  # a run with no rows in this table
             ({"flow_id": [3], "fct_ns": [7], "completed": [True], "y": ["q"]}, {"run_id": "c", "size": "1KiB", "seed": 3})]
    merged = store.batch_frames.__globals__["merged_frame"](parts)
    assert merged.equals(store.concat([store.to_frame(c, e) for c, e in parts]))
    assert merged.schema == store.concat([store.to_frame(c, e) for c, e in parts]).schema
    assert merged.get_column("run_id").to_list() == ["a", "a", "c"]


def test_a_run_stored_twice_is_kept_once(tmp_path, fake_engine):
    """A task that committed its batch although its client was killed (or a batch of an older
    code version) leaves a run in two batches: the next study keeps one copy, the glob sees it
    once."""
    mpsched.run(SCENARIOS / "quick.toml", tmp_path)
    s = store.Store(tmp_path)
    first = s.batches()
    tasks = plan(mpsched.load_scenario(SCENARIOS / "quick.toml"))
    from mpsched.study.execute import code_version, execute_batch

    for b in first:  # a retried task whose batch is already there adds nothing (same runs, same name)
        execute_batch([t for t in tasks if t.run_id in b.runs], str(tmp_path), "sim", code_version())
    assert pl.read_parquet(tmp_path / "*" / "run.parquet").height == 4
    execute_batch(tasks[:2], str(tmp_path), "sim", code_version())  # a late copy of two runs, batched otherwise
    assert pl.read_parquet(tmp_path / "*" / "run.parquet").height == 6
    assert len(mpsched.load(tmp_path)) == 4  # the reader already keeps one copy
    s.dedupe(code_version())
    assert pl.read_parquet(tmp_path / "*" / "run.parquet").height == 4
    assert sorted(b.name for b in s.batches()) == sorted(b.name for b in first)  # the first copy kept


def test_a_study_on_an_fsspec_url_is_stored_resumed_and_read_back(fake_engine):
    """`out` may be a URL fsspec understands (s3://, gs://, ...): here the in-memory file system.
    Batches are written there (batch.json last), read back, and a second run reuses them."""
    fsspec = pytest.importorskip("fsspec")
    url = "memory://mpsched-test/study"
    fs = fsspec.filesystem("memory")
    if fs.exists("/mpsched-test"):
        fs.rm("/mpsched-test", recursive=True)
    first = mpsched.run(SCENARIOS / "quick.toml", url)
    assert len(first) == 4 and len(fake_engine) == 4
    names = [p.rsplit("/", 1)[-1] for p in fs.ls("/mpsched-test/study", detail=False)]
    assert names and all(fs.exists(f"/mpsched-test/study/{n}/batch.json") for n in names)
    again = mpsched.run(SCENARIOS / "quick.toml", url)
    assert len(fake_engine) == 4  # every run found in the store
    loaded = mpsched.load(url)
    for name in store.TABLES:
        assert loaded.tables[name].equals(first.tables[name]), name
        assert again.tables[name].equals(first.tables[name]), name
    fs.rm("/mpsched-test", recursive=True)


def test_a_failed_run_is_kept_beside_its_id_and_only_it_runs_again(tmp_path, monkeypatch):
    from mpsched import engines

    calls = []

    def flaky(config, engine="sim"):
        calls.append(config["transports"][0]["scheduler"])
        if config["transports"][0]["scheduler"] == "roundrobin" and len(calls) <= 4:
            raise engines.EngineError("roundrobin exploded")
        return synthetic_tables(config)

    monkeypatch.setattr(engines, "run_config", flaky)
    monkeypatch.setattr(engines, "check_engine", lambda engine: None)
    with pytest.raises(mpsched.RunFailed) as e:
        mpsched.run(SCENARIOS / "quick.toml", tmp_path)
    assert calls.count("roundrobin") == 2  # failed once each, not retried
    kept = store.Store(tmp_path).failures()
    assert kept == e.value.failures and all(m == "roundrobin exploded" for m in kept.values()) and len(kept) == 2
    res = mpsched.run(SCENARIOS / "quick.toml", tmp_path)
    assert calls[4:] == ["roundrobin", "roundrobin"]  # only the failed runs ran again
    assert len(res) == 4 and pl.read_parquet(tmp_path / "*" / "run.parquet").height == 4
    assert store.Store(tmp_path).failures() == {}  # resolved


def test_a_study_of_the_layout_before_batches_is_read_and_converted(tmp_path, fake_engine):
    """Run directories written before batches (`<out>/<run_id>/*.parquet`, meta.json last) are
    read as batches of one run; a study by a newer code version runs them again into batches
    and removes them."""
    new = mpsched.run(SCENARIOS / "quick.toml", tmp_path / "new")
    old = tmp_path / "old"
    for run_id in new.runs.get_column("run_id"):
        d = old / run_id
        d.mkdir(parents=True)
        for name in (*store.TABLES, "run"):
            df = new.runs if name == "run" else new.tables[name]
            df.filter(pl.col("run_id") == run_id).write_parquet(d / f"{name}.parquet")
        (d / "scenario.toml").write_text(new.scenario_toml(run_id))
        (d / "config.json").write_text(json.dumps({"seed": 1}))
        (d / "meta.json").write_text(json.dumps({**new.meta[run_id], "code_version": "0.0.1-old"}))
    legacy = mpsched.load(old)
    assert len(legacy) == 4 and legacy.meta.keys() == new.meta.keys()
    for name in store.TABLES:
        assert legacy.tables[name].equals(new.tables[name]), name
    again = mpsched.run(SCENARIOS / "quick.toml", old)
    assert len(fake_engine) == 8  # another code version: run again
    assert not any((old / r).exists() for r in new.meta)  # and the old directories are gone
    assert pl.read_parquet(old / "*" / "run.parquet").height == 4 and len(again) == 4
