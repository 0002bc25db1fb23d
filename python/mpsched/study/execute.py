"""Running a study: the planned tasks (`mpsched.study.plan`) on an engine, stored in batches.

Runs are independent. They go, in batches (one task = a few runs, sized so the cost of a task
stays near a tenth of its runs' time, see `study.batching`), to a local process pool (`jobs`
workers, "spawn" start method so no worker inherits a half-initialised thread pool from the
parent), to any `concurrent.futures.Executor`, or to a Dask cluster (`client=`: a
`distributed.Client`, see `study.cluster`). Each task runs its runs, writes its batch to the
store (`study.store`) and returns only its run ids, failures and costs: the client holds no
run's rows, and the closing summary is read from the store after the runs (DuckDB / polars
scans of the batches' files, only the columns it needs), so the client's memory stays flat
however many runs the study has.
"""

from __future__ import annotations

import functools
import subprocess
import tempfile
import time
import warnings
from concurrent.futures import Executor
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Callable

import numpy as np
import polars as pl

from mpsched import engines
from mpsched.engines import sim as sim_engine
from mpsched.scenario import Scenario, load_scenario
from mpsched.sched import register
from mpsched.study import store as st
from mpsched.study.index import holdings, ids_series
from mpsched.study.batching import RunFailed, drive
from mpsched.study.interrupt import Interrupted
from mpsched.study.plan import StudyPlan, Task, check_topology_engine, plan_stream
from mpsched.study.results import Results, from_store
from mpsched.study.simclock import SIM_CLOCK

__all__ = ["Interrupted", "RunFailed", "code_version", "execute_batch", "run"]

def run(
    scenario: Scenario | str | Path,
    out: str | Path | None = None,
    *,
    engine: str = "sim",
    jobs: int = 1,
    on_progress: Callable[[int, int], None] | None = None,
    progress: bool = False,
    executor: Executor | None = None,
    client: Any = None,
    tasks: list[Task] | StudyPlan | None = None,
    workers_write: bool = True,
    force: bool = False,
) -> Results:
    """Run every combination of `scenario` on `engine` and return the results.

    With `out` (a directory, or an fsspec URL such as ``s3://bucket/study`` when the workers can
    write there), runs are stored in batches under it; runs already there from the same code
    version are reused (an interrupted study resumes), runs from another version are run again
    and replace the old ones; without it, runs go to a temporary directory and the results are
    returned in memory. `on_progress(done, total)` is called as runs finish; `progress=True`
    draws a progress bar instead (terminal or notebook).

    `jobs` local processes run the study, unless an `executor` (any
    `concurrent.futures.Executor`) or a Dask `client` (``distributed.Client``) is given: their
    workers must see `out` (a shared file system or an object store), unless
    `workers_write=False`: then each task returns its runs' tables and this process writes the
    batches (more traffic through the client; for workers that share no storage with it).
    `tasks`: the study already planned (`mpsched.study.plan_stream`, or the tasks of
    `mpsched.study.plan`), so it is not planned twice. Every run is checked before the first
    starts, and the runs' configurations are made as they are handed out, not held.

    A scenario whose estimated work or memory is above `mpsched.scenario.budget.LIMITS` is
    refused unless `force`. Ctrl-C (KeyboardInterrupt) stops it at once and raises `Interrupted`
    (a KeyboardInterrupt saying how many runs are stored).
    """
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    if tasks is None:
        check_topology_engine(scenario, engine)
        engines.check_engine(engine)
        tasks = plan_stream(scenario, engine, force=force)
    if progress and on_progress is None:
        from mpsched.study.progress import run_progress

        with run_progress(len(tasks)) as update:
            return run(scenario, out, engine=engine, jobs=jobs, on_progress=update, executor=executor,
                       client=client, tasks=tasks, workers_write=workers_write, force=force)
    if out is None:
        with tempfile.TemporaryDirectory(prefix="mpsched-") as tmp:
            res = run_tasks(tasks, tmp, engine, jobs, on_progress, executor, client, workers_write)
            res.tables = res.tables.load_all()  # before the directory goes
            res.meta = {k: res.meta[k] for k in res.meta}
            docs = {r: res._docs(r) for r in res.meta}
            res._docs = docs.__getitem__
            res.path = None
            return res
    return run_tasks(tasks, out, engine, jobs, on_progress, executor, client, workers_write)


