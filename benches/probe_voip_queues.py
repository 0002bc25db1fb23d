"""The VoIP bench's steady case (no event), one run: each downlink queue's occupancy (mean and
median over 2 s - end) and each subflow's median srtt and cwnd, to compare the call's path
delays on the two engines (docs/testbed.md, "Session 7: real-time messages on the kernel").

    .venv/bin/python benches/probe_voip_queues.py sim 1            # with the bulk download
    flock /tmp/mpsched-testbed-queue.lock .venv/bin/python benches/probe_voip_queues.py kernel 1
    .venv/bin/python benches/probe_voip_queues.py sim 1 nobulk     # the call alone
"""
import sys
from pathlib import Path

import polars as pl

import mpsched
from mpsched import engines
from mpsched.scenario.normalize import to_config

sys.path.insert(0, str(Path(__file__).resolve().parent))
import voip_kernel_vs_sim as v  # noqa: E402

eng, seed = sys.argv[1], int(sys.argv[2])
cfg = to_config(mpsched.loads_scenario(v.scenario_text("none", seed, len(sys.argv) < 4)))
t = engines.run_config(cfg, eng)
ls = pl.DataFrame(t.get("link_series", {}))
print(ls.columns if not ls.is_empty() else "no link_series")
if not ls.is_empty():
    col = [c for c in ls.columns if "queue" in c or "bytes" in c]
    print(ls.filter(pl.col("time_ns") > 2e9).group_by("link").agg([pl.col(c).mean().alias(c + "_mean") for c in col] + [pl.col(c).median().alias(c + "_p50") for c in col]))
sub = pl.DataFrame(t["subflow_series"]).filter(pl.col("time_ns") > 2e9)
print(sub.group_by("flow_id", "path").agg(pl.col("srtt_ns").median() / 1e6, pl.col("cwnd_bytes").median()).sort("flow_id", "path"))
