"""Results on disk: one directory per run, written atomically, read back as one study.

Layout of a study directory ``<out>``::

    <out>/<run_id>/flows.parquet            one row per transfer
                   subflows.parquet         one row per subflow
                   blocks.parquet           one row per application unit (CBR block, real-time
                                            message, web object, transfer on a long-lived
                                            connection)
                   subflow_series.parquet   time series (cwnd, srtt, in flight, bytes acked)
                   conn_series.parquet      time series (delivered, out-of-order, receive buffer)
                   link_series.parquet      time series (queue, drops)
                   links.parquet            one row per link
                   path_events.parquet      one row per path event (kind, path, start, end)
                   run.parquet              one row: run id, seed, engine, swept parameters
                   scenario.toml            the concrete scenario of this run
                   config.json              the normalized configuration the engine ran
                   meta.json                run id, seed, engine, code version, scenario hash
    <out>/.tmp/                             runs being written (never matched by <out>/*/...)

Every table carries `run_id` and the swept parameters as columns, so
``polars.read_parquet("<out>/*/flows.parquet")`` or DuckDB's
``SELECT ... FROM '<out>/*/flows.parquet'`` query the whole study. A run is written into
``<out>/.tmp/`` and renamed into place only when complete, so an interrupted run never leaves a
visible half directory; a run whose directory exists is complete; on resume it is reused if the same code version
wrote it, else run again and replaced.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

import polars as pl

__all__ = ["SCHEMA_VERSION", "TABLES", "run_id_for", "config_hash", "write_run", "is_complete", "stored_version",
           "run_dirs", "to_frame"]

#: Bumped whenever a table's columns change meaning.
SCHEMA_VERSION = 1
#: The record tables every engine returns.
TABLES = ("flows", "subflows", "blocks", "subflow_series", "conn_series", "link_series", "links", "path_events")
TMP = ".tmp"

_STRING_COLUMNS = {"protocol", "scheduler", "cc", "direction", "app", "path", "link", "run_id"}
_BOOL_COLUMNS = {"completed", "deadline_missed"}


def config_hash(config: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of a normalized configuration."""
    blob = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()


def run_id_for(params: dict[str, Any], config: dict[str, Any], engine: str, salt: str = "") -> str:
    """A readable, deterministic run id: the swept values, then a hash of what actually runs
    (`salt`: anything else that decides the outcome, e.g. a Python scheduler's source).

    The same configuration on the same engine always gets the same id, which is what makes a
    study resumable.
    """
    digest = hashlib.sha256(f"{engine}\n{config_hash(config)}\n{salt}".encode()).hexdigest()[:10]
    parts = [f"{v:.4g}" if isinstance(v, float) else str(v) for k, v in params.items() if k != "seed"]
    if "seed" in params:
        parts.append(f"s{params['seed']}")
    slug = re.sub(r"[^A-Za-z0-9._+-]+", "-", "_".join(parts).replace("%", "pct")).strip("-")[:60]
    return f"{slug}_{digest}" if slug else digest


def _dtype(column: str) -> pl.DataType | None:
    if column in _STRING_COLUMNS:
        return pl.String()
    if column in _BOOL_COLUMNS:
        return pl.Boolean()
    if column.endswith(("_ns", "_bytes", "_packets", "_count", "_id")) or column in ("subflow", "flow_id"):
        return pl.Int64()
    return None


def to_frame(columns: dict[str, list], extra: dict[str, Any]) -> pl.DataFrame:
    """One record table as a DataFrame with stable dtypes, plus constant `extra` columns
    (run id, swept parameters) prepended; a column the table already has is left alone."""
    overrides = {c: t for c in columns if (t := _dtype(c)) is not None}
    df = pl.DataFrame(columns, schema_overrides=overrides, strict=False) if columns else pl.DataFrame()
    n = df.height
    consts = [pl.Series(k, [v] * n, dtype=_lit_dtype(v)) for k, v in extra.items() if k not in df.columns]
    return pl.DataFrame([*consts, *df.get_columns()])


