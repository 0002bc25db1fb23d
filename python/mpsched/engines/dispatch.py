"""One interface over the engines: a normalized run configuration in, record tables out."""

from __future__ import annotations

from typing import Any

from mpsched.engines import sim
from mpsched.engines.base import ENGINES, ConfigRefused, EngineError, EngineUnavailable, Tables
from mpsched.engines.refusal import scenario_words

__all__ = ["check_config", "check_engine", "run_config", "path_event_table"]


def check_config(config: dict[str, Any], engine: str = "sim") -> None:
    """Everything `engine` would refuse about `config` before running it, without running it and
    without the machine (the kernel's plan needs no root). Raises `ConfigRefused`."""
    if engine == "kernel":
        from mpsched.engines.kernel.plan import TestbedConfigError, make_plan

        try:
            make_plan(config)
        except TestbedConfigError as e:
            msg = str(e).partition(": ")[2] or str(e)
            raise ConfigRefused(e.field, f"{scenario_words(e.field, config)}: {msg} (on the kernel testbed)") from None
        return
    sim.check_config(config)


def check_engine(engine: str) -> None:
    """Raise `EngineUnavailable` with a clear message unless `engine` can run here."""
    if engine not in ENGINES:
        raise EngineUnavailable(f"unknown engine {engine!r}; available: {', '.join(ENGINES)}")
    if engine == "sim":
        sim.check()
    else:
        try:
            from mpsched.engines.kernel import preflight
        except ImportError as e:
            raise EngineUnavailable(f"the kernel testbed engine is not available: {e}") from None
        preflight()  # raises an EngineUnavailable naming what the machine lacks


def run_config(config: dict[str, Any], engine: str = "sim") -> Tables:
    """Run one normalized configuration on `engine` and return its record tables."""
    check_engine(engine)
    custom = sim.python_schedulers_of(config)
    if custom and engine != "sim":
        raise EngineError(f"Python schedulers ({', '.join(custom)}) run in the simulator only")
    if engine == "sim":
        tables = sim.run(config)
    else:
        from mpsched.engines.kernel import run_kernel  # needs root to run, not to import

        tables = run_kernel(config)
    if not isinstance(tables, dict):
        raise EngineError(f"engine {engine!r} returned {type(tables).__name__}, expected a dict of tables")
    tables.setdefault("path_events", path_event_table(config))
    return tables


def path_event_table(config: dict[str, Any]) -> dict[str, list]:
    """The `path_events` record table of a configuration: one row per event in force over an
    interval, what every engine played (the metrics of failover and failback measure from
    these times). Columns: `event` (its index), `kind` ("down", "blackhole", "loss_ramp",
    "rtt_spike", "rate_collapse"), `path` (name), `path_index`, `direction` ("both", "down",
    "up"), `at_ns` and `end_ns` (when it is undone; None: it lasts to the end of the run). A
    path going down and coming back in the original shape (``up`` false then true) is one
    "down" row."""
    names = [p.get("name", str(i)) for i, p in enumerate(config.get("paths") or [])]
    rows: list[tuple] = []
    open_down: dict[int, int] = {}
    for e in sorted(config.get("path_events") or [], key=lambda e: e["at_ns"]):
        path = int(e["path"])
        if "kind" in e:
            dur = e.get("duration_ns")
            rows.append((e["kind"], path, e.get("direction", "both"), e["at_ns"], None if dur is None else e["at_ns"] + dur))
        elif not e["up"]:
            if path not in open_down:
                open_down[path] = len(rows)
                rows.append(("down", path, "both", e["at_ns"], None))
        elif path in open_down:
            i = open_down.pop(path)
            rows[i] = (*rows[i][:4], e["at_ns"])
    return {"event": list(range(len(rows))), "kind": [r[0] for r in rows],
            "path": [names[r[1]] if r[1] < len(names) else str(r[1]) for r in rows],
            "path_index": [r[1] for r in rows], "direction": [r[2] for r in rows],
            "at_ns": [r[3] for r in rows], "end_ns": [r[4] for r in rows]}
