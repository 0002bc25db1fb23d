"""The kernel agreement grid (scenarios/validation/grid/, issue 11): the kernel's measurements
are stored in kernel.csv, so this needs no root; each measured cell's simulator side is
recomputed and must stay within the tolerance of the kernel's (median FCT within 10 % of the
kernel median or inside its p10-p90, path-2 share within 0.05).

Cells that miss today are listed in KNOWN_MISSES with the measured error and the suspected
mechanism; they are strict xfails, so a fix shows up as a failure here too (move the cell out).
"""

from __future__ import annotations

import pytest

from mpsched.engines.kernel import make_plan
from mpsched.study.grid import CSV_NAME, cells, judge, read_csv, shaper_of, sim_flows

from conftest import REPO, has_core_runner

GRID = REPO / "scenarios" / "validation" / "grid"
CELLS = {c.id: c for c in cells(GRID)}
MEASURED: dict[str, list] = {}
if (GRID / CSV_NAME).exists():
    for _r in read_csv(GRID / CSV_NAME):
        MEASURED.setdefault(_r["cell"], []).append(_r)

#: cell id -> why the simulator misses the kernel there (measured error; suspected mechanism).
#: Measured with kernel.csv of 2026-11-25 (1-minute load 3.1-11.5 from other
#: helpers when each cell started: the settings column).
KNOWN_MISSES: dict[str, str] = {
    # Two misses that appeared when the upstream-Linux changes of issue 15 reached `linux`
    # (its send-queue estimate counts every unacknowledged byte, stale subflows): the same
    # merge brought asym_wlan_lte 4 MiB (htb, tbf) and loss/htb/1MiB inside their tolerance.
    "equal/tbf32k/4MiB": "sim 1303 ms vs kernel 986 ms (+32%), kernel p10-p90 980-1028 ms, path-2 share 0.49 vs 0.49: appeared with issue 15's linux changes (was +3 %); not analysed yet",
    "cross_udp/tbf32k/1MiB": "sim 342 ms vs kernel 380 ms (-10%), kernel p10-p90 369-415 ms, path-2 share 0.41 vs 0.34: appeared with issue 15's linux changes; not analysed yet",
    "cross_udp/htb/256KiB": "sim 161 ms vs kernel 179 ms (-10%), path-2 share 0.21 vs 0.23: no loss on either side; suspected per-flow host costs of the kernel (connect/accept, wakeups on 2 loaded cores), not modelled",
    "cross_udp/htb/1MiB": "sim 427 ms vs kernel 406 ms (+5%), path-2 share 0.39 vs 0.33: the second subflow gets more next to the UDP stream in the simulator; suspected how fast its window opens against the CBR-filled queue",
    "equal/tbf32k/256KiB": "sim 160 ms vs kernel 154 ms (+4%), path-2 share 0.23 vs 0.30: the second subflow joins one RTT late and carries less in the simulator; suspected the bucket's first flight on the joining subflow",
    "equal/tbf32k/1MiB": "sim 350 ms vs kernel 414 ms (-15%), path-2 share 0.35 vs 0.42: heavy-tailed kernel (p10-p90 335-561 ms); the second subflow carries less in the simulator; suspected as the 256 KiB cell",
    "fast_slow/htb/4MiB": "sim 3098 ms vs kernel 2184 ms (+42%), path-2 share 0.08 vs 0.06: the simulator puts more on the 2 Mbit/s path and retransmits 75 kB there; the slow subflow's last segments set the FCT; suspected the linux scheduler's use of the slow subflow near the end of the transfer",
    "fast_slow/tbf32k/64KiB": "sim 40 ms vs kernel 46 ms (-14%), path-2 share 0.00 vs 0.00: a 6 ms difference at 46 ms (p10-p90 44-49); suspected per-flow host costs of the kernel, not modelled",
    "fast_slow/tbf32k/256KiB": "sim 157 ms vs kernel 101 ms (+55%), path-2 share 0.00 vs 0.00: the simulator's fast-path queue drops 12 packets per flow behind the bucket's bursts (htb: 2) and repairs them ~55 ms slower than the kernel (which resends 25.6 kB per flow); mechanism not found",
    "fast_slow/tbf32k/4MiB": "sim 1840 ms vs kernel 1302 ms (+41%), path-2 share 0.10 vs 0.07: as the htb cell: more on the 2 Mbit/s path, whose tail sets the FCT",
    "loss/htb/256KiB": "sim 161 ms vs kernel 175 ms (-8%), path-2 share 0.23 vs 0.30: the 1 % lossy second subflow carries less in the simulator; suspected its loss recovery/cwnd after early losses in a short flow",
    "loss/tbf32k/256KiB": "sim 160 ms vs kernel 151 ms (+6%), path-2 share 0.23 vs 0.32: as the htb cell: the lossy second subflow carries less in the simulator",
    "loss/tbf32k/1MiB": "sim 350 ms vs kernel 392 ms (-11%), path-2 share 0.35 vs 0.24: the lossy subflow carries more in the simulator (0.35 vs 0.24); suspected loss recovery on the lossy subflow",
}


