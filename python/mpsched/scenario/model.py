"""The scenario: pydantic models of what a user writes in a TOML file, and their loading.

A scenario describes paths (one link each way) between two hosts, or a `[topology]` of many
hosts (`mpsched.scenario.topology`), cross traffic, the MPTCP (or TCP) connection settings, the
workload, what to record, the duration and the seed. Values keep the human form the user wrote
("150Mbit", "200ms", "64KiB"); they are checked here (value types in `mpsched.scenario.fields`) and
converted to the core's base units by `mpsched.scenario.normalize`. Fields marked *sweepable* accept a
list, and `Scenario.expand()` turns the scenario into one concrete scenario per combination
(`mpsched.scenario.sweep`).

This module holds the whole `Scenario` (the checks that span its tables: names that refer to a
path or connection, paths versus a topology), its loading from TOML and the error messages; the
model of each table is in its own module (`paths`, `connection`, `workload`, `topology`,
`record`, the `[design]` in `sweep`), all re-exported by `mpsched.scenario`, the one place to
import them from.

Validation happens once, at the boundary: any problem raises `ScenarioError`, one message naming
the field path (``paths[1].rate``) and what is allowed.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, Field, ValidationError
from pydantic import model_validator

from mpsched.scenario.connection import ConnectionSpec
from mpsched.scenario.fields import PositiveTime, ScenarioError, Seed, Slug, _FieldError, _Model
from mpsched.scenario.host import HostDelaySpec
from mpsched.scenario.paths import CrossTrafficSpec, LinkOverride, PathEventSpec, PathSpec, RateStepSpec
from mpsched.scenario.record import RecordSpec
from mpsched.scenario.sweep import DesignSpec, check_design, expand
from mpsched.scenario.topology import TopologySpec
from mpsched.scenario.workload import DATACENTER_KINDS, WorkloadSpec

__all__ = [
    "Scenario",
    "PathSpec",
    "LinkOverride",
    "ConnectionSpec",
    "WorkloadSpec",
    "CrossTrafficSpec",
    "PathEventSpec",
    "RecordSpec",
    "RateStepSpec",
    "DesignSpec",
    "TopologySpec",
    "ScenarioError",
    "load_scenario",
    "loads_scenario",
]


def _one_or_many(v: Any) -> Any:
    """`[connection]` (one table) and `[[connection]]` (an array of tables) both work."""
    return [v] if isinstance(v, dict) else v


class Scenario(_Model):
    """One scenario; lists in sweepable fields make it a template for many runs.

    Sweepable fields: `seed`, `duration`; per path (and per direction) `rate`, `rtt`, `delay`,
    `jitter`, `jitter_period`, `queue`, `loss` (a probability), `trace_period`; per connection
    `scheduler`, `cc`, `rcv_buf`, `snd_buf`, `stale_loss_cnt`; per workload `size`, `repeat`,
    `interval`, `mean_gap`, `gap`, `rate`, `rate_hz`, `deadline`; per cross-traffic source `rate`;
    per path event `kind` (`event.kind`), `duration`, `extra_delay`. With a `[topology]` instead of
    paths: its `k`, rates, delays, `queue`, `oversubscription`, `pairs`, `interfaces`; per
    connection also `protocol` and `subflows`; per workload `fraction`.
    """

    name: Slug = "scenario"
    description: str = ""
    seed: Seed = 1
    duration: PositiveTime
    paths: list[PathSpec] = Field(default_factory=list)
    topology: TopologySpec | None = None
    connection: Annotated[list[ConnectionSpec], BeforeValidator(_one_or_many)] = Field(
        default_factory=lambda: [ConnectionSpec()]
    )
    workload: Annotated[list[WorkloadSpec], BeforeValidator(_one_or_many)] = Field(min_length=1)
    cross_traffic: list[CrossTrafficSpec] = Field(default_factory=list)
    path_events: list[PathEventSpec] = Field(default_factory=list)
    record: RecordSpec = Field(default_factory=RecordSpec)
    host_delay: HostDelaySpec | None = None
    design: DesignSpec | None = None

    @model_validator(mode="after")
    def _design_fields(self) -> Scenario:
        if self.design is not None:
            check_design(self)  # raises _FieldError naming design.ranges.<label>
        return self

    @model_validator(mode="after")
    def _paths_or_topology(self) -> Scenario:
        if self.topology is None:
            if not self.paths:
                raise _FieldError("paths", "this field is required: give [[paths]] between two hosts, or a "
                                  "[topology] of many hosts")
            for i, c in enumerate(self.connection):
                for f in ("subflows", "path_choice"):
                    if getattr(c, f) is not None:
                        raise _FieldError(f"connection[{i}].{f}", "subflow count and path choice belong to a "
                                          "[topology]; between two hosts a connection opens one subflow per path")
            for i, w in enumerate(self.workload):
                if w.kind in DATACENTER_KINDS or w.pairs is not None:
                    field = "kind" if w.kind in DATACENTER_KINDS else "pairs"
                    raise _FieldError(f"workload[{i}].{field}", f"{w.kind} traffic moves data between the hosts of "
                                      "a [topology]; this scenario has two hosts ([[paths]])")
            return self
        if self.paths:
            raise _FieldError("topology", "give either [[paths]] (two hosts) or a [topology] (many hosts), not both")
        for f in ("cross_traffic", "path_events"):
            if getattr(self, f):
                raise _FieldError(f, "not available on a [topology] yet (it names a path of a two-host scenario)")
        for i, c in enumerate(self.connection):
            for f in ("paths", "backup"):
                if getattr(c, f):
                    raise _FieldError(f"connection[{i}].{f}", "on a [topology] the paths of a flow come from "
                                      "its hosts; choose them with subflows and path_choice (\"ecmp\" or \"core\")")
        fattree = self.topology.kind == "fattree"
        for i, w in enumerate(self.workload):
            if fattree and w.kind not in DATACENTER_KINDS:
                raise _FieldError(f"workload[{i}].kind", f"a fattree carries {', '.join(DATACENTER_KINDS)} "
                                  f"workloads, got {w.kind!r}")
            if not fattree and w.kind != "bulk":
                raise _FieldError(f"workload[{i}].kind", f"a dumbbell carries bulk workloads (pairs sending "
                                  f"without end), got {w.kind!r}")
            if w.direction != "download":
                raise _FieldError(f"workload[{i}].direction", "on a [topology] data goes from each flow's "
                                  "sender to its receiver; choose the hosts instead")
        return self

    @model_validator(mode="after")
    def _references(self) -> Scenario:
        def unique(items, what):
            seen = set()
            for i, it in enumerate(items):
                if it.name in seen:
                    raise _FieldError(f"{what}[{i}].name", f"duplicate name {it.name!r}")
                seen.add(it.name)

        unique(self.paths, "paths")
        unique(self.connection, "connection")
        paths = [p.name for p in self.paths]
        conns = [c.name for c in self.connection]

        def known(name, field, allowed, what):
            if name not in allowed:
                raise _FieldError(field, f"unknown {what} {name!r}; defined: {', '.join(allowed)}")

        for i, c in enumerate(self.connection):
            for j, p in enumerate(c.paths or []):
                known(p, f"connection[{i}].paths[{j}]", paths, "path")
            if c.paths is not None and not c.paths:
                raise _FieldError(f"connection[{i}].paths", "a connection needs at least one path")
            if c.paths is not None and len(set(c.paths)) != len(c.paths):
                raise _FieldError(f"connection[{i}].paths", "a path appears twice; a connection opens one subflow per path")
            for j, p in enumerate(c.backup):
                known(p, f"connection[{i}].backup[{j}]", c.paths or paths, "path of this connection")
        for i, w in enumerate(self.workload):
            if w.connection is not None:
                known(w.connection, f"workload[{i}].connection", conns, "connection")
        for i, x in enumerate(self.cross_traffic):
            known(x.path, f"cross_traffic[{i}].path", paths, "path")
        for i, e in enumerate(self.path_events):
            known(e.path, f"path_events[{i}].path", paths, "path")
        return self

    # --- conveniences (implemented in other modules; kept here so users find them) ---

    def expand(self) -> list[Scenario]:
        """One concrete scenario per combination of the swept fields (see `mpsched.scenario.sweep`)."""
        return [r.scenario for r in expand(self)]

    def to_toml(self) -> str:
        """The scenario as TOML text (loads back into an equal scenario)."""
        import tomli_w

        return tomli_w.dumps(self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        """The scenario as plain data, without unset optional fields (TOML has no null)."""
        data = self.model_dump(mode="python", exclude_none=True)
        if self.topology is not None and not self.paths:
            data.pop("paths", None)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, base_dir: str | Path = ".", source: str | None = None) -> Scenario:
        """Validate plain data (e.g. parsed TOML); raises `ScenarioError`."""
        try:
            return cls.model_validate(data, context={"base_dir": str(base_dir)})
        except ValidationError as e:
            raise _to_scenario_error(e, source) from None

    @classmethod
    def load(cls, path: str | Path) -> Scenario:
        """Read and validate a TOML scenario file; raises `ScenarioError`."""
        return load_scenario(path)


def loads_scenario(text: str, *, base_dir: str | Path = ".", source: str | None = None, name: str | None = None) -> Scenario:
    """Parse and validate TOML text; raises `ScenarioError`."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError("", f"TOML syntax error: {e}", source) from None
    except RecursionError:
        raise ScenarioError("", "TOML nested too deeply to read", source) from None
    except ValueError as e:  # e.g. an integer of more than 4300 digits
        raise ScenarioError("", f"TOML value not readable: {e}", source) from None
    if name is not None and "name" not in data:
        data["name"] = name
    try:
        return Scenario.from_dict(data, base_dir=base_dir, source=source)
    except RecursionError:
        raise ScenarioError("", "a value is nested too deeply", source) from None