def run_tasks(tasks: list[Task] | StudyPlan, out: str | Path, engine: str, jobs: int, on_progress,
              executor: Executor | None = None, client: Any = None, workers_write: bool = True) -> Results:
    """Run the tasks not yet in the store `out` and return the study's results."""
    study = tasks if isinstance(tasks, StudyPlan) else StudyPlan.of(tasks)
    if "://" not in str(out):
        out = Path(out).resolve()  # workers may run elsewhere (another directory, another host)
    store = st.Store(out)
    store.ensure()
    # one `run` at a time writes a local study: a second waits, then reuses what the first stored
    with st.study_lock(store.root) if store.local else nullcontext():
        store.clean_stale_tmp()
        version = code_version()
        for name in store.damaged(version):  # a file that cannot be read: its runs are recomputed
            store.remove_batch(name)
        done = _done(store, study.run_ids, version)
        n_todo = len(done) - int(done.sum())
        try:
            report = _execute(store, study, done, n_todo, out, engine, version, jobs, on_progress, executor, client,
                              workers_write)
        except KeyboardInterrupt:
            raise Interrupted(stored_count(out, study.run_ids), len(study), store.root if store.local else out) from None
        if report.changed_store:
            store.dedupe(version)
    if report.failures:
        raise RunFailed(report.failures, out)
    res = from_store(store, study.run_ids, version)
    res.study_stats = {"runs": len(study), "ran": n_todo, "tasks": report.tasks, "run_s": report.run_s,
                       "task_wall_s": report.task_wall_s, "task_cpu_s": report.task_cpu_s}
    for w in res.warnings():
        warnings.warn(w, RuntimeWarning, stacklevel=3)
    return res


def _done(store: st.Store, run_ids, version: str) -> np.ndarray:
    """One flag per run of `run_ids`: whether a complete batch of `version` holds it."""
    held = holdings(store).filter(pl.col("code_version") == version)
    return ids_series(run_ids).is_in(held.get_column("run_id").implode()).to_numpy()


def _execute(store: st.Store, study: StudyPlan, done: np.ndarray, n_todo: int, out, engine: str, version: str,
             jobs: int, on_progress, executor, client, workers_write: bool):
    if engine == "kernel":
        jobs, executor, client = 1, None, None  # one testbed per machine: its namespaces and addresses are fixed
    schedulers = _python_schedulers(study.schedulers)
    if schedulers is not None and schedulers[1] is None:
        jobs, executor = 1, None  # classes that cannot travel run in this process (jobs=1)
        if client is not None:
            raise ValueError(schedulers[2])
    payload = schedulers[1] if schedulers else None
    return drive(study.tasks(done=done), n_todo, len(study), str(out), engine, version, payload, jobs=jobs, executor=executor,
                 client=client, on_progress=on_progress, work=execute_batch, store=store,
                 write_on_client=not workers_write)


def _python_schedulers(classes: dict[str, type]) -> tuple[dict, bytes | None, str] | None:
    """The Python scheduler classes of a study, with their cloudpickle (by reference when
    importable, else by value), or None and the reason when they cannot be sent to a worker."""
    if not classes:
        return None
    try:
        import cloudpickle

        return classes, cloudpickle.dumps(classes), ""
    except Exception as e:  # noqa: BLE001 - anything cloudpickle refuses (locks, open files, ...)
        names = ", ".join(classes)
        return classes, None, (f"the Python scheduler(s) {names} cannot be sent to worker processes ({type(e).__name__}: "
                               f"{e}); define them at module level in an importable module, or run without a cluster")


def execute_batch(tasks: list[Task], out: str | None, engine: str, version: str,
                  schedulers: bytes | None = None) -> dict[str, Any]:
    """A worker's task: run `tasks` and write them as one batch into the store `out` (or, with
    `out=None`, return the runs for the client to write). A run the engine refuses is recorded
    as failed (kept beside its run id in the batch) and the others go on; it is not retried."""
    cpu0, wall0 = time.process_time(), time.perf_counter()
    if schedulers:
        import cloudpickle

        for name, cls in cloudpickle.loads(schedulers).items():
            register(cls, name)
    records, failures, run_s = [], {}, 0.0
    for t in tasks:
        started, cpu = time.time(), time.process_time()
        try:
            records.append(_run_one(t, engine, version, started))
        except engines.EngineError as e:
            failures[t.run_id] = str(e)
        run_s += time.process_time() - cpu  # CPU in the engine (and the run's own bookkeeping)
    frames = st.batch_frames(records) if records else {}
    name = None
    if out is not None:
        try:
            name = st.Store(out).write_batch(records, failures, version, frames)
        except OSError as e:  # disk full, permissions: say where, not a traceback
            why = f"cannot store the run in {out}: {e.strerror or e}"
            failures = {**failures, **{r.run_id: why for r in records}}
            records, frames = [], {}
    return {"batch": name, "runs": [r.run_id for r in records], "failures": failures,
            "records": None if out is not None else records,
            "run_s": run_s, "wall_s": time.perf_counter() - wall0, "cpu_s": time.process_time() - cpu0}


