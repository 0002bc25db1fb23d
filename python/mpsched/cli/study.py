"""`mpsched check`, `run` and `validate`: a scenario checked, run as a study, run on both engines."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from mpsched.cli.common import EXIT_BAD_INPUT, EXIT_FAILED, _CLUSTER_HELP, _FORCE_HELP, _c, _cluster_client, _escape, _fail, _load, _with_source, app
from mpsched.cli.results import _print_summary, _print_table


@app.command()
def check(
    scenario: Path = typer.Argument(..., help="Scenario TOML file."),
    engine: str = typer.Option("sim", "--engine", "-e", help="Check for this engine: sim or kernel."),
    force: bool = typer.Option(False, "--force", help=_FORCE_HELP),
) -> None:
    """Validate a scenario as `run` would (the engine's checks too) and show what it expands to."""
    from mpsched.study import check_topology_engine, describe, plan
    from mpsched.scenario import ScenarioError

    if engine not in ("sim", "kernel"):
        _fail(f"unknown engine {_escape(engine)!r}; available: sim, kernel", EXIT_BAD_INPUT)
    s = _load(scenario)
    try:
        check_topology_engine(s, engine)
        tasks = plan(s, engine, force=force)
    except ScenarioError as e:
        _fail(_escape(_with_source(e, scenario)), EXIT_BAD_INPUT)
    d = describe(s)
    _c.out.print(f"{scenario}: valid, {d['runs']} run(s), {sum(len(t.config['flows']) for t in tasks)} flow(s)", highlight=False, markup=False)
    if s.topology is not None:
        n_links = sorted({len(t.config["links"]) for t in tasks})  # a swept k changes it
        _c.out.print(f"  topology: {s.topology.kind}, {' / '.join(map(str, n_links))} links", highlight=False, markup=False)
    for label, values in d["axes"].items():
        _c.out.print(f"  {label}: {', '.join(map(str, values))}", highlight=False, markup=False)
    if "design" in d:
        ds = d["design"]
        _c.out.print(f"  design: {ds['kind']}, {ds['samples']} points", highlight=False, markup=False)
        for label, (lo, hi) in ds["ranges"].items():
            scale = " (log)" if label in ds["log"] else ""
            _c.out.print(f"    {label}: {lo} .. {hi}{scale}", highlight=False, markup=False)


@app.command()
def run(
    scenario: Path = typer.Argument(..., help="Scenario TOML file."),
    out_dir: Optional[str] = typer.Option(None, "--out", "-o",
                                          help="Study directory or fsspec URL (default: results/<scenario name>)."),
    engine: str = typer.Option("sim", "--engine", "-e", help="sim (the simulator) or kernel (the Linux testbed)."),
    jobs: int = typer.Option(0, "--jobs", "-j", min=0, help="Parallel runs (default, 0: number of CPUs)."),
    cluster: Optional[str] = typer.Option(None, "--cluster", help=_CLUSTER_HELP),
    sched: Optional[list[str]] = typer.Option(None, "--scheduler", "-s", help="Run these schedulers instead of the file's (repeatable; a name or package.module:Class)."),
    force: bool = typer.Option(False, "--force", help=_FORCE_HELP),
) -> None:
    """Run every combination of a scenario and store the results (resumes an interrupted study)."""
    import warnings

    from mpsched import engines
    from mpsched.study.progress import run_progress
    from mpsched.study import RunFailed, check_topology_engine, plan_stream
    from mpsched.study import run as run_study
    from mpsched.study.execute import outdated, stored_count
    from mpsched.scenario import Scenario, ScenarioError

    if engine not in engines.ENGINES:  # a typo is bad input (exit 2, as `check` says it), not a failure
        _fail(f"unknown engine {_escape(engine)!r}; available: {', '.join(engines.ENGINES)}", EXIT_BAD_INPUT)
    s = _load(scenario)
    try:
        if sched:  # every connection sweeps the schedulers given on the command line
            d = s.to_dict()
            for c in d["connection"]:
                c["scheduler"] = list(sched) if len(sched) > 1 else sched[0]
            s = Scenario.from_dict(d, base_dir=scenario.parent, source=str(scenario))
        check_topology_engine(s, engine)
        engines.check_engine(engine)
        tasks = plan_stream(s, engine, force=force)  # checked once, here; the study runs these
    except ScenarioError as e:
        _fail(_escape(_with_source(e, scenario)), EXIT_BAD_INPUT)
    except engines.EngineUnavailable as e:
        _fail(_escape(str(e)), EXIT_FAILED)
    target = out_dir or str(Path("results") / s.name)
    if "://" not in target:  # before any work: a file in its place, no permission (one line)
        from mpsched.study.safety import OutputUnusable, prepare_dir

        try:
            prepare_dir(target)
        except OutputUnusable as e:
            _fail(_escape(str(e)), EXIT_BAD_INPUT)
    jobs = jobs if jobs > 0 else (os.cpu_count() or 1)
    stored = stored_count(target, tasks.run_ids)
    resumed = f"; {stored} of {len(tasks)} already stored, {len(tasks) - stored} to run" if stored else ""
    n_old, old_versions = outdated(target, tasks.run_ids)
    if n_old:  # never replaced without a word
        resumed += (f"; {n_old} run(s) stored by another code version ({', '.join(old_versions[:2])}"
                    f"{', ...' if len(old_versions) > 2 else ''}) are run again and replace them")
    where = f" on Dask ({cluster})" if cluster else ""
    _c.err.print(f"{len(tasks)} run(s) of {scenario} on the {engine} engine{where} -> {target}{resumed}", highlight=False,
                 markup=False)
    from mpsched.study.interrupt import exit_interrupted, resume_command, terminate_as_interrupt
    from mpsched.study.manifest import record_plan

    # everything that changes the runs goes into the command that resumes them
    argv = ["run", scenario, "-o", target] + (["-e", engine] if engine != "sim" else []) \
        + [a for s_ in (sched or []) for a in ("-s", s_)] + (["--force"] if force else [])
    try:
        record_plan(target, tasks.run_ids, resume_command(argv))  # lets `show` tell a stopped study
    except OSError as e:
        _fail(_escape(f"cannot write the results to {target}: {e}"), EXIT_FAILED)
    try:
        with _cluster_client(cluster, jobs) as client, terminate_as_interrupt(), \
                run_progress(len(tasks), _c.err) as update, warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # printed below, once, as "warning: ..."
            res = run_study(s, target, engine=engine, jobs=jobs, on_progress=update, client=client, tasks=tasks,
                            force=force)
    except RunFailed as e:
        _fail(_escape(str(e)), EXIT_FAILED)
    except ValueError as e:  # e.g. a Python scheduler that cannot travel to the cluster, an unusable -o
        _fail(_escape(str(e)), EXIT_BAD_INPUT)
    except OSError as e:  # e.g. the disk filled up while a batch was written: the batches before it are kept
        _fail(_escape(f"cannot write the results to {target}: {e}; completed runs are kept"), EXIT_FAILED)
    except KeyboardInterrupt as e:
        exit_interrupted(e, argv)
    _print_summary(res)
    for w in res.warnings():
        _c.err.print(f"warning: {w}", highlight=False, markup=False)
    _c.err.print(f"results: {target}  (query: {target}/*/flows.parquet)", highlight=False, markup=False)


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
    import polars as pl

    from mpsched.study.validate import run_validation

    target = out_dir or Path("results") / f"{s.name}-validation"
    from mpsched.study.safety import OutputUnusable, prepare_dir

    try:  # before the kernel runs, not after them
        prepare_dir(target)
    except OutputUnusable as e:
        _fail(_escape(str(e)), EXIT_BAD_INPUT)
    for task in tasks:
        where = ", ".join(f"{k}={v}" for k, v in task.params.items()) or "the scenario"
        run_dir = target / task.run_id
        _c.err.print(f"validating {where}: {repetitions} kernel run(s), {sim_seeds} simulator seed(s) -> {run_dir}", highlight=False, markup=False)
        try:
            result = run_validation(task.config, repetitions=repetitions, sim_seeds=sim_seeds, out=run_dir)
        except engines.EngineError as e:
            _fail(_escape(str(e)), EXIT_FAILED)
        for name in ("fct", "path_share"):
            cols = result[name]
            _print_table(pl.DataFrame(cols, strict=False), f"{name} ({where})")
            run_dir.mkdir(parents=True, exist_ok=True)
            (run_dir / f"{name}.json").write_text(json.dumps(cols, indent=1))


def _validate_grid(grid: Path, only: Optional[str]) -> None:
    from mpsched import engines
    from mpsched.scenario import ScenarioError
    from mpsched.study import grid as g

    if not grid.is_dir():
        _fail(f"no grid folder at {_escape(str(grid))} (a folder of scenarios, e.g. scenarios/validation/grid)",
              EXIT_BAD_INPUT)
    try:
        ids = [c.id for c in g.cells(grid)]
    except ScenarioError as e:
        _fail(_escape(str(e)), EXIT_BAD_INPUT)
    if not [i for i in ids if only is None or only in i]:  # else nothing is measured, and nothing said
        if not ids:
            _fail(_escape(f"{grid} holds no grid cell (no *.toml of sized flows over a shaper)"), EXIT_BAD_INPUT)
        listed = ", ".join(ids[:8]) + (", ..." if len(ids) > 8 else "")
        _fail(_escape(f"no cell of {grid} matches --cells {only!r}; cells: {listed}"), EXIT_BAD_INPUT)
    try:
        engines.check_engine("kernel")
        path = g.remeasure(grid, only, on_cell=lambda c, rows: _c.err.print(f"{c.id}: {len(rows)} flows", highlight=False))
    except ScenarioError as e:
        _fail(_escape(str(e)), EXIT_BAD_INPUT)
    except engines.EngineError as e:
        _fail(_escape(str(e)), EXIT_FAILED)
    _c.out.print(g.markdown(g.report(grid)), highlight=False, markup=False)
    _c.err.print(f"kernel measurements: {path}", highlight=False)
