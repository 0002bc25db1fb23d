"""What both engines share: their names, the shape of their output, and their errors (here, below
both, so the kernel engine and the simulator import them without importing each other)."""

from __future__ import annotations

__all__ = ["ENGINES", "ConfigRefused", "EngineError", "EngineUnavailable", "Tables"]

ENGINES = ("sim", "kernel")

#: record tables: table name -> column name -> list of values
Tables = dict[str, dict[str, list]]


class EngineError(RuntimeError):
    """A run the engine could not complete (the message says why)."""


class EngineUnavailable(EngineError):
    """The requested engine is not present in this installation."""


class ConfigRefused(EngineError, ValueError):
    """The engine refuses the configuration itself (bad input, not a failed run): `field` is the
    configuration's field path, the message names the scenario's field too."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
