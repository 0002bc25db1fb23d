"""A batch's record tables as polars frames: stable dtypes, the run id and swept parameters as
columns, one frame per table over all the batch's runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

__all__ = ["TABLES", "RunRecord", "batch_frames", "concat", "to_frame"]

#: The record tables every engine returns (`actions`: what the connections refused the
#: scheduler, per flow, kind and reason; the simulator's only, empty when nothing was refused).
TABLES = ("flows", "subflows", "blocks", "actions", "subflow_series", "conn_series", "link_series", "links",
          "path_events")

_STRING_COLUMNS = {"protocol", "scheduler", "cc", "direction", "app", "path", "link", "run_id"}
_BOOL_COLUMNS = {"completed", "deadline_missed"}


@dataclass
class RunRecord:
    """One finished run, as a worker hands it to the store."""

    run_id: str
    index: int
    params: dict[str, Any]
    tables: dict[str, dict[str, list]]
    meta: dict[str, Any]
    scenario_toml: str
    config: dict[str, Any]


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


def concat(frames: list[pl.DataFrame]) -> pl.DataFrame:
    frames = [f for f in frames if f.width]
    if not frames:
        return pl.DataFrame()
    return frames[0] if len(frames) == 1 else pl.concat(frames, how="diagonal_relaxed")


def merged_frame(parts: list[tuple[dict[str, list], dict[str, Any]]], rows_per_part: int | None = None) -> pl.DataFrame:
    """The frame `concat([to_frame(columns, extra) for columns, extra in parts])` gives (columns
    in order of first appearance, a column a part lacks is null there), built in one go: the
    lists are joined first and polars makes one frame, not one per run (the per-run frames
    were most of the cost of storing a short run). `rows_per_part`: the rows of a part with no
    columns of its own (1 for the table of runs: one row of constants each)."""
    order: dict[str, None] = {}
    consts: dict[str, Any] = {}
    sizes = []
    for cols, extra in parts:
        for k, v in extra.items():
            if k not in cols:
                order.setdefault(k)
                consts.setdefault(k, v)
        for k in cols:
            order.setdefault(k)
        sizes.append(len(next(iter(cols.values()))) if cols else (rows_per_part or 0))
    data: dict[str, list] = {}
    for c in order:
        values: list = []
        for (cols, extra), n in zip(parts, sizes):
            if c in cols:
                values.extend(cols[c])
            elif n:
                values.extend([extra.get(c)] * n)
        data[c] = values
    overrides = {c: t for c in order if (t := _dtype(c)) is not None or (c in consts and (t := _lit_dtype(consts[c])))}
    return pl.DataFrame(data, schema_overrides=overrides, strict=False) if data else pl.DataFrame()


def batch_frames(records: list[RunRecord]) -> dict[str, pl.DataFrame]:
    """The batch's tables (the standard ones always, then any other the engine returned, e.g.
    `events`), each one frame over all its runs, and `run` (one row per run)."""
    names = [*TABLES]
    for r in records:
        names += sorted(n for n in r.tables if n not in names and not n.startswith("_") and n != "run")
    out = {name: merged_frame([(r.tables.get(name, {}), {"run_id": r.run_id, **r.params}) for r in records])
           for name in names}
    rows = [{"run_id": r.run_id, "engine": r.meta["engine"], **r.params, "index": r.index,
             "scenario_hash": r.meta["scenario_hash"]} for r in records]
    out["run"] = merged_frame([({}, row) for row in rows], rows_per_part=1)
    return out
