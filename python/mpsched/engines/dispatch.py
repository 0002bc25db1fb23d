"""One interface over the engines: a normalized run configuration in, record tables out."""

from __future__ import annotations

from typing import Any

from mpsched.engines import sim
from mpsched.engines.base import ENGINES, EngineError, EngineUnavailable, Tables

__all__ = ["check_engine", "run_config"]


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
    return tables
