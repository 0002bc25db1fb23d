"""The kernel testbed: the same normalized run configuration as the simulator, executed on the
real Linux MPTCP stack in network namespaces (client, router, server), with links emulated in
the router by htb shaping and an NFQUEUE delayer (native/nfqdelay.c). See docs/testbed.md.

`run_kernel(config, repetitions)` returns the simulator's record tables; `validate(...)`
compares a simulator run with a kernel run of the same configuration.
"""

from mpsched.testbed.host import TestbedError, TestbedUnavailable, preflight, remove_leftovers
from mpsched.testbed.plan import TestbedConfigError, make_plan
from mpsched.testbed.run import run_kernel, run_once
from mpsched.testbed.validate import compare, validate

__all__ = ["run_kernel", "run_once", "validate", "compare", "make_plan", "preflight", "remove_leftovers",
           "TestbedError", "TestbedUnavailable", "TestbedConfigError"]
