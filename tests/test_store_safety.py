"""The store never loses or escapes: only what mpsched made is removed from `.tmp`, run names
stay inside the results folder, one `run` at a time writes a study, a damaged file is named and
recomputed, and a summary reads only the tables it shows."""

from __future__ import annotations

import os
import threading
import tomllib

import pytest

import mpsched
from mpsched.scenario import Scenario, ScenarioError, loads_scenario
from mpsched.study import store
from mpsched.study.results import load

from conftest import SCENARIOS


def test_the_temporary_area_loses_only_what_mpsched_made(tmp_path):
    tmp = tmp_path / store.TMP
    notes = tmp / "my-notes"
    notes.mkdir(parents=True)
    (notes / "ideas.txt").write_text("keep me")
    (tmp / "loose-file.txt").write_text("keep me too")
    dead = tmp / "run_abc.999999999.deadbeef"  # a writer that is gone (no such pid)
    dead.mkdir()
    (dead / store.MARKER).write_text("999999999")
    unmarked = tmp / "run_abc.999999998.cafecafe"  # looks like ours, but carries no marker
    unmarked.mkdir()
    alive = tmp / "run_def.1.feedface"  # pid 1 is alive: a writer still at work
    alive.mkdir()
    (alive / store.MARKER).write_text("1")

    assert store.clean_stale_tmp(tmp_path) == 1
    assert not dead.exists()
    assert (notes / "ideas.txt").read_text() == "keep me"
    assert (tmp / "loose-file.txt").exists() and unmarked.exists() and alive.exists()


def test_a_committed_batch_carries_no_temporary_marker(tmp_path, fake_engine):
    mpsched.run(mpsched.load_scenario(SCENARIOS / "quick.toml"), tmp_path)
    batches = store.batch_dirs(tmp_path)
    assert batches and not any((d / store.MARKER).exists() for d in batches)


@pytest.mark.parametrize("name", ["../../escape", "/tmp/abs", "a/b", "..", ".hidden", "a\\b", "x\x00y"])
def test_a_scenario_name_cannot_leave_the_results_folder(name):
    data = tomllib.loads((SCENARIOS / "quick.toml").read_text())
    data["name"] = name
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(data)
    assert e.value.field == "name"


def test_a_second_run_into_the_same_study_waits_for_the_first(tmp_path):
    order = []
    first_in = threading.Event()
    release = threading.Event()

    def first():
        with store.study_lock(tmp_path):
            order.append("first")
            first_in.set()
            release.wait(30)

    t = threading.Thread(target=first)
    t.start()
    first_in.wait(30)

    def waiting(message):
        order.append("waiting")
        assert str(tmp_path) in message and str(os.getpid()) in message
        release.set()

    with store.study_lock(tmp_path, on_wait=waiting):
        order.append("second")
    t.join()
    assert order == ["first", "waiting", "second"]


def test_a_second_run_reuses_the_first_runs_results(tmp_path, fake_engine):
    s = mpsched.load_scenario(SCENARIOS / "quick.toml")
    mpsched.run(s, tmp_path)
    n = len(fake_engine)
    mpsched.run(s, tmp_path)
    assert len(fake_engine) == n  # nothing computed twice


def test_a_damaged_file_is_named_and_recomputed_on_resume(tmp_path, fake_engine):
    s = mpsched.load_scenario(SCENARIOS / "quick.toml")
    mpsched.run(s, tmp_path)
    n = len(fake_engine)
    batch = store.batch_dirs(tmp_path)[1]
    in_batch = store.Store(tmp_path).batches()[1].runs
    victim = batch / "flows.parquet"
    victim.write_bytes(victim.read_bytes()[:100])  # truncated, batch.json still there
    with pytest.raises(store.DamagedRun) as e:
        load(tmp_path).flows
    assert str(victim) in str(e.value)
    assert store.damage(victim.parent) is not None
    res = mpsched.run(s, tmp_path)
    assert len(fake_engine) == n + len(in_batch)  # only the damaged batch's runs again
    assert res.flows.height == 12
    assert not [d for d in store.batch_dirs(tmp_path) if store.damage(d) is not None]


def test_the_summary_of_a_100_run_study_reads_no_time_series(tmp_path, fake_engine):
    from mpsched.analysis import fct_summary

    text = (SCENARIOS / "quick.toml").read_text().replace("seed = 1", "seed = " + str(list(range(1, 26))))
    mpsched.run(loads_scenario(text), tmp_path)
    res = load(tmp_path)
    assert res.runs.height == 100
    summary = fct_summary(res)
    assert summary.height == 4
    assert not [t for t in res.tables.loaded() if t.endswith("_series")]
