"""Running a study: the planned tasks (`mpsched.study.plan`) on an engine, their records stored.

Runs are independent, so they go to a local process pool (`jobs` workers, "spawn" start method so
no worker inherits a half-initialised thread pool from the parent) or to any
`concurrent.futures.Executor` (e.g. a Dask cluster's); this is where another backend plugs in.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
import warnings
from concurrent.futures import FIRST_COMPLETED, Executor, ProcessPoolExecutor, wait
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Callable

from mpsched import engines
from mpsched.engines import python_schedulers_of
from mpsched.scenario import Scenario, load_scenario
from mpsched.study import store
from mpsched.study.interrupt import Interrupted, call_interruptibly, kill_workers, quiet_spawn, worker_init
from mpsched.study.plan import Task, check_topology_engine, plan
from mpsched.study.results import Results, load

__all__ = ["Interrupted", "RunFailed", "code_version", "run"]


class RunFailed(RuntimeError):
    """Some runs of a study failed; the others are stored. `failures` maps run id -> message."""

    def __init__(self, failures: dict[str, str], out: Path):
        self.failures = failures
        first_id, first = next(iter(failures.items()))
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        super().__init__(f"{len(failures)} run(s) failed; {first_id}: {first}{more}; completed runs are in {out}")


def run(
    scenario: Scenario | str | Path,
    out: str | Path | None = None,
    *,
    engine: str = "sim",
    jobs: int = 1,
    on_progress: Callable[[int, int], None] | None = None,
    progress: bool = False,
    executor: Executor | None = None,
    force: bool = False,
) -> Results:
    """Run every combination of `scenario` on `engine` and return the results.

    With `out`, each run is stored under ``out/<run_id>/``; runs already there from the same code
    version are reused (an interrupted study resumes), runs from another version are run again
    and replaced; without it, runs go to a temporary directory and the results are
    returned in memory. `on_progress(done, total)` is called as runs finish; `progress=True`
    draws a progress bar instead (terminal or notebook).

    `jobs` local processes run the study, unless an `executor` is given: any
    `concurrent.futures.Executor`, e.g. a Dask cluster's ``client.get_executor()`` (its workers
    must see `out` on a shared file system).

    A scenario whose estimated work or memory is above `mpsched.scenario.budget.LIMITS` is
    refused unless `force`. Ctrl-C (KeyboardInterrupt) stops it at once and raises `Interrupted`
    (a KeyboardInterrupt saying how many runs are stored).
    """
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    check_topology_engine(scenario, engine)
    engines.check_engine(engine)
    tasks = plan(scenario, engine, force=force)
    if progress and on_progress is None:
        from mpsched.study.progress import run_progress

        with run_progress(len(tasks)) as update:
            return run(scenario, out, engine=engine, jobs=jobs, on_progress=update, executor=executor, force=force)
    if out is None:
        with tempfile.TemporaryDirectory(prefix="mpsched-") as tmp:
            res = _run_tasks(tasks, Path(tmp), engine, jobs, on_progress, executor)
            res.tables = dict(res.tables)  # read now: the directory goes away
            res.path = None
            return res
    return _run_tasks(tasks, Path(out), engine, jobs, on_progress, executor)


def _run_tasks(tasks: list[Task], out: Path, engine: str, jobs: int, on_progress,
               executor: Executor | None = None) -> Results:
    with store.study_lock(out):
        store.clean_stale_tmp(out)
        todo = _todo(tasks, out, code_version())
        try:
            failures = _execute_all(tasks, todo, out, engine, jobs, on_progress, executor)
        except KeyboardInterrupt:
            stored = sum(1 for t in tasks if store.is_complete(out / t.run_id))
            raise Interrupted(stored, len(tasks), out) from None
    if failures:
        raise RunFailed(failures, out)
    res = load(out, run_ids=[t.run_id for t in tasks])
    for w in res.warnings():
        warnings.warn(w, RuntimeWarning, stacklevel=3)
    return res


def _todo(tasks: list[Task], out: Path, version: str) -> list[Task]:
    """The tasks to run: not stored yet, stored by another code version, or stored damaged (a
    file that cannot be read: it is replaced)."""
    todo = []
    for t in tasks:
        d = out / t.run_id
        if store.is_complete(d) and store.stored_version(d) == version and store.damage(d) is None:
            continue
        todo.append(t)
    return todo


def _execute_all(tasks, todo, out: Path, engine: str, jobs: int, on_progress, executor) -> dict[str, str]:
    version = code_version()
    done = len(tasks) - len(todo)
    if on_progress:
        on_progress(done, len(tasks))
    failures: dict[str, str] = {}
    if engine == "kernel":
        jobs, executor = 1, None  # one testbed per machine: its namespaces and addresses are fixed
    if any(python_schedulers_of(t.config) for t in todo):
        jobs, executor = 1, None  # Python scheduler classes live in this process only
    if executor is None and (jobs <= 1 or len(todo) <= 1):
        for t in todo:
            # the simulator off the main thread: the core holds it for a whole run, where Ctrl-C
            # cannot land; the kernel engine in it (Python waiting on processes: interruptible,
            # and its teardown must run)
            err = (_execute(t, str(out), engine, version) if engine == "kernel"
                   else call_interruptibly(_execute, t, str(out), engine, version))
            if err:
                failures[t.run_id] = err
            done += 1
            if on_progress:
                on_progress(done, len(tasks))
        return failures
    own = executor is None
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn"), initializer=worker_init,
                               initargs=(os.getpid(),)) if own else executor
    pending: dict = {}
    try:
        with quiet_spawn():  # workers start with SIGINT ignored: Ctrl-C is handled here
            pending = {pool.submit(_execute, t, str(out), engine, version): t for t in todo}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for f in finished:
                t = pending.pop(f)
                exc = f.exception()
                err = f"{type(exc).__name__}: {exc}" if exc is not None else f.result()
                if err:
                    failures[t.run_id] = err
                done += 1
                if on_progress:
                    on_progress(done, len(tasks))
    except BaseException:
        if own:
            kill_workers(pool)
        else:
            for f in pending:
                f.cancel()
        raise
    if own:
        pool.shutdown()
    return failures


def _execute(task: Task, out: str, engine: str, version: str) -> str | None:
    """Run one task and store it; returns an error message instead of raising (so one bad run
    does not take the pool down)."""
    started = time.time()
    try:
        tables = engines.run_chained(task.config, list(task.chain), engine, run_one=engines.run_config) if task.chain else engines.run_config(task.config, engine)
    except engines.EngineError as e:
        return str(e)
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
        "scenario_hash": store.config_hash(task.config),
        "schema_version": store.SCHEMA_VERSION,
        "started_unix_s": started,
        "wall_time_s": time.time() - started,
        "engine_stats": engine_stats,
    }
    try:
        store.write_run(Path(out), task.run_id, tables, params=task.params, meta=meta,
                        scenario_toml=task.scenario_toml, config=task.config)
    except OSError as e:  # disk full, permissions: say where, not a traceback
        return f"cannot store the run in {out}: {e.strerror or e}"
    return None


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


def code_version() -> str:
    """The package version, plus the git commit (and "-dirty") when run from a checkout."""
    from mpsched._core import core_version

    version = core_version()
    here = Path(__file__).resolve().parent
    try:
        rev = subprocess.run(["git", "-C", str(here), "describe", "--always", "--dirty", "--abbrev=12"],
                             capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return version
    return f"{version}+git.{rev.stdout.strip()}" if rev.returncode == 0 and rev.stdout.strip() else version


