"""`mpsched doctor`: remove what interrupted or killed kernel runs left on this machine (their
network namespaces and the processes in them, processes they started outside one, their
working directories), and say what was removed. The next kernel run does the same before it
starts; this is the same cleanup on demand."""

from __future__ import annotations

import sys

import typer

from mpsched.cli.common import app


@app.command()
def doctor() -> None:
    """Remove leftovers of crashed kernel runs (namespaces, processes, temporary directories)."""
    import os

    from mpsched.engines.base import EngineError
    from mpsched.engines.kernel.host import remove_leftovers

    if os.geteuid() != 0:  # it would see none of root's namespaces and say "no leftovers"
        sys.stderr.write("error: the kernel testbed's leftovers (network namespaces, their processes) belong to root; "
                         "run `mpsched doctor` as root\n")
        raise typer.Exit(1)
    try:
        removed = remove_leftovers()
    except EngineError as e:
        sys.stderr.write(f"error: {e}\n")
        raise typer.Exit(1)
    for item in removed:
        sys.stdout.write(f"removed {item}\n")
    sys.stdout.write(f"{len(removed)} leftover(s) of kernel runs removed\n" if removed else "no leftovers of kernel runs\n")
