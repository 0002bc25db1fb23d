"""Results on disk: runs written in batches, each batch atomic, read back as one study.

Layout of a study ``<out>`` (a local directory, or an fsspec URL such as ``s3://bucket/study``)::

    <out>/<batch>/flows.parquet            one row per transfer        } every table holds the
                  subflows.parquet         one row per subflow         } rows of all the batch's
                  blocks.parquet           one row per application     } runs, with `run_id` and
                                           unit (block, object, ...)   } the swept parameters as
                  subflow_series.parquet   cwnd, srtt, in flight, ...  } columns
                  conn_series.parquet      delivered, out-of-order, receive buffer
                  link_series.parquet      queue, drops
                  links.parquet            one row per link
                  path_events.parquet      one row per path event (kind, path, start, end)
                  run.parquet              one row per run: run id, engine, swept parameters, index
                  runs.jsonl               one line per run: its meta (seed, code version, wall
                                           time, engine counters), concrete scenario and config
                  batch.json               written last: the batch's run ids, code version, and
                                           the runs that failed with their error
    <out>/.tmp/                            batches being written (never matched by <out>/*/...);
                                           each holds a `.mpsched-tmp` marker (its writer's pid),
                                           and only marked directories of dead writers are removed
    <out>/.lock                            held (flock) by the one `run` writing the study

So ``polars.read_parquet("<out>/*/flows.parquet")`` or DuckDB's ``SELECT ... FROM
'<out>/*/flows.parquet'`` read the whole study with one glob. A batch is written into
``<out>/.tmp/`` and renamed into place when complete (on an object store, where there is no
rename, its batch.json is written last and readers here ignore a batch without one). A run is
done when a complete batch of the current code version holds it; a resumed study runs only the
others. A run held by two batches (a batch of an older code version, or of a killed client
whose last task still finished) is kept in one only: `dedupe` rewrites the others.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import polars as pl

from mpsched.study.frames import TABLES, RunRecord, batch_frames, concat, to_frame
from mpsched.study.safety import (LOCK, MARKER, DamagedRun, OutputUnusable, alive as _alive, clean_tmp_dir, damage,
                                  fsync_dir as _fsync_dir, make_tmp, mark, prepare_dir, study_lock)

__all__ = ["LOCK", "MARKER", "SCHEMA_VERSION", "TABLES", "Batch", "DamagedRun", "OutputUnusable", "RunRecord", "Store",
           "batch_dirs", "batch_frames", "clean_stale_tmp", "concat", "config_hash", "damage", "run_id_for", "study_lock", "to_frame"]

#: Bumped whenever a table's columns change meaning (2: batches of runs).
SCHEMA_VERSION = 2
TMP = ".tmp"
BATCH_FILE = "batch.json"
RUNS_FILE = "runs.jsonl"

def config_hash(config: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of a normalized configuration."""
    blob = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()


def run_id_for(params: dict[str, Any], config: dict[str, Any], engine: str, salt: str = "", digest: str = "") -> str:
    """A readable, deterministic run id: the swept values, then a hash of what actually runs
    (`salt`: anything else that decides the outcome, e.g. a Python scheduler's source).

    The same configuration on the same engine always gets the same id, which is what makes a
    study resumable. `digest`: `config_hash(config)` when the caller has it already.
    """
    digest = hashlib.sha256(f"{engine}\n{digest or config_hash(config)}\n{salt}".encode()).hexdigest()[:10]
    parts = [f"{v:.4g}" if isinstance(v, float) else str(v) for k, v in params.items() if k != "seed"]
    if "seed" in params:
        parts.append(f"s{params['seed']}")
    slug = re.sub(r"[^A-Za-z0-9._+-]+", "-", "_".join(parts).replace("%", "pct")).strip("-")[:60]
    return f"{slug}_{digest}" if slug else digest


@dataclass
class Batch:
    """A complete batch as its batch.json describes it."""

    name: str
    runs: list[str]
    code_version: str | None
    failures: dict[str, str] = field(default_factory=dict)
    committed_unix_s: float = 0.0
    first_index: int = 0


def _batch_name(run_ids: Iterable[str], first_index: int) -> str:
    """Content-addressed: the same runs always make the same batch (a retried task that already
    committed finds its own batch in place instead of adding a copy)."""
    digest = hashlib.sha256("\n".join(sorted(run_ids)).encode()).hexdigest()[:12]
    return f"b{first_index:06d}-{digest}"


