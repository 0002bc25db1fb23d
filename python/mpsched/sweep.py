"""Sweeps: a scenario whose sweepable fields hold lists becomes one run per combination.

The runs are the Cartesian product of the lists, in the order the fields appear in the scenario,
with `seed` varying fastest so the seeds of one setting sit together. Each run records the swept
values under a short label (`scheduler`, `size`, `seed`, `lte.rate`, ...) that becomes a column of
every result table.
"""

from __future__ import annotations

import itertools
import typing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from mpsched.scenario import SWEEP, Scenario

__all__ = ["Axis", "RunSpec", "axes", "expand"]


@dataclass(frozen=True)
class Axis:
    """One swept field: where it is in the scenario, its column label, and its values."""

    path: tuple[str | int, ...]
    label: str
    values: tuple[Any, ...]


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: its position, the swept values by label, and the concrete scenario."""

    index: int
    params: dict[str, Any]
    scenario: Scenario


def _is_sweep(info: Any) -> bool:
    """True when the field is marked sweepable (also inside `Optional[...]`)."""
    if any(m is SWEEP for m in info.metadata):
        return True
    for arg in typing.get_args(info.annotation):
        if any(m is SWEEP for m in getattr(arg, "__metadata__", ())):
            return True
    return False


def _find(model: BaseModel, prefix: tuple) -> list[tuple[tuple, Any]]:
    found = []
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        here = prefix + (name,)
        if _is_sweep(info) and isinstance(value, list):
            found.append((here, value))
        elif isinstance(value, BaseModel):
            found.extend(_find(value, here))
        elif isinstance(value, list) and value and isinstance(value[0], BaseModel):
            for i, item in enumerate(value):
                found.extend(_find(item, here + (i,)))
    return found


def _label(path: tuple, scenario: Scenario, short: bool) -> str:
    """`seed`, `scheduler`, `size` (short form), or `lte.rate`, `main.scheduler` (named form)."""
    if len(path) == 1:
        return str(path[0])
    group, index, *rest = path
    owner = getattr(scenario, str(group))[index]
    tail = [str(r) for r in rest]
    if group == "cross_traffic":
        return ".".join([f"cross_traffic{index}"] + tail)
    named = ".".join([getattr(owner, "name", None) or f"{group}{index}"] + tail)
    if group == "paths" or not short:
        return named
    return ".".join(tail)


def axes(scenario: Scenario) -> list[Axis]:
    """The swept fields of `scenario`, seed last."""
    found = _find(scenario, ())
    found.sort(key=lambda f: f[0] == ("seed",))
    labels = [_label(p, scenario, short=True) for p, _ in found]
    if len(set(labels)) != len(labels):
        dup = {lab for lab in labels if labels.count(lab) > 1}
        labels = [_label(p, scenario, short=False) if lab in dup else lab for (p, _), lab in zip(found, labels)]
    if len(set(labels)) != len(labels):  # still ambiguous (e.g. two workloads): use the full path
        labels = [".".join(str(x) for x in p) for p, _ in found]
    return [Axis(p, lab, tuple(v)) for (p, v), lab in zip(found, labels)]


def _set(data: Any, path: tuple, value: Any) -> None:
    for key in path[:-1]:
        data = data[key]
    data[path[-1]] = value


def expand(scenario: Scenario) -> list[RunSpec]:
    """One `RunSpec` per combination of the swept values (a scenario without lists gives one)."""
    ax = axes(scenario)
    base = scenario.model_dump(mode="python")
    runs = []
    for index, combo in enumerate(itertools.product(*(a.values for a in ax))):
        data = _deep_copy(base)
        for a, v in zip(ax, combo):
            _set(data, a.path, v)
        concrete = Scenario.model_validate(data)
        params = {a.label: v for a, v in zip(ax, combo)}
        params.setdefault("seed", concrete.seed)
        runs.append(RunSpec(index, params, concrete))
    return runs


def _deep_copy(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _deep_copy(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_deep_copy(v) for v in x]
    return x
