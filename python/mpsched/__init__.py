"""mpsched: a laboratory for Multipath TCP packet schedulers.

    >>> import mpsched
    >>> s = mpsched.Scenario.load("scenarios/quick.toml")    # validated; lists sweep
    >>> res = mpsched.run(s, "results/quick", jobs=2)         # one run per combination
    >>> res.flows                                             # polars DataFrame, all runs
    >>> res.summary()                                         # FCT per scheduler x setting
    >>> mpsched.load("results/quick").plot("figures/")        # read back, draw
"""

from mpsched._core import core_version
from mpsched.engines import EngineError, EngineUnavailable
from mpsched.registry import schedulers
from mpsched.study import Results, RunFailed, load, run
from mpsched.scenario import (
    ConnectionSpec,
    CrossTrafficSpec,
    LinkOverride,
    PathEventSpec,
    PathSpec,
    RecordSpec,
    Scenario,
    ScenarioError,
    WorkloadSpec,
    load_scenario,
    loads_scenario,
)

__version__ = core_version()
__all__ = [
    "__version__",
    "ConnectionSpec",
    "CrossTrafficSpec",
    "EngineError",
    "EngineUnavailable",
    "LinkOverride",
    "PathEventSpec",
    "PathSpec",
    "RecordSpec",
    "Results",
    "RunFailed",
    "Scenario",
    "ScenarioError",
    "WorkloadSpec",
    "load",
    "load_scenario",
    "loads_scenario",
    "run",
    "schedulers",
]