def _run_one(task: Task, engine: str, version: str, started: float) -> st.RunRecord:
    sim_engine.default_progress = SIM_CLOCK.report  # the bar shows how far a long run is
    try:
        if task.chain:
            tables = engines.run_chained(task.config, list(task.chain), engine, run_one=engines.run_config)
        else:
            tables = engines.run_config(task.config, engine)
    finally:
        SIM_CLOCK.clear()
    engine_stats = tables.pop("_stats", None)  # counters about the run itself, not a table
    _name_paths(tables, task.config)
    _add_columns(tables, task.extra_columns or {})
    meta = {
        "run_id": task.run_id,
        "index": task.index,
        "params": task.params,
        "seed": task.config["seed"],
        "engine": engine,
        "code_version": version,
        "scenario_hash": task.scenario_hash or st.config_hash(task.config),
        "schema_version": st.SCHEMA_VERSION,
        "started_unix_s": started,
        "wall_time_s": time.time() - started,
        "engine_stats": engine_stats,
    }
    return st.RunRecord(task.run_id, task.index, task.params, tables, meta, task.scenario_toml, task.config)


def _name_paths(tables: dict[str, dict[str, list]], config: dict[str, Any]) -> None:
    """Engines report paths by index; tables carry the path's name in `path` (what plots and
    queries want) and the index in `path_index`."""
    names = [p["name"] for p in config["paths"]]
    for columns in tables.values():
        col = columns.get("path")
        if col and all(isinstance(v, int) and not isinstance(v, bool) for v in col):
            columns["path_index"] = col
            columns["path"] = [names[v] if 0 <= v < len(names) else str(v) for v in col]


def _add_columns(tables: dict[str, dict[str, list]], extra: dict[str, dict[str, list]]) -> None:
    """Add the planner's per-row columns (e.g. a flow's hosts and class) to the engine's tables,
    matched on the first column of each (rows the planner does not know get None)."""
    for name, cols in extra.items():
        table = tables.get(name)
        key, *rest = cols
        if not table or key not in table:
            continue
        row = {k: i for i, k in enumerate(cols[key])}
        at = [row.get(k) for k in table[key]]
        for c in rest:
            if c not in table:
                table[c] = [None if i is None else cols[c][i] for i in at]


@functools.cache
def code_version() -> str:
    """The package version, plus the git commit (and "-dirty") when run from a checkout.

    Asked once per process: the code a process runs is the code it loaded, whatever happens to
    the checkout meanwhile, and a resumed study in the same process (a notebook, the tests)
    must not see another version because git was slow to answer on a loaded machine."""
    from mpsched._core import core_version

    version = core_version()
    here = Path(__file__).resolve().parent
    try:
        rev = subprocess.run(["git", "-C", str(here), "describe", "--always", "--dirty", "--abbrev=12"],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return version
    return f"{version}+git.{rev.stdout.strip()}" if rev.returncode == 0 and rev.stdout.strip() else version


def outdated(out: str | Path, run_ids) -> tuple[int, list[str]]:
    """How many of `run_ids` the study at `out` holds only from other code versions (a study run
    now computes them again and replaces them), and those versions."""
    store = st.Store(out)
    if not store.exists():
        return 0, []
    held = holdings(store)
    version = code_version()
    ids = ids_series(run_ids)
    mine = held.filter(pl.col("code_version") == version).get_column("run_id")
    other = held.filter((pl.col("code_version") != version) & pl.col("run_id").is_in(ids.implode())
                        & ~pl.col("run_id").is_in(mine.implode()))
    versions = sorted(str(v) for v in other.get_column("code_version").unique().to_list())
    return other.get_column("run_id").n_unique(), versions


def stored_count(out: str | Path, run_ids) -> int:
    """How many of `run_ids` the study at `out` already holds from this code version (what a
    resumed study reuses)."""
    store = st.Store(out)
    if not store.exists():
        return 0
    return int(_done(store, run_ids, code_version()).sum())
