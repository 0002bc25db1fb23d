"""Sweeps: a scenario whose sweepable fields hold lists becomes one run per combination.

Two ways to vary a field, which combine:

* **Lists** (a grid): the runs are the Cartesian product of the lists, in the order the fields
  appear in the scenario, with `seed` varying fastest so the seeds of one setting sit together.
* **A space-filling design** (`[design]`, scipy.stats.qmc Sobol / Latin hypercube / Halton, or
  WSP): `samples` points drawn in the given ranges of continuous fields; every point runs for
  every combination of the lists (a `seed` list replicates every point).

Each run records its varied values under a label that becomes a column of every result table:
list sweeps by field (`scheduler`, `size`, `seed`, `lte.rate`) with the value as written, design
fields with their unit in base units (`lte.rate_bps`, `wlan.rtt_ns`, `rcv_buf_bytes`).
"""

from __future__ import annotations

import functools
import itertools
import math
import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Iterator, Literal

import numpy as np
from pydantic import BaseModel, BeforeValidator, Field

from mpsched.scenario.fields import _count, _FieldError, _Model, _seed, _Sweepable
from mpsched.scenario.paths import concrete_event
from mpsched.scenario.units import parse_fraction, parse_queue, parse_rate_bps, parse_size_bytes, parse_time_ns

if TYPE_CHECKING:
    from mpsched.scenario.model import Scenario

__all__ = ["DesignSpec", "Axis", "RunSpec", "axes", "expand", "iter_expand", "check_design", "design_points", "sweepable_fields"]


