"""The two engines behind one function: "sim" (the Rust core, `engines.sim`) and "kernel" (the
Linux testbed, `engines.kernel`).

Both take one normalized run configuration (`mpsched.scenario.normalize.to_config`) and return
the same record tables: table name -> column name -> list of values. Their errors live in
`engines.base`, below both.
"""

from mpsched.engines.base import ENGINES, ConfigRefused, EngineError, EngineUnavailable, Tables
from mpsched.engines.chain import run_chained
from mpsched.engines.dispatch import check_config, check_engine, run_config
from mpsched.engines.sim import python_schedulers_of

__all__ = ["ENGINES", "ConfigRefused", "EngineError", "EngineUnavailable", "Tables", "check_config", "check_engine", "python_schedulers_of",
           "run_config", "run_chained"]
