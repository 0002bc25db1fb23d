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
#: Measured with kernel.csv of 2026-11-28 (issue 11, grid11b): the testbed's server sockets born
#: with the flows' cubic (before: born with the host's bbr, which left TCP pacing on and
#: doubled HyStart's ACK-train threshold; docs/testbed.md "The kernel's HyStart"), at a
#: 1-minute load of 10-24 from other helpers' builds (the settings column).
KNOWN_MISSES: dict[str, str] = {
    "asym_wlan_lte/htb/64KiB": "sim 67 ms vs kernel 85 ms (-21%), kernel p10-p90 77-110 ms, path-2 share 0.00 vs 0.00: the kernel is slower, measured at load 19.4; 67 ms in the earlier pass at lower load: per-flow host costs on 2 loaded cores, not modelled (timing11)",
    "asym_wlan_lte/htb/256KiB": "sim 123 ms vs kernel 156 ms (-21%), kernel p10-p90 136-171 ms, path-2 share 0.00 vs 0.00: the kernel is slower, measured at load 19.8; 143 ms in the earlier pass at lower load: per-flow host costs on 2 loaded cores, not modelled (timing11)",
    "asym_wlan_lte/htb/1MiB": "sim 326 ms vs kernel 392 ms (-17%), kernel p10-p90 344-520 ms, path-2 share 0.07 vs 0.06: the kernel is slower, measured at load 19.9; 346 ms in the earlier pass at lower load: per-flow host costs on 2 loaded cores, not modelled (timing11)",
    "asym_wlan_lte/tbf32k/64KiB": "sim 60 ms vs kernel 109 ms (-45%), kernel p10-p90 70-195 ms, path-2 share 0.00 vs 0.00: the kernel is slower, measured at load 22.2; 66 ms in the earlier pass at lower load: per-flow host costs on 2 loaded cores, not modelled (timing11)",
    "asym_wlan_lte/tbf32k/256KiB": "sim 127 ms vs kernel 148 ms (-14%), kernel p10-p90 136-414 ms, path-2 share 0.00 vs 0.00: the kernel is slower, measured at load 21.5; 141 ms in the earlier pass at lower load: per-flow host costs on 2 loaded cores, not modelled (timing11)",
    "cross_udp/htb/64KiB": "sim 91 ms vs kernel 111 ms (-18%), kernel p10-p90 95-134 ms, path-2 share 0.00 vs 0.00: the kernel is slower, measured at load 24.6; 91 ms in the earlier pass at lower load: per-flow host costs on 2 loaded cores, not modelled (timing11)",
    "cross_udp/htb/256KiB": "sim 167 ms vs kernel 180 ms (-7%), kernel p10-p90 160-188 ms, path-2 share 0.40 vs 0.25: the simulator's second subflow (next to the UDP stream) carries more; suspected how fast its window opens against the CBR-filled queue",
    "cross_udp/htb/1MiB": "sim 381 ms vs kernel 455 ms (-16%), kernel p10-p90 405-501 ms, path-2 share 0.35 vs 0.40: the kernel is slower, measured at load 22.4; 406 ms in the earlier pass at lower load: per-flow host costs on 2 loaded cores, not modelled (timing11); path-2 share off; mechanism not found",
    "cross_udp/tbf32k/64KiB": "sim 80 ms vs kernel 103 ms (-23%), kernel p10-p90 82-124 ms, path-2 share 0.00 vs 0.00: the kernel is slower, measured at load 22.9; 86 ms in the earlier pass at lower load: per-flow host costs on 2 loaded cores, not modelled (timing11)",
    "cross_udp/tbf32k/1MiB": "sim 379 ms vs kernel 432 ms (-12%), kernel p10-p90 399-463 ms, path-2 share 0.44 vs 0.43: the kernel is slower, measured at load 22.0; 380 ms in the earlier pass at lower load: per-flow host costs on 2 loaded cores, not modelled (timing11)",
    "equal/htb/256KiB": "sim 148 ms vs kernel 175 ms (-15%), kernel p10-p90 153-180 ms, path-2 share 0.32 vs 0.33: the kernel's median is as in the earlier pass (177 ms); the simulator got faster with HyStart's round fix (no overshoot loss) while the kernel still resends 5.7 kB per flow: suspected the kernel's slow-start exit a round later",
    "equal/tbf32k/256KiB": "sim 160 ms vs kernel 200 ms (-20%), kernel p10-p90 174-224 ms, path-2 share 0.23 vs 0.22: the kernel is slower, measured at load 13.4; 154 ms in the earlier pass at lower load: per-flow host costs on 2 loaded cores, not modelled (timing11)",
    "equal_16mib/htb/16MiB": "sim 3670 ms vs kernel 4435 ms (-17%), kernel p10-p90 4050-5142 ms, path-2 share 0.50 vs 0.50: kernel 3.8-5.4 s with sockets born cubic at load 18 (3.69-3.92 s with bbr-born, paced sockets at load 7; the tbf cell at load 19 did not slow down): not explained, suspected host load",
    "fast_slow/htb/64KiB": "sim 44 ms vs kernel 50 ms (-11%), kernel p10-p90 47-57 ms, path-2 share 0.00 vs 0.00: the kernel is slower, measured at load 15.4; 45 ms in the earlier pass at lower load: per-flow host costs on 2 loaded cores, not modelled (timing11)",
    "fast_slow/htb/1MiB": "sim 213 ms vs kernel 352 ms (-39%), kernel p10-p90 225-544 ms, path-2 share 0.00 vs 0.03: kernel bimodal: 217-229 ms when the 2 Mbit/s path carries nothing, 322-545 ms when it carries 2-6 % (its tail sets the FCT); the simulator never uses it at 1 MiB; suspected the linux scheduler's choice once the fast subflow's send buffer is full after HyStart (needs >= 21 repetitions)",
    "fast_slow/tbf32k/64KiB": "sim 40 ms vs kernel 51 ms (-21%), kernel p10-p90 45-59 ms, path-2 share 0.00 vs 0.00: the kernel is slower, measured at load 18.3; 46 ms in the earlier pass at lower load: per-flow host costs on 2 loaded cores, not modelled (timing11)",
    "fast_slow/tbf32k/256KiB": "sim 157 ms vs kernel 95 ms (+65%), kernel p10-p90 91-105 ms, path-2 share 0.00 vs 0.00: the simulator's bucket burst overflows the queue at the tail of the last flight: 12 segments dropped with nothing sent after them, repaired by the tail-loss probe ~45 ms later (PRR from a pipe of 0); the kernel resends 27-42 kB per flow and finishes in 95 ms (its loss pattern not captured yet)",
    "jitter/htb/4MiB": "sim 1042 ms vs kernel 1236 ms (-16%), kernel p10-p90 1085-1293 ms, path-2 share 0.19 vs 0.20: the kernel is slower, measured at load 14.7; 1059 ms in the earlier pass at lower load: per-flow host costs on 2 loaded cores, not modelled (timing11)",
    "jitter/tbf32k/64KiB": "sim 60 ms vs kernel 78 ms (-23%), kernel p10-p90 65-91 ms, path-2 share 0.00 vs 0.00: the kernel is slower, measured at load 15.6; 65 ms in the earlier pass at lower load: per-flow host costs on 2 loaded cores, not modelled (timing11)",
    "loss/htb/64KiB": "sim 91 ms vs kernel 115 ms (-20%), kernel p10-p90 107-169 ms, path-2 share 0.00 vs 0.00: the kernel is slower, measured at load 17.2; 92 ms in the earlier pass at lower load: per-flow host costs on 2 loaded cores, not modelled (timing11)",
    "loss/htb/256KiB": "sim 148 ms vs kernel 182 ms (-18%), kernel p10-p90 172-227 ms, path-2 share 0.32 vs 0.22: the kernel's median is as in the earlier pass (175 ms); the simulator got faster with HyStart's round fix (no overshoot loss) while the kernel still resends 1.4 kB per flow: suspected the kernel's slow-start exit a round later; the 1 % lossy subflow carries more in the simulator; suspected its loss recovery/cwnd after early losses",
    "loss/htb/1MiB": "sim 328 ms vs kernel 428 ms (-24%), kernel p10-p90 364-445 ms, path-2 share 0.45 vs 0.37: the kernel is slower, measured at load 17.9; 390 ms in the earlier pass at lower load: per-flow host costs on 2 loaded cores, not modelled (timing11); the 1 % lossy subflow carries more in the simulator; suspected its loss recovery/cwnd after early losses",
    "loss/tbf32k/64KiB": "sim 80 ms vs kernel 119 ms (-33%), kernel p10-p90 105-128 ms, path-2 share 0.00 vs 0.00: the kernel is slower, measured at load 21.5; 87 ms in the earlier pass at lower load: per-flow host costs on 2 loaded cores, not modelled (timing11)",
    "loss/tbf32k/256KiB": "sim 160 ms vs kernel 182 ms (-12%), kernel p10-p90 175-196 ms, path-2 share 0.23 vs 0.22: the kernel is slower, measured at load 22.8; 151 ms in the earlier pass at lower load: per-flow host costs on 2 loaded cores, not modelled (timing11)",
    "loss/tbf32k/1MiB": "sim 324 ms vs kernel 398 ms (-19%), kernel p10-p90 357-466 ms, path-2 share 0.43 vs 0.36: the kernel's median is as in the earlier pass (392 ms); the simulator got faster with HyStart's round fix (no overshoot loss) while the kernel still resends 78.3 kB per flow: suspected the kernel's slow-start exit a round later; the 1 % lossy subflow carries more in the simulator; suspected its loss recovery/cwnd after early losses",
    "loss/tbf32k/4MiB": "sim 1384 ms vs kernel 1572 ms (-12%), kernel p10-p90 1369-1644 ms, path-2 share 0.37 vs 0.31: the 1 % lossy subflow carries more in the simulator; suspected its loss recovery/cwnd after early losses",
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