def load_scenario(path: str | Path) -> Scenario:
    """Read a TOML scenario file (relative trace paths resolve against its folder)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")  # an editor's byte-order mark is not TOML (tomllib refuses it)
    except FileNotFoundError:
        raise ScenarioError("", "scenario file not found", str(p)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ScenarioError("", f"cannot read the scenario file: {e}", str(p)) from None
    return loads_scenario(text, base_dir=p.parent, source=str(p), name=p.stem)


def _format_loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.startswith("["):
            out += part
        else:
            out += f".{part}" if out else part
    return out


def _to_scenario_error(e: ValidationError, source: str | None) -> ScenarioError:
    """Turn pydantic's errors into one error listing every problem (field and message), the
    first one as `field` / `message`."""
    problems = [_one_problem(e, err) for err in e.errors()]
    seen: list[tuple[str, str]] = []
    for p in problems:  # a union type may report the same problem twice
        if p not in seen:
            seen.append(p)
    (field, msg), *more = seen
    return ScenarioError(field, msg, source, more)


def _one_problem(e: ValidationError, first: dict) -> tuple[str, str]:
    loc = tuple(first["loc"])
    err = (first.get("ctx") or {}).get("error")
    if isinstance(err, _FieldError):
        field = _format_loc(loc)
        sub = err.field
        field = (field + ("" if sub.startswith("[") or not field else ".") + sub) if field else sub
        msg = str(err)
    else:
        field = _format_loc(loc)
        msg = first["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        if first["type"] == "extra_forbidden":
            msg = f"unknown field {loc[-1]!r}" + _allowed_fields_hint(e, loc)
        elif first["type"] == "missing":
            msg = "this field is required"
        elif first["type"] == "literal_error":
            msg = f"{msg}, got {first['input']!r}"
    return field, msg


def _allowed_fields_hint(e: ValidationError, loc: tuple) -> str:
    """List the fields the model at `loc[:-1]` accepts."""
    model: Any = Scenario
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        f = getattr(model, "model_fields", {}).get(part)
        if f is None:
            return ""
        ann = f.annotation
        for _ in range(3):  # unwrap list[...] / Optional / Annotated
            args = getattr(ann, "__args__", None)
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                break
            if not args:
                break
            ann = next((a for a in args if isinstance(a, type) and issubclass(a, BaseModel)), args[0])
        if not (isinstance(ann, type) and issubclass(ann, BaseModel)):
            return ""
        model = ann
    return "; allowed: " + ", ".join(model.model_fields)
