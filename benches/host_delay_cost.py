"""Cost of the endpoint timing model's hook when the model is off: the grid's `equal_16mib` cell
stretched to 70 flows of 16 MiB (no series, no `host_delay`), run N times. On a shared machine
wall time is noise, so count instructions, each tree with its own venv, and subtract the same
command with 0 runs (interpreter start, imports, scenario):

    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \\
        .venv/bin/python benches/host_delay_cost.py 1

(benches/RESULTS.md, "Kernel agreement grid with the endpoint timing model").
"""

import statistics
import sys
import time

from mpsched.engines import run_config
from mpsched.scenario import Scenario
from mpsched.scenario.normalize import to_config

FLOWS = 70


def config() -> dict:
    cfg = to_config(Scenario.load("scenarios/validation/grid/equal_16mib.toml").expand()[0])
    cfg.pop("host_delay", None)
    cfg["record"]["sample_interval_ns"] = 0
    first = cfg["flows"][0]
    gap_ns = cfg["flows"][1]["start_ns"] - first["start_ns"]
    cfg["flows"] = [{**first, "id": i, "start_ns": first["start_ns"] + i * gap_ns} for i in range(FLOWS)]
    cfg["duration_ns"] = first["start_ns"] + (FLOWS + 1) * gap_ns
    return cfg


def main(runs: int) -> None:
    cfg = config()
    cpu_s = []
    for _ in range(runs):
        t = time.process_time()
        run_config(cfg, "sim")
        cpu_s.append(time.process_time() - t)
    if cpu_s:
        print(f"{runs} runs: CPU median {statistics.median(cpu_s):.3f} s, min {min(cpu_s):.3f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
