"""The failback of an event that leaves the path carrying (`rtt_spike`, `rate_collapse`) against
the event's duration, in the simulator: `failover_kernel_vs_sim.py`'s scenario with the event
lasting 2.96-3.04 s, seeds 1-5, the failback of each (docs/testbed.md, "Session 7: ...
failback of a path that never stopped").

    .venv/bin/python benches/probe_failback_phase.py rtt_spike
"""
import statistics
import sys
from pathlib import Path

import polars as pl

import mpsched
from mpsched import engines, metrics
from mpsched.scenario.normalize import to_config

sys.path.insert(0, str(Path(__file__).resolve().parent))
import failover_kernel_vs_sim as f  # noqa: E402

kind = sys.argv[1] if len(sys.argv) > 1 else "rtt_spike"
for dur in (2960, 2980, 3000, 3020, 3040):
    fbs = []
    for seed in range(1, 6):
        toml = f.TOML.format(kind=kind, extra=f.KINDS[kind], seed=seed, at_ms=3000, wlan_gso="gso = true")
        toml = toml.replace('duration = "3s"', f'duration = "{dur}ms"')
        t = engines.run_config(to_config(mpsched.loads_scenario(toml)), "sim")
        flows, conn, sub = pl.DataFrame(t["flows"]), pl.DataFrame(t["conn_series"]), pl.DataFrame(t["subflow_series"])
        events = pl.DataFrame(t["path_events"], schema_overrides={"end_ns": pl.Int64})
        fo = metrics.failover(events, metrics.delivery_stalls(flows, pl.DataFrame(), conn), conn, sub).row(0, named=True)
        fbs.append(round(fo["failback_ms"]))
    print(kind, dur, "ms: failbacks", fbs, "median", statistics.median(fbs))
