"""Simulator versus kernel: how far the simulator's results are from the real stack's for the
same configuration.

`compare(sim_tables, kernel_tables)` works on the engines' record tables (table -> column ->
list, as `run_kernel` and `mpsched._core.run_json` return them; several repetitions or seeds may
be concatenated) and returns two tables:

* `fct`: per flow size, both engines' FCT distribution (n, p10, median, p90 in ns), the
  relative error of the simulator's median against the kernel's, and the two-sample
  Kolmogorov-Smirnov distance between the distributions;
* `path_share`: per path, the share of the bytes each engine's senders got acknowledged on it,
  and the difference.

`validate(config, sim_tables, kernel_tables, out=None)` adds the configuration's path names and,
when `out` is a directory, writes `validation.png` (FCT CDFs per size, both engines).

`run_validation(config, repetitions, sim_seeds)` runs both engines itself (the simulator once per
seed, the kernel `repetitions` times) and returns `validate`'s tables plus the raw ones: what
`mpsched validate` needs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["compare", "validate", "run_validation", "fct_by_size", "path_share"]

Tables = dict[str, dict[str, list]]


def _rows(table: dict[str, list]) -> list[dict[str, Any]]:
    cols = list(table)
    n = len(table[cols[0]]) if cols else 0
    return [{c: table[c][i] for c in cols} for i in range(n)]


def fct_by_size(tables: Tables) -> dict[int, np.ndarray]:
    """Completed sized flows' FCTs (ns), grouped by size in bytes."""
    out: dict[int, list[int]] = {}
    for r in _rows(tables.get("flows", {})):
        if r.get("completed") and r.get("fct_ns") is not None and r.get("size_bytes") is not None:
            out.setdefault(int(r["size_bytes"]), []).append(int(r["fct_ns"]))
    return {k: np.asarray(sorted(v), dtype=float) for k, v in sorted(out.items())}


def path_share(tables: Tables) -> dict[int, float]:
    """Fraction of all subflow-acknowledged bytes per path."""
    acked: dict[int, float] = {}
    for r in _rows(tables.get("subflows", {})):
        if r.get("path") is None or r.get("path", -1) < 0:
            continue
        acked[int(r["path"])] = acked.get(int(r["path"]), 0.0) + float(r.get("bytes_acked") or 0)
    total = sum(acked.values())
    return {p: (b / total if total else 0.0) for p, b in sorted(acked.items())}


def _ks(a: np.ndarray, b: np.ndarray) -> float | None:
    if len(a) == 0 or len(b) == 0:
        return None
    from scipy.stats import ks_2samp

    return float(ks_2samp(a, b).statistic)


def _q(x: np.ndarray, q: float) -> float | None:
    return float(np.quantile(x, q)) if len(x) else None


def compare(sim_tables: Tables, kernel_tables: Tables) -> dict[str, dict[str, list]]:
    """The comparison tables (see the module docstring)."""
    sim, ker = fct_by_size(sim_tables), fct_by_size(kernel_tables)
    fct: dict[str, list] = {c: [] for c in (
        "size_bytes", "sim_n", "kernel_n", "sim_p10_ns", "sim_median_ns", "sim_p90_ns", "kernel_p10_ns",
        "kernel_median_ns", "kernel_p90_ns", "median_rel_error", "ks_distance")}
    for size in sorted(set(sim) | set(ker)):
        s, k = sim.get(size, np.array([])), ker.get(size, np.array([]))
        sm, km = _q(s, 0.5), _q(k, 0.5)
        fct["size_bytes"].append(size)
        fct["sim_n"].append(len(s))
        fct["kernel_n"].append(len(k))
        fct["sim_p10_ns"].append(_q(s, 0.1))
        fct["sim_median_ns"].append(sm)
        fct["sim_p90_ns"].append(_q(s, 0.9))
        fct["kernel_p10_ns"].append(_q(k, 0.1))
        fct["kernel_median_ns"].append(km)
        fct["kernel_p90_ns"].append(_q(k, 0.9))
        fct["median_rel_error"].append((sm - km) / km if sm is not None and km else None)
        fct["ks_distance"].append(_ks(s, k))
    ss, ks = path_share(sim_tables), path_share(kernel_tables)
    share: dict[str, list] = {c: [] for c in ("path", "sim_share", "kernel_share", "difference")}
    for p in sorted(set(ss) | set(ks)):
        share["path"].append(p)
        share["sim_share"].append(ss.get(p, 0.0))
        share["kernel_share"].append(ks.get(p, 0.0))
        share["difference"].append(ss.get(p, 0.0) - ks.get(p, 0.0))
    return {"fct": fct, "path_share": share}


