"""Running a scenario: expand the sweep, run each configuration on an engine, store the records.

Runs are independent, so they go to a local process pool (`jobs` workers, "spawn" start method so
no worker inherits a half-initialised thread pool from the parent). Every configuration is built
and checked before the first run starts, so a bad sweep fails at once, not an hour in.
"""

from __future__ import annotations

import inspect
import subprocess
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, Executor, ProcessPoolExecutor, wait
from contextlib import nullcontext
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Callable

from mpsched import engines, store
from mpsched.engines import python_schedulers_of
from mpsched.normalize import to_run
from mpsched.results import Results, load
from mpsched.scenario import Scenario, ScenarioError, load_scenario
from mpsched.sweep import axes, expand

__all__ = ["RunFailed", "Task", "check_topology_engine", "code_version", "describe", "plan", "run"]


class RunFailed(RuntimeError):
    """Some runs of a study failed; the others are stored. `failures` maps run id -> message."""

    def __init__(self, failures: dict[str, str], out: Path):
        self.failures = failures
        first_id, first = next(iter(failures.items()))
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        super().__init__(f"{len(failures)} run(s) failed; {first_id}: {first}{more}; completed runs are in {out}")


@dataclass(frozen=True)
class Task:
    """One run, ready to execute: everything a worker process needs, all picklable."""

    index: int
    run_id: str
    params: dict[str, Any]
    config: dict[str, Any]
    scenario_toml: str
    chain: tuple = ()
    #: columns added to record tables, by table: {"flows": {"flow_id": [...], "sender": [...]}};
    #: the first column is the key matched against the engine's table
    extra_columns: dict | None = None


def plan(scenario: Scenario, engine: str = "sim") -> list[Task]:
    """Expand and normalize every run of `scenario` (raises `ScenarioError` on the first bad one)."""
    check_topology_engine(scenario, engine)
    types = _param_types(scenario)
    tasks = []
    runs = expand(scenario)
    for r in runs:
        try:
            config, chain = to_run(r.scenario)
            if chain and engine != "sim":
                raise ScenarioError("workload", f"back-to-back arrivals run on the simulator only, not on the {engine} engine")
        except ScenarioError as e:
            if len(runs) == 1:
                raise
            where = ", ".join(f"{k}={v}" for k, v in r.params.items())
            raise ScenarioError(e.field, f"{e.message} (in the run with {where})", e.source) from None
        params = {k: (str(v) if types.get(k) is str else v) for k, v in r.params.items()}
        custom = python_schedulers_of(config)
        if custom and engine != "sim":
            raise ScenarioError("connection", f"Python schedulers run on the simulator only, not on the {engine} engine")
        run_id = store.run_id_for(params, config, engine, salt=_source_digest(custom))
        extra = None
        if r.scenario.topology is not None:
            from mpsched import datacenter

            extra = {"flows": datacenter.flow_columns(r.scenario), "links": datacenter.link_columns(config)}
        tasks.append(Task(r.index, run_id, params, config, r.scenario.to_toml(), tuple(chain), extra))
    return tasks


def check_topology_engine(scenario: Scenario, engine: str) -> None:
    """Refuse a `[topology]` on an engine other than the simulator (before the engine's own
    checks of the machine, so the scenario's problem is the one reported)."""
    if scenario.topology is not None and engine != "sim":
        raise ScenarioError("topology", f"a [topology] of many hosts runs on the simulator only; the {engine} "
                            "engine emulates two hosts joined by one link per path direction ([[paths]])")


def _source_digest(classes: dict[str, type]) -> str:
    """What identifies Python schedulers beyond their names: their source (so editing the class
    makes new runs), or their module and name when the source is not available."""
    parts = []
    for name, cls in sorted(classes.items()):
        try:
            parts.append(name + "\n" + inspect.getsource(cls))
        except (OSError, TypeError):
            parts.append(f"{name}\n{getattr(cls, '__module__', '')}")
    return "\n".join(parts)


def _param_types(scenario: Scenario) -> dict[str, type]:
    """A swept field whose values mix types (e.g. "1%" and 0.02) is stored as strings, so each
    result column has one type."""
    out = {}
    for a in axes(scenario):
        kinds = {type(v) for v in a.values}
        out[a.label] = kinds.pop() if len(kinds) == 1 else str
    return out


def run(
    scenario: Scenario | str | Path,
    out: str | Path | None = None,
    *,
    engine: str = "sim",
    jobs: int = 1,
    on_progress: Callable[[int, int], None] | None = None,
    progress: bool = False,
    executor: Executor | None = None,
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
    """
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    if engine in engines.ENGINES:
        check_topology_engine(scenario, engine)
    engines.check_engine(engine)
    tasks = plan(scenario, engine)
    if progress and on_progress is None:
        from mpsched.progress import run_progress

        with run_progress(len(tasks)) as update:
            return run(scenario, out, engine=engine, jobs=jobs, on_progress=update, executor=executor)
    if out is None:
        with tempfile.TemporaryDirectory(prefix="mpsched-") as tmp:
            res = _run_tasks(tasks, Path(tmp), engine, jobs, on_progress, executor)
            res.path = None
            return res
    return _run_tasks(tasks, Path(out), engine, jobs, on_progress, executor)


def _run_tasks(tasks: list[Task], out: Path, engine: str, jobs: int, on_progress,
               executor: Executor | None = None) -> Results:
    out.mkdir(parents=True, exist_ok=True)
    store.clean_stale_tmp(out)
    version = code_version()
    # a run stored by this code version is reused; one from another version is run again
    todo = [t for t in tasks if not (store.is_complete(out / t.run_id) and store.stored_version(out / t.run_id) == version)]
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
            err = _execute(t, str(out), engine, version)
            if err:
                failures[t.run_id] = err
            done += 1
            if on_progress:
                on_progress(done, len(tasks))
    else:
        own = executor is None
        pool_cm = ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) if own else nullcontext(executor)
        with pool_cm as pool:
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
    if failures:
        raise RunFailed(failures, out)
    return load(out, run_ids=[t.run_id for t in tasks])


def _execute(task: Task, out: str, engine: str, version: str) -> str | None:
    """Run one task and store it; returns an error message instead of raising (so one bad run
    does not take the pool down)."""
    started = time.time()
    try:
        tables = engines.run_chained(task.config, list(task.chain), engine) if task.chain else engines.run_config(task.config, engine)
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
    store.write_run(Path(out), task.run_id, tables, params=task.params, meta=meta,
                    scenario_toml=task.scenario_toml, config=task.config)
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
    import mpsched

    version = mpsched.__version__
    here = Path(__file__).resolve().parent
    try:
        rev = subprocess.run(["git", "-C", str(here), "describe", "--always", "--dirty", "--abbrev=12"],
                             capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return version
    return f"{version}+git.{rev.stdout.strip()}" if rev.returncode == 0 and rev.stdout.strip() else version


def describe(scenario: Scenario) -> dict[str, Any]:
    """What a scenario expands to: the swept fields and the number of runs (for `mpsched check`)."""
    ax = axes(scenario)
    n = int(scenario.design.samples) if scenario.design is not None else 1
    for a in ax:
        n *= len(a.values)
    out: dict[str, Any] = {"runs": n, "axes": {a.label: list(a.values) for a in ax}}
    if scenario.design is not None:
        d = scenario.design
        out["design"] = {"kind": d.kind, "samples": int(d.samples), "ranges": dict(d.ranges), "log": list(d.log)}
    return out