def _lit_dtype(v: Any) -> pl.DataType:
    if isinstance(v, bool):
        return pl.Boolean()
    if isinstance(v, int):
        return pl.Int64()
    if isinstance(v, float):
        return pl.Float64()
    return pl.String()


def is_complete(run_dir: Path) -> bool:
    """A run directory is complete when its meta.json exists (written last, then renamed)."""
    return (run_dir / "meta.json").is_file()


def stored_version(run_dir: Path) -> str | None:
    """The code version that wrote a complete run (None if unreadable)."""
    try:
        return json.loads((run_dir / "meta.json").read_text()).get("code_version")
    except (OSError, ValueError):
        return None


def run_dirs(out: Path) -> list[Path]:
    """Complete run directories of a study, sorted by their run index then id."""
    dirs = [d for d in Path(out).iterdir() if d.is_dir() and not d.name.startswith(".") and is_complete(d)]

    def key(d: Path) -> tuple:
        try:
            return (json.loads((d / "meta.json").read_text()).get("index", 0), d.name)
        except (OSError, ValueError):
            return (0, d.name)

    return sorted(dirs, key=key)


def write_run(
    out: Path,
    run_id: str,
    tables: dict[str, dict[str, list]],
    *,
    params: dict[str, Any],
    meta: dict[str, Any],
    scenario_toml: str,
    config: dict[str, Any],
) -> Path:
    """Write one run atomically into ``out/run_id``; returns the final directory.

    Everything goes to a fresh directory under ``out/.tmp`` first; the rename into place is the
    commit point. If the run already exists from the same code version (another worker finished
    it), the new copy is discarded; if it comes from another code version, it is replaced (moved
    aside, the new run renamed in, the old one deleted).
    """
    out = Path(out)
    final = out / run_id
    tmp = out / TMP / f"{run_id}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    tmp.mkdir(parents=True)
    try:
        extra = {"run_id": run_id, **params}
        # the standard tables always (empty if the engine has none), then any other the engine
        # returns (e.g. `blocks`, `events`): new record kinds need no change here
        names = [*TABLES, *sorted(n for n in tables if n not in TABLES and not n.startswith("_") and n != "run")]
        for name in names:
            to_frame(tables.get(name, {}), extra).write_parquet(tmp / f"{name}.parquet")
        run_row = {"run_id": [run_id], "engine": [meta["engine"]], **{k: [v] for k, v in params.items()}}
        run_row["index"] = [meta["index"]]
        run_row["scenario_hash"] = [meta["scenario_hash"]]
        pl.DataFrame(run_row).write_parquet(tmp / "run.parquet")
        (tmp / "scenario.toml").write_text(scenario_toml, encoding="utf-8")
        # readable when small; compact when a trace makes it large (one number per line would
        # double its size)
        text = json.dumps(config, sort_keys=True, separators=(",", ":"))
        if len(text) < 100_000:
            text = json.dumps(config, indent=1, sort_keys=True)
        (tmp / "config.json").write_text(text, encoding="utf-8")
        # meta.json last: its presence marks a complete run.
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2, default=str), encoding="utf-8")
        _fsync_dir(tmp)
        if is_complete(final) and stored_version(final) != meta.get("code_version"):
            old = out / TMP / f"{run_id}.{os.getpid()}.old-{uuid.uuid4().hex[:8]}"
            os.rename(final, old)
            shutil.rmtree(old, ignore_errors=True)
        try:
            os.rename(tmp, final)
        except OSError:
            if is_complete(final):  # someone else committed the same run first
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                raise
        _fsync_dir(out)
        return final
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def clean_stale_tmp(out: Path) -> int:
    """Remove leftovers of interrupted writers (their process is gone); returns how many."""
    root = Path(out) / TMP
    if not root.is_dir():
        return 0
    removed = 0
    for d in root.iterdir():
        try:
            pid = int(d.name.rsplit(".", 2)[1])
        except (IndexError, ValueError):
            pid = -1
        if pid > 0 and _alive(pid):
            continue
        shutil.rmtree(d, ignore_errors=True)
        removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _fsync_dir(path: Path) -> None:
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
