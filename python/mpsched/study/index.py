"""Which runs a study holds, and where, as columns: no Python object per run.

A study's client keeps run ids for the whole study (the plan's, the store's, which batch holds
which run). Held as Python strings in lists, sets and dicts they cost about 100-200 bytes a run
each, several times over; held as one Arrow string column (`RunIds`, the frames of `holdings`
and `owners`) they cost the ids' own bytes, and membership is a vectorised `is_in`. So the
client's memory stays flat as a study grows from thousands of runs to tens of thousands.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from mpsched.study.store import Store

__all__ = ["RunIds", "holdings", "owners"]

#: ids gathered in Python before they join the column (bounds the transient list)
_CHUNK = 4096


class RunIds(Sequence[str]):
    """Run ids in order, held as one Arrow string column (`series`)."""

    def __init__(self, ids: Iterable[str] | pl.Series = ()):
        if isinstance(ids, pl.Series):
            self.series = ids.cast(pl.String).rename("run_id")
            return
        chunks, part = [], []
        for r in ids:
            part.append(r)
            if len(part) >= _CHUNK:
                chunks.append(pl.Series("run_id", part, dtype=pl.String))
                part = []
        chunks.append(pl.Series("run_id", part, dtype=pl.String))
        self.series = pl.concat(chunks) if len(chunks) > 1 else chunks[0]

    def __len__(self) -> int:
        return self.series.len()

    def __getitem__(self, i):
        if isinstance(i, slice):
            return RunIds(self.series[i])
        return self.series[i]

    def __iter__(self) -> Iterator[str]:
        return iter(self.series)

    def __contains__(self, run_id: object) -> bool:
        return bool((self.series == run_id).any()) if isinstance(run_id, str) else False

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RunIds):
            return self.series.equals(other.series)
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(other) == len(self) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # mutable-looking container semantics, as a list

    def __repr__(self) -> str:
        return f"RunIds({len(self)} runs)"


def ids_series(run_ids: Iterable[str] | RunIds | pl.Series) -> pl.Series:
    """Any collection of run ids as a string Series."""
    if isinstance(run_ids, RunIds):
        return run_ids.series
    if isinstance(run_ids, pl.Series):
        return run_ids
    return RunIds(run_ids).series


_SCHEMA = {"run_id": pl.String, "batch": pl.String, "code_version": pl.String, "committed_unix_s": pl.Float64,
           "first_index": pl.Int64}


def holdings(store: "Store") -> pl.DataFrame:
    """One row per (run, complete batch holding it): `run_id`, `batch`, `code_version`,
    `committed_unix_s`, `first_index`; each batch's id list is turned into a column as it is
    read, so the whole study's ids never sit in Python lists."""
    parts = []
    for b in store.iter_batches():
        n = len(b.runs)
        if not n:
            continue
        parts.append(pl.DataFrame({"run_id": pl.Series(b.runs, dtype=pl.String)}).with_columns(
            pl.lit(b.name, pl.String).alias("batch"), pl.lit(b.code_version, pl.String).alias("code_version"),
            pl.lit(b.committed_unix_s, pl.Float64).alias("committed_unix_s"),
            pl.lit(b.first_index, pl.Int64).alias("first_index")))
    return pl.concat(parts) if parts else pl.DataFrame(schema=_SCHEMA)


def owners(held: pl.DataFrame, version: str | None = None) -> pl.DataFrame:
    """The batch kept for each run (`Store.owners`' rule: a batch of `version` before one of
    another, then the one committed first, then by name): `held` reduced to one row per run."""
    if held.is_empty() or held.get_column("run_id").n_unique() == held.height:
        return held  # every run in one batch: nothing to rank (the common case, and far cheaper)
    other = (pl.col("code_version").ne_missing(version)) if version is not None else pl.lit(False)
    return (held.with_columns(other.alias("_other"))
            .sort("_other", "committed_unix_s", "batch", maintain_order=True)
            .unique(subset="run_id", keep="first", maintain_order=True).drop("_other"))
