"""A study's results in memory: one polars DataFrame per record table, across all its runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

import polars as pl

from mpsched.study.store import TABLES, run_dirs

__all__ = ["Results", "load"]


class Results:
    """The record tables of one or more runs, each a polars DataFrame with `run_id` and the
    swept parameters as columns.

    Attributes: `flows`, `subflows`, `blocks`, `subflow_series`, `conn_series`, `link_series`, `links`,
    `path_events`
    (the engine's tables), `runs` (one row per run), `params` (the swept parameter labels, in
    sweep order), `meta` (run id -> meta.json), `path` (the study directory, if on disk).
    """

    def __init__(self, tables: dict[str, pl.DataFrame], runs: pl.DataFrame, params: list[str],
                 meta: dict[str, dict[str, Any]], path: Path | None = None):
        self.tables = tables
        self.runs = runs
        self.params = params
        self.meta = meta
        self.path = path

    flows = property(lambda self: self.tables["flows"], doc="One row per transfer.")
    subflows = property(lambda self: self.tables["subflows"], doc="One row per subflow.")
    blocks = property(lambda self: self.tables["blocks"], doc="One row per application unit (block, object, transfer).")
    subflow_series = property(lambda self: self.tables["subflow_series"], doc="Per-subflow time series.")
    conn_series = property(lambda self: self.tables["conn_series"], doc="Per-connection time series.")
    link_series = property(lambda self: self.tables["link_series"], doc="Per-link time series.")
    links = property(lambda self: self.tables["links"], doc="One row per link.")
    path_events = property(lambda self: self.tables["path_events"], doc="One row per path event (kind, path, times).")

    @property
    def group_params(self) -> list[str]:
        """Swept parameters other than the seed: what a summary groups by."""
        return [p for p in self.params if p != "seed"]

    def summary(self) -> pl.DataFrame:
        """FCT statistics per scheduler and swept setting (see `mpsched.analysis.fct_summary`);
        for a study on a [topology], per flow class and protocol (`class_fct_summary`)."""
        from mpsched.analysis.summary import class_fct_summary, fct_summary, is_datacenter

        return class_fct_summary(self) if is_datacenter(self) else fct_summary(self)

    def plot(self, out: str | Path) -> list[Path]:
        """Write the standard figures (PNG and SVG) into `out`; returns the files."""
        from mpsched.analysis.figures import save_all

        return save_all(self, Path(out))

    def sql(self, query: str):
        """Run a DuckDB query over the tables (`flows`, `subflows`, ..., `runs`) and return a
        polars DataFrame, e.g. ``res.sql("SELECT scheduler, median(fct_ns) FROM flows GROUP BY 1")``."""
        import duckdb

        con = duckdb.connect()
        try:
            for name, df in {**self.tables, "runs": self.runs}.items():
                con.register(name, df)
            return con.sql(query).pl()
        finally:
            con.close()

    def _repr_html_(self) -> str:
        """Notebooks show the FCT summary."""
        head = f"<p>{self.runs.height} runs; swept: {', '.join(self.params) or 'nothing'}</p>"
        summary = self.summary()
        return head + (summary._repr_html_() if summary.height else "<p>no flows</p>")

    def __getattr__(self, name: str) -> pl.DataFrame:
        """Tables beyond the standard ones (e.g. `res.blocks`) by attribute."""
        tables = self.__dict__.get("tables", {})
        if name in tables:
            return tables[name]
        raise AttributeError(f"{type(self).__name__!r} has no table or attribute {name!r}; tables: {', '.join(tables)}")

    def __len__(self) -> int:
        return self.runs.height

    def __repr__(self) -> str:
        sizes = ", ".join(f"{k}={v.height}" for k, v in self.tables.items())
        where = f" at {str(self.path)!r}" if self.path else ""
        return f"<Results: {self.runs.height} runs{where}; params={self.params}; rows: {sizes}>"


def load(path: str | Path, run_ids: Iterable[str] | None = None) -> Results:
    """Read a results directory (written by `mpsched run`) back into a `Results`.

    Only complete runs are read; `run_ids` restricts to those runs.
    """
    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"no results directory at {str(root)!r}")
    wanted = None if run_ids is None else set(run_ids)
    dirs = [d for d in run_dirs(root) if wanted is None or d.name in wanted]
    meta = {d.name: json.loads((d / "meta.json").read_text()) for d in dirs}
    params: list[str] = []
    for m in meta.values():
        for k in m.get("params", {}):
            if k not in params:
                params.append(k)
    names = list(TABLES)
    for d in dirs:  # tables beyond the standard ones (e.g. `blocks`), in a stable order
        names += sorted(f.stem for f in d.glob("*.parquet") if f.stem not in names and f.stem != "run")
    tables = {name: _concat([d / f"{name}.parquet" for d in dirs]) for name in names}
    runs = _concat([d / "run.parquet" for d in dirs])
    return Results(tables, runs, params, meta, root)


def _concat(files: list[Path]) -> pl.DataFrame:
    frames = [pl.read_parquet(f) for f in files if f.is_file()]
    if not frames:
        return pl.DataFrame()
    return pl.concat(frames, how="diagonal_relaxed")
