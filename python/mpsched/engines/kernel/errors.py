"""The error of a configuration the kernel testbed cannot emulate (below the plan and its
helpers, which all raise it)."""

from __future__ import annotations

from mpsched.engines.base import EngineError

__all__ = ["TestbedConfigError"]


class TestbedConfigError(EngineError, ValueError):
    """The configuration asks for something the kernel testbed cannot emulate."""

    __test__ = False  # not a pytest test class

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
