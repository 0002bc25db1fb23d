"""Fits the endpoint timing model (`[host_delay]`) to raw round-trip samples saved by
`benches/host_latency.py --save`, and compares the pure log-normal with floor + log-normal.

Run (no root): `.venv/bin/python benches/host_delay_fit.py benches/data/host_latency-*.csv.gz`

How a round trip maps to packets (as `host_latency.fit_per_packet`): the model draws one delay
per segment at the endpoint that receives it, so a probe's round trip (data, then the reply)
gets two independent draws: excess = d1 + d2. With a floor, d = floor + X, X log-normal, so
excess = 2 floor + X1 + X2. The per-packet parameters are those whose two-draw sum has the
measured quantiles: pure log-normal matches p50 and p99 exactly (`fit_per_packet`); floor +
log-normal (three parameters) minimises the squared log error of p10, p50, p90 and p99 with
scipy (Nelder-Mead per floor on a scan of floors, common random numbers, seeded: deterministic).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

sys.path.insert(0, str(Path(__file__).parent))
from host_latency import fit_per_packet  # noqa: E402

Z99 = 2.326347874
QS = np.array([0.10, 0.50, 0.90, 0.99])


def two_draw_quantiles(floor_ns: float, median_ns: float, p99_ns: float, z: np.ndarray) -> np.ndarray:
    """Quantiles QS of d1 + d2, d = floor + log-normal whose total median / p99 are these."""
    mu = np.log(median_ns - floor_ns)
    sigma = np.log((p99_ns - floor_ns) / (median_ns - floor_ns)) / Z99
    return np.quantile(2 * floor_ns + np.exp(mu + sigma * z).sum(axis=0), QS)


def fit_floor(measured: np.ndarray, z: np.ndarray, min_rt_ns: float) -> tuple[float, float, float]:
    """(floor, median, p99) per packet, the model's own parameters (median and p99 of d). The
    floor is scanned (0 to half the fastest round trip, which two floors cannot exceed) and the
    log-normal fitted for each, since one optimiser over all three stalls in local minima."""
    def err(x: np.ndarray, floor: float) -> float:
        ln_med, ln_sig = x
        med = floor + np.exp(ln_med)
        p99 = floor + np.exp(ln_med + np.exp(ln_sig) * Z99)
        return float(np.sum(np.log(two_draw_quantiles(floor, med, p99, z) / measured) ** 2))
    best = (np.inf, 0.0, 0.0, 0.0)
    for floor in np.linspace(0, min_rt_ns / 2, 21)[:-1]:
        x0 = np.array([np.log(max(measured[1] / 2 - floor, 1.0)), np.log(0.8)])
        r = minimize(err, x0, args=(floor,), method="Nelder-Mead", options={"xatol": 1e-4, "fatol": 1e-12})
        if r.fun < best[0]:
            best = (r.fun, floor, *r.x)
    _, floor, ln_med, ln_sig = best
    return floor, floor + np.exp(ln_med), floor + np.exp(ln_med + np.exp(ln_sig) * Z99)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("samples", nargs="+", help=".csv.gz files written by host_latency.py --save")
    a = ap.parse_args()
    ex = np.concatenate([np.loadtxt(p, delimiter=",", comments="#")[:, 2] for p in a.samples])
    z = np.random.default_rng(1).standard_normal((2, 200_000))
    measured = np.quantile(ex, QS)
    med, p99 = fit_per_packet(float(np.quantile(ex, 0.5)), float(np.quantile(ex, 0.99)))
    fl = fit_floor(measured, z, float(ex.min()))
    rows = [("measured, per round trip", measured),
            (f"log-normal: median {med / 1e3:.1f} us, p99 {p99 / 1e3:.1f} us", two_draw_quantiles(0, med, p99, z)),
            (f"floor {fl[0] / 1e3:.1f} us + log-normal: median {fl[1] / 1e3:.1f} us, p99 {fl[2] / 1e3:.1f} us",
             two_draw_quantiles(*fl, z)),
            ("log-normal of the validation scenarios: median 68 us, p99 417 us",
             two_draw_quantiles(0, 68e3, 417e3, z))]
    print(f"{len(ex)} round trips; quantiles of the round trip's excess (two draws), us")
    print("| | " + " | ".join(f"p{q * 100:g}" for q in QS) + " |")
    print("|---|" + "---|" * len(QS))
    for name, q in rows:
        print(f"| {name} | " + " | ".join(f"{v / 1e3:.0f}" for v in q) + " |")


if __name__ == "__main__":
    main()
