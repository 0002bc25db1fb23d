"""The kernel agreement grid (scenarios/validation/grid/, issue 11): the kernel's measurements
are stored in kernel.csv, so this needs no root; each measured cell's simulator side is
recomputed and must stay within the tolerance of the kernel's (median FCT within 10 % of the
kernel median or inside its p10-p90, path-2 share within 0.05).

Cells that miss today are listed in KNOWN_MISSES with the measured error and the suspected
mechanism; they are strict xfails, so a fix shows up as a failure here too (move the cell out).
"""

from __future__ import annotations

import functools

import pytest

from mpsched.engines.kernel import make_plan
from mpsched.study.grid import (CSV_NAME, RETRANS_FACTOR, SIM_SEEDS, cells, judge, read_csv, retrans_agree,
                                shaper_of, sim_flows)

from conftest import REPO, has_core_runner

GRID = REPO / "scenarios" / "validation" / "grid"
CELLS = {c.id: c for c in cells(GRID)}
MEASURED: dict[str, list] = {}
if (GRID / CSV_NAME).exists():
    for _r in read_csv(GRID / CSV_NAME):
        MEASURED.setdefault(_r["cell"], []).append(_r)

#: cell id -> why the simulator misses the kernel there (measured error; suspected mechanism).
#: Kernel side: kernel.csv of 2026-11-25 (1-minute load 3.1-11.5 from other helpers when each
#: cell started: the settings column). Simulator side: the endpoint timing model on
#: ([host_delay], measured on the testbed), SIM_SEEDS seeds pooled (21 flows).
#: The timing model brought five cells inside their tolerance (cross_udp htb 256 KiB and 1 MiB,
#: cross_udp/tbf32k/1MiB, equal/tbf32k/1MiB and 4MiB: with constant delays every flow repeated one
#: loss pattern, e.g. equal/tbf32k/4MiB +32 %, now +2 %) and took one out
#: (cross_udp/tbf32k/256KiB: its path-2 share fell from within 0.05 to 0.19 vs 0.28).
KNOWN_MISSES: dict[str, str] = {
    "cross_udp/tbf32k/256KiB": "sim 148 ms vs kernel 154 ms (-3%), path-2 share 0.19 vs 0.28: out since the endpoint timing model (share was within 0.05 with constant host timing); the second subflow carries less in the simulator, as in equal/tbf32k/256KiB",
    "equal/tbf32k/256KiB": "sim 148 ms vs kernel 154 ms (-4%), path-2 share 0.19 vs 0.30: the second subflow joins one RTT late and carries less in the simulator; suspected the bucket's first flight on the joining subflow",
    "fast_slow/htb/4MiB": "sim 3104 ms vs kernel 2184 ms (+42%), kernel p10-p90 2181-2190 ms, path-2 share 0.08 vs 0.06: the simulator puts more on the 2 Mbit/s path; the slow subflow's last segments set the FCT; suspected the linux scheduler's use of the slow subflow near the end of the transfer",
    "fast_slow/tbf32k/64KiB": "sim 41 ms vs kernel 46 ms (-11%), kernel p10-p90 44-49 ms, path-2 share 0.00 vs 0.00: a 5 ms difference; the measured per-packet host delay (median 68 us) accounts for about 1 ms of it; suspected per-flow costs of the kernel (connect/accept, application wake-ups on 2 loaded cores), not modelled",
    "fast_slow/tbf32k/256KiB": "sim 151 ms vs kernel 101 ms (+49%), kernel p10-p90 101-103 ms, path-2 share 0.00 vs 0.00: the simulator's fast-path queue drops more packets behind the bucket's bursts than with htb and repairs them slower than the kernel (which resends 25.6 kB per flow); mechanism not found",
    "fast_slow/tbf32k/4MiB": "sim 1696 ms vs kernel 1302 ms (+30%), kernel p10-p90 1213-1391 ms, path-2 share 0.08 vs 0.07: as the htb cell: more on the 2 Mbit/s path, whose tail sets the FCT",
    "loss/htb/256KiB": "sim 162 ms vs kernel 175 ms (-7%), path-2 share 0.23 vs 0.30: the 1 % lossy second subflow carries less in the simulator; suspected its loss recovery/cwnd after early losses in a short flow",
    "loss/tbf32k/256KiB": "sim 149 ms vs kernel 151 ms (-1%), path-2 share 0.18 vs 0.32: as the htb cell: the lossy second subflow carries less in the simulator",
    "loss/tbf32k/1MiB": "sim 347 ms vs kernel 392 ms (-11%, inside the kernel's p10-p90 329-445 ms), path-2 share 0.36 vs 0.24: the lossy subflow carries more in the simulator; suspected loss recovery on the lossy subflow",
}


