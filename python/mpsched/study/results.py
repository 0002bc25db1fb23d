"""A study's results in memory: one polars DataFrame per record table, across all its runs."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import polars as pl

from mpsched.study.index import holdings, ids_series, owners
from mpsched.study.store import TABLES, Store, concat

__all__ = ["Results", "collect_columns", "load"]


class Results:
    """The record tables of one or more runs, each a polars DataFrame with `run_id` and the
    swept parameters as columns.

    Attributes: `flows`, `subflows`, `blocks`, `subflow_series`, `conn_series`, `link_series`, `links`,
    `path_events`
    (the engine's tables), `runs` (one row per run), `params` (the swept parameter labels, in
    sweep order), `meta` (run id -> meta.json), `path` (the study directory, if on disk).
    """

    def __init__(self, tables: Mapping[str, pl.DataFrame], runs: pl.DataFrame, params: list[str],
                 meta: Mapping[str, dict[str, Any]], path: Path | str | None = None):
        self.tables = tables
        self.runs = runs
        self.params = params
        self.meta = meta
        self.path = path

    def scenario_toml(self, run_id: str) -> str:
        """The concrete scenario (TOML) one run ran."""
        docs = self.__dict__.get("_docs")
        if docs is not None:
            return docs(run_id)["scenario_toml"]
        raise KeyError(f"no stored scenario for run {run_id!r} (results not read from a store)")

    def config(self, run_id: str) -> dict[str, Any] | None:
        """The normalized configuration one run gave the engine (as stored beside it in its
        batch's runs.jsonl), or None when these results were not read from a store."""
        docs = self.__dict__.get("_docs")
        if docs is None:
            return None
        try:
            return docs(run_id).get("config")
        except KeyError:
            return None

    def scan(self, name: str) -> pl.LazyFrame:
        """One table as a polars LazyFrame, rows in the order of `self.tables[name]`: over the
        store's batch files when the results come from a local store and the table is not in
        memory (a query that selects a few columns reads only those), else over the frame."""
        scan = self.__dict__.get("_scan")
        tables = self.tables
        if scan is None or (isinstance(tables, LazyTables) and name in tables.loaded()) or not isinstance(tables, LazyTables):
            return tables[name].lazy() if name in tables else pl.LazyFrame()
        return scan(name) if name in tables else pl.LazyFrame()

    def columns(self, name: str, columns: list[str]) -> pl.DataFrame:
        """The columns of `columns` that table `name` has (in that order, rows in the table's
        order, one chunk), read without the others: what a summary reads of a large study."""
        read = self.__dict__.get("_columns")
        tables = self.tables
        if read is None or not isinstance(tables, LazyTables) or name in tables.loaded():
            return collect_columns(tables[name].lazy() if name in tables else pl.LazyFrame(), columns)
        return read(name, columns) if name in tables else pl.DataFrame()

    def column_names(self, name: str) -> list[str]:
        """The columns table `name` has (from the files' schemas: no row read)."""
        read = self.__dict__.get("_column_names")
        tables = self.tables
        if read is None or not isinstance(tables, LazyTables) or name in tables.loaded():
            return tables[name].columns if name in tables else []
        return read(name) if name in tables else []

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

    def plot(self, out: str | Path | None = None) -> list[Path]:
        """Write the standard figures (PNG and SVG) into `out` (default: the study's own
        ``figures/`` folder, so nothing lands in the current directory); returns the files."""
        from mpsched.analysis.figures import save_all

        if out is None:
            if self.path is None:
                raise ValueError("these results are in memory only (run without a directory); "
                                 "give plot() a folder to write the figures to")
            out = self.path / "figures"
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
        table counts what the connections refused their scheduler, Rust or Python, per flow,
        kind and reason)."""
        f = self.columns("flows", ["run_id", "completed", "size_bytes"])  # not the whole table
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
        tables = self.tables
        shown = tables.loaded() if isinstance(tables, LazyTables) else list(tables)
        sizes = ", ".join(f"{k}={tables[k].height}" for k in shown)
        where = f" at {str(self.path)!r}" if self.path else ""
        return f"<Results: {self.runs.height} runs{where}; params={self.params}; rows: {sizes}>"


def collect_columns(lf: pl.LazyFrame, columns: list[str]) -> pl.DataFrame:
    """The columns of `columns` that `lf` has (no other column read), as one chunk: what a
    frame put in run order by sorting is, so float arithmetic on it gives the same bits."""
    have = set(lf.collect_schema().names())
    return lf.select([c for c in dict.fromkeys(columns) if c in have]).collect().rechunk()


class LazyTables(Mapping):
    """Tables read from the store when first used (a study's time series can be large; the
    summary needs only `flows` and `subflows`), some given already in memory."""

    def __init__(self, names: list[str], read: Callable[[str], pl.DataFrame], loaded: dict[str, pl.DataFrame] | None = None):
        self._names = list(dict.fromkeys([*names, *(loaded or {})]))
        self._read = read
        self._loaded = dict(loaded or {})

    def __getitem__(self, name: str) -> pl.DataFrame:
        if name not in self._names:
            raise KeyError(name)
        if name not in self._loaded:
            self._loaded[name] = self._read(name)
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names  # without reading the table (Mapping's own would)

    def __len__(self) -> int:
        return len(self._names)

    def __setitem__(self, name: str, df: pl.DataFrame) -> None:
        """Replace (or add) a table in memory; the store is not written."""
        if name not in self._names:
            self._names.append(name)
        self._loaded[name] = df

    def load_all(self) -> dict[str, pl.DataFrame]:
        return {n: self[n] for n in self._names}

    def loaded(self) -> list[str]:
        """The names read (or given) so far."""
        return list(self._loaded)


class _LazyMeta(Mapping):
    """run id -> meta, read from the batches' runs.jsonl when first used."""

    def __init__(self, ids: pl.Series, docs: Callable[[str], dict]):
        self._ids, self._docs = ids, docs

    def __getitem__(self, run_id: str) -> dict:
        try:
            return self._docs(run_id)["meta"]
        except KeyError:
            raise KeyError(run_id) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


