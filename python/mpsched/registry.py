"""What the compiled core offers: the scheduler registry and the congestion controls.

The Rust registry is canonical (`_core.schedulers_json()`); this module only reads it. When the
loaded core predates the registry export, names are not checked here and the core rejects an
unknown one at run time.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field

__all__ = ["SchedulerInfo", "schedulers", "check_scheduler", "check_scheduler_params", "CC_NAMES"]

#: Congestion controls the core accepts (`TransportConfig::cc` in crates/mpsched-sim/src/config.rs).
CC_NAMES = ("reno", "cubic", "lia", "olia", "balia")


@dataclass(frozen=True)
class SchedulerInfo:
    """One entry of the core's scheduler registry."""

    name: str
    summary: str = ""
    source: str = ""
    is_extension: bool = False
    default_params: dict = field(default_factory=dict)


@functools.lru_cache(maxsize=1)
def _load() -> tuple[SchedulerInfo, ...] | None:
    try:
        from mpsched import _core
    except ImportError:  # pragma: no cover - the package always ships a core
        return None
    if not hasattr(_core, "schedulers_json"):
        return None
    raw = json.loads(_core.schedulers_json())
    entries = raw.get("schedulers", raw) if isinstance(raw, dict) else raw
    if isinstance(raw, dict) and "max_param_int" in raw:  # the core's bounds are the ones checked
        global MAX_PARAM_INT, MAX_PARAM_NS
        MAX_PARAM_INT, MAX_PARAM_NS = int(raw["max_param_int"]), int(raw["max_param_ns"])
    out = []
    for e in entries:
        out.append(
            SchedulerInfo(
                name=str(e["name"]),
                summary=str(e.get("summary", "")),
                source=str(e.get("source", "")),
                is_extension=bool(e.get("is_extension", False)),
                default_params=dict(e.get("default_params") or {}),
            )
        )
    return tuple(sorted(out, key=lambda s: (s.is_extension, s.name)))


def schedulers() -> list[SchedulerInfo] | None:
    """The registry, schedulers first then extensions, each sorted by name; None when the
    loaded core does not export it."""
    reg = _load()
    return None if reg is None else list(reg)


def check_scheduler(name: str) -> None:
    """Raise ValueError naming the allowed values unless `name` is a registered scheduler,
    optionally followed by `+extension` wrappers (e.g. "minrtt+rp+bm")."""
    reg = _load()
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"expected a scheduler name, got {name!r}")
    if reg is None:
        return
    bases = [s.name for s in reg if not s.is_extension]
    exts = [s.name for s in reg if s.is_extension]
    base, *wrappers = name.split("+")
    if base not in bases:
        raise ValueError(f"unknown scheduler {base!r}; available: {', '.join(bases)} (or a Python class as \"package.module:Class\")")
    for w in wrappers:
        if w not in exts:
            allowed = ", ".join(exts) if exts else "none in this build"
            raise ValueError(f"unknown scheduler extension {w!r} in {name!r}; extensions: {allowed}")


def check_scheduler_params(name: str, params: dict) -> None:
    """Raise ValueError if `params` has a key none of the parts of `name` declares."""
    reg = _load()
    if reg is None or not params:
        return
    by_name = {s.name: s for s in reg}
    defaults: dict = {}
    for part in name.split("+"):
        if part in by_name:
            defaults.update(by_name[part].default_params)
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        hint = ", ".join(sorted(defaults)) if defaults else "none"
        raise ValueError(f"unknown parameter(s) {', '.join(unknown)} for scheduler {name!r}; allowed: {hint}")
    for key, value in params.items():
        want = _kind(defaults[key])
        if want is not None and _kind(value) != want and not (want == "number" and _kind(value) == "integer"):
            article = "an" if want[0] in "aeiou" else "a"
            raise ValueError(f"parameter {key} of scheduler {name!r} takes {article} {want} (default {defaults[key]!r}), got {value!r}")
        _check_range(name, key, value)


#: Bounds of numeric scheduler parameters, checked where they are parsed: the core keeps them in
#: u64 / f64 and multiplies them with segment sizes, windows and times (a factor of 2^62 would
#: wrap in a release build). Integers count segments, bytes, milli-units or factors (at most
#: 2^32 - 1), or nanoseconds (`*_ns`: at most 2^48 ns, 78 hours); numbers are finite and
#: non-negative (every default is). The core's registry refuses the same (its `check_bounds`)
#: and exports its bounds, which replace these once the registry is loaded.
MAX_PARAM_INT = 2**32 - 1
MAX_PARAM_NS = 2**48


def _check_range(name: str, key: str, value: object) -> None:
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"parameter {key} of scheduler {name!r} must be a finite number, got {value!r}")
    if value < 0:
        raise ValueError(f"parameter {key} of scheduler {name!r} must not be negative, got {value!r}")
    top = MAX_PARAM_NS if key.endswith("_ns") else MAX_PARAM_INT
    if value > top:
        raise ValueError(f"parameter {key} of scheduler {name!r} is at most {top:,}, got {value!r}")


def _kind(v: object) -> str | None:
    """The JSON kind of a parameter value; None for kinds not checked here."""
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    return None
