"""Failover of one bulk download, simulator beside the kernel testbed, per path event kind.

Run (root; the kernel engine needs the testbed): `.venv/bin/python benches/failover_kernel_vs_sim.py`
(helpers sharing a machine wrap it in `flock /tmp/helpers-kernel.lock`). WLAN 20 Mbit/s 20 ms
+ LTE 10 Mbit/s 60 ms, one BDP of queue each, `linux` with the kernel's autotuning and join
timing, a bulk download for 9 s; at 3 s WLAN is blackholed or collapses to 500 kbit/s, lifted
at 6 s. Prints per kind and engine: failover (first byte again / to 90 %), failback and the
longest stall (ms, `mpsched.metrics`), the RTOs and the bytes delivered. docs/testbed.md
("Failover") has the numbers.
"""

import polars as pl

import mpsched
from mpsched import engines, metrics
from mpsched.scenario.normalize import to_config

TOML = """
duration = "10s"
[[paths]]
name = "wlan"
rate = "20Mbit"
rtt = "20ms"
queue = "1BDP"
[[paths]]
name = "lte"
rate = "10Mbit"
rtt = "60ms"
queue = "1BDP"
[connection]
scheduler = "linux"
rcv_buf_autotuning = true
join_timing = "fully_established"
[[workload]]
kind = "bulk"
stop = "9s"
[[path_events]]
kind = "{kind}"
path = "wlan"
at = "3s"
duration = "3s"
{extra}
[record]
interval = "10ms"
"""


def main() -> None:
    print("| event | engine | failover (ms) | to 90 % (ms) | failback (ms) | longest stall (ms) | RTOs | MB delivered |")
    print("|---|---|---|---|---|---|---|---|")
    for kind, extra in (("blackhole", ""), ("rate_collapse", 'rate = "500kbit"')):
        cfg = to_config(mpsched.loads_scenario(TOML.format(kind=kind, extra=extra)))
        for eng in ("sim", "kernel"):
            t = engines.run_config(cfg, eng)
            flows, conn = pl.DataFrame(t["flows"]), pl.DataFrame(t["conn_series"])
            events = pl.DataFrame(t["path_events"], schema_overrides={"end_ns": pl.Int64})
            stalls = metrics.delivery_stalls(flows, pl.DataFrame(), conn)
            fo = metrics.failover(events, stalls, conn, pl.DataFrame(t["subflow_series"])).row(0, named=True)
            cells = [fo["failover_ms"], fo["failover90_ms"], fo["failback_ms"],
                     metrics.longest_stall(stalls)["longest_stall_ms"][0]]
            text = " | ".join("–" if c is None else f"{c:.0f}" for c in cells)
            print(f"| {kind} | {eng} | {text} | {sum(t['subflows']['rto_count'])} | "
                  f"{flows['bytes_delivered'][0] / 1e6:.1f} |", flush=True)


if __name__ == "__main__":
    main()
