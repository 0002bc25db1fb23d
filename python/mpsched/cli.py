"""The `mpsched` command: run scenarios, list schedulers, summarise and plot studies.

A bad scenario prints one message naming the field and exits with status 2 (like a usage error);
an engine failure prints its message and exits with 1. Neither prints a Python traceback.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(
    help="mpsched: a laboratory for MPTCP packet schedulers.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


class _Consoles:
    """Rich consoles made on use, so they write to whatever sys.stdout / sys.stderr are then
    (test runners swap them); a wide virtual width when the output is not a terminal, so a
    summary piped to a file is not truncated."""

    def __getattr__(self, name: str) -> Console:
        stream = sys.stderr if name == "err" else sys.stdout
        width = None if stream.isatty() else 160
        return Console(file=stream, width=width, stderr=name == "err")


_c = _Consoles()

EXIT_BAD_INPUT = 2
EXIT_FAILED = 1


def _fail(message: str, status: int) -> None:
    _c.err.print(f"[bold red]error:[/] {message}", highlight=False, markup=True, soft_wrap=True)
    raise typer.Exit(status)


@app.callback()
def _root() -> None:
    """mpsched: a laboratory for MPTCP packet schedulers."""


@app.command()
def version() -> None:
    """Print the version of the package and its compiled core."""
    import mpsched

    typer.echo(mpsched.__version__)


def _load(path: Path):
    from mpsched.scenario import ScenarioError, load_scenario

    try:
        return load_scenario(path)
    except ScenarioError as e:
        _fail(_escape(str(e)), EXIT_BAD_INPUT)


def _with_source(e, path: Path) -> str:
    """Errors found after loading (unit checks on expanded runs) name the file too."""
    return str(e) if e.source else f"{path}: {e}"


def _escape(s: str) -> str:
    from rich.markup import escape

    return escape(s)


@app.command()
def check(scenario: Path = typer.Argument(..., help="Scenario TOML file.")) -> None:
    """Validate a scenario and show what it expands to, without running it."""
    from mpsched.study import describe, plan
    from mpsched.scenario import ScenarioError

    s = _load(scenario)
    try:
        tasks = plan(s)
    except ScenarioError as e:
        _fail(_escape(_with_source(e, scenario)), EXIT_BAD_INPUT)
    d = describe(s)
    _c.out.print(f"{scenario}: valid, {d['runs']} run(s), {sum(len(t.config['flows']) for t in tasks)} flow(s)")
    if s.topology is not None:
        n_links = sorted({len(t.config["links"]) for t in tasks})  # a swept k changes it
        _c.out.print(f"  topology: {s.topology.kind}, {' / '.join(map(str, n_links))} links", highlight=False)
    for label, values in d["axes"].items():
        _c.out.print(f"  {label}: {', '.join(map(str, values))}", highlight=False)
    if "design" in d:
        ds = d["design"]
        _c.out.print(f"  design: {ds['kind']}, {ds['samples']} points", highlight=False)
        for label, (lo, hi) in ds["ranges"].items():
            scale = " (log)" if label in ds["log"] else ""
            _c.out.print(f"    {label}: {lo} .. {hi}{scale}", highlight=False)


@app.command()
def run(
    scenario: Path = typer.Argument(..., help="Scenario TOML file."),
    out_dir: Optional[Path] = typer.Option(None, "--out", "-o", help="Study directory (default: results/<scenario name>)."),
    engine: str = typer.Option("sim", "--engine", "-e", help="sim (the simulator) or kernel (the Linux testbed)."),
    jobs: int = typer.Option(0, "--jobs", "-j", help="Parallel runs (default: number of CPUs)."),
) -> None:
    """Run every combination of a scenario and store the results (resumes an interrupted study)."""
    from mpsched import engines
    from mpsched.study.progress import run_progress
    from mpsched.study import RunFailed, check_topology_engine, plan
    from mpsched.study import run as run_study
    from mpsched.scenario import ScenarioError

    s = _load(scenario)
    try:
        check_topology_engine(s, engine)
        engines.check_engine(engine)
        n = len(plan(s, engine))
    except ScenarioError as e:
        _fail(_escape(_with_source(e, scenario)), EXIT_BAD_INPUT)
    except engines.EngineUnavailable as e:
        _fail(_escape(str(e)), EXIT_FAILED)
    target = out_dir or Path("results") / s.name
    jobs = jobs if jobs > 0 else (os.cpu_count() or 1)
    _c.err.print(f"{n} run(s) of {scenario} on the {engine} engine -> {target}", highlight=False)
    try:
        with run_progress(n, _c.err) as update:
            res = run_study(s, target, engine=engine, jobs=jobs, on_progress=update)
    except RunFailed as e:
        _fail(_escape(str(e)), EXIT_FAILED)
    _print_summary(res)
    _c.err.print(f"results: {target}  (query: {target}/*/flows.parquet)", highlight=False)


@app.command()
def validate(
    scenario: Optional[Path] = typer.Argument(None, help="Scenario TOML file (two or more paths, sized flows)."),
    grid: Optional[Path] = typer.Option(None, "--grid", help="Re-measure the kernel side of an agreement grid (a folder of scenarios) and rewrite its kernel.csv."),
    cells: Optional[str] = typer.Option(None, "--cells", help="With --grid: only the cells whose id contains this."),
    out_dir: Optional[Path] = typer.Option(None, "--out", "-o", help="Where to write tables and figures (default: results/<name>-validation)."),
    repetitions: int = typer.Option(3, "--repetitions", "-r", min=1, help="Kernel repetitions per run (the kernel is noisy)."),
    sim_seeds: int = typer.Option(3, "--sim-seeds", min=1, help="Simulator seeds per run."),
) -> None:
    """Run a scenario on the simulator and on the kernel testbed side by side: FCT per size, the
    simulator median's relative error, per-path byte shares, and a CDF figure (needs root)."""
    if grid is not None:
        return _validate_grid(grid, cells)
    if scenario is None:
        _fail("give a scenario file, or --grid DIR", EXIT_BAD_INPUT)
    from mpsched import engines
    from mpsched.study import check_topology_engine, plan
    from mpsched.scenario import ScenarioError

    s = _load(scenario)
    try:
        check_topology_engine(s, "kernel")
        engines.check_engine("kernel")
        tasks = plan(s, "kernel")
    except ScenarioError as e:
        _fail(_escape(_with_source(e, scenario)), EXIT_BAD_INPUT)
    except engines.EngineUnavailable as e:
        _fail(_escape(str(e)), EXIT_FAILED)
    from mpsched.study.validate import run_validation

    target = out_dir or Path("results") / f"{s.name}-validation"
    for task in tasks:
        where = ", ".join(f"{k}={v}" for k, v in task.params.items()) or "the scenario"
        run_dir = target / task.run_id
        _c.err.print(f"validating {where}: {repetitions} kernel run(s), {sim_seeds} simulator seed(s) -> {run_dir}", highlight=False)
        try:
            result = run_validation(task.config, repetitions=repetitions, sim_seeds=sim_seeds, out=run_dir)
        except engines.EngineError as e:
            _fail(_escape(str(e)), EXIT_FAILED)
        for name in ("fct", "path_share"):
            cols = result[name]
            table = Table(title=f"{name} ({where})")
            for c in cols:
                table.add_column(c, justify="right")
            for row in zip(*cols.values()):
                table.add_row(*(_cell(v) for v in row))
            _c.out.print(table)
            run_dir.mkdir(parents=True, exist_ok=True)
            (run_dir / f"{name}.json").write_text(json.dumps(cols, indent=1))