def validate(config: dict[str, Any], sim_tables: Tables, kernel_tables: Tables,
             out: str | Path | None = None) -> dict[str, dict[str, list]]:
    """`compare` plus path names from `config`; with `out`, also writes `validation.png`."""
    result = compare(sim_tables, kernel_tables)
    names = [p["name"] for p in config.get("paths", [])]
    share = result["path_share"]
    share["path_name"] = [names[p] if 0 <= p < len(names) else str(p) for p in share["path"]]
    if out is not None:
        _figure(sim_tables, kernel_tables, Path(out) / "validation.png")
    return result


def _concat(parts: list[Tables]) -> Tables:
    out: Tables = {}
    for tables in parts:
        for name, cols in tables.items():
            # "_stats" and the like: counters about the run, not tables
            if name.startswith("_") or not isinstance(cols, dict) or not all(isinstance(v, list) for v in cols.values()):
                continue
            dst = out.setdefault(name, {k: [] for k in cols})
            n = len(next(iter(cols.values()), []))
            for k in set(dst) | set(cols):
                if k not in dst:  # a column only some runs have
                    dst[k] = [None] * (len(next(iter(dst.values()), [])) if dst else 0)
                dst[k].extend(cols.get(k, [None] * n))
    return out


def run_validation(config: dict[str, Any], repetitions: int = 3, sim_seeds: int = 3,
                   out: str | Path | None = None) -> dict[str, Any]:
    """Run `config` on the simulator (seeds seed, seed+1, ...) and on the kernel (`repetitions`
    fresh testbeds), then `validate`. Returns {"fct", "path_share", "sim", "kernel"}."""
    from mpsched.engines import run_config
    from mpsched.engines.kernel.run import run_kernel

    sims = []
    for k in range(sim_seeds):
        cfg = {**config, "seed": int(config.get("seed", 1)) + k}
        sims.append(run_config(cfg, "sim"))
    sim_tables = _concat(sims)
    kernel_tables = run_kernel(config, repetitions=repetitions)
    result: dict[str, Any] = dict(validate(config, sim_tables, kernel_tables, out=out))
    result["sim"] = sim_tables
    result["kernel"] = kernel_tables
    return result


def _figure(sim_tables: Tables, kernel_tables: Tables, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sim, ker = fct_by_size(sim_tables), fct_by_size(kernel_tables)
    sizes = sorted(set(sim) | set(ker))
    fig, axes = plt.subplots(1, max(len(sizes), 1), figsize=(4 * max(len(sizes), 1), 3.2), squeeze=False)
    for ax, size in zip(axes[0], sizes):
        for label, data, style in (("simulator", sim.get(size), "-"), ("kernel", ker.get(size), "--")):
            if data is not None and len(data):
                y = np.arange(1, len(data) + 1) / len(data)
                ax.step(data / 1e6, y, style, where="post", label=f"{label} (n={len(data)})")
        ax.set_title(f"{size / 1e6:g} MB" if size >= 1e6 else f"{size / 1e3:g} kB")
        ax.set_xlabel("flow completion time (ms)")
        ax.set_ylabel("CDF")
        ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
