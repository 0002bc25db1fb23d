"""`mpsched show`, `compare`, `plot` and `schedulers`: a stored study summarised, compared, drawn; the catalogue."""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from mpsched.cli.common import EXIT_BAD_INPUT, EXIT_FAILED, _FORCE_HELP, _c, _escape, _fail, _load, _with_source, app


def _print_table(df, title: str) -> None:
    from mpsched.analysis.report import print_frame

    print_frame(df, title, _c.out)


def _print_summary(res, baseline: str | None = None, by: list[str] | None = None) -> None:
    """The answer to "which scheduler is better here, by how much, and is it real?" (on a
    [topology]: links, fairness and FCT per class)."""
    from mpsched.analysis import is_datacenter
    from mpsched.analysis.compare import compare
    from mpsched.analysis.report import print_comparison, print_datacenter

    if is_datacenter(res):
        print_datacenter(res, _c.out)
        return
    if res.flows.is_empty():
        _c.out.print("no flows recorded")
        return
    from mpsched.study.safety import DamagedRun

    try:
        cmp = compare(res, baseline=baseline, by=by)
    except DamagedRun:
        raise  # not a bad --baseline / --by: the caller says it in one line
    except ValueError as e:
        _fail(_escape(str(e)), EXIT_BAD_INPUT)
    print_comparison(cmp, _c.out)
    from mpsched.analysis import has_resilience, has_rpc, resilience_summary, rpc_summary

    if has_resilience(res):
        _print_table(_with_intervals(resilience_summary(res)),
                     "Failover and real-time traffic (ms; means over seeds, [95 % t interval over seeds])")
    if has_rpc(res):
        _print_table(rpc_summary(res), "Request / response latency (ms; seeds pooled)")


def _with_intervals(df):
    """The resilience summary with each interval beside its mean in one cell: failover
    ``1339 [1210, 1460]`` (ms), missed ``12.2 % [11.0, 13.4]``; a bare mean where a group has
    fewer than two seeds."""
    import polars as pl

    def fmt(col: str, scale: float, digits: int, unit: str) -> pl.Expr:
        num = [(pl.col(c) * scale).round(digits) for c in (col, f"{col}_low", f"{col}_high")]
        num = [(n.cast(pl.Int64) if digits == 0 else n).cast(pl.String) for n in num]
        mean = num[0] + pl.lit(unit)
        both = pl.col(f"{col}_low").is_not_null() & pl.col(f"{col}_high").is_not_null()
        return pl.when(both).then(pl.concat_str(mean, pl.lit(" ["), num[1], pl.lit(", "), num[2], pl.lit("]"))) \
            .otherwise(mean).alias(col)

    for col, scale, digits, unit in (("failover_ms", 1.0, 0, ""), ("deadline_miss_rate", 100.0, 1, " %")):
        if {col, f"{col}_low", f"{col}_high"} <= set(df.columns):
            df = df.with_columns(fmt(col, scale, digits, unit)).drop(f"{col}_low", f"{col}_high")
    return df


def _open(path: Path):
    """The study at `path`, refused in one line when it is missing, empty or damaged (a batch
    file truncated by a crash or a full disk: shown without it, the summary would quietly lose
    those runs)."""
    from mpsched.study.results import load
    from mpsched.study.store import Store

    if not path.is_dir():
        _fail(f"no results directory at {_escape(str(path))}", EXIT_BAD_INPUT)
    with _c.err.status(f"reading {path}"):
        damaged = Store(path).damaged(docs=False)  # runs.jsonl: named when read (`_damage_is_one_line`)
        if damaged:
            _fail_damaged(path, damaged)
        with _damage_is_one_line(path):
            res = load(path)
    from mpsched.study.manifest import incomplete

    for command, stored, planned in incomplete(path):  # a stopped study is not shown as a whole one
        _c.err.print(f"warning: {path} is incomplete: {stored} of {planned} run(s) of `{command}` are stored (it was "
                     f"stopped, or runs failed); what follows covers only those; resume with: {command}",
                     highlight=False, markup=False, soft_wrap=True)
    if res.runs.height == 0:
        # a folder of studies (reproduce's, or results/ itself): name the ones inside
        inner = sorted(d.name for d in path.iterdir() if d.is_dir() and Store(d).batches())
        hint = f"; studies in its subfolders: {', '.join(inner[:6])}{', ...' if len(inner) > 6 else ''}; " \
               f"show one of them (mpsched show {path / inner[0]})" if inner else ""
        _fail(_escape(f"{path} holds no complete run{hint}"), EXIT_BAD_INPUT)
    return res


def _fail_damaged(path: Path, damaged: dict[str, str]) -> None:
    first = next(iter(damaged.values()))
    more = f" (and {len(damaged) - 1} more batch(es))" if len(damaged) > 1 else ""
    _fail(_escape(f"{path} holds damaged results: {first}{more}; run the study again (`mpsched run SCENARIO -o "
                  f"{path}`) to recompute only those runs, or remove the damaged batch folder(s)"), EXIT_FAILED)


