"""A study's results in memory: one polars DataFrame per record table, across all its runs."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import polars as pl

from mpsched.study.store import TABLES, DamagedRun, run_dirs

__all__ = ["Results", "load"]


class Results:
    """The record tables of one or more runs, each a polars DataFrame with `run_id` and the
    swept parameters as columns.

    Attributes: `flows`, `subflows`, `blocks`, `subflow_series`, `conn_series`, `link_series`, `links`
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

    def warnings(self) -> list[str]:
        """What a user must be told about these results: runs in which no sized flow completed
        (the duration is too short, or every action of a scheduler was refused: the `actions`
        table counts what the connections refused a Python scheduler, by reason)."""
        f = self.flows
        if not f.height or not {"completed", "run_id", "size_bytes"} <= set(f.columns):
            return []
        per_run = (f.filter(pl.col("size_bytes") > 0).group_by("run_id")
                   .agg(pl.col("completed").cast(pl.Boolean).any().alias("any_done")))
        stuck = sorted(per_run.filter(~pl.col("any_done"))["run_id"].to_list())
        if not stuck:
            return []
        msg = f"no flow completed in {len(stuck)} of {self.runs.height} run(s) (e.g. {stuck[0]})"
        acts = self.tables["actions"] if "actions" in self.tables else pl.DataFrame()
        if acts.height and "rejected_count" in acts.columns:
            mine = acts.filter(pl.col("run_id").is_in(stuck))
            if mine.height:
                sums = mine.group_by("reason").agg(pl.col("rejected_count").sum()).sort("reason")
                why = ", ".join(f"{r} x{n}" for r, n in sums.iter_rows())
                msg += f"; the connections refused the scheduler's actions ({why})"
        return [msg + "; check the duration and the scheduler"]

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
    tables = LazyTables({name: (lambda name=name: _concat([d / f"{name}.parquet" for d in dirs])) for name in names})
    runs = _concat([d / "run.parquet" for d in dirs])
    return Results(tables, runs, params, meta, root)


class LazyTables(Mapping):
    """Tables read from disk when first used (a summary of FCTs never reads the time series)."""

    def __init__(self, loaders: dict[str, Callable[[], pl.DataFrame]]):
        self._loaders = loaders
        self._loaded: dict[str, pl.DataFrame] = {}

    def __getitem__(self, name: str) -> pl.DataFrame:
        if name not in self._loaded:
            self._loaded[name] = self._loaders[name]()
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaders)

    def __len__(self) -> int:
        return len(self._loaders)

    def loaded(self) -> list[str]:
        """The names read so far."""
        return list(self._loaded)


def _read(f: Path) -> pl.DataFrame:
    try:
        return pl.read_parquet(f)
    except Exception as e:  # a truncated or corrupt file: name it
        raise DamagedRun(f, str(e).splitlines()[0] if str(e) else type(e).__name__) from None


def _concat(files: list[Path]) -> pl.DataFrame:
    frames = [_read(f) for f in files if f.is_file()]
    if not frames:
        return pl.DataFrame()
    return pl.concat(frames, how="diagonal_relaxed")
