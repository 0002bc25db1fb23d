"""mpsched: a laboratory for Multipath TCP packet schedulers."""

from mpsched._core import core_version

__version__ = core_version()
__all__ = ["__version__"]
