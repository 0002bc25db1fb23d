"""What the kernel-vs-simulator bench scripts share: their JSON-lines rows, the
spread a table cell shows, and finding the testbed's namespaces of this process.

Imported by the scripts beside it (each is run as `python benches/NAME.py`, so this
directory is on `sys.path`).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import threading
import time
from contextlib import contextmanager

from mpsched.engines.kernel.host import PREFIX


def emit(row: dict, out: str | None) -> None:
    """Print one result row as a JSON line and, with `out`, append it there at once, so an
    interrupted bench keeps every run that finished."""
    line = json.dumps(row)
    print(line, flush=True)
    if out:
        with open(out, "a") as f:
            f.write(line + "\n")


def read_rows(path: str) -> list[dict]:
    """The rows `emit` wrote (blank lines skipped)."""
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def spread(values: list, digits: int = 1) -> str:
    """Median [min–max] of the values that are not None, '–' when there are none."""
    v = [x for x in values if x is not None]
    if not v:
        return "–"
    return f"{statistics.median(v):.{digits}f} [{min(v):.{digits}f}–{max(v):.{digits}f}]"


def testbed_namespace(suffix: str) -> str | None:
    """The name of this process's testbed namespace `suffix` (c, r, s), if it exists yet."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    names = [line.split()[0] for line in out.splitlines() if line.split()]
    return next((n for n in names if n.startswith(f"{PREFIX}-{os.getpid()}-{suffix}")), None)


def wait_for_namespace(side: str, stop: threading.Event) -> str | None:
    """Poll until this process's namespace `side` exists (the kernel engine builds it in a
    thread of this process); None if `stop` is set first."""
    while not stop.is_set():
        ns = testbed_namespace(side)
        if ns:
            return ns
        time.sleep(0.005)
    return None


def wait_for_namespaces(sides: str, stop: threading.Event) -> dict[str, str] | None:
    """Every namespace in `sides` once it exists; None if `stop` is set first."""
    found: dict[str, str] = {}
    for side in sides:
        ns = wait_for_namespace(side, stop)
        if ns is None:
            return None
        found[side] = ns
    return found


@contextmanager
def watching(target, *args):
    """Run `target(stop, *args)` in a daemon thread for the `with` block, then set `stop` and
    wait for it, so its logs and captures are complete before they are read."""
    stop = threading.Event()
    thread = threading.Thread(target=target, args=(stop, *args), daemon=True)
    thread.start()
    try:
        yield stop
    finally:
        stop.set()
        thread.join()
