"""Stopping a study promptly and leaving nothing behind.

* `Interrupted` (a `KeyboardInterrupt`): raised by `mpsched.study.run` when Ctrl-C (or SIGTERM,
  under `terminate_as_interrupt`) stops a study; it says how many runs are stored.
* `call_interruptibly`: a run on the simulator holds the main thread inside the Rust core, where
  Python's signal handlers never run; run it in a daemon thread and wait for it in the main thread,
  which a signal does interrupt (a Python scheduler then also runs off the main thread, so it never
  sees, and never swallows, the KeyboardInterrupt).
* `worker_init` (the process pool's initializer): workers ignore SIGINT (the parent decides and
  kills them: no traceback per worker) and die with their parent (Linux `PR_SET_PDEATHSIG`), so a
  `kill -9` of the CLI leaves no worker behind; `quiet_spawn` keeps SIGINT ignored while they
  start (an ignored signal stays ignored across exec, so a Ctrl-C during start-up reaches none).
* `kill_workers`: stop a process pool now, cancelling what is queued.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import threading
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

__all__ = ["Interrupted", "call_interruptibly", "exit_interrupted", "kill_workers", "quiet_spawn", "resume_command",
           "set_pdeathsig", "start_in_thread", "terminate_as_interrupt", "worker_init"]

PR_SET_PDEATHSIG = 1


class Interrupted(KeyboardInterrupt):
    """A study stopped by a signal: `stored` of `total` runs are complete in `out`."""

    def __init__(self, stored: int, total: int, out: Path | None):
        self.stored, self.total, self.out = stored, total, out
        where = f" in {out}" if out is not None else ""
        super().__init__(f"interrupted: {stored} of {total} run(s) stored{where}")


def set_pdeathsig(sig: int = signal.SIGKILL) -> bool:
    """Ask Linux to send `sig` to this process when its parent dies; False where unsupported."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def worker_init(parent_pid: int | None = None, clock_slots: tuple[Any, Any] | None = None) -> None:
    """A pool worker: Ctrl-C is the parent's business; die with the parent; report the simulated
    time of its runs into the parent's `clock_slots` (`SimClock.pool_slots`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    set_pdeathsig(signal.SIGKILL)
    if parent_pid is not None and os.getppid() != parent_pid:  # the parent died before prctl
        os._exit(1)
    if clock_slots is not None:
        from mpsched.study.simclock import SIM_CLOCK

        SIM_CLOCK.share(clock_slots)


@contextmanager
def quiet_spawn() -> Iterator[None]:
    """SIGINT ignored while worker processes start (main thread only): they inherit the ignored
    disposition, so a Ctrl-C in that window interrupts none of them (it is lost for the parent
    too; the window is the spawn of the processes, not their import)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def kill_workers(pool: Any) -> None:
    """Kill a `ProcessPoolExecutor`'s workers at once and cancel its queued work."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for p in procs:
        try:
            p.kill()
        except (OSError, ValueError, AttributeError):
            pass
    for p in procs:
        try:
            p.join(timeout=2)
        except (OSError, ValueError, AttributeError, AssertionError):
            pass
    try:
        # the workers are dead: the pool's manager sees it at once, closes its queues and pipes
        # (no feeder thread left writing into a closed pipe, no semaphore leaked) and returns
        pool.shutdown(wait=True, cancel_futures=True)
    except Exception:  # a broken pool is still a stopped one
        pass


def call_interruptibly(fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)` in a daemon thread; the main thread waits and stays interruptible (Ctrl-C raises
    KeyboardInterrupt here at once; the thread is abandoned and ends with the process). Off the
    main thread, or where signals cannot reach, it simply calls `fn`."""
    if threading.current_thread() is not threading.main_thread():
        return fn(*args)
    from mpsched import sched

    box: dict[str, Any] = {}
    done = threading.Event()
    sched.STOP.clear()

    def target() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as e:  # handed to the caller
            box["error"] = e
        finally:
            done.set()

    threading.Thread(target=target, name="mpsched-run", daemon=True).start()
    try:
        while not done.wait(0.25):
            pass
    except KeyboardInterrupt:
        # Python schedulers stop at their next call (the core then disables them and the run,
        # sending nothing more, ends soon): wait a little for that, so no Python code runs in
        # the abandoned thread while the interpreter exits
        sched.STOP.set()
        if sched.python_running():
            done.wait(3.0)
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]


def start_in_thread(fn: Callable[..., Any], *args: Any) -> Future:
    """`fn(*args)` in a daemon thread named as `call_interruptibly`'s (abandoned with the process
    when the study is interrupted); its result as a `Future`."""
    fut: Future = Future()
    fut.set_running_or_notify_cancel()

    def target() -> None:
        try:
            fut.set_result(fn(*args))
        except BaseException as e:  # handed to the caller
            fut.set_exception(e)

    threading.Thread(target=target, name="mpsched-run", daemon=True).start()
    return fut


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (and SIGHUP) stop the study as Ctrl-C does (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_interrupt(signum, frame):
        raise KeyboardInterrupt

    old = {s: signal.signal(s, raise_interrupt) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def resume_command(argv: list) -> str:
    """The shell command `mpsched <argv>`, quoted."""
    import shlex

    return " ".join(shlex.quote(str(a)) for a in ["mpsched", *argv])


def exit_interrupted(e: KeyboardInterrupt, argv: list, where: bool = False) -> None:
    """The command's end after an interruption: one line on stderr (how many runs are stored,
    `where` also in which study directory, and the command that resumes), exit status 130. A run
    still inside the core (a daemon thread) is abandoned with the process (`os._exit`); otherwise
    the interpreter exits normally."""
    import sys

    stored = f"{e.stored} of {e.total} run(s) stored" if isinstance(e, Interrupted) else "completed runs are kept"
    if where and isinstance(e, Interrupted) and e.out is not None:
        stored += f" in {e.out}"
    cmd = resume_command(argv)
    sys.stderr.write(f"interrupted: {stored}; resume with: {cmd}\n")
    sys.stderr.flush()
    sys.stdout.flush()
    if any(t.name == "mpsched-run" and t.is_alive() for t in threading.enumerate()):
        _release_semaphores()
        os._exit(130)
    raise SystemExit(130)


def _release_semaphores() -> None:
    """Before `os._exit`: unlink the named semaphores of the worker pool (the lock of the
    simulated clock's shared counter) as a normal exit does; otherwise the resource tracker
    prints a "leaked semaphore" warning after the interrupted line."""
    try:
        from multiprocessing import util

        util._run_finalizers(0)  # the finalizers a normal exit runs first (priority >= 0)
    except Exception:  # noqa: BLE001 - only a warning is at stake
        pass
