"""Round-trip probes over the emulated paths, the testbed's `ping` (no ICMP tool needed):
`mpxfer ping` in the client namespace sends small UDP datagrams from each path's address to
`mpxfer echo` on the server, and reports each round trip on CLOCK_MONOTONIC. Used to check the
emulated delay end to end (benches/RESULTS.md) and by tests."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from mpsched.engines.kernel.host import native_tool, ns_sh, preflight, remove_leftovers
from mpsched.engines.kernel.network import DELAYER_RT_PRIO, Testbed
from mpsched.engines.kernel.plan import SERVER_ADDR, client_addr, make_plan

__all__ = ["ping_paths"]

ECHO_PORT = 7007


def ping_paths(config: dict[str, Any], count: int = 100, interval_ns: int = 10_000_000,
               realtime: bool = False) -> dict[int, list[int]]:
    """Build the testbed for `config` (no flows run), send `count` probes on every path, one
    every `interval_ns`; returns path index -> round-trip times in ns (lost probes missing).
    `realtime`: ping and echo run at the delayer's real-time priority, so the wake-ups of a
    loaded machine's scheduler stay out of the round trip (what is left is the network path's
    host cost: delayer, veth hops, softirq)."""
    plan = make_plan(config)
    preflight()
    remove_leftovers()
    mpxfer = str(native_tool("mpxfer"))
    rt = ["chrt", "-f", DELAYER_RT_PRIO] if realtime else []
    with tempfile.TemporaryDirectory(prefix="mpsched-probe-") as tmp:
        tb = Testbed(plan, Path(tmp))
        try:
            tb.build()
            tb.start_delayer()
            out = Path(tmp) / "echo.jsonl"
            tb.spawn(tb.srv, [*rt, mpxfer, "echo", "--port", str(ECHO_PORT)], out)
            rtts: dict[int, list[int]] = {}
            max_rtt_s = max((lk.delay_ns + lk.jitter_ns for lk in plan.links), default=0) * 2 / 1e9
            for i in range(plan.n_paths):
                # Warm-up probe first (neighbour resolution, cold delayer): not counted.
                for n, keep in ((1, False), (count, True)):
                    r = ns_sh(tb.cli, *rt, mpxfer, "ping", "--dst", SERVER_ADDR, "--port", str(ECHO_PORT),
                              "--bind", client_addr(i), "--count", str(n), "--interval-ns", str(interval_ns),
                              "--wait-ns", str(int((max_rtt_s + 1) * 1e9)),
                              timeout=n * interval_ns / 1e9 + max_rtt_s + 30)
                    if keep:
                        rtts[i] = [json.loads(x)["rtt_ns"] for x in r.stdout.splitlines() if '"rtt"' in x]
            return rtts
        finally:
            tb.close()
