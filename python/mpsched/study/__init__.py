"""A study: planning its runs (`plan`), executing them on an engine (`execute`: local processes or
any `concurrent.futures.Executor`), the store (`store`: atomic Parquet per run, content-addressed
ids, resume) and reading results back (`results`: `Results`, `load`)."""

from mpsched.study.execute import Interrupted, RunFailed, code_version, run
from mpsched.study.plan import Task, check_topology_engine, describe, plan
from mpsched.study.results import Results, load

__all__ = ["Interrupted", "Results", "RunFailed", "Task", "check_topology_engine", "code_version", "describe", "load", "plan", "run"]