def _param(cell_id: str):
    if cell_id in KNOWN_MISSES:
        return pytest.param(cell_id, marks=pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[cell_id]))
    return cell_id


@pytest.mark.skipif(not has_core_runner(), reason="needs the compiled core")
@pytest.mark.parametrize("cell_id", [_param(c) for c in CELLS if c in MEASURED])
def test_the_simulator_agrees_with_the_kernel(cell_id):
    verdict = judge(MEASURED[cell_id], sim_flows(CELLS[cell_id]))
    assert verdict["ok"], f"{cell_id}: {verdict['why']} ({verdict})"


def test_known_misses_are_measured_cells():
    assert set(KNOWN_MISSES) <= set(MEASURED), sorted(set(KNOWN_MISSES) - set(MEASURED))


def test_the_csv_holds_grid_cells_with_enough_repetitions():
    for cell_id, rows in MEASURED.items():
        assert cell_id in CELLS, f"{cell_id} is in {CSV_NAME} but no grid scenario has it"
        assert len(rows) >= 7, f"{cell_id}: {len(rows)} kernel repetitions, want >= 7"
        assert {r["kernel"] for r in rows} and all(r["date"] for r in rows)


def test_the_grid_has_its_shapes_shapers_and_sizes_and_fits_the_kernel():
    shapes = {"asym_wlan_lte", "fast_slow", "equal", "jitter", "cross_udp", "tcp_single", "loss"}
    big = {"asym_wlan_lte", "equal", "jitter", "tcp_single"}  # 16 MiB, flows further apart
    assert {c.scenario for c in CELLS.values()} == shapes | {f"{s}_16mib" for s in big}
    for name in {c.scenario for c in CELLS.values()}:
        mine = [c for c in CELLS.values() if c.scenario == name]
        sizes = (16384,) if name.endswith("_16mib") else (64, 256, 1024, 4096)
        # each size under both shapers; a per-path sweep's mixed combinations are not cells
        assert sorted((c.shaper, c.size_bytes) for c in mine) == sorted(
            (s, k << 10) for s in ("htb", "tbf32k") for k in sizes), name
    for c in CELLS.values():
        plan = make_plan(c.config)
        assert len(plan.flows) == 7 and all(lk.overhead_bytes == 14 for lk in plan.links), c.id
        assert all(lk.burst_bytes == (None if c.shaper == "htb" else 32768) for lk in plan.links), c.id
        assert not any("impairments" in n for n in plan.notes), c.id


def test_shaper_of_names_a_uniform_shaper_only():
    link = lambda b: {"burst_bytes": b} if b else {}  # noqa: E731
    assert shaper_of({"links": [link(None), link(None)]}) == "htb"
    assert shaper_of({"links": [link(32768), link(32768)]}) == "tbf32k"
    assert shaper_of({"links": [link(32768), link(None)]}) is None


def test_judge_takes_the_median_band_and_the_p10_p90_band():
    kernel = [{"fct_s": x, "path2_share": 0.3} for x in (1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0)]
    # kernel median 1.5, p10 1.0, p90 5.1
    assert judge(kernel, [{"fct_s": 1.6, "path2_share": 0.32}])["ok"]           # within 10 %
    assert judge(kernel, [{"fct_s": 4.0, "path2_share": 0.3}])["ok"]            # heavy tail: in p10-p90
    v = judge(kernel, [{"fct_s": 5.5, "path2_share": 0.3}])
    assert not v["ok"] and "median FCT" in v["why"]
    v = judge(kernel, [{"fct_s": 1.5, "path2_share": 0.4}])
    assert not v["ok"] and "share" in v["why"]
    assert not judge(kernel, [])["ok"]


@pytest.mark.skipif(not has_core_runner(), reason="needs the compiled core")
@pytest.mark.parametrize("cell_id", list(CELLS))
def test_each_transfer_starts_on_idle_links(cell_id):
    """A cell's flows are repetitions only if each ends before the next starts (on both engines)."""
    cell = CELLS[cell_id]
    starts = sorted(f["start_ns"] for f in cell.config["flows"])
    gap_s = min(b - a for a, b in zip(starts, starts[1:])) / 1e9
    sim = sim_flows(cell)
    assert len(sim) == len(starts) and max(r["fct_s"] for r in sim) < gap_s, (cell_id, gap_s)
    assert all(r["fct_s"] < gap_s for r in MEASURED.get(cell_id, [])), (cell_id, gap_s)


def test_validate_needs_a_scenario_or_a_grid():
    import subprocess
    import sys
    from pathlib import Path

    exe = Path(sys.executable).parent / "mpsched"
    proc = subprocess.run([str(exe), "validate"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "--grid" in proc.stderr and "Traceback" not in proc.stderr
