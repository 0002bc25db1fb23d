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
    rich_markup_mode=None,  # help texts are plain: a "[topology]" in them is a word, not markup
    context_settings={"help_option_names": ["-h", "--help"]},
)


class _Consoles:
    """Rich consoles made on use, so they write to whatever sys.stdout / sys.stderr are then
    (test runners swap them); a wide virtual width when the output is not a terminal (or
    $COLUMNS), so a summary piped to a file is not truncated."""

    def __getattr__(self, name: str) -> Console:
        stream = sys.stderr if name == "err" else sys.stdout
        width = None if stream.isatty() else int(os.environ.get("COLUMNS", "") or 160)
        return Console(file=stream, width=width, stderr=name == "err")


_c = _Consoles()

EXIT_BAD_INPUT = 2
EXIT_FAILED = 1


def _fail(message: str, status: int) -> None:
    _c.err.print(f"[bold red]error:[/] {message}", highlight=False, markup=True, soft_wrap=True)
    raise typer.Exit(status)


def _print_version(value: bool) -> None:
    if value:
        import mpsched

        typer.echo(f"mpsched {mpsched.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    _version: bool = typer.Option(False, "--version", "-V", callback=_print_version, is_eager=True,
                                  help="Print the version and exit."),
) -> None:
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
    out_dir: Optional[str] = typer.Option(None, "--out", "-o",
                                          help="Study directory or fsspec URL (default: results/<scenario name>)."),
    engine: str = typer.Option("sim", "--engine", "-e", help="sim (the simulator) or kernel (the Linux testbed)."),
    jobs: int = typer.Option(0, "--jobs", "-j", help="Parallel runs (default: number of CPUs)."),
    cluster: Optional[str] = typer.Option(None, "--cluster",
                                          help="Run on Dask: 'local' (a LocalCluster of --jobs processes) or a "
                                               "scheduler's address (tcp://host:8786). See docs/cluster.md."),
    sched: Optional[list[str]] = typer.Option(None, "--scheduler", "-s", help="Run these schedulers instead of the file's (repeatable; a name or package.module:Class)."),
) -> None:
    """Run every combination of a scenario and store the results (resumes an interrupted study)."""
    from contextlib import nullcontext

    from mpsched import engines
    from mpsched.study.progress import run_progress
    from mpsched.study import RunFailed, check_topology_engine, plan
    from mpsched.study import run as run_study
    from mpsched.study.execute import stored_count
    from mpsched.scenario import Scenario, ScenarioError

    s = _load(scenario)
    try:
        if sched:  # every connection sweeps the schedulers given on the command line
            d = s.to_dict()
            for c in d["connection"]:
                c["scheduler"] = list(sched) if len(sched) > 1 else sched[0]
            s = Scenario.from_dict(d, base_dir=scenario.parent, source=str(scenario))
        check_topology_engine(s, engine)
        engines.check_engine(engine)
        tasks = plan(s, engine)  # planned once, here; the study runs these
    except ScenarioError as e:
        _fail(_escape(_with_source(e, scenario)), EXIT_BAD_INPUT)
    except engines.EngineUnavailable as e:
        _fail(_escape(str(e)), EXIT_FAILED)
    target = out_dir or str(Path("results") / s.name)
    jobs = jobs if jobs > 0 else (os.cpu_count() or 1)
    stored = stored_count(target, [t.run_id for t in tasks])
    resumed = f"; {stored} of {len(tasks)} already stored, {len(tasks) - stored} to run" if stored else ""
    where = f" on Dask ({cluster})" if cluster else ""
    _c.err.print(f"{len(tasks)} run(s) of {scenario} on the {engine} engine{where} -> {target}{resumed}", highlight=False)
    client, client_cm = None, nullcontext()
    if cluster:
        from mpsched.study.cluster import ClusterUnavailable, connect, dashboard

        try:
            client_cm = connect(cluster, jobs)
            client = client_cm.__enter__()
        except ClusterUnavailable as e:
            _fail(_escape(str(e)), EXIT_FAILED)
        if link := dashboard(client):
            _c.err.print(f"Dask dashboard: {link}", highlight=False)
    try:
        with run_progress(len(tasks), _c.err) as update:
            res = run_study(s, target, engine=engine, jobs=jobs, on_progress=update, client=client, tasks=tasks)
    except RunFailed as e:
        _fail(_escape(str(e)), EXIT_FAILED)
    except ValueError as e:  # e.g. a Python scheduler that cannot travel to the cluster
        _fail(_escape(str(e)), EXIT_BAD_INPUT)
    finally:
        client_cm.__exit__(None, None, None)
    _print_summary(res)
    _c.err.print(f"results: {target}  (query: {target}/*/flows.parquet)", highlight=False)


