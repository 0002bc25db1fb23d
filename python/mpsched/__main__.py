"""`python -m mpsched ...` is the `mpsched` command."""

from mpsched.cli import main

main()
