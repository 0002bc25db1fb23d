"""Planning a study: expand the scenario's sweep and normalize every run into a `Task` (all
checked before the first run starts, so a bad sweep fails at once, not an hour in).

`plan` returns the tasks as a list (a few kilobytes each: the normalized configuration).
`plan_stream` checks every run the same way but keeps only their ids (a `StudyPlan`), and makes
the tasks again, lazily, as the study hands them to workers: the memory of a study's client
stays flat however many runs it has. The first `HEAD_TASKS` tasks of the check are kept for the
first pass over them, so a study of a few hundred runs is not normalized twice (planning is
about 2 ms of CPU per run, as much as running a short one).
"""

from __future__ import annotations

import inspect
import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

from mpsched import engines
from mpsched.engines import python_schedulers_of
from mpsched.scenario import Scenario, ScenarioError
from mpsched.scenario import network
from mpsched.scenario.budget import check_config_budget, check_scenario_budget
from mpsched.scenario.normalize import normalize
from mpsched.scenario.sweep import axes, iter_expand
from mpsched.study import store
from mpsched.study.index import RunIds

#: tasks kept from the check for the study's first pass (a few KB each: a bounded ~9 MB)
HEAD_TASKS = 512

__all__ = ["HEAD_TASKS", "StudyPlan", "Task", "check_topology_engine", "describe", "plan", "plan_stream"]


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
    #: SHA-256 of the configuration's canonical JSON (`store.config_hash`), worked out once
    scenario_hash: str = ""


def plan(scenario: Scenario, engine: str = "sim", *, force: bool = False) -> list[Task]:
    """Expand and normalize every run of `scenario` and check each as the engine will (raises
    `ScenarioError` on the first bad one): what `run` would refuse, `check` refuses. Work and
    memory above `mpsched.scenario.budget.LIMITS` are refused unless `force`."""
    check_topology_engine(scenario, engine)
    check_scenario_budget(scenario, force)
    return list(_tasks(scenario, engine, force, check=True))


@dataclass
class StudyPlan:
    """A study checked run by run, holding only each run's id (in run order), the Python
    scheduler classes its runs use and, until they are first handed out, its first
    `HEAD_TASKS` tasks; `tasks()` makes the others again, one at a time. Iterating it gives
    the tasks (it stands where a list of tasks does)."""

    run_ids: RunIds
    schedulers: dict[str, type] = field(default_factory=dict)
    #: `make(start)`: the tasks from run `start` on, in run order
    make: Callable[[int], Iterator[Task]] = field(default=lambda start: iter(()), repr=False)
    head: list[Task] = field(default_factory=list, repr=False)

    def __len__(self) -> int:
        return len(self.run_ids)

    def __iter__(self) -> Iterator[Task]:
        return self.tasks()

    def tasks(self, skip: Iterable[str] = frozenset(), done: Sequence[bool] | None = None) -> Iterator[Task]:
        """The tasks in run order, those whose run id is in `skip` left out, and those whose
        position is true in `done` (one flag per run of `run_ids`: what a resumed study has)."""
        skip = skip if isinstance(skip, (set, frozenset, dict)) else set(skip)
        head, self.head = self.head, []  # handed out once, then dropped: made again if asked again
        rest = self.make(len(head))
        return (t for i, t in enumerate(itertools.chain(head, rest))
                if t.run_id not in skip and not (done is not None and done[i]))

    @classmethod
    def of(cls, tasks: Iterable[Task]) -> "StudyPlan":
        """A plan of tasks already made (a list from `plan`)."""
        tasks = list(tasks)
        schedulers: dict[str, type] = {}
        for t in tasks:
            schedulers.update(python_schedulers_of(t.config))
        return cls(RunIds(t.run_id for t in tasks), schedulers, lambda start: iter(tasks[start:]))


