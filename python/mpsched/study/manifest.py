"""What a study directory was asked to hold, so a reader can tell a finished study from one that
stopped half-way (Ctrl-C, a crash, failed runs): without it, `mpsched show` of an interrupted study
summarised the runs that happened to finish as if they were the whole study.

`record_plan(out, run_ids, command)` is called by `mpsched run` before it executes anything: the
planned run ids go to ``<out>/.plans/<digest>.parquet`` and the command that resumes the study to
``<digest>.json``, the digest that of the command (one pair per scenario file run into the
directory, several may share one; running an edited file again replaces its plan).
`incomplete(out)` compares each plan with the runs stored (of any code version, as `load` reads
them). Local directories only; a hidden folder, so readers of batches never see it.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Iterable

import polars as pl

from mpsched.study.index import holdings, ids_series
from mpsched.study.store import Store

__all__ = ["PLANS", "incomplete", "record_plan"]

PLANS = ".plans"


def record_plan(out: str | Path, run_ids: Iterable[str] | pl.Series, command: str) -> None:
    """Remember that the study at `out` should hold `run_ids` (written atomically)."""
    if "://" in str(out):
        return
    ids = ids_series(run_ids).alias("run_id")
    # keyed by the command: running an edited scenario file again replaces its plan
    digest = hashlib.sha256(command.encode()).hexdigest()[:16]
    d = Path(out) / PLANS
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f".{digest}.{os.getpid()}.parquet"
    pl.DataFrame([ids]).write_parquet(tmp)
    os.replace(tmp, d / f"{digest}.parquet")
    doc = d / f"{digest}.json"
    tmp_doc = d / f".{digest}.{os.getpid()}.json"
    tmp_doc.write_text(json.dumps({"command": command, "runs": ids.len()}))
    os.replace(tmp_doc, doc)


def incomplete(out: str | Path) -> list[tuple[str, int, int]]:
    """(resume command, stored, planned) of each plan of the study at `out` that is not all
    stored; an unreadable plan (a crash while it was written) is skipped, never an error."""
    d = Path(out) / PLANS
    if "://" in str(out) or not d.is_dir():
        return []
    plans = []
    for doc in sorted(d.glob("*.json")):
        if doc.name.startswith("."):
            continue
        try:
            meta = json.loads(doc.read_text())
            ids = pl.read_parquet(doc.with_suffix(".parquet")).get_column("run_id")
        except Exception:  # noqa: BLE001 - a damaged plan only loses the warning
            continue
        plans.append((str(meta.get("command", "")), ids))
    if not plans:
        return []
    held = holdings(Store(out)).get_column("run_id").unique()
    out_rows = []
    for command, ids in plans:
        stored = int(ids.is_in(held.implode()).sum())
        if stored < ids.len():
            out_rows.append((command, stored, ids.len()))
    return out_rows
