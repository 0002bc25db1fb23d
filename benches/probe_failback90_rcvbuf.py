"""What holds the simulator's WLAN below its pre-event rate after a `down` or `blackhole`:
`failover_kernel_vs_sim.py`'s scenario, seeds 1-3, with the receive buffer autotuned (the
bench's setting), fixed at 6 MiB, and autotuned with a 16 MiB send buffer; per run the
failback, the failback to 90 % of WLAN's pre-event rate (ms) and the largest out-of-order
backlog at the connection level (kB) (docs/testbed.md, "Session 8: a failback that measures
recovery").

    .venv/bin/python benches/probe_failback90_rcvbuf.py down
"""
import sys
from pathlib import Path

import polars as pl

import mpsched
from mpsched import engines, metrics
from mpsched.scenario.normalize import to_config

sys.path.insert(0, str(Path(__file__).resolve().parent))
import failover_kernel_vs_sim as f  # noqa: E402

kind = sys.argv[1] if len(sys.argv) > 1 else "down"
AUTO = "rcv_buf_autotuning = true"
for label, repl in (("autotuned", None), ("fixed 6 MiB", (AUTO, "rcv_buf_autotuning = false")),
                    ("autotuned, send buffer 16 MiB", (AUTO, AUTO + '\nsnd_buf = "16MiB"'))):
    out = []
    for seed in (1, 2, 3):
        toml = f.TOML.format(kind=kind, extra=f.KINDS[kind], seed=seed, at_ms=3000, wlan_gso="gso = true")
        if repl:
            toml = toml.replace(*repl)
        t = engines.run_config(to_config(mpsched.loads_scenario(toml)), "sim")
        flows, conn, sub = pl.DataFrame(t["flows"]), pl.DataFrame(t["conn_series"]), pl.DataFrame(t["subflow_series"])
        ev = pl.DataFrame(t["path_events"], schema_overrides={"end_ns": pl.Int64})
        fo = metrics.failover(ev, metrics.delivery_stalls(flows, pl.DataFrame(), conn), conn, sub).row(0, named=True)
        out.append(f"{fo['failback_ms']:.0f} / {fo['failback90_ms']:.0f} ms, ofo max {conn['ofo_bytes'].max() / 1e3:.0f} kB")
    print(f"{kind}, receive buffer {label}: " + "; ".join(out), flush=True)
