"""The kernel testbed's per-packet host latency, measured, and the simulator's `host_delay`
parameters derived from it (docs/testbed.md, "Host timing").

Run (root; one kernel run per machine):
`flock /tmp/mpsched-testbed-queue.lock .venv/bin/python benches/host_latency.py scenarios/validation/grid/equal.toml`

It builds the testbed for the scenario's first run (no flows), sends `--count` UDP probes on every
path with `mpxfer ping` / `mpxfer echo` (probe.ping_paths) and subtracts what the emulation itself
accounts for: the configured delay both ways and the serialisation of the probe's frame at each
link's rate. What is left, the *excess*, is what the hosts add to one round trip: two traversals
of the delayer (its wake-up, release lateness and verdict), the veth hops and softirq receive
processing at both ends, and the probe's two socket wake-ups.

The simulator's model draws one delay per segment at its receiving endpoint, so one round trip
(data to the receiver, ACK back to the sender) gets two independent draws, as the probe's round
trip crosses two receiving hosts. The printed parameters are the log-normal (median, p99) whose
sum of two independent draws has the excess's median and p99 (a grid search on 200 000 draws,
seeded): the measurement fixes them, no cell does.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from mpsched.engines.kernel.plan import make_plan
from mpsched.engines.kernel.probe import ping_paths
from mpsched.scenario import Scenario
from mpsched.scenario.normalize import to_config

PROBE_FRAME_BYTES = 16 + 8 + 20  # mpxfer's probe payload, UDP and IPv4 headers


def excess_ns(config: dict, count: int, interval_ns: int, realtime: bool) -> tuple[np.ndarray, np.ndarray]:
    """(excess per round trip in ns, path index of each), in send order per path."""
    plan = make_plan(config)
    rtts = ping_paths(config, count=count, interval_ns=interval_ns, realtime=realtime)
    out, paths = [], []
    for path, samples in rtts.items():
        links = [lk for lk in plan.links if lk.path == path]
        fixed = sum(lk.delay_ns + (PROBE_FRAME_BYTES + lk.overhead_bytes) * 8e9 / lk.rate_bps for lk in links)
        out += [s - fixed for s in samples]
        paths += [path] * len(samples)
    return np.array(out, dtype=float), np.array(paths, dtype=int)


def save_samples(path: str, runs: list[tuple[np.ndarray, np.ndarray]], loads: list[float], args: str) -> None:
    """The raw samples (a .csv.gz: run, path, excess_ns) with the kernel, date and load in its
    header, so later fits (benches/host_delay_fit.py) need no new measurement."""
    rows = np.concatenate([np.column_stack([np.full(len(ex), i + 1), p, np.rint(ex)])
                           for i, (ex, p) in enumerate(runs)])
    header = (f"benches/host_latency.py {args}\nkernel {os.uname().release}, "
              f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load1 at each run's start: "
              + ", ".join(f"{x:.2f}" for x in loads) + "\nrun,path,excess_ns")
    np.savetxt(path, rows, fmt="%d", delimiter=",", header=header)


def fit_per_packet(median_rt_ns: float, p99_rt_ns: float, seed: int = 1) -> tuple[float, float]:
    """(median, p99) of a log-normal whose sum of two iid draws has these quantiles."""
    z = np.random.default_rng(seed).standard_normal((2, 200_000))
    z99 = 2.326347874
    best = (np.inf, 0.0, 0.0)
    for sigma in np.linspace(0.0, 2.5, 251):
        s = np.exp(sigma * z).sum(axis=0)          # median 1 per draw
        m = median_rt_ns / np.median(s)            # scale that matches the median
        err = abs(m * np.quantile(s, 0.99) - p99_rt_ns) / p99_rt_ns
        if err < best[0]:
            best = (err, m, m * np.exp(sigma * z99))
    return best[1], best[2]


def summary(ex: np.ndarray) -> str:
    q = {p: float(np.quantile(ex, p / 100)) for p in (1, 10, 50, 90, 99, 99.9)}
    return ("excess per round trip (us): min {:.1f} ".format(ex.min() / 1e3)
            + " ".join(f"p{p:g} {v / 1e3:.1f}" for p, v in q.items()) + f" max {ex.max() / 1e3:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario")
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--interval-ms", type=float, default=1.0)
    ap.add_argument("--runs", type=int, default=1, help="testbeds built one after the other, pooled")
    ap.add_argument("--realtime", action="store_true", help="ping and echo at the delayer's real-time priority")
    ap.add_argument("--save", help="write the raw samples here (.csv.gz)")
    a = ap.parse_args()
    config = to_config(next(iter(Scenario.load(a.scenario).expand())))
    runs, loads = [], []
    for _ in range(a.runs):
        loads.append(os.getloadavg()[0])
        runs.append(excess_ns(config, a.count, int(a.interval_ms * 1e6), a.realtime))
        print(f"run {len(runs)}: load1 {loads[-1]:.1f} at the start: " + summary(runs[-1][0]))
    if a.save:
        save_samples(a.save, runs, loads, f"{a.scenario} --count {a.count} --interval-ms {a.interval_ms:g}"
                     f" --runs {a.runs}{' --realtime' if a.realtime else ''}")
    ex = np.concatenate([r[0] for r in runs])
    q = {p: float(np.quantile(ex, p / 100)) for p in (50, 99)}
    print(f"{len(ex)} round trips{' (ping and echo real-time)' if a.realtime else ''}, {os.uname().release}, pooled: "
          + summary(ex))
    med, p99 = fit_per_packet(q[50], q[99])
    print(f"per-packet log-normal: median {med / 1e3:.1f} us, p99 {p99 / 1e3:.1f} us")


if __name__ == "__main__":
    main()
