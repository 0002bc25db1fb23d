"""The `mpsched` command: run scenarios, list schedulers, summarise and plot studies.

`common` holds the Typer `app`, the consoles, errors and exit codes; each command module
registers its commands on that app when imported here: `study` (check, run, validate),
`results` (show, compare, plot, schedulers), `reproduce`, `doctor`.
"""

from __future__ import annotations

import sys

from mpsched.cli import doctor, reproduce, results, study  # noqa: F401 - they register their commands
from mpsched.cli.common import app

__all__ = ["app", "main"]


def main() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started with SIGINT ignored
    try:
        app()
    except KeyboardInterrupt:
        sys.stderr.write("interrupted; completed runs are kept, run the same command again to resume\n")
        sys.exit(130)
