"""The two engines behind one function: "sim" (the Rust core) and "kernel" (the Linux testbed).

Both take one normalized run configuration (`mpsched.normalize.to_config`) and return the same
record tables: table name -> column name -> list of values.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["ENGINES", "EngineError", "EngineUnavailable", "check_engine", "run_config"]

ENGINES = ("sim", "kernel")

Tables = dict[str, dict[str, list]]


class EngineError(RuntimeError):
    """A run the engine could not complete (the message says why)."""


class EngineUnavailable(EngineError):
    """The requested engine is not present in this installation."""


def check_engine(engine: str) -> None:
    """Raise `EngineUnavailable` with a clear message unless `engine` can run here."""
    if engine not in ENGINES:
        raise EngineUnavailable(f"unknown engine {engine!r}; available: {', '.join(ENGINES)}")
    if engine == "sim":
        from mpsched import _core

        if not hasattr(_core, "run_json"):
            raise EngineUnavailable(
                "the compiled simulator core in this installation has no run_json() yet; "
                "update the checkout and rebuild it with `make setup`"
            )
    else:
        try:
            from mpsched.testbed import preflight
        except ImportError as e:
            raise EngineUnavailable(f"the kernel testbed engine is not available: {e}") from None
        preflight()  # raises an EngineUnavailable naming what the machine lacks


def run_config(config: dict[str, Any], engine: str = "sim") -> Tables:
    """Run one normalized configuration on `engine` and return its record tables."""
    check_engine(engine)
    if engine == "sim":
        from mpsched import _core

        try:
            tables = _core.run_json(json.dumps(config))
        except ValueError as e:  # the core refused the configuration
            raise EngineError(f"the simulator refused the configuration: {e}") from None
    else:
        from mpsched.testbed import run_kernel

        tables = run_kernel(config)
    if not isinstance(tables, dict):
        raise EngineError(f"engine {engine!r} returned {type(tables).__name__}, expected a dict of tables")
    return tables
