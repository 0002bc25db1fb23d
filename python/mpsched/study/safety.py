"""Store safety: what mpsched may delete, one writer per study, damaged files named.

* A temporary batch directory under ``<out>/.tmp`` carries a `MARKER` file holding its writer's
  pid; `clean_stale_tmp` removes only marked directories whose writer is gone (a user's notes or
  another tool's files there are never touched).
* ``<out>/.lock`` (an exclusive flock, `study_lock`): a second `run` into the same study waits
  for the first, then reuses what it stored instead of computing every run twice.
* `DamagedRun`: a batch file that cannot be read, named with the way to recompute it;
  `damage(batch_dir)` says what is wrong with a stored batch (the next `run` recomputes its runs).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sys
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import polars as pl

from mpsched.study.frames import TABLES

__all__ = ["LOCK", "MARKER", "DamagedRun", "OutputUnusable", "clean_tmp_dir", "damage", "make_tmp", "mark",
           "prepare_dir", "study_lock"]

#: The file that marks a directory under `.tmp` as one mpsched made (its content: the writer's pid).
MARKER = ".mpsched-tmp"
LOCK = ".lock"


class DamagedRun(ValueError):
    """A stored batch with a file that cannot be read (truncated, corrupt)."""

    def __init__(self, path: Path | str, reason: str):
        self.path = path
        super().__init__(f"damaged result file {path}: {reason}; run the study again to recompute it "
                         f"(`mpsched run` replaces damaged batches)")


class OutputUnusable(ValueError):
    """An output directory that cannot be made or written (a file in its place, no permission,
    a read-only or full file system): one line saying which and why."""


def prepare_dir(out: Path | str) -> Path:
    """Make the output directory `out` (and its parents) or raise `OutputUnusable` saying why it
    cannot be used, before any work is done."""
    out = Path(out)
    probe = out / f".write-probe.{os.getpid()}"  # access() is not the truth for root or ACLs
    if out.exists() and not out.is_dir():
        raise OutputUnusable(f"{out} is a file, not a directory; give another output directory (-o)")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        why = e.strerror or str(e)
        where = f" ({e.filename})" if e.filename and str(e.filename) != str(out) and str(e.filename) != str(probe) else ""
        raise OutputUnusable(f"cannot write the output directory {out}: {why}{where}; give another "
                             f"output directory (-o)") from None
    return out


def mark(d: Path) -> None:
    (d / MARKER).write_text(str(os.getpid()))


def make_tmp(tmp_root: Path, name: str) -> Path:
    """A fresh directory under `tmp_root` for one batch, marked as mpsched's with the writer's pid."""
    tmp = tmp_root / f"{name}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    tmp.mkdir(parents=True)
    mark(tmp)
    return tmp


def _marker_pid(d: Path) -> int | None:
    """The writer's pid of a directory mpsched made under `.tmp` (None: not ours, leave it)."""
    try:
        return int((d / MARKER).read_text().strip() or 0)
    except (OSError, ValueError):
        return None


def clean_tmp_dir(root: Path, alive: Callable[[int], bool]) -> int:
    """Remove the marked directories of dead writers under `root`; returns how many."""
    if not root.is_dir():
        return 0
    removed = 0
    for d in root.iterdir():
        pid = _marker_pid(d) if d.is_dir() and not d.is_symlink() else None
        if pid is None or (pid > 0 and pid != os.getpid() and alive(pid)):
            continue
        shutil.rmtree(d, ignore_errors=True)
        removed += 1
    return removed


def damage(batch_dir: Path, tables: tuple[str, ...] = TABLES, docs: bool = True) -> str | None:
    """What is wrong with a complete batch's files (None: all readable). Reads each Parquet
    file's footer only (cheap); batch.json and (`docs`) runs.jsonl must parse."""
    batch_dir = Path(batch_dir)
    doc = "batch.json" if not (batch_dir / "meta.json").is_file() else "meta.json"  # meta: a run before batches
    try:
        json.loads((batch_dir / doc).read_text())
    except (OSError, ValueError) as e:
        return f"{batch_dir / doc}: {e}"
    runs = batch_dir / "runs.jsonl"
    if docs and runs.is_file():
        try:
            for line in runs.read_text().splitlines():
                if line.strip():
                    json.loads(line)
        except (OSError, ValueError) as e:
            return f"{runs}: {e}"
    files = sorted(batch_dir.glob("*.parquet"))
    for f in files:
        try:
            pl.read_parquet_schema(f)
        except Exception as e:  # polars raises several kinds for a bad file
            return f"{f}: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
    if files:  # a batch of failures only has no tables
        for name in (*tables, "run"):
            if not (batch_dir / f"{name}.parquet").is_file():
                return f"{batch_dir / (name + '.parquet')}: missing"
    return None


@contextmanager
def study_lock(out: Path, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold ``out/.lock`` (an exclusive flock) while running a study into `out`: a second `run`
    into the same directory waits for the first (then reuses what it stored) instead of computing
    every run twice. `on_wait(message)` is told when it has to wait."""
    out = prepare_dir(out)
    try:
        fd = os.open(out / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise OutputUnusable(f"cannot write the output directory {out}: {e.strerror or e}; give another "
                             f"output directory (-o)") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            msg = f"another mpsched run (pid {holder}) is writing to {out}; waiting for it to finish"
            (on_wait or (lambda m: print(m, file=sys.stderr)))(msg)
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def alive(pid: int) -> bool:
    """Whether a process with this pid exists (one we may not signal counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def fsync_dir(path: Path) -> None:
    """Flush a directory entry to disk (a rename survives a crash), where the OS allows it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