def order_rows(df: pl.DataFrame, order: pl.DataFrame) -> pl.DataFrame:
    """Rows in run order (`order`: the study's run ids, in run-index order), each run's rows as
    the engine gave them; rows of runs not in `order` last."""
    if df.is_empty() or "run_id" not in df.columns:
        return df
    return _in_order(df.lazy(), order).collect()


def _in_order(lf: pl.LazyFrame, order: pl.DataFrame) -> pl.LazyFrame:
    rank = order.lazy().select("run_id", pl.int_range(pl.len(), dtype=pl.Int64).alias("_rank"))
    return (lf.with_row_index("_row").join(rank, on="run_id", how="left")
            .with_columns(pl.col("_rank").fill_null(order.height))
            .sort("_rank", "_row").drop("_rank", "_row"))


def from_store(store: Store, run_ids: Iterable[str] | None = None, version: str | None = None) -> Results:
    """The study in `store` as `Results` (each run from the one batch that holds it; see
    `Store.owners`), restricted to `run_ids` when given. Nothing per run is held in Python
    objects: which batch holds which run is a frame, the tables are read (or scanned, only the
    columns a summary needs: `Results.scan`) when first used."""
    held = holdings(store)
    kept = owners(held, version)
    if run_ids is not None:
        kept = kept.filter(pl.col("run_id").is_in(ids_series(run_ids).implode()))
    per_batch = held.group_by("batch").len("runs")
    del held
    batches = (kept.group_by("batch").agg(pl.len().alias("kept"), pl.col("first_index").first())
               .join(per_batch, on="batch").sort("first_index", "batch"))
    whole = dict(zip(batches.get_column("batch").to_list(),
                     (batches.get_column("kept") == batches.get_column("runs")).to_list()))

    def mine(name: str) -> pl.Series:
        return kept.filter(pl.col("batch") == name).get_column("run_id")

    def read(name: str) -> list[pl.DataFrame]:
        frames = []
        for b, complete in whole.items():
            df = store.read_table(b, name)
            if "run_id" in df.columns and not complete:
                df = df.filter(pl.col("run_id").is_in(mine(b).implode()))
            frames.append(df)
        return frames

    runs = concat(read("run"))
    runs = runs.sort("index", "run_id") if "index" in runs.columns else runs
    order = runs.select("run_id") if runs.height else pl.DataFrame(schema={"run_id": pl.String})
    # a study written in one go has its batches' runs already in run order (each batch's rows run
    # by run, as its batch.json lists them): then the tables need no sorting, and a scan reads no
    # run id it is not asked for
    stored = (kept.join(batches.select("batch", pl.int_range(pl.len()).alias("_b")), on="batch", maintain_order="left")
              .sort("_b", maintain_order=True).get_column("run_id"))
    in_order = stored.equals(order.get_column("run_id"), check_names=False)
    del stored

    def table(name: str) -> pl.DataFrame:
        df = concat(read(name))
        # one chunk, as the sort gives: polars' float arithmetic can differ in the last bit
        # between chunk layouts (x / 1e6 on a long chunk vs a one-row one)
        return df.rechunk() if in_order else order_rows(df, order)

    def files(name: str) -> Iterator[tuple[str, Path, bool]]:
        # a local store's files of table `name`: batch, path, and whether all its runs are kept
        for b, complete in whole.items():
            path = store.root / b / f"{name}.parquet"
            if path.is_file():
                yield b, path, complete

    def scan(name: str) -> pl.LazyFrame:
        if not store.local:
            return table(name).lazy()
        parts = []
        for b, path, complete in files(name):
            lf = pl.scan_parquet(path)
            if not complete and "run_id" in lf.collect_schema().names():
                lf = lf.filter(pl.col("run_id").is_in(mine(b).implode()))
            parts.append(lf)
        if not parts:
            return pl.LazyFrame()
        lf = pl.concat(parts, how="diagonal_relaxed") if len(parts) > 1 else parts[0]
        return _in_order(lf, order) if not in_order and "run_id" in lf.collect_schema().names() else lf

    def columns(name: str, wanted: list[str]) -> pl.DataFrame:
        # file by file, only the wanted columns (and the run id where rows must be picked or
        # ordered): far less working memory than a lazy scan over many small files
        if not store.local:
            return collect_columns(table(name).lazy(), wanted)
        wanted = list(dict.fromkeys(wanted))
        frames = []
        for b, path, complete in files(name):
            have = pl.read_parquet_schema(path)
            cols = [c for c in wanted if c in have]
            if "run_id" in have and "run_id" not in cols and (not complete or not in_order):
                cols.append("run_id")
            if not cols:
                continue
            df = pl.read_parquet(path, columns=cols)
            if not complete and "run_id" in df.columns:
                df = df.filter(pl.col("run_id").is_in(mine(b).implode()))
            frames.append(df)
        df = concat(frames)
        if not in_order and "run_id" in df.columns:
            df = order_rows(df, order)
        return df.select([c for c in wanted if c in df.columns]).rechunk()

    def column_names(name: str) -> list[str]:
        if not store.local:
            return table(name).columns
        out: dict[str, None] = {}
        for _, path, _ in files(name):
            out.update(dict.fromkeys(pl.read_parquet_schema(path)))
        return list(out)

    names = list(TABLES)
    for b in whole:  # tables beyond the standard ones (e.g. `events`), in a stable order
        names += [n for n in store.table_names(b) if n not in names]
    docs: dict[str, dict] = {}
    where: dict[str, str] = {}

    def doc(run_id: str) -> dict:
        if run_id not in docs:
            if not where:  # which batch holds each run: built only when a run's documents are asked for
                where.update(zip(kept.get_column("run_id").to_list(), kept.get_column("batch").to_list()))
            docs.update(store.read_runs(where[run_id]))
        return docs[run_id]

    fixed = {"run_id", "engine", "index", "scenario_hash"}
    params = [c for c in runs.columns if c not in fixed]
    res = Results(LazyTables(names, table), runs, params, _LazyMeta(order.get_column("run_id"), doc),
                  store.root if store.local else store.url)
    res._docs = doc
    res._scan = scan
    res._columns = columns
    res._column_names = column_names
    return res


def load(path: str | Path, run_ids: Iterable[str] | None = None) -> Results:
    """Read a results directory (written by `mpsched run`; a local path or an fsspec URL) back
    into a `Results`. Only complete batches are read; `run_ids` restricts to those runs. Tables
    are read when first used."""
    store = Store(path)
    if not store.exists():
        raise FileNotFoundError(f"no results directory at {str(path)!r}")
    return from_store(store, run_ids)
