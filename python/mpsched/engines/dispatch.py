"""One interface over the engines: a normalized run configuration in, record tables out."""

from __future__ import annotations

from typing import Any

from mpsched.engines import sim
from mpsched.engines.base import ENGINES, ConfigRefused, EngineError, EngineUnavailable, Tables
from mpsched.engines.path_table import path_event_table
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
