"""The simulator engine: the Rust core (`mpsched._core`), with Python schedulers from `mpsched.sched`."""

from __future__ import annotations

import json
from typing import Any

from mpsched import _core
from mpsched.engines.base import EngineError, EngineUnavailable, Tables
from mpsched.sched import python_schedulers

__all__ = ["check", "python_schedulers_of", "run"]


def check() -> None:
    """Raise `EngineUnavailable` unless the compiled core can run configurations."""
    if not hasattr(_core, "run_json"):
        raise EngineUnavailable(
            "the compiled simulator core in this installation has no run_json() yet; "
            "update the checkout and rebuild it with `make setup`"
        )


def python_schedulers_of(config: dict[str, Any]) -> dict[str, type]:
    """The Python scheduler classes a configuration names ("py:..."), from `mpsched.sched`."""
    try:
        return python_schedulers([t["scheduler"] for t in config.get("transports", [])])
    except KeyError as e:
        raise EngineError(str(e.args[0])) from None


def run(config: dict[str, Any]) -> Tables:
    """Run one normalized configuration in the core and return its record tables."""
    custom = python_schedulers_of(config)
    try:
        return _core.run_json(json.dumps(config), custom) if custom else _core.run_json(json.dumps(config))
    except ValueError as e:  # the core refused the configuration (or a Python scheduler's action)
        raise EngineError(f"the simulator refused the configuration: {e}") from None
