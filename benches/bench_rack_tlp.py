"""Simulator FCTs with RACK-TLP (Linux's default) against RFC 6675 loss detection, per scenario run.

Run: `.venv/bin/python benches/bench_rack_tlp.py scenarios/validation/wifi_lte_jitter.toml
scenarios/validation/two_paths_1mib.toml`. The scenario format has no `loss_recovery` key yet, so
this sets the normalized transport field (`TransportConfig::loss_recovery`) on every run of each
file, both ways. Prints a Markdown table: per (protocol, scheduler), the flows pooled over the
file's seeds, FCT p10 / median / p90, how many flows had an RTO on their first path, and the
retransmitted bytes per flow. docs/testbed.md ("RACK-TLP") has the kernel's numbers beside these.
"""

import statistics
import sys

from mpsched.engines import run_config
from mpsched.normalize import to_config
from mpsched.scenario import Scenario

MODES = ("rfc6675", "rack_tlp")


def measure(path: str, mode: str) -> dict[tuple[str, str], dict]:
    groups: dict[tuple[str, str], dict] = {}
    for run in Scenario.load(path).expand():
        cfg = to_config(run)
        for t in cfg["transports"]:
            t["loss_recovery"] = mode
        tables = run_config(cfg)
        t0 = cfg["transports"][0]
        g = groups.setdefault((t0["protocol"], t0["scheduler"]), {"fct": [], "rto_flows": 0, "retx": 0})
        g["fct"] += [ns / 1e9 for ns in tables["flows"]["fct_ns"]]
        sf = tables["subflows"]
        first_path = t0["paths"][0]
        g["rto_flows"] += sum(1 for p, r in zip(sf["path"], sf["rto_count"]) if p == first_path and r > 0)
        g["retx"] += sum(sf["bytes_retransmitted"])
    return groups


def main(paths: list[str]) -> None:
    print("| scenario | protocol | scheduler | loss_recovery | flows | FCT p10 / median / p90 (s) "
          "| flows with an RTO on path 0 | retransmitted B / flow |")
    print("|---|---|---|---|---|---|---|---|")
    for path in paths:
        for mode in MODES:
            for (proto, sched), g in measure(path, mode).items():
                f = sorted(g["fct"])
                n = len(f)
                q = f"{f[n // 10]:.3f} / {statistics.median(f):.3f} / {f[(9 * n) // 10]:.3f}"
                print(f"| {path.rsplit('/', 1)[-1]} | {proto} | {sched} | {mode} | {n} | {q} "
                      f"| {g['rto_flows']} | {g['retx'] / n:.0f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
