"""Feeding a study's runs to workers in batches, and collecting what they return.

A task is a batch of runs. Its own cost (the pool's or Dask's round trip, about a millisecond;
writing the batch's files, about ten) is paid once per batch, so batches are sized from the
runs' measured time: the first tasks carry one run each (nothing is known yet), then each task
carries about `TARGET_TASK_S` of runs, so that cost stays near a tenth of the work or less;
never more than a share of what is left (every worker keeps two tasks to do, so none idles at
the end) nor more than `MAX_BATCH` runs (a lost worker costs one batch). The tasks come from an
iterator (`StudyPlan.tasks`: each run's configuration made as its batch is handed out) and the
client holds only the tasks in flight, so its memory stays flat however long the study.

A local pool's workers take about a second to start (spawn, then import the package), about
what the client itself spent starting. So the client runs the first batches itself and starts
the pool only when the runs left would take longer than that (a study of a few hundred short
runs ends in one process, sooner and with less CPU than on a pool); then, until a worker has
answered, the workers get one run each and the client goes on running batches. A batch of the
client's still running after that start-up time (long runs) goes on in its thread while the
pool starts and takes the others.
"""

from __future__ import annotations

import math
import os
import resource
import time
from contextlib import nullcontext
from concurrent.futures import FIRST_COMPLETED, Executor, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from itertools import islice
from typing import Any, Callable, Iterable, Iterator

from mpsched.study.interrupt import call_interruptibly, kill_workers, quiet_spawn, start_in_thread, worker_init
from mpsched.study.plan import Task
from mpsched.study.simclock import SIM_CLOCK
from mpsched.study.store import Store

__all__ = ["RunFailed", "Report", "batch_size", "drive"]

#: A task's runs take about this long (seconds) once their duration is known.
TARGET_TASK_S = 0.25
#: At most this many runs per task.
MAX_BATCH = 256


def _cpu_so_far() -> float:
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


#: CPU seconds this process spent starting: the interpreter and the imports a worker also needs
#: (this module is imported by `mpsched.study`, after the scenario layer, polars and the core).
STARTUP_CPU_S = _cpu_so_far()


class RunFailed(RuntimeError):
    """Some runs of a study failed; the others are stored. `failures` maps run id -> message."""

    def __init__(self, failures: dict[str, str], out: Path | str):
        self.failures = failures
        first_id, first = next(iter(failures.items()))
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        super().__init__(f"{len(failures)} run(s) failed; {first_id}: {first}{more}; completed runs are in {out}")


@dataclass
class Report:
    """What a study's tasks returned: their failures, how many runs they stored, and their
    costs (seconds: inside the runs, the tasks' wall time and CPU time). Neither the runs' ids
    nor their rows are kept: the store holds them, and the closing summary reads it."""

    failures: dict[str, str] = field(default_factory=dict)
    stored: int = 0
    changed_store: bool = False
    run_s: float = 0.0
    task_wall_s: float = 0.0
    task_cpu_s: float = 0.0
    tasks: int = 0


def batch_size(remaining: int, workers: int, mean_run_s: float | None) -> int:
    """How many runs the next task carries (see the module's docstring)."""
    if mean_run_s is None:
        return 1
    share = max(1, math.ceil(remaining / (2 * max(1, workers))))
    want = max(1, int(TARGET_TASK_S / max(mean_run_s, 1e-6)))
    return max(1, min(share, want, MAX_BATCH))


class _Queue:
    """The tasks left to hand out: an iterator and how many it still holds."""

    def __init__(self, tasks: Iterable[Task], count: int):
        self._it: Iterator[Task] = iter(tasks)
        self._left = count

    def __len__(self) -> int:
        return self._left

    def take(self, n: int) -> list[Task]:
        batch = list(islice(self._it, n))
        self._left = 0 if len(batch) < n else self._left - len(batch)
        return batch