class DesignSpec(_Model):
    """A space-filling design over continuous fields (scipy.stats.qmc): `samples` points drawn
    in `ranges` (field label -> [low, high], labels as in result columns: "lte.rate",
    "wlan.rtt", "rcv_buf", ...), each run at one point. `log` lists the labels drawn on a log
    scale. Combines with list sweeps: every point runs for every combination of the lists."""

    kind: Literal["sobol", "lhs", "halton", "random", "wsp"] = "sobol"
    samples: Annotated[Any, BeforeValidator(_count)]
    seed: Annotated[Any, BeforeValidator(_seed)] = 0
    ranges: dict[str, list[Any]] = Field(min_length=1)
    log: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class Axis:
    """One swept field: where it is in the scenario, its column label, and its values."""

    path: tuple[str | int, ...]
    label: str
    values: tuple[Any, ...]


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: its position, the varied values by label, and the concrete scenario."""

    index: int
    params: dict[str, Any]
    scenario: Scenario


def sweep_kind(info: Any) -> str | None:
    """The sweep kind of a field ("rate", "time", ...), None when it does not sweep (also
    looks inside `Optional[...]`)."""
    for m in info.metadata:
        if isinstance(m, _Sweepable):
            return m.kind
    for arg in typing.get_args(info.annotation):
        for m in getattr(arg, "__metadata__", ()):
            if isinstance(m, _Sweepable):
                return m.kind
    return None


@functools.lru_cache(maxsize=None)
def _field_kinds(cls: type[BaseModel]) -> tuple[tuple[str, str | None], ...]:
    """(field name, sweep kind) of a model class, worked out once per class (a study walks
    every run's scenario)."""
    return tuple((name, sweep_kind(info)) for name, info in cls.model_fields.items())


def _walk(model: BaseModel, prefix: tuple) -> list[tuple[tuple, str, Any]]:
    """(path, kind, value) of every sweepable field of `model` and the models inside it."""
    found = []
    for name, kind in _field_kinds(type(model)):
        value = getattr(model, name)
        here = prefix + (name,)
        if kind is not None:
            found.append((here, kind, value))
        elif isinstance(value, BaseModel):
            found.extend(_walk(value, here))
        elif isinstance(value, list) and value and isinstance(value[0], BaseModel):
            for i, item in enumerate(value):
                found.extend(_walk(item, here + (i,)))
    return found


def _label(path: tuple, scenario: Scenario, short: bool) -> str:
    """`seed`, `scheduler`, `size` (short form), or `lte.rate`, `main.scheduler` (named form)."""
    if len(path) == 1:
        return str(path[0])
    if isinstance(getattr(scenario, str(path[0])), BaseModel):  # a single table: [topology] k -> `k`
        return ".".join(str(x) for x in (path[1:] if short else path))
    group, index, *rest = path
    owner = getattr(scenario, str(group))[index]
    tail = [str(r) for r in rest]
    if group == "cross_traffic":
        return ".".join([f"cross_traffic{index}"] + tail)
    if group == "path_events":  # `event.kind` (`event1.kind` when several are swept)
        return ".".join([f"event{index}" if not short else "event"] + tail)
    named = ".".join([getattr(owner, "name", None) or f"{group}{index}"] + tail)
    if group == "paths" or not short:
        return named
    return ".".join(tail)


def _labels(paths: list[tuple], scenario: Scenario) -> list[str]:
    """Short labels where unambiguous, named ones where not, full paths as the last resort."""
    labels = [_label(p, scenario, short=True) for p in paths]
    if len(set(labels)) != len(labels):
        dup = {lab for lab in labels if labels.count(lab) > 1}
        labels = [_label(p, scenario, short=False) if lab in dup else lab for p, lab in zip(paths, labels)]
    if len(set(labels)) != len(labels):
        labels = [".".join(str(x) for x in p) for p in paths]
    return labels


def sweepable_fields(scenario: Scenario) -> dict[str, tuple[tuple, str]]:
    """label -> (path, kind) of every sweepable field, set or not."""
    found = _walk(scenario, ())
    return {lab: (p, k) for lab, (p, k, _v) in zip(_labels([f[0] for f in found], scenario), found)}


def axes(scenario: Scenario) -> list[Axis]:
    """The list-swept fields of `scenario`, seed last."""
    found = [(p, v) for p, _k, v in _walk(scenario, ()) if isinstance(v, list)]
    found.sort(key=lambda f: f[0] == ("seed",))
    labels = _labels([p for p, _ in found], scenario)
    return [Axis(p, lab, tuple(v)) for (p, v), lab in zip(found, labels)]


# --- space-filling designs -----------------------------------------------------------------------

_PARSE = {"rate": parse_rate_bps, "time": parse_time_ns, "size": parse_size_bytes, "fraction": parse_fraction,
          "count": lambda v: v if isinstance(v, int) and not isinstance(v, bool) else _bad_count(v),
          "queue": lambda v: _buffering_ns(v)}
_UNIT = {"rate": "_bps", "time": "_ns", "size": "_bytes", "fraction": "", "count": "", "queue": "_ns"}


def _bad_count(v: Any) -> int:
    raise ValueError(f"expected a whole number, got {v!r}")


def _buffering_ns(v: Any) -> int:
    """A design draws a queue as buffering time at the link's rate (Paasch et al.'s sweeps give
    buffers in ms); bytes, packets or BDP multiples do not scale with the drawn rate."""
    q = parse_queue(v)
    if q.time_ns is None:
        raise ValueError(f"a queue range is drawn as buffering time, e.g. [\"0ms\", \"100ms\"]; got {v!r}")
    return q.time_ns


def _as_scenario_value(kind: str, x: float) -> Any:
    """A drawn value, written the way a user would (exact in base units)."""
    if kind == "rate":
        return f"{round(x)}bit"
    if kind in ("time", "queue"):
        return f"{round(x)}ns"
    if kind == "size":
        return f"{round(x)}B"
    if kind == "count":
        return round(x)
    return float(x)


def check_design(scenario: Scenario) -> None:
    """Raise `_FieldError` unless every range names a continuous sweepable field that is not
    also a list, with low < high (and low > 0 on a log scale)."""
    d = scenario.design
    assert d is not None
    fields = sweepable_fields(scenario)
    for label, bounds in d.ranges.items():
        where = f"design.ranges.{label}"
        if label not in fields or fields[label][1] not in _PARSE:
            allowed = ", ".join(lab for lab, (_p, k) in fields.items() if k in _PARSE)
            raise _FieldError(where, f"not a continuous sweepable field; allowed: {allowed}")
        path, kind = fields[label]
        if isinstance(_get(scenario, path), list):
            raise _FieldError(where, "this field is already swept by a list; vary it one way only")
        if len(bounds) != 2:
            raise _FieldError(where, f"expected [low, high], got {bounds!r}")
        try:
            lo, hi = (_PARSE[kind](b) for b in bounds)
        except ValueError as e:
            raise _FieldError(where, str(e)) from None
        if not lo < hi:
            raise _FieldError(where, f"low must be below high, got {bounds!r}")
        if label in d.log and lo <= 0:
            raise _FieldError(where, "a log-scale range must start above zero")
    for i, label in enumerate(d.log):
        if label not in d.ranges:
            raise _FieldError(f"design.log[{i}]", f"{label!r} has no range in design.ranges")


def design_points(scenario: Scenario) -> list[list[tuple[tuple, Any, str, Any]]]:
    """The design's points; each a list of (field path, scenario value, column, column value)."""
    d = scenario.design
    if d is None:
        return [[]]
    fields = sweepable_fields(scenario)
    labels = list(d.ranges)
    n, dim = int(d.samples), len(labels)
    unit = unit_design(d.kind, n, dim, int(d.seed))
    points = []
    for row in unit:
        point = []
        for label, u in zip(labels, row):
            path, kind = fields[label]
            lo, hi = (float(_PARSE[kind](b)) for b in d.ranges[label])
            x = math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo))) if label in d.log else lo + u * (hi - lo)
            value = _as_scenario_value(kind, x)
            point.append((path, value, label + _UNIT[kind], _PARSE[kind](value)))
        points.append(point)
    return points