@contextmanager
def _damage_is_one_line(path: Path):
    """A file found damaged only when read (its footer was fine) fails the command in one line."""
    from mpsched.study.safety import DamagedRun

    try:
        yield
    except DamagedRun as e:
        _fail(_escape(str(e)), EXIT_FAILED)


@app.command()
def show(
    path: Path = typer.Argument(..., help="Study directory written by `mpsched run`."),
    fmt: str = typer.Option("table", "--format", "-f", help="table, csv or json."),
) -> None:
    """Summarise a study: as a table, each scheduler against the baseline (see `compare`); as
    csv or json, FCT median / p95 / mean and path shares per scheduler and setting (on a
    [topology]: link utilisation per tier, Jain's index, FCT per flow class)."""
    if fmt not in ("table", "csv", "json"):
        _fail(f"unknown format {_escape(fmt)!r}; use table, csv or json", EXIT_BAD_INPUT)
    res = _open(path)
    with _damage_is_one_line(path):
        _show(res, fmt)


def _show(res, fmt: str) -> None:
    if fmt == "table":
        _print_summary(res)
        return
    from mpsched.analysis import class_fct_summary, datacenter_summary, fct_summary, is_datacenter

    if is_datacenter(res):  # FCT per class, with the links' utilisation and fairness per setting
        df = class_fct_summary(res)
        links = datacenter_summary(res)
        if not links.is_empty():
            keys = [c for c in links.columns if c in df.columns]
            df = df.join(links, on=keys, how="left", maintain_order="left") if keys else df.join(links, how="cross")
    else:
        df = fct_summary(res)
    sys.stdout.write(df.write_csv() if fmt == "csv" else df.write_json() + "\n")


@app.command()
def compare(
    path: Path = typer.Argument(..., help="Study directory written by `mpsched run`."),
    baseline: Optional[str] = typer.Option(None, "--baseline", "-b", help="Scheduler to compare against (default: minrtt if present, else the first)."),
    by: Optional[list[str]] = typer.Option(None, "--by", help="Swept parameter(s) that make a row's setting; the others are pooled (default: all)."),
    fmt: str = typer.Option("table", "--format", "-f", help="table, csv or json."),
) -> None:
    """Each scheduler against a baseline, per setting: median / mean / p95, the difference of the
    median in % with a bootstrap 95 % interval (paired by seed and flow), a verdict, and what the
    schedulers did (retransmissions, RTOs, paths); identical schedulers share a row."""
    if fmt not in ("table", "csv", "json"):
        _fail(f"unknown format {_escape(fmt)!r}; use table, csv or json", EXIT_BAD_INPUT)
    res = _open(path)
    with _damage_is_one_line(path):
        if fmt == "table":
            _print_summary(res, baseline, by)
            return
        from mpsched.analysis.compare import compare as compare_
        from mpsched.study.safety import DamagedRun

        try:
            df = compare_(res, baseline=baseline, by=by).table
        except DamagedRun:
            raise
        except ValueError as e:
            _fail(_escape(str(e)), EXIT_BAD_INPUT)
    sys.stdout.write(df.write_csv() if fmt == "csv" else df.write_json() + "\n")


@app.command()
def plot(
    path: Path = typer.Argument(..., help="Study directory written by `mpsched run`."),
    fig_dir: Optional[Path] = typer.Option(None, "--out", "-o", help="Where to write figures (default: DIR/figures)."),
    run_id: Optional[str] = typer.Option(None, "--run", help="Time series of this run's setting and seed (default: where the schedulers differ most)."),
) -> None:
    """Draw the standard figures: FCT against size and the difference from the baseline (with
    intervals), box plots and CDFs, subflow and receive-buffer time series."""
    from mpsched.analysis.figures import save_all

    from mpsched.study.safety import OutputUnusable, prepare_dir

    res = _open(path)
    target = fig_dir or path / "figures"
    if run_id is not None and run_id not in res.runs.get_column("run_id").to_list():
        _fail(f"no run {_escape(run_id)!r} in {_escape(str(path))}", EXIT_BAD_INPUT)
    try:
        prepare_dir(target)
        with _c.err.status("drawing figures"), _damage_is_one_line(path):
            files = save_all(res, target, run_id)
    except OutputUnusable as e:
        _fail(_escape(str(e)), EXIT_BAD_INPUT)
    except OSError as e:  # e.g. the disk filled up
        _fail(_escape(f"cannot write the figures to {target}: {e}"), EXIT_FAILED)
    _c.err.print(f"{len(files)} file(s) in {target}", highlight=False, markup=False)


@app.command()
def schedulers() -> None:
    """List the schedulers the core offers, with their parameters and defaults."""
    from mpsched.registry import schedulers as registry

    reg = registry()
    if reg is None:
        _fail("this build of the core does not export its scheduler registry (schedulers_json); rebuild with `make setup`",
              EXIT_FAILED)
    table = Table(title="Schedulers")
    for c in ("name", "kind", "parameters (defaults)", "description", "source"):
        table.add_column(c)
    for s in reg:
        params = "\n".join(f"{k} = {json.dumps(v)}" for k, v in s.default_params.items()) or "–"
        table.add_row(s.name, "extension" if s.is_extension else "scheduler", params, s.summary, s.source)
    _c.out.print(table)