def drive(todo: Iterable[Task], n_todo: int, total: int, out: str, engine: str, version: str,
          schedulers: bytes | None, *, jobs: int, executor: Executor | None, client: Any,
          on_progress: Callable | None, work: Callable, store: Store, write_on_client: bool = False) -> Report:
    """Run the `n_todo` tasks of `todo` (of a study of `total` runs) in batches on the chosen
    backend; returns the `Report` (failed runs included, never raised: one bad run does not
    stop the others)."""
    report = Report()
    done, failed, running = total - n_todo, 0, 0
    ran, run_s = 0, 0.0

    def notify() -> None:
        if on_progress is None:
            return
        status = getattr(on_progress, "status", None)
        if status is not None:
            status(done, total, failed, running)
        else:
            on_progress(done, total)

    def take(batch: list[Task], result: dict[str, Any] | None, error: str | None) -> None:
        nonlocal done, failed, ran, run_s
        report.tasks += 1
        if error is not None:
            result = {"runs": [], "failures": {t.run_id: error for t in batch}}
        if write_on_client and result.get("records") is not None:
            store.write_batch(result["records"], result["failures"], version)
        report.changed_store |= bool(result["runs"] or result["failures"])
        report.failures.update(result["failures"])
        report.stored += len(result["runs"])
        report.run_s += result.get("run_s", 0.0)
        report.task_wall_s += result.get("wall_s", 0.0)
        report.task_cpu_s += result.get("cpu_s", 0.0)
        ran += len(batch)
        run_s += result.get("run_s", 0.0)
        done += len(result["runs"]) + len(result["failures"])
        failed += len(result["failures"])

    notify()
    queue = _Queue(todo, n_todo)
    target = None if write_on_client else out
    here: list[float] = []  # CPU seconds per run of each batch run in this process

    def work_here(batch: list[Task]) -> dict[str, Any]:
        # the simulator off the main thread: the core holds it for a whole run, where Ctrl-C
        # cannot land; the kernel engine in it (Python waiting on processes: interruptible, and
        # its teardown must run)
        if engine == "kernel":
            return work(batch, target, engine, version, schedulers)
        return call_interruptibly(work, batch, target, engine, version, schedulers)

    slow: list[tuple[Any, list[Task]]] = []  # a batch of this process's still running when the pool starts

    def run_here(stop: Callable[[float | None], bool], patience_s: float | None = None) -> None:
        """Run batches in this process until none is left or `stop(CPU seconds per run)` (of the
        last batch, once there are two: the first pays for first-use costs). With `patience_s`,
        a batch still running after that long (runs too long to wait for before starting the
        pool) is left running in its thread, in `slow`, and the pool starts."""
        nonlocal running
        while queue and not stop(here[-1] if len(here) >= 2 else None):
            n = batch_size(len(queue), jobs, run_s / ran if ran else None)
            batch = queue.take(n)
            running = len(batch)
            notify()
            cpu = time.process_time()
            if patience_s is not None and engine != "kernel":
                fut = start_in_thread(work, batch, target, engine, version, schedulers)
                if not wait([fut], timeout=patience_s)[0]:
                    slow.append((fut, batch))
                    return
                result = fut.result()
            else:
                result = work_here(batch)
            here.append((time.process_time() - cpu) / len(batch))
            running = 0
            take(batch, result, None)
            notify()

    if executor is None and client is None:
        if jobs <= 1 or n_todo <= 1:
            run_here(lambda per_run: False)
            return report
        # a worker costs about what this process spent starting (the interpreter and the
        # package's imports): run here while the runs left would take less than that on the pool
        startup_s = STARTUP_CPU_S
        run_here(lambda per_run: per_run is not None and len(queue) * per_run * jobs / (jobs + 1) > startup_s,
                 patience_s=startup_s)
        if not queue and not slow:
            return report
    own = None
    if client is not None:
        pool, workers = client.get_executor(pure=False), _dask_workers(client)
    elif executor is not None:
        pool, workers = executor, getattr(executor, "_max_workers", 2)
    else:
        # workers ignore SIGINT (this process decides and kills them) and die with it, and share
        # the simulated time of their runs with the progress bar
        ctx = get_context("spawn")
        own = pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=worker_init,
                                         initargs=(os.getpid(), SIM_CLOCK.pool_slots(ctx, jobs)))
        workers = jobs
    pending: dict[Any, list[Task]] = dict(slow)
    try:
        # our own pool's workers start by importing the package (about a second each): until
        # one of them has answered, they get a one-run task each and this process runs
        # batches itself (with all imported already; a short study may be over before any
        # worker is ready)
        warming = own is not None and not slow  # (a batch of this process still running: no more here)
        while queue or pending:
            while queue and len(pending) < (workers if warming else 2 * workers):
                n = 1 if warming else batch_size(len(queue), workers, run_s / ran if ran else None)
                batch = queue.take(n)
                with quiet_spawn() if own is not None else nullcontext():  # workers start with SIGINT ignored
                    pending[pool.submit(work, batch, target, engine, version, schedulers)] = batch
            running = sum(len(b) for b in pending.values())
            notify()
            warming = warming and not any(f.done() for f in pending)
            if warming and queue:
                n = batch_size(len(queue), workers, run_s / ran if ran else None)
                batch = queue.take(n)
                take(batch, work_here(batch), None)
                continue
            finished, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for f in finished:
                batch = pending.pop(f)
                exc = f.exception()
                take(batch, None if exc else f.result(), f"{type(exc).__name__}: {exc}" if exc else None)
            running = sum(len(b) for b in pending.values())
            notify()
    except BaseException:
        if slow:  # a Python scheduler in this process's abandoned batch stops at its next call
            from mpsched import sched

            sched.STOP.set()
        if own is not None:
            kill_workers(own)
        else:
            for f in pending:
                f.cancel()
        raise
    finally:
        SIM_CLOCK.unwatch()
    if own is not None:
        own.shutdown(wait=True, cancel_futures=True)
    return report


def _dask_workers(client: Any) -> int:
    """The cluster's worker threads (each runs one task at a time)."""
    try:
        workers = client.scheduler_info().get("workers", {})
        return max(1, sum(int(w.get("nthreads", 1)) for w in workers.values()))
    except Exception:  # noqa: BLE001 - an unreachable scheduler fails at submit, with its own message
        return 1