def _validate_grid(grid: Path, only: Optional[str]) -> None:
    from mpsched import engines
    from mpsched.scenario import ScenarioError
    from mpsched.study import grid as g

    try:
        engines.check_engine("kernel")
        path = g.remeasure(grid, only, on_cell=lambda c, rows: _c.err.print(f"{c.id}: {len(rows)} flows", highlight=False))
    except ScenarioError as e:
        _fail(_escape(str(e)), EXIT_BAD_INPUT)
    except engines.EngineError as e:
        _fail(_escape(str(e)), EXIT_FAILED)
    _c.out.print(g.markdown(g.report(grid)), highlight=False, markup=False)
    _c.err.print(f"kernel measurements: {path}", highlight=False)


def _print_table(df, title: str) -> None:
    import polars as pl

    table = Table(title=title, show_lines=False)
    for c in df.columns:
        table.add_column(_HEADERS.get(c, c), justify="left" if df.schema[c] == pl.String else "right")
    for row in df.iter_rows():
        table.add_row(*(_cell(v) for v in row))
    _c.out.print(table)


def _print_datacenter(res) -> None:
    """A study on a [topology]: link utilisation per tier and fairness, then FCT per class."""
    from mpsched.analysis import class_fct_summary, datacenter_summary

    links = datacenter_summary(res)
    if not links.is_empty():
        _print_table(links, f"Links and fairness ({res.runs.height} runs, seeds pooled)")
    classes = class_fct_summary(res)
    if classes.is_empty():
        _c.out.print("no flows recorded")
        return
    _print_table(classes, "Flows per class (FCT of completed sized flows)")


def _print_summary(res) -> None:
    import polars as pl

    from mpsched.analysis import fct_summary, is_datacenter

    if is_datacenter(res):
        _print_datacenter(res)
        return
    df = fct_summary(res)
    if df.is_empty():
        _c.out.print("no flows recorded")
        return
    table = Table(title=f"Flow completion time ({res.runs.height} runs, seeds pooled)", show_lines=False)
    for c in df.columns:
        table.add_column(_HEADERS.get(c, c.replace("share_", "on ")), justify="left" if df.schema[c] == pl.String else "right")
    for row in df.iter_rows():
        table.add_row(*(_cell(v) for v in row))
    _c.out.print(table)