def unit_design(kind: str, n: int, dim: int, seed: int) -> np.ndarray:
    """`n` points of a design in the unit cube [0, 1)^dim (`kind`: see `DesignSpec`).

    scipy.stats takes about a second to import, longer than planning hundreds of runs, and a
    design's points depend only on (kind, n, dim, seed) and the scipy version: they are drawn
    once and kept in the cache (``$MPSCHED_CACHE_DIR``, else ``~/.cache/mpsched``)."""
    from mpsched.scenario.designs import cached, draw

    return cached(f"{kind}|{n}|{dim}|{seed}", lambda: draw(kind, n, dim, seed))


# --- expansion -----------------------------------------------------------------------------------


def _get(model: Any, path: tuple) -> Any:
    for key in path:
        model = model[key] if isinstance(key, int) else getattr(model, key)
    return model


def _set(data: Any, path: tuple, value: Any) -> None:
    for key in path[:-1]:
        data = data[key]
    data[path[-1]] = value


def expand(scenario: Scenario) -> list[RunSpec]:
    """One `RunSpec` per combination of the list values and design points (a scenario with
    neither gives one)."""
    return list(iter_expand(scenario))


def iter_expand(scenario: Scenario, start: int = 0) -> Iterator[RunSpec]:
    """`expand`, one run at a time (a study of many runs never holds them all), from run
    `start` on (the runs before it are not built)."""
    ax = axes(scenario)
    grid, seeds = [a for a in ax if a.path != ("seed",)], [a for a in ax if a.path == ("seed",)]
    points = design_points(scenario)
    base = scenario.model_dump(mode="python")
    base["design"] = None
    combos = itertools.product(*(a.values for a in grid), range(len(points)), *(a.values for a in seeds))
    for index, combo in enumerate(itertools.islice(combos, start, None), start):
        values = list(combo)
        point = points[values.pop(len(grid))]
        data = _deep_copy(base)
        params: dict[str, Any] = {}
        for a, v in zip([*grid, *seeds], values):
            _set(data, a.path, v)
            params[a.label] = v
        for path, value, column, column_value in point:
            _set(data, path, value)
            params[column] = column_value
        data["path_events"] = [concrete_event(e) for e in data.get("path_events") or []]
        concrete = type(scenario).model_validate(data)
        params.setdefault("seed", concrete.seed)
        if "seed" in params:  # keep the seed last, as in the grid order
            params["seed"] = params.pop("seed")
        yield RunSpec(index, params, concrete)


def _deep_copy(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _deep_copy(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_deep_copy(v) for v in x]
    return x
