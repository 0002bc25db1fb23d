"""`mpsched reproduce`: the seed papers' studies, their claims judged, the report."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from mpsched.cli.common import EXIT_BAD_INPUT, EXIT_FAILED, _CLUSTER_HELP, _FORCE_HELP, _c, _cluster_client, _escape, _fail, _load, _with_source, app
from mpsched.cli.results import _print_table


@app.command()
def reproduce(
    study: Optional[str] = typer.Argument(None, help="Study name (see --list): a folder of experiments/."),
    list_: bool = typer.Option(False, "--list", help="List the studies and exit."),
    all_: bool = typer.Option(False, "--all", help="Every study, into one report (runs in <out>/<study>/)."),
    out_dir: Optional[Path] = typer.Option(None, "--out", "-o", help="Results and report directory (default: results/experiments/<study>[-quick], with --all results/report[-quick])."),
    quick: bool = typer.Option(False, "--quick", help="A reduced version (fewer seeds, repeats, sizes) that runs in seconds."),
    jobs: int = typer.Option(0, "--jobs", "-j", min=0, help="Parallel runs (default, 0: number of CPUs)."),
    cluster: Optional[str] = typer.Option(None, "--cluster", help=_CLUSTER_HELP),
    sensitivity: bool = typer.Option(False, "--sensitivity", help="Instead: the study's sensitivity runs (experiments/<study>/sensitivity/: one unstated assumption changed per file), its headline numbers per value (runs in <out>/sensitivity/)."),
) -> None:
    """Run reproduction studies of experiments/: the published figures beside ours, each claim of
    the papers judged on all repetitions (holds / magnitude off / tie / fails, with a 95 %
    interval), and a report, <out>/report.html and report.md."""
    from mpsched import experiments as ex

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
    from mpsched.study.interrupt import exit_interrupted, terminate_as_interrupt
    from mpsched.study.safety import OutputUnusable, prepare_dir

    if out_dir is not None:
        try:  # before any work: a file in its place, no permission (one line)
            prepare_dir(out_dir)
        except OutputUnusable as e:
            _fail(_escape(str(e)), EXIT_BAD_INPUT)
    argv = ["reproduce", "--all" if all_ else study] + (["--quick"] if quick else []) \
        + (["--sensitivity"] if sensitivity else []) + (["-o", out_dir] if out_dir else [])
    try:
        # Ctrl-C / SIGTERM: the runs stored so far are kept, one line says so (a run still in the
        # core is abandoned with the process, never unwound by the interpreter's exit)
        with terminate_as_interrupt():
            if sensitivity:
                _sensitivity(list(ex.STUDIES) if all_ else [study], out_dir, jobs)
            else:
                _reproduce(study, all_, out_dir, quick, jobs, cluster)
    except KeyboardInterrupt as e:
        exit_interrupted(e, argv, where=True)
    except OutputUnusable as e:
        _fail(_escape(str(e)), EXIT_BAD_INPUT)
    except OSError as e:  # e.g. the disk filled up: the batches written before are kept
        _fail(_escape(f"cannot write the results: {e}; completed runs are kept"), EXIT_FAILED)


def _reproduce(study: Optional[str], all_: bool, out_dir: Optional[Path], quick: bool, jobs: int,
               cluster: Optional[str]) -> None:
    import mpsched
    from mpsched import experiments as ex
    from mpsched.experiments.render import claims_text, write_report
    from mpsched.experiments.report import reproduce as run_one
    from mpsched.study import RunFailed
    from mpsched.scenario import ScenarioError

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
    with _cluster_client(cluster, jobs) as client:
        for name in names:
            target = base / name if all_ else base
            try:
                reps.append(run_one(name, target, quick=quick, jobs=jobs, client=client,
                                    on_file=lambda f, n, name=name, t=target: _c.err.print(
                                        f"{name}/{f}: {n} run(s) -> {t / Path(f).stem}", highlight=False, markup=False)))
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


def _sensitivity(names: list[str], out_dir: Optional[Path], jobs: int) -> None:
    from mpsched.experiments.sensitivity import HEADLINES, run_sensitivity
    from mpsched.scenario import ScenarioError
    from mpsched.study import RunFailed

    names = [n for n in names if n in HEADLINES]
    if not names:
        _fail("this study has no sensitivity runs; studies with them: " + ", ".join(HEADLINES), EXIT_BAD_INPUT)
    for name in names:
        out = (out_dir / name if out_dir and len(names) > 1 else out_dir) or Path("results") / "experiments" / name
        try:
            done = run_sensitivity(name, out / "sensitivity", jobs=jobs if jobs > 0 else (os.cpu_count() or 1),
                                   on_file=lambda f, n, name=name: _c.err.print(f"{name}/sensitivity/{f}: {n} run(s)",
                                                                                 highlight=False, markup=False))
        except ScenarioError as e:
            _fail(_escape(str(e)), EXIT_BAD_INPUT)
        except RunFailed as e:
            _fail(_escape(str(e)), EXIT_FAILED)
        for stem, what, table in done:
            _print_table(table, f"{name}, sensitivity/{stem}.toml: {what}")


def _print_reproduction(rep) -> None:
    if not rep.figures_table.is_empty():
        _print_table(rep.figures_table, f"{rep.name}: published figures and ours" + (" (--quick)" if rep.quick else ""))
    if rep.claims:
        _print_table(rep.claims_frame(), f"{rep.name}: the papers' claims, judged on all repetitions")
    if not rep.extra().is_empty():
        _print_table(rep.extra(), f"{rep.name}: our other numbers (no published counterpart)")
    _c.err.print(f"results: {rep.out}", highlight=False, markup=False)