@app.command()
def validate(
    scenario: Path = typer.Argument(..., help="Scenario TOML file (two or more paths, sized flows)."),
    out_dir: Optional[Path] = typer.Option(None, "--out", "-o", help="Where to write tables and figures (default: results/<name>-validation)."),
    repetitions: int = typer.Option(3, "--repetitions", "-r", min=1, help="Kernel repetitions per run (the kernel is noisy)."),
    sim_seeds: int = typer.Option(3, "--sim-seeds", min=1, help="Simulator seeds per run."),
) -> None:
    """Run a scenario on the simulator and on the kernel testbed side by side: FCT per size, the
    simulator median's relative error, per-path byte shares, and a CDF figure (needs root)."""
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
            _print_table(pl.DataFrame(cols, strict=False), f"{name} ({where})")
            run_dir.mkdir(parents=True, exist_ok=True)
            (run_dir / f"{name}.json").write_text(json.dumps(cols, indent=1))


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
    try:
        cmp = compare(res, baseline=baseline, by=by)
    except ValueError as e:
        _fail(_escape(str(e)), EXIT_BAD_INPUT)
    print_comparison(cmp, _c.out)


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
    """Summarise a study: as a table, each scheduler against the baseline (see `compare`); as
    csv or json, FCT median / p95 / mean and path shares per scheduler and setting (on a
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
    if fmt == "table":
        _print_summary(res, baseline, by)
        return
    from mpsched.analysis.compare import compare as compare_

    try:
        df = compare_(res, baseline=baseline, by=by).table
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

    res = _open(path)
    target = fig_dir or path / "figures"
    if run_id is not None and run_id not in res.runs.get_column("run_id").to_list():
        _fail(f"no run {_escape(run_id)!r} in {_escape(str(path))}", EXIT_BAD_INPUT)
    with _c.err.status("drawing figures"):
        files = save_all(res, target, run_id)
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
    all_: bool = typer.Option(False, "--all", help="Every study, into one report (runs in <out>/<study>/)."),
    out_dir: Optional[Path] = typer.Option(None, "--out", "-o", help="Results and report directory (default: results/experiments/<study>[-quick], with --all results/report[-quick])."),
    quick: bool = typer.Option(False, "--quick", help="A reduced version (fewer seeds, repeats, sizes) that runs in seconds."),
    jobs: int = typer.Option(0, "--jobs", "-j", help="Parallel runs (default: number of CPUs)."),
) -> None:
    """Run reproduction studies of experiments/: the published figures beside ours, each claim of
    the papers judged on all repetitions (holds / magnitude off / tie / fails, with a 95 %
    interval), and a report, <out>/report.html and report.md."""
    import mpsched
    from mpsched import experiments as ex
    from mpsched.experiments.render import claims_text, write_report
    from mpsched.experiments.report import reproduce as run_one
    from mpsched.study import RunFailed
    from mpsched.scenario import ScenarioError

    if list_ or (study is None and not all_):
        for name in ex.STUDIES:
            pub = ex.load_published(name)
            _c.out.print(f"{name:24s} {pub['study']['papers'][0]}  ({pub['study'].get('setup', '')})", highlight=False,
                         soft_wrap=True)
        return
    if all_ and study is not None:
        _fail("give a study name or --all, not both", EXIT_BAD_INPUT)
    if study is not None and study not in ex.STUDIES:
        _fail(f"unknown study {_escape(study)!r}; `mpsched reproduce --list` lists them", EXIT_BAD_INPUT)
    names = list(ex.STUDIES) if all_ else [study]
    for name in names:
        try:
            ex.load_published(name)
        except ValueError as e:
            _fail(_escape(str(e)), EXIT_BAD_INPUT)
    base = out_dir or Path("results") / ("report" if all_ else Path("experiments") / study)
    base = base if out_dir else base.with_name(base.name + ("-quick" if quick else ""))
    jobs = jobs if jobs > 0 else (os.cpu_count() or 1)
    reps = []
    for name in names:
        target = base / name if all_ else base
        try:
            reps.append(run_one(name, target, quick=quick, jobs=jobs, on_file=lambda f, n, name=name, t=target: _c.err.print(
                f"{name}/{f}: {n} run(s) -> {t / Path(f).stem}", highlight=False)))
        except ScenarioError as e:
            _fail(_escape(str(e)), EXIT_BAD_INPUT)
        except RunFailed as e:
            _fail(_escape(str(e)), EXIT_FAILED)
    if not all_:
        _print_reproduction(reps[0])
    html, _ = write_report(reps, base, version=mpsched.__version__)
    if all_:
        typer.echo(claims_text(reps))
    typer.echo(f"report: {html}")


def _print_reproduction(rep) -> None:
    if not rep.figures_table.is_empty():
        _print_table(rep.figures_table, f"{rep.name}: published figures and ours" + (" (--quick)" if rep.quick else ""))
    if rep.claims:
        _print_table(rep.claims_frame(), f"{rep.name}: the papers' claims, judged on all repetitions")
    if not rep.extra().is_empty():
        _print_table(rep.extra(), f"{rep.name}: our other numbers (no published counterpart)")
    _c.err.print(f"results: {rep.out}", highlight=False)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        _c.err.print("interrupted; completed runs are kept, run the same command again to resume")
        sys.exit(130)