def plan_stream(scenario: Scenario, engine: str = "sim", *, force: bool = False) -> StudyPlan:
    """`plan`, keeping only the run ids: every run is expanded, normalized and checked here (the
    same `ScenarioError` on the first bad one), and made again when the study runs it."""
    check_topology_engine(scenario, engine)
    check_scenario_budget(scenario, force)
    schedulers: dict[str, type] = {}
    head: list[Task] = []

    def ids() -> Iterator[str]:
        for task in _tasks(scenario, engine, force, check=True):
            schedulers.update(python_schedulers_of(task.config))
            if len(head) < HEAD_TASKS:
                head.append(task)
            yield task.run_id

    run_ids = RunIds(ids())  # one string column, not a Python string per run
    # checked above: made again without the engine's checks (the same code, the same runs)
    return StudyPlan(run_ids, schedulers, lambda start: _tasks(scenario, engine, force, check=False, start=start),
                     head)


def _tasks(scenario: Scenario, engine: str, force: bool, *, check: bool, start: int = 0) -> Iterator[Task]:
    """Each run of `scenario` from run `start` on as a `Task`, in run order, made one at a
    time (`check`: refuse a bad one with a `ScenarioError` naming the run)."""
    types = _param_types(scenario)
    single = _run_count(scenario) == 1
    for r in iter_expand(scenario, start):
        try:
            norm = normalize(r.scenario)
            config, chain = norm.config, norm.chain
            if check:
                if chain and engine != "sim":
                    raise ScenarioError("workload", f"back-to-back arrivals run on the simulator only, not on the {engine} engine")
                if python_schedulers_of(config) and engine != "sim":
                    raise ScenarioError("connection", f"Python schedulers run on the simulator only, not on the {engine} engine")
                check_config_budget(config, force)
                _engine_check(config, engine)
        except ScenarioError as e:
            if single:
                raise
            where = ", ".join(f"{k}={v}" for k, v in r.params.items())
            raise ScenarioError(e.field, f"{e.message} (in the run with {where})", e.source) from None
        params = {k: (str(v) if types.get(k) is str else v) for k, v in r.params.items()}
        custom = python_schedulers_of(config)
        digest = store.config_hash(config)
        run_id = store.run_id_for(params, config, engine, salt=_source_digest(custom), digest=digest)
        yield Task(r.index, run_id, params, config, r.scenario.to_toml(), tuple(chain), norm.columns or None, digest)


def _engine_check(config: dict[str, Any], engine: str) -> None:
    """The engine's own checks of the configuration (the core's validate(), the testbed's plan),
    as a ScenarioError."""
    if engine not in engines.ENGINES:
        return
    try:
        engines.check_config(config, engine)
    except engines.ConfigRefused as e:  # "connection 'main'.mss (transports[0].mss_bytes): must be ..."
        where, sep, message = str(e).partition(": ")
        raise ScenarioError(where if sep else "", message if sep else str(e)) from None
    except engines.EngineError as e:  # a Python scheduler failing when created
        raise ScenarioError("connection.scheduler", str(e)) from None


def check_topology_engine(scenario: Scenario, engine: str) -> None:
    """Refuse a topology the engine cannot emulate (before the engine's own checks of the
    machine, so the scenario's problem is the one reported); unknown engines are left to
    `mpsched.engines.check_engine`, which names the available ones."""
    if engine in engines.ENGINES:
        network.check_engine(scenario, engine)


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


def _run_count(scenario: Scenario) -> int:
    n = int(scenario.design.samples) if scenario.design is not None else 1
    for a in axes(scenario):
        n *= len(a.values)
    return n


def describe(scenario: Scenario) -> dict[str, Any]:
    """What a scenario expands to: the swept fields and the number of runs (for `mpsched check`)."""
    ax = axes(scenario)
    out: dict[str, Any] = {"runs": _run_count(scenario), "axes": {a.label: list(a.values) for a in ax}}
    if scenario.design is not None:
        d = scenario.design
        out["design"] = {"kind": d.kind, "samples": int(d.samples), "ranges": dict(d.ranges), "log": list(d.log)}
    return out
