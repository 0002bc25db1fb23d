"""The kernel testbed: the same normalized run configuration as the simulator, executed on the
real Linux MPTCP stack in network namespaces (client, router, server), with links emulated in
the router by htb shaping and an NFQUEUE delayer (native/nfqdelay.c). See docs/testbed.md.

`run_kernel(config, repetitions)` returns the simulator's record tables (the engine's
`run(config) -> tables`); comparing it with the simulator is a study, `mpsched.study.validate`.
Everything here imports without root; only running needs it.
"""

from mpsched.engines.kernel.host import TestbedError, TestbedUnavailable, preflight, remove_leftovers
from mpsched.engines.kernel.plan import TestbedConfigError, make_plan
from mpsched.engines.kernel.run import run_kernel, run_once

__all__ = ["run_kernel", "run_once", "make_plan", "preflight", "remove_leftovers",
           "TestbedError", "TestbedUnavailable", "TestbedConfigError"]
