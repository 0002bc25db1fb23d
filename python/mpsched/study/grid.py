"""The kernel agreement grid: the simulator against the real Linux stack, cell by cell.

A grid is a folder of scenarios (`scenarios/validation/grid/`) and the kernel's measurements of
them, `kernel.csv` beside them. A *cell* is one concrete run of a scenario: one download size and
one shaper (every link serialising, "htb", or every link a token bucket, "tbf32k"; a per-path
sweep's mixed combinations are not cells). Each of the cell's flows is one repetition: a fresh
connection starting on idle links.

The CSV holds one row per kernel flow (cell, scenario, size, shaper, repetition, FCT, the share of
the bytes acknowledged on the second path, retransmitted bytes, `uname -r`, the date and the
testbed settings), so the comparison needs no root: `sim_flows(cell)` recomputes the simulator's
side and `judge` applies the agreement goal of issue 11: the simulator's median FCT within
`MEDIAN_TOLERANCE` of the kernel's median, or inside the kernel's p10-p90 (heavy-tailed cells);
the path-2 share within `SHARE_TOLERANCE`. It also reports, without counting it in the verdict,
whether the median retransmitted bytes per transfer agree within a factor `RETRANS_FACTOR`.
The simulator's side pools `SIM_SEEDS` seeds, so with the endpoint timing model on
(`[host_delay]`) its band is over as many repetitions as the kernel's, or more.
`measure(cells)` re-measures the kernel side (root).
"""

from __future__ import annotations

import csv
import datetime
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

__all__ = ["Cell", "cells", "remeasure", "report", "markdown", "shaper_of", "flow_rows", "sim_flows", "measure", "read_csv", "write_csv", "judge",
           "CSV_NAME", "CSV_COLUMNS", "MEDIAN_TOLERANCE", "SHARE_TOLERANCE", "RETRANS_FACTOR", "SIM_SEEDS"]

CSV_NAME = "kernel.csv"
CSV_COLUMNS = ["cell", "scenario", "size_bytes", "shaper", "repetition", "fct_s", "path2_share",
               "retrans_bytes", "kernel", "date", "settings"]
#: The simulator's median FCT may differ from the kernel's median by this fraction ...
MEDIAN_TOLERANCE = 0.10
#: ... and its share of the bytes on the second path by this much.
SHARE_TOLERANCE = 0.05
#: The median retransmitted bytes per transfer agree when the larger is at most this many times
#: the smaller (both zero agree; zero against any retransmission does not).
RETRANS_FACTOR = 1.5
#: The simulator runs each cell with the scenario's seed and the next ones: 3 x 7 flows.
SIM_SEEDS = 3


@dataclass(frozen=True)
class Cell:
    """One concrete run of a grid scenario."""

    scenario: str          # the scenario file's stem
    shaper: str            # "htb" or "tbf<bucket>" (tbf32k: a 32 KiB bucket)
    size_bytes: int
    config: dict[str, Any]

    @property
    def id(self) -> str:
        return f"{self.scenario}/{self.shaper}/{_size_label(self.size_bytes)}"


def _size_label(n: int) -> str:
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n % k == 0:
            return f"{n // k}{unit}"
    return f"{n}B"


def shaper_of(config: dict[str, Any]) -> str | None:
    """"htb" when no link has a token bucket, "tbf<depth>" when every link has the same one,
    None for a mix (not a grid cell)."""
    bursts = {lk.get("burst_bytes") for lk in config["links"]}
    if len(bursts) != 1:
        return None
    b = bursts.pop()
    if b is None:
        return "htb"
    return f"tbf{b // 1024}k" if b % 1024 == 0 else f"tbf{b}"


def cells(grid_dir: str | Path) -> list[Cell]:
    """Every cell of the grid's scenarios, in file order then expansion order."""
    from mpsched.scenario import Scenario
    from mpsched.scenario.normalize import to_config

    out = []
    for f in sorted(Path(grid_dir).glob("*.toml")):
        for run in Scenario.load(f).expand():
            cfg = to_config(run)
            shaper = shaper_of(cfg)
            sizes = {int(fl["app"]["size_bytes"]) for fl in cfg["flows"]}
            if shaper is None or len(sizes) != 1:
                continue
            out.append(Cell(f.stem, shaper, sizes.pop(), cfg))
    return out


def flow_rows(tables: dict[str, dict[str, list]], n_paths: int) -> list[dict[str, Any]]:
    """Per completed flow: fct_s, the share of its acknowledged bytes on path 1 (the second
    path; None with one path) and its retransmitted bytes, in flow order."""
    f, s = tables["flows"], tables.get("subflows", {})
    acked: dict[int, dict[int, float]] = {}
    for fid, path, b in zip(s.get("flow_id", []), s.get("path", []), s.get("bytes_acked", [])):
        if path is not None and path >= 0:
            per = acked.setdefault(int(fid), {})
            per[int(path)] = per.get(int(path), 0.0) + float(b or 0)
    rows = []
    for i, fid in enumerate(f["flow_id"]):
        if not f["completed"][i] or f["fct_ns"][i] is None:
            continue
        per = acked.get(int(fid), {})
        total = sum(per.values())
        share = per.get(1, 0.0) / total if total and n_paths > 1 else None
        retrans = f.get("bytes_retransmitted", [None] * len(f["flow_id"]))[i]
        rows.append({"flow_id": int(fid), "fct_s": f["fct_ns"][i] / 1e9, "path2_share": share,
                     "retrans_bytes": retrans})
    return sorted(rows, key=lambda r: r["flow_id"])


