"""The `mpsched` command."""

import typer

app = typer.Typer(help="mpsched: a laboratory for MPTCP packet schedulers.", no_args_is_help=True)


@app.callback()
def _root() -> None:
    """mpsched: a laboratory for MPTCP packet schedulers."""


@app.command()
def version() -> None:
    """Print the version of the package and its compiled core."""
    import mpsched

    typer.echo(mpsched.__version__)


def main() -> None:
    app()
