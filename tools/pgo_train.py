"""The training run of the core's profile-guided build (`tools/pgo_build.sh`).

    .venv/bin/python tools/pgo_train.py

Runs the first configuration of each scenario file below (seed 1) through the simulator, the
path every study takes (`mpsched.engines.sim.run`), with the instrumented core loaded; the
profile it leaves is what the optimised build is laid out for. The set spans what users run:
single-path TCP, MPTCP under each kind of scheduler and path mix, data-centre fabrics, request
and web workloads, path failures. It leaves out the benchmark scenarios of `benches/e2e.rs` and
the rows of `benches/scale.rs`, so their figures measure a build not trained on them.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

#: Scenario files, relative to the checkout.
TRAINING_SCENARIOS = (
    "scenarios/quick.toml",
    "scenarios/cfs_wlan_lte_short.toml",
    "scenarios/wlan_lte_trace.toml",
    "scenarios/validation/two_paths_1mib.toml",
    "scenarios/validation/bufferbloat.toml",
    "scenarios/validation/lossy_upload.toml",
    "scenarios/validation/grid/tcp_single.toml",
    "scenarios/validation/grid/asym_wlan_lte.toml",
    "scenarios/validation/grid/jitter.toml",
    "scenarios/datacenter/dumbbell_fairness.toml",
    "scenarios/datacenter/permutation_fattree.toml",
    "scenarios/datacenter/short_message_fattree.toml",
    "scenarios/workloads/long_lived_transfers.toml",
    "scenarios/workloads/rpc.toml",
    "scenarios/workloads/web_pages.toml",
    "scenarios/workloads/cbr_delay.toml",
    "scenarios/resilience/dying_wlan.toml",
)


def main() -> int:
    from mpsched.engines import sim
    from mpsched.scenario import load_scenario
    from mpsched.scenario.normalize import normalize
    from mpsched.scenario.sweep import expand

    root = Path(__file__).resolve().parents[1]
    started = time.monotonic()
    for rel in TRAINING_SCENARIOS:
        first = expand(load_scenario(root / rel))[0]
        config = normalize(first.scenario.model_copy(update={"seed": 1})).config
        t0 = time.monotonic()
        stats = sim.run(config)["_stats"]
        print(f"pgo training: {rel}: {stats['packets_sent']} packets, {time.monotonic() - t0:.1f} s",
              file=sys.stderr)
    print(f"pgo training: {len(TRAINING_SCENARIOS)} scenarios in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
