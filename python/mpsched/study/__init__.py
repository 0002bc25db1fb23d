"""A study: planning its runs (`plan`), executing them on an engine in batches (`execute`,
`batching`: local processes, any `concurrent.futures.Executor`, or a Dask cluster, `cluster`),
the store (`store`: batches of runs, atomic, content-addressed ids, resume; a local path or an
fsspec URL) and reading results back (`results`: `Results`, `load`)."""

from mpsched.study.execute import Interrupted, RunFailed, code_version, run
from mpsched.study.plan import StudyPlan, Task, check_topology_engine, describe, plan, plan_stream
from mpsched.study.results import Results, load

__all__ = ["Interrupted", "Results", "RunFailed", "Task", "check_topology_engine", "code_version", "describe", "load", "plan", "plan_stream", "run",
           "StudyPlan"]