_HEADERS = {"completed": "done", "fct_median_s": "FCT p50 (s)", "fct_p95_s": "FCT p95 (s)",
            "fct_mean_s": "FCT mean (s)", "redundant_share": "redundant",
            "fct_median_ms": "FCT p50 (ms)", "fct_p99_ms": "FCT p99 (ms)", "fct_mean_ms": "FCT mean (ms)",
            "goodput_mbps": "goodput (Mbit/s)", "util_host": "util host", "util_edge_agg": "util edge-agg",
            "util_agg_core": "util core", "util_access": "util access", "util_bottleneck": "util bottleneck",
            "jain_bulk": "Jain (bulk)"}


def _cell(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 1000 else f"{v:.0f}"
    return str(v)


def _open(path: Path):
    from mpsched.study.results import load

    if not path.is_dir():
        _fail(f"no results directory at {_escape(str(path))}", EXIT_BAD_INPUT)
    with _c.err.status(f"reading {path}"):
        res = load(path)
    if res.runs.height == 0:
        _fail(f"{_escape(str(path))} holds no complete run", EXIT_BAD_INPUT)
    return res


@app.command()
def show(
    path: Path = typer.Argument(..., help="Study directory written by `mpsched run`."),
    fmt: str = typer.Option("table", "--format", "-f", help="table, csv or json."),
) -> None:
    """Summarise a study: FCT median / p95 / mean per scheduler and setting, path shares (on a
    [topology]: link utilisation per tier, Jain's index, FCT per flow class)."""
    if fmt not in ("table", "csv", "json"):
        _fail(f"unknown format {_escape(fmt)!r}; use table, csv or json", EXIT_BAD_INPUT)
    res = _open(path)
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
def plot(
    path: Path = typer.Argument(..., help="Study directory written by `mpsched run`."),
    fig_dir: Optional[Path] = typer.Option(None, "--out", "-o", help="Where to write figures (default: DIR/figures)."),
) -> None:
    """Draw the standard figures (FCT box plots and CDFs, subflow and receive-buffer time series)."""
    from mpsched.analysis.figures import save_all

    res = _open(path)
    target = fig_dir or path / "figures"
    with _c.err.status("drawing figures"):
        files = save_all(res, target)
    _c.err.print(f"{len(files)} file(s) in {target}", highlight=False)


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


@app.command()
def reproduce(
    study: Optional[str] = typer.Argument(None, help="Study name (see --list): a folder of experiments/."),
    list_: bool = typer.Option(False, "--list", help="List the studies and exit."),
    out_dir: Optional[Path] = typer.Option(None, "--out", "-o", help="Results directory (default: results/experiments/<study>[-quick])."),
    quick: bool = typer.Option(False, "--quick", help="A reduced version (fewer seeds, repeats, sizes) that runs in seconds."),
    jobs: int = typer.Option(0, "--jobs", "-j", help="Parallel runs (default: number of CPUs)."),
) -> None:
    """Run a reproduction study of experiments/ and print the published figures beside ours, and
    whether each of the paper's claims holds in our results."""
    from mpsched import experiments as ex
    from mpsched.study import RunFailed
    from mpsched.scenario import ScenarioError

    if list_ or study is None:
        for name in ex.STUDIES:
            pub = ex.load_published(name)
            _c.out.print(f"{name:24s} {pub['study']['papers'][0]}  ({pub['study'].get('setup', '')})", highlight=False,
                         soft_wrap=True)
        return
    if study not in ex.STUDIES:
        _fail(f"unknown study {_escape(study)!r}; `mpsched reproduce --list` lists them", EXIT_BAD_INPUT)
    try:
        published = ex.load_published(study)
    except ValueError as e:
        _fail(_escape(str(e)), EXIT_BAD_INPUT)
    target = out_dir or Path("results") / "experiments" / (study + ("-quick" if quick else ""))
    jobs = jobs if jobs > 0 else (os.cpu_count() or 1)
    try:
        ours = ex.run_study(study, target, quick=quick, jobs=jobs, on_file=lambda f, n: _c.err.print(
            f"{study}/{f}: {n} run(s) -> {target / Path(f).stem}", highlight=False))
    except ScenarioError as e:
        _fail(_escape(str(e)), EXIT_BAD_INPUT)
    except RunFailed as e:
        _fail(_escape(str(e)), EXIT_FAILED)
    figures, claims, extra = ex.compare(published, ours)
    if not figures.is_empty():
        _print_table(figures, f"{study}: published figures and ours" + (" (--quick)" if quick else ""))
    if not claims.is_empty():
        _print_table(claims, f"{study}: the papers' claims, checked on our results")
    if not extra.is_empty():
        _print_table(extra, f"{study}: our other numbers (no published counterpart)")
    _c.err.print(f"results: {target}", highlight=False)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        _c.err.print("interrupted; completed runs are kept, run the same command again to resume")
        sys.exit(130)