#: cell id -> the median retransmitted bytes per transfer, kernel and simulator, where they are
#: not within RETRANS_FACTOR (1.5x) of each other (measured as KNOWN_MISSES). Not part of the
#: cell's verdict yet: the retransmission goal of issue 11 is reported, and enforced only where
#: the two agree today. Most misses are the kernel retransmitting 2-8x more on 1-BDP queues
#: (htb, tcp_single under tbf) than the simulator drops; the slow-start / HyStart mechanisms
#: behind them are another branch's work (grid11b).
RETRANS_MISSES: dict[str, str] = {
    "asym_wlan_lte/htb/256KiB": "kernel 42.6 kB, sim 17.0 kB per transfer (0.40x)",
    "asym_wlan_lte/htb/1MiB": "kernel 106.3 kB, sim 19.9 kB per transfer (0.19x)",
    "asym_wlan_lte_16mib/tbf32k/16MiB": "kernel 332.4 kB, sim 511.2 kB per transfer (1.54x)",
    "cross_udp/tbf32k/256KiB": "kernel 0.0 kB, sim 11.4 kB per transfer (no retransmission on the kernel)",
    "cross_udp/tbf32k/4MiB": "kernel 285.5 kB, sim 430.3 kB per transfer (1.51x)",
    "equal/htb/256KiB": "kernel 7.1 kB, sim 18.5 kB per transfer (2.60x)",
    "equal/tbf32k/256KiB": "kernel 0.0 kB, sim 11.4 kB per transfer (no retransmission on the kernel)",
    "fast_slow/htb/256KiB": "kernel 26.7 kB, sim 2.8 kB per transfer (0.11x)",
    "fast_slow/htb/1MiB": "kernel 107.9 kB, sim 7.1 kB per transfer (0.07x)",
    "fast_slow/htb/4MiB": "kernel 191.7 kB, sim 116.4 kB per transfer (0.61x)",
    "fast_slow/tbf32k/256KiB": "kernel 25.6 kB, sim 10.8 kB per transfer (0.42x)",
    "jitter/htb/256KiB": "kernel 45.3 kB, sim 17.0 kB per transfer (0.38x)",
    "jitter/htb/1MiB": "kernel 129.2 kB, sim 19.9 kB per transfer (0.15x)",
    "jitter/htb/4MiB": "kernel 129.2 kB, sim 21.3 kB per transfer (0.16x)",
    "jitter_16mib/htb/16MiB": "kernel 174.5 kB, sim 39.8 kB per transfer (0.23x)",
    "loss/htb/256KiB": "kernel 8.5 kB, sim 19.9 kB per transfer (2.33x)",
    "loss/htb/4MiB": "kernel 78.9 kB, sim 125.0 kB per transfer (1.58x)",
    "loss/tbf32k/256KiB": "kernel 1.4 kB, sim 11.4 kB per transfer (8.00x)",
    "tcp_single/htb/1MiB": "kernel 39.1 kB, sim 24.6 kB per transfer (0.63x)",
    "tcp_single/htb/4MiB": "kernel 44.9 kB, sim 24.6 kB per transfer (0.55x)",
    "tcp_single/tbf32k/1MiB": "kernel 214.3 kB, sim 26.1 kB per transfer (0.12x)",
    "tcp_single/tbf32k/4MiB": "kernel 214.3 kB, sim 27.5 kB per transfer (0.13x)",
    "tcp_single_16mib/htb/16MiB": "kernel 44.9 kB, sim 27.5 kB per transfer (0.61x)",
    "tcp_single_16mib/tbf32k/16MiB": "kernel 218.6 kB, sim 29.0 kB per transfer (0.13x)",
}