def sim_flows(cell: Cell, seeds: int = SIM_SEEDS) -> list[dict[str, Any]]:
    """The simulator's flows of `cell` over `seeds` seeds (the scenario's and the next ones;
    deterministic), pooled."""
    from mpsched.engines import run_config

    rows = []
    for k in range(seeds):
        cfg = {**cell.config, "seed": int(cell.config["seed"]) + k}
        rows += flow_rows(run_config(cfg, "sim"), len(cell.config["paths"]))
    return rows


def measure(todo: list[Cell], on_cell: Callable[[Cell, list[dict[str, Any]]], None] | None = None,
            settings: str = "") -> list[dict[str, Any]]:
    """Run every cell once on the kernel testbed (needs root); returns the CSV rows. `on_cell`
    gets each cell's rows as soon as they are measured (to save progress)."""
    from mpsched.engines.kernel.run import run_kernel

    rows = []
    for cell in todo:
        load1 = os.getloadavg()[0]
        diags: list[dict] = []
        tables = run_kernel(cell.config, repetitions=1, diagnostics=diags)
        date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        seg = "segmented" if os.environ.get("MPSCHED_TESTBED_SEGMENT") == "1" else "gso"
        # Since issue 11's HyStart analysis the server's listener carries the flows' cc (sockets
        # born with it); "inherited cc" marks runs whose sockets were born with the host's bbr.
        seg += "; inherited cc" if os.environ.get("MPSCHED_TESTBED_INHERIT_CC") == "1" else "; listener cc"
        # Since 2026-12-01 the testbed holds the CPUs out of halt; a run the host still stalled says so.
        (diag,) = diags  # one repetition
        seg += "; cpus held awake" if diag["host"]["cpus_held_awake"] else ""
        seg += f"; host stalled: {diag['host']['stall']}" if diag["host"]["stall"] else ""
        mine = [{"cell": cell.id, "scenario": cell.scenario, "size_bytes": cell.size_bytes, "shaper": cell.shaper,
                 "repetition": k, "fct_s": round(r["fct_s"], 6),
                 "path2_share": None if r["path2_share"] is None else round(r["path2_share"], 4),
                 "retrans_bytes": r["retrans_bytes"], "kernel": os.uname().release, "date": date,
                 "settings": f"{seg}; load1={load1:.1f}{'; ' + settings if settings else ''}"}
                for k, r in enumerate(flow_rows(tables, len(cell.config["paths"])))]
        rows += mine
        if on_cell is not None:
            on_cell(cell, mine)
    return rows


def read_csv(path: str | Path) -> list[dict[str, Any]]:
    with open(path, newline="") as fh:
        out = []
        for r in csv.DictReader(fh):
            out.append({**r, "size_bytes": int(r["size_bytes"]), "repetition": int(r["repetition"]),
                        "fct_s": float(r["fct_s"]),
                        "path2_share": float(r["path2_share"]) if r["path2_share"] else None,
                        "retrans_bytes": int(r["retrans_bytes"]) if r["retrans_bytes"] else None})
        return out


def write_csv(path: str | Path, rows: list[dict[str, Any]]) -> None:
    """Write `rows` (atomically: a partial file never replaces a whole one)."""
    path = Path(path)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=CSV_COLUMNS, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r[k]) for k in CSV_COLUMNS})
    tmp.replace(path)


def _median_share(rows: list[dict[str, Any]]) -> float | None:
    shares = [r["path2_share"] for r in rows if r["path2_share"] is not None]
    return float(np.median(shares)) if shares else None


def _median_retrans(rows: list[dict[str, Any]]) -> float | None:
    b = [r["retrans_bytes"] for r in rows if r.get("retrans_bytes") is not None]
    return float(np.median(b)) if b else None


def retrans_agree(kernel_bytes: float | None, sim_bytes: float | None) -> bool | None:
    """Whether two median retransmitted-byte counts are within RETRANS_FACTOR of each other
    (None when either is unknown)."""
    if kernel_bytes is None or sim_bytes is None:
        return None
    lo, hi = sorted((kernel_bytes, sim_bytes))
    return hi <= RETRANS_FACTOR * lo