class Store:
    """A study's store: a local directory or an fsspec URL (object store, memory://, ...)."""

    def __init__(self, out: str | Path):
        text = str(out)
        self.url = text
        self.local = "://" not in text or text.startswith("file://")
        if self.local:
            self.root = Path(text[len("file://"):] if text.startswith("file://") else text)
            self.fs = None
        else:
            import fsspec  # only for URLs

            self.fs, self.root = fsspec.core.url_to_fs(text)

    def __repr__(self) -> str:
        return f"Store({self.url!r})"

    # --- small file-system layer (os for local paths, fsspec otherwise) -------------------------

    def _join(self, *parts: str) -> str:
        return "/".join([str(self.root).rstrip("/"), *parts])

    def _read_bytes(self, path: str) -> bytes:
        if self.fs is None:
            return Path(path).read_bytes()
        with self.fs.open(path, "rb") as f:
            return f.read()

    def _write_bytes(self, path: str, data: bytes) -> None:
        if self.fs is None:
            Path(path).write_bytes(data)
        else:
            with self.fs.open(path, "wb") as f:
                f.write(data)

    def _exists(self, path: str) -> bool:
        return Path(path).exists() if self.fs is None else self.fs.exists(path)

    def _rmtree(self, path: str) -> None:
        if self.fs is None:
            shutil.rmtree(path, ignore_errors=True)
        elif self.fs.exists(path):
            self.fs.rm(path, recursive=True)

    def ensure(self) -> None:
        """Make the study directory; `OutputUnusable` (one line) when it cannot be written."""
        if self.fs is None:
            prepare_dir(self.root)
        else:
            self.fs.makedirs(str(self.root), exist_ok=True)

    def exists(self) -> bool:
        return self.root.is_dir() if self.fs is None else self.fs.isdir(str(self.root))

    # --- batches --------------------------------------------------------------------------------

    def batches(self) -> list[Batch]:
        """The complete batches (those with a batch.json), by the index of their first run."""
        return sorted(self.iter_batches(), key=lambda b: (b.first_index, b.name))

    def iter_batches(self) -> Iterator[Batch]:
        """The complete batches, one at a time, in no particular order (a reader that turns
        each into columns never holds every batch's id list at once)."""
        if self.fs is None:
            if not self.root.is_dir():
                return
            names = [d.name for d in self.root.iterdir() if d.is_dir() and not d.name.startswith(".")]
        else:
            if not self.fs.isdir(str(self.root)):
                return
            names = [p.rstrip("/").rsplit("/", 1)[-1] for p in self.fs.ls(str(self.root), detail=False)]
            names = [n for n in names if not n.startswith(".")]
        for name in names:
            try:
                doc = json.loads(self._read_bytes(self._join(name, BATCH_FILE)))
            except (OSError, ValueError):
                doc = self._legacy_run(name)
                if doc is None:
                    continue  # not a batch (or not complete)
            yield Batch(name, list(doc.get("runs", [])), doc.get("code_version"), dict(doc.get("failures", {})),
                        float(doc.get("committed_unix_s", 0.0)), int(doc.get("first_index", 0)))

    def write_batch(self, records: list[RunRecord], failures: dict[str, str], version: str,
                    frames: dict[str, pl.DataFrame] | None = None) -> str:
        """Write a batch of finished runs (and the errors of the failed ones) atomically; returns
        its name. `frames` (from `batch_frames(records)`) when the caller already built them."""
        ids = [r.run_id for r in records]
        first = min([r.index for r in records], default=0)
        name = _batch_name(ids + [f"failed:{k}" for k in failures], first)
        if frames is None:
            frames = batch_frames(records) if records else {}
        files: dict[str, bytes] = {}
        for table, df in frames.items():
            buf = io.BytesIO()
            df.write_parquet(buf)
            files[f"{table}.parquet"] = buf.getvalue()
        runs = [json.dumps({"run_id": r.run_id, "meta": r.meta, "scenario_toml": r.scenario_toml, "config": r.config},
                           separators=(",", ":"), default=str) for r in records]
        files[RUNS_FILE] = ("\n".join(runs) + "\n").encode() if runs else b""
        doc = {"batch": name, "runs": ids, "failures": failures, "code_version": version,
               "schema_version": SCHEMA_VERSION, "first_index": first, "committed_unix_s": time.time()}
        files[BATCH_FILE] = json.dumps(doc, indent=1).encode()  # last: its presence completes the batch
        if self.fs is None:
            self._commit_local(name, files, version)
        else:
            for fname, data in files.items():
                self._write_bytes(self._join(name, fname), data)
        return name

    def _commit_local(self, name: str, files: dict[str, bytes], version: str) -> None:
        final = self.root / name
        tmp = make_tmp(self.root / TMP, name)
        try:
            for fname, data in files.items():
                (tmp / fname).write_bytes(data)
            _fsync_dir(tmp)
            if final.exists():
                old = _read_json(final / BATCH_FILE)
                if old is not None and old.get("code_version") == version:  # the same batch, already committed
                    shutil.rmtree(tmp, ignore_errors=True)
                    return
                self._discard_local(final)
            (tmp / MARKER).unlink()  # a committed batch is the user's, not a temporary
            try:
                os.rename(tmp, final)
            except OSError:
                if (final / BATCH_FILE).is_file():  # another writer committed the same batch first
                    shutil.rmtree(tmp, ignore_errors=True)
                else:
                    raise
            _fsync_dir(self.root)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def remove_batch(self, name: str) -> None:
        if self.fs is None:
            self._discard_local(self.root / name)
        else:
            self.fs.rm(self._join(name, BATCH_FILE))
            self._rmtree(self._join(name))

    def _discard_local(self, batch_dir: Path) -> None:
        """Remove a stored batch (outdated, damaged, rewritten): moved under `.tmp` (gone from
        readers at once) and marked, so a crash half-way leaves a marked leftover the next run
        removes, never a half-deleted batch."""
        aside = self.root / TMP / f"{batch_dir.name}.{os.getpid()}.old-{uuid.uuid4().hex[:8]}"
        aside.parent.mkdir(parents=True, exist_ok=True)
        os.rename(batch_dir, aside)
        mark(aside)
        shutil.rmtree(aside, ignore_errors=True)

    def damaged(self, version: str | None = None, docs: bool = True) -> dict[str, str]:
        """batch name -> what is wrong, for the complete batches with a file that cannot be read
        (local stores; their runs are recomputed by the next `run`); without `docs`, runs.jsonl
        (the biggest, read only when a run's scenario is asked for) is not parsed."""
        if self.fs is not None:
            return {}
        out = {}
        for b in self.iter_batches():
            if version is None or b.code_version == version:
                why = damage(self.root / b.name, docs=docs)
                if why:
                    out[b.name] = why
        if self.root.is_dir():  # a batch.json that does not parse: its batch is skipped by readers, not lost silently
            for d in self.root.iterdir():
                doc = d / BATCH_FILE
                if not d.name.startswith(".") and d.name not in out and doc.is_file() and _read_json(doc) is None:
                    out[d.name] = f"{doc}: not readable JSON (truncated?)"
        return out

    # --- reading --------------------------------------------------------------------------------

    def read_table(self, batch: str, table: str) -> pl.DataFrame:
        path = self._join(batch, f"{table}.parquet")
        try:
            if self.fs is None:
                return pl.read_parquet(path) if os.path.isfile(path) else pl.DataFrame()
            return pl.read_parquet(io.BytesIO(self._read_bytes(path))) if self.fs.exists(path) else pl.DataFrame()
        except Exception as e:  # a truncated or corrupt file: name it  # noqa: BLE001
            raise DamagedRun(path, str(e).splitlines()[0] if str(e) else type(e).__name__) from None

    def table_names(self, batch: str) -> list[str]:
        if self.fs is None:
            files = [f.name for f in (self.root / batch).glob("*.parquet")]
        else:
            files = [p.rsplit("/", 1)[-1] for p in self.fs.ls(self._join(batch), detail=False)]
        return sorted(f[: -len(".parquet")] for f in files if f.endswith(".parquet") and f != "run.parquet")

    def _legacy_run(self, name: str) -> dict[str, Any] | None:
        """A run directory of the layout before batches (one run, its meta.json written last),
        read as a batch of one run; the next study of a newer code version runs it again and
        `dedupe` removes it."""
        try:
            meta = json.loads(self._read_bytes(self._join(name, "meta.json")))
        except (OSError, ValueError):
            return None
        if meta.get("run_id") != name:
            return None
        return {"runs": [name], "code_version": meta.get("code_version"), "first_index": meta.get("index", 0),
                "committed_unix_s": meta.get("started_unix_s", 0.0)}

    def read_runs(self, batch: str) -> dict[str, dict[str, Any]]:
        """run id -> {"meta", "scenario_toml", "config"} of one batch."""
        try:
            text = self._read_bytes(self._join(batch, RUNS_FILE)).decode()
        except OSError:
            try:  # a run directory of the layout before batches
                return {batch: {"run_id": batch, "meta": json.loads(self._read_bytes(self._join(batch, "meta.json"))),
                                "scenario_toml": self._read_bytes(self._join(batch, "scenario.toml")).decode(),
                                "config": json.loads(self._read_bytes(self._join(batch, "config.json")))}}
            except (OSError, ValueError):
                return {}
        out = {}
        for line in text.splitlines():
            if line.strip():
                try:
                    doc = json.loads(line)
                    out[doc["run_id"]] = doc
                except (ValueError, KeyError, TypeError) as e:
                    raise DamagedRun(self._join(batch, RUNS_FILE), f"a line that is not a run's JSON ({e})") from None
        return out

    def owners(self, version: str | None = None) -> dict[str, Batch]:
        """run id -> the batch that holds it: a batch of `version` before one of another, then
        the one committed first (so a copy written later never replaces the kept one)."""
        out: dict[str, Batch] = {}
        ranked = sorted(self.batches(), key=lambda b: (version is not None and b.code_version != version,
                                                        b.committed_unix_s, b.name))
        for b in ranked:
            for r in b.runs:
                out.setdefault(r, b)
        return out

    def failures(self) -> dict[str, str]:
        """run id -> error of the runs that failed and are in no batch since (a failure stays in
        its batch's batch.json until the batch is rewritten; one whose run succeeded later is
        not reported)."""
        owner = self.owners()
        return {r: m for b in self.batches() for r, m in b.failures.items() if r not in owner}

    def dedupe(self, version: str) -> int:
        """Keep every run in one batch only (see `owners`): a batch whose runs are all held
        elsewhere is removed, one with some is rewritten without them; a batch of failures only
        goes once all its runs have succeeded elsewhere. Returns how many batches changed."""
        from mpsched.study.index import holdings, owners

        held = holdings(self)
        if not held.get_column("run_id").is_duplicated().any() and not any(not b.runs for b in self.iter_batches()):
            return 0  # every run in one batch, no batch of failures only: nothing to do
        own = owners(held, version)
        theirs = held.join(own.select("run_id", pl.col("batch").alias("_owner")), on="run_id", how="left")
        losing = set(theirs.filter(pl.col("batch") != pl.col("_owner")).get_column("batch").unique().to_list())
        owned = own.get_column("run_id") if own.height else pl.Series("run_id", [], dtype=pl.String)
        todo = []
        for b in self.iter_batches():
            failed = pl.Series(list(b.failures), dtype=pl.String)
            if b.name not in losing and (b.runs or not failed.is_in(owned.implode()).all()):
                continue  # all its runs are its own (or it keeps failures no batch has run since)
            todo.append(b)
        for b in todo:
            keep_ids = set(theirs.filter((pl.col("batch") == b.name) & (pl.col("_owner") == b.name))
                           .get_column("run_id").to_list()) if b.runs else set()
            keep = [r for r in b.runs if r in keep_ids]
            if keep:
                runs = self.read_runs(b.name)
                tables = {t: self.read_table(b.name, t) for t in [*self.table_names(b.name), "run"]}
                frames = {t: df.filter(pl.col("run_id").is_in(keep)) if "run_id" in df.columns else df
                          for t, df in tables.items()}
                records = [RunRecord(r, int(runs[r]["meta"].get("index", 0)), {}, {}, runs[r]["meta"],
                                     runs[r]["scenario_toml"], runs[r]["config"]) for r in keep]
                failures = {k: v for k, v in b.failures.items() if k not in owned}
                self.write_batch(records, failures, b.code_version or version, frames=frames)
            self.remove_batch(b.name)
        return len(todo)

    def clean_stale_tmp(self) -> int:
        """Remove leftovers of interrupted writers (marked as mpsched's, their process gone);
        anything else under `.tmp` (a user's notes, another tool's files) is never touched.
        Returns how many."""
        return 0 if self.fs is not None else clean_tmp_dir(self.root / TMP, _alive)


def clean_stale_tmp(out: str | Path) -> int:
    """`Store(out).clean_stale_tmp()`."""
    return Store(out).clean_stale_tmp()


def batch_dirs(out: str | Path) -> list[Path]:
    """The complete batch directories of a local study, by the index of their first run."""
    return [Path(out) / b.name for b in Store(out).batches()]


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