def _param(cell_id: str, misses: dict[str, str] = KNOWN_MISSES):
    if cell_id in misses:
        return pytest.param(cell_id, marks=pytest.mark.xfail(strict=True, reason=misses[cell_id]))
    return cell_id


@functools.cache
def _sim(cell_id: str) -> list[dict]:
    return sim_flows(CELLS[cell_id])


@pytest.mark.skipif(not has_core_runner(), reason="needs the compiled core")
@pytest.mark.parametrize("cell_id", [_param(c) for c in CELLS if c in MEASURED])
def test_the_simulator_agrees_with_the_kernel(cell_id):
    verdict = judge(MEASURED[cell_id], _sim(cell_id))
    assert verdict["ok"], f"{cell_id}: {verdict['why']} ({verdict})"


@pytest.mark.skipif(not has_core_runner(), reason="needs the compiled core")
@pytest.mark.parametrize("cell_id", [_param(c, RETRANS_MISSES) for c in CELLS if c in MEASURED])
def test_retransmissions_per_transfer_agree_within_the_factor(cell_id):
    v = judge(MEASURED[cell_id], _sim(cell_id))
    assert v["retrans_ok"], (f"{cell_id}: kernel {v['kernel_retrans_bytes']} B, simulator "
                             f"{v['sim_retrans_bytes']} B per transfer (median), not within {RETRANS_FACTOR}x")


def test_known_misses_are_measured_cells():
    for misses in (KNOWN_MISSES, RETRANS_MISSES):
        assert set(misses) <= set(MEASURED), sorted(set(misses) - set(MEASURED))


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


def test_judge_reports_retransmissions_beside_the_verdict():
    kernel = [{"fct_s": 1.0, "path2_share": 0.3, "retrans_bytes": b} for b in (0, 10_000, 20_000, 30_000, 90_000)]
    sim = lambda b: [{"fct_s": 1.0, "path2_share": 0.3, "retrans_bytes": b}]  # noqa: E731
    assert judge(kernel, sim(30_000))["retrans_ok"]                      # 1.5x the kernel's median 20 kB
    v = judge(kernel, sim(31_000))
    assert v["ok"] and v["retrans_ok"] is False                          # reported, not in the verdict
    assert judge(kernel, sim(13_334))["retrans_ok"] and not judge(kernel, sim(13_000))["retrans_ok"]
    assert retrans_agree(0, 0) and not retrans_agree(0, 1448) and retrans_agree(None, 5) is None


@pytest.mark.skipif(not has_core_runner(), reason="needs the compiled core")
@pytest.mark.parametrize("cell_id", list(CELLS))
def test_each_transfer_starts_on_idle_links(cell_id):
    """A cell's flows are repetitions only if each ends before the next starts (on both engines)."""
    cell = CELLS[cell_id]
    starts = sorted(f["start_ns"] for f in cell.config["flows"])
    gap_s = min(b - a for a, b in zip(starts, starts[1:])) / 1e9
    sim = _sim(cell_id)
    assert len(sim) == SIM_SEEDS * len(starts) and max(r["fct_s"] for r in sim) < gap_s, (cell_id, gap_s)
    assert all(r["fct_s"] < gap_s for r in MEASURED.get(cell_id, [])), (cell_id, gap_s)


def test_validate_needs_a_scenario_or_a_grid():
    import subprocess
    import sys
    from pathlib import Path

    exe = Path(sys.executable).parent / "mpsched"
    proc = subprocess.run([str(exe), "validate"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "--grid" in proc.stderr and "Traceback" not in proc.stderr
