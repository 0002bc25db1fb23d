"""What every `mpsched` command shares: the Typer app, the consoles, errors and exit codes.

A bad scenario prints one message naming the field and exits with status 2 (like a usage error);
an engine failure prints its message and exits with 1. Neither prints a Python traceback.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

import typer
from rich.console import Console

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


_FORCE_HELP = "Run even when the estimated work or memory is above the limits."


_CLUSTER_HELP = ("Run on Dask: 'local' (a LocalCluster of --jobs workers) or a running scheduler's address "
                 "(tcp://host:8786). See docs/cluster.md.")


@contextmanager
def _cluster_client(cluster: Optional[str], jobs: int) -> Iterator:
    """The Dask client of `--cluster` (None without it), its dashboard link printed; exit 1 with
    the reason when the cluster cannot be reached."""
    if not cluster:
        yield None
        return
    from mpsched.study.cluster import ClusterUnavailable, connect, dashboard

    try:
        cm = connect(cluster, jobs)
        client = cm.__enter__()
    except ClusterUnavailable as e:
        _fail(_escape(str(e)), EXIT_FAILED)
    if link := dashboard(client):
        _c.err.print(f"Dask dashboard: {link}", highlight=False, markup=False)
    try:
        yield client
    finally:
        cm.__exit__(None, None, None)