def judge(kernel: list[dict[str, Any]], sim: list[dict[str, Any]]) -> dict[str, Any]:
    """The cell's numbers and verdict: `ok` when the simulator's median FCT is within
    MEDIAN_TOLERANCE of the kernel's median or inside its p10-p90, and the path-2 shares
    (medians over the flows) are within SHARE_TOLERANCE; `why` names what missed. Reported
    beside it, not part of `ok`: the simulator's p10-p90, the median retransmitted bytes per
    transfer on both and `retrans_ok` (within RETRANS_FACTOR; None when unknown)."""
    k = np.array([r["fct_s"] for r in kernel], dtype=float)
    s = np.array([r["fct_s"] for r in sim], dtype=float)
    out: dict[str, Any] = {"kernel_n": len(k), "sim_n": len(s)}
    if not len(k) or not len(s):
        return {**out, "ok": False, "why": "no completed flow on " + ("the kernel" if not len(k) else "the simulator")}
    km, p10, p90, sm = float(np.median(k)), float(np.quantile(k, 0.1)), float(np.quantile(k, 0.9)), float(np.median(s))
    ks, ss = _median_share(kernel), _median_share(sim)
    kr, sr = _median_retrans(kernel), _median_retrans(sim)
    out.update(kernel_median_s=km, kernel_p10_s=p10, kernel_p90_s=p90, sim_median_s=sm, rel_error=(sm - km) / km,
               sim_p10_s=float(np.quantile(s, 0.1)), sim_p90_s=float(np.quantile(s, 0.9)),
               kernel_share=ks, sim_share=ss, kernel_retrans_bytes=kr, sim_retrans_bytes=sr,
               retrans_ok=retrans_agree(kr, sr))
    why = []
    if abs(sm - km) > MEDIAN_TOLERANCE * km and not p10 <= sm <= p90:
        why.append(f"median FCT {out['rel_error']:+.0%} outside p10-p90")
    if ks is not None and ss is not None and abs(ss - ks) > SHARE_TOLERANCE:
        why.append(f"path-2 share {ss:.2f} vs {ks:.2f}")
    return {**out, "ok": not why, "why": "; ".join(why)}


def remeasure(grid_dir: str | Path, only: str | None = None,
              on_cell: Callable[[Cell, list[dict[str, Any]]], None] | None = None) -> Path:
    """Measure the grid's cells (those whose id contains `only`, or all) on the kernel and
    rewrite `kernel.csv` after each cell: the other cells' rows are kept."""
    path = Path(grid_dir) / CSV_NAME
    all_cells = cells(grid_dir)
    todo = [c for c in all_cells if only is None or only in c.id]
    redo = {c.id for c in todo}
    rows = [r for r in (read_csv(path) if path.exists() else []) if r["cell"] not in redo]
    order = {c.id: i for i, c in enumerate(all_cells)}

    def save(cell: Cell, mine: list[dict[str, Any]]) -> None:
        rows.extend(mine)
        write_csv(path, sorted(rows, key=lambda r: (order.get(r["cell"], len(order)), r["repetition"])))
        if on_cell is not None:
            on_cell(cell, mine)

    measure(todo, save)
    return path


def report(grid_dir: str | Path) -> list[dict[str, Any]]:
    """`judge` of every measured cell (the simulator's side recomputed), in grid order."""
    path = Path(grid_dir) / CSV_NAME
    measured: dict[str, list[dict[str, Any]]] = {}
    for r in read_csv(path) if path.exists() else []:
        measured.setdefault(r["cell"], []).append(r)
    return [{"cell": c.id, **judge(measured[c.id], sim_flows(c))} for c in cells(grid_dir) if c.id in measured]


def markdown(rows: list[dict[str, Any]]) -> str:
    """The grid table (FCT in ms) for docs/testbed.md and benches/RESULTS.md."""
    def share(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}"

    def retrans(r: dict[str, Any]) -> str:
        kr, sr, ok = r["kernel_retrans_bytes"], r["sim_retrans_bytes"], r["retrans_ok"]
        if ok is None:
            return "-"
        return f"{kr / 1e3:.1f} / {sr / 1e3:.1f} {'within' if ok else 'outside'} {RETRANS_FACTOR:g}x"

    lines = ["| cell | n kernel / sim | kernel median (p10-p90) | simulator median (p10-p90) | error "
             "| path-2 share kernel / sim | retransmitted kB per transfer kernel / sim | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "kernel_median_s" not in r:
            lines.append(f"| {r['cell']} | {r['kernel_n']} / {r['sim_n']} | - | - | - | - | - | {r['why']} |")
            continue
        lines.append(f"| {r['cell']} | {r['kernel_n']} / {r['sim_n']} | {r['kernel_median_s'] * 1e3:.0f} "
                     f"({r['kernel_p10_s'] * 1e3:.0f}-{r['kernel_p90_s'] * 1e3:.0f}) | {r['sim_median_s'] * 1e3:.0f} "
                     f"({r['sim_p10_s'] * 1e3:.0f}-{r['sim_p90_s'] * 1e3:.0f}) | "
                     f"{r['rel_error']:+.0%} | {share(r['kernel_share'])} / {share(r['sim_share'])} | {retrans(r)} | "
                     f"{'ok' if r['ok'] else r['why']} |")
    return "\n".join(lines) + "\n"
