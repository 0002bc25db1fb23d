"""A study on a Dask cluster (a real LocalCluster of worker processes): the same rows as on
local processes, a worker killed mid-study costs nothing but time, and a study whose client was
killed resumes with only the missing runs, ending with the rows of an uninterrupted study."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

import mpsched
from mpsched.study import plan
from mpsched.study.store import TABLES, Store

from conftest import SCENARIOS, has_core_runner

distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.skipif(not has_core_runner(), reason="this build of the core has no run_json yet")

MPSCHED = str(Path(sys.executable).parent / "mpsched")

#: 16 runs of about a tenth of a second each (two fast paths, a 20 s bulk transfer): long enough
#: that a worker or the client can be killed while runs are in flight.
SLOW = """
name = "slow"
duration = "20s"
seed = [1, 2, 3, 4, 5, 6, 7, 8]
[[paths]]
name = "a"
rate = "100Mbit"
rtt = "20ms"
[[paths]]
name = "b"
rate = "50Mbit"
rtt = "40ms"
[connection]
scheduler = ["minrtt", "roundrobin"]
[workload]
kind = "bulk"
[record]
interval = "0"
"""


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  preload=["mpsched.study.execute"]) as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def slow(tmp_path_factory):
    path = tmp_path_factory.mktemp("scenarios") / "slow.toml"
    path.write_text(SLOW)
    return path


def _rows(res) -> dict[str, pl.DataFrame]:
    return {name: res.tables[name] for name in TABLES}


def _same_rows(a, b) -> None:
    """Every table equal, run by run (rows of a run in the engine's order)."""
    assert a.runs.sort("run_id").equals(b.runs.sort("run_id"))
    for name in TABLES:
        x, y = a.tables[name], b.tables[name]
        if x.is_empty() and y.is_empty():
            continue
        assert x.sort("run_id", maintain_order=True).equals(y.sort("run_id", maintain_order=True)), name


def test_a_study_on_a_cluster_gives_the_rows_of_local_processes(tmp_path, client):
    here = mpsched.run(SCENARIOS / "quick.toml", tmp_path / "local", jobs=1)
    there = mpsched.run(SCENARIOS / "quick.toml", tmp_path / "cluster", client=client)
    assert len(there) == 4
    _same_rows(here, there)
    _same_rows(here, mpsched.load(tmp_path / "cluster"))  # and the store holds the same


def test_workers_that_share_no_storage_return_their_runs_for_the_client_to_store(tmp_path, client):
    here = mpsched.run(SCENARIOS / "quick.toml", tmp_path / "local", jobs=1)
    there = mpsched.run(SCENARIOS / "quick.toml", tmp_path / "cluster", client=client, workers_write=False)
    _same_rows(here, there)
    _same_rows(here, mpsched.load(tmp_path / "cluster"))


def test_a_worker_killed_mid_study_costs_only_its_runs(tmp_path, client, slow):
    reference = mpsched.run(slow, tmp_path / "reference", client=client)
    killed = []

    def on_progress(done, total):
        pass

    def status(done, total, failed, running):
        if done and running and not killed:  # runs in flight on both workers: kill one of them
            pid = next(iter(client.run(os.getpid).values()))
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    on_progress.status = status
    res = mpsched.run(slow, tmp_path / "study", client=client, on_progress=on_progress)
    assert killed, "the study never had runs in flight"
    assert len(res) == 16 and res.runs.get_column("run_id").n_unique() == 16
    assert pl.read_parquet(tmp_path / "study" / "*" / "run.parquet").height == 16  # no run stored twice
    _same_rows(reference, res)
    # (the nanny restarts the killed worker in the background; the next tests need only one)


def test_a_study_whose_client_was_killed_resumes_with_only_the_missing_runs(tmp_path, client, slow):
    out = tmp_path / "study"
    proc = subprocess.Popen([MPSCHED, "run", str(slow), "--out", str(out), "--cluster", client.scheduler.address],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    store = Store(out)
    deadline = time.monotonic() + 120
    while not store.batches() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)  # the client dies with runs in flight
    proc.wait()
    # the scheduler forgets the dead client's tasks (a task already running finishes, and may
    # still commit its batch): wait until the cluster is idle before looking at the store
    while client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)) and time.monotonic() < deadline:
        time.sleep(0.05)
    before = {b.name for b in store.batches()}
    done = {r for b in store.batches() for r in b.runs}
    assert before, "the client was killed before any batch was committed"

    res = mpsched.run(slow, out, client=client)
    new = [b for b in store.batches() if b.name not in before]
    all_ids = {t.run_id for t in plan(mpsched.load_scenario(slow))}
    assert sorted(r for b in new for r in b.runs) == sorted(all_ids - done)  # only the missing runs ran
    assert pl.read_parquet(out / "*" / "run.parquet").height == 16  # every run once
    reference = mpsched.run(slow, tmp_path / "reference", jobs=1)
    _same_rows(reference, res)
    _same_rows(reference, mpsched.load(out))


def _first_fit():
    from mpsched.sched import SendNew

    class FirstFit:
        """Fills the first subflow with room (defined in a function: cloudpickle sends it by value)."""

        def schedule(self, view):
            for sf in view.subflows:
                if sf.free_cwnd_bytes >= sf.mss_bytes:
                    return [SendNew(sf.id, sf.mss_bytes)]
            return []

    return FirstFit


def _one_path(scheduler: str) -> mpsched.Scenario:
    return mpsched.Scenario.from_dict({"duration": "2s", "seed": [1, 2],
                                       "paths": [{"name": "a", "rate": "10Mbit", "rtt": "10ms"},
                                                 {"name": "b", "rate": "5Mbit", "rtt": "30ms"}],
                                       "connection": {"scheduler": scheduler}, "workload": {"kind": "bulk"},
                                       "record": {"interval": "0"}})


def test_a_python_scheduler_travels_to_the_workers(tmp_path, client):
    from mpsched.sched import register

    s = _one_path(register(_first_fit()))
    there = mpsched.run(s, tmp_path / "cluster", client=client)
    _same_rows(mpsched.run(s, tmp_path / "local", jobs=1), there)
    assert there.flows.get_column("bytes_delivered").min() > 0


def test_a_python_scheduler_that_cannot_travel_is_refused_clearly(tmp_path, client):
    import threading

    from mpsched.sched import register

    cls = _first_fit()
    cls.lock = threading.Lock()  # cloudpickle cannot send a lock
    with pytest.raises(ValueError, match="cannot be sent to worker processes"):
        mpsched.run(_one_path(register(cls)), tmp_path, client=client)
