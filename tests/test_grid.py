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
#: Kernel side: kernel.csv re-measured 2026-11-28 with the testbed's server sockets born cubic
#: (before, born bbr: paced, with HyStart's ACK-train threshold doubled; docs/testbed.md "The
#: kernel's HyStart"), at a 1-minute load of 0-3.9 (the settings column). Simulator side: HyStart's
#: rounds as Linux 6.18 tracks them, the endpoint timing model on ([host_delay], measured on the
#: testbed), SIM_SEEDS seeds pooled (21 flows). 54 of 64 cells agree.
KNOWN_MISSES: dict[str, str] = {
    "cross_udp/htb/256KiB": "sim 166 ms vs kernel 175 ms (-5%), kernel p10-p90 158-180 ms, path-2 share 0.40 vs 0.31 (kernel measured 2026-11-28 at load1 1.8): the simulator's second subflow (next to the UDP stream) carries more; suspected how fast its window opens against the CBR-filled queue",
    "cross_udp/htb/1MiB": "sim 401 ms vs kernel 489 ms (-18%), kernel p10-p90 402-519 ms, path-2 share 0.36 vs 0.44 (kernel measured 2026-11-28 at load1 1.6): not analysed yet",
    "cross_udp/tbf32k/256KiB": "sim 148 ms vs kernel 168 ms (-12%), kernel p10-p90 159-169 ms, path-2 share 0.19 vs 0.22 (kernel measured 2026-11-28 at load1 1.6): not analysed yet",
    "cross_udp/tbf32k/1MiB": "sim 370 ms vs kernel 416 ms (-11%), kernel p10-p90 388-443 ms, path-2 share 0.37 vs 0.40 (kernel measured 2026-11-28 at load1 1.4): not analysed yet",
    "equal/htb/256KiB": "sim 149 ms vs kernel 174 ms (-14%), kernel p10-p90 157-177 ms, path-2 share 0.32 vs 0.34 (kernel measured 2026-11-28 at load1 1.6): the kernel's median is as in the earlier pass (177 ms); the simulator got faster with HyStart's round fix (no overshoot loss) while the kernel still resends 5.7 kB per flow: suspected the kernel's slow-start exit a round later",
    "equal/tbf32k/256KiB": "sim 148 ms vs kernel 170 ms (-13%), kernel p10-p90 169-175 ms, path-2 share 0.19 vs 0.22 (kernel measured 2026-11-28 at load1 1.7): the simulator is faster with no path-2 share miss (the earlier share miss went with sockets born cubic); not analysed yet",
    "fast_slow/tbf32k/256KiB": "sim 151 ms vs kernel 86 ms (+76%), kernel p10-p90 84-88 ms, path-2 share 0.00 vs 0.00 (kernel measured 2026-11-28 at load1 2.1): the simulator's bucket burst overflows the queue at the tail of the last flight: 12 segments dropped with nothing sent after them, repaired by the tail-loss probe ~45 ms later (PRR from a pipe of 0); the kernel resends 19.8 kB per flow and finishes in 86 ms (its loss pattern not captured yet)",
    "loss/htb/256KiB": "sim 149 ms vs kernel 178 ms (-16%), kernel p10-p90 158-233 ms, path-2 share 0.32 vs 0.26 (kernel measured 2026-11-28 at load1 1.2): the simulator got faster with HyStart's round fix (no overshoot loss) while the kernel still resends 6.4 kB per flow: suspected the kernel's slow-start exit a round later; the 1 % lossy subflow carries more in the simulator; suspected its loss recovery/cwnd after early losses",
    "loss/htb/1MiB": "sim 369 ms vs kernel 396 ms (-7%), kernel p10-p90 362-438 ms, path-2 share 0.46 vs 0.40 (kernel measured 2026-11-28 at load1 1.2): not analysed yet",
    "loss/tbf32k/256KiB": "sim 149 ms vs kernel 168 ms (-11%), kernel p10-p90 152-168 ms, path-2 share 0.18 vs 0.22 (kernel measured 2026-11-28 at load1 1.1): the simulator is faster with the path-2 share within tolerance; not analysed yet",
}


#: cell id -> the median retransmitted bytes per transfer, kernel and simulator, where they are
#: not within RETRANS_FACTOR (1.5x) of each other (measured as KNOWN_MISSES). Not part of the
#: cell's verdict yet: the retransmission goal of issue 11 is reported, and enforced only where
#: the two agree today (45 of 64 cells; fast_slow/htb/4MiB joined them once upstream's MPTCP-level
#: re-send was modelled, issue 15: sim 106.5 kB against the kernel's 119.3 kB). In most misses the
#: kernel retransmits more than the simulator: short flows where the simulator's HyStart ends
#: slow start without loss while the kernel resends a few segments, and tcp_single under tbf (213 kB against 12 kB at 1 MiB).
#: Why plain TCP under tbf resends more on the kernel (measured with benches/probe_hystart.py).
_TSO_ACKS = ("the kernel's client acknowledges each GSO skb once, 4-segment skbs (2.42 ms at 20 Mbit/s) break "
             "HyStart's ACK train and tbf's bucket shortens it, so slow start ends late (train at cwnd ~135, "
             "delay ~146) and overshoots in some repetitions; the simulator sends single segments (path gso "
             "off; docs/testbed.md 'TSO skbs, stretch ACKs and the tbf retransmission gap')")
RETRANS_MISSES: dict[str, str] = {
    "asym_wlan_lte/htb/1MiB": "kernel 9.9 kB, sim 5.7 kB per transfer (0.57x)",
    "cross_udp/htb/256KiB": "kernel 8.5 kB, sim 0.0 kB per transfer (0.00x)",
    "cross_udp/htb/1MiB": "kernel 108.2 kB, sim 22.7 kB per transfer (0.21x)",
    "cross_udp/htb/4MiB": "kernel 96.6 kB, sim 25.6 kB per transfer (0.26x)",
    "equal/htb/256KiB": "kernel 5.7 kB, sim 0.0 kB per transfer (0.00x)",
    "equal/htb/1MiB": "kernel 44.0 kB, sim 0.0 kB per transfer (0.00x)",
    "equal/tbf32k/4MiB": "kernel 298.1 kB, sim 147.7 kB per transfer (0.50x)",
    "equal_16mib/htb/16MiB": "kernel 46.7 kB, sim 17.0 kB per transfer (0.36x)",
    "equal_16mib/tbf32k/16MiB": "kernel 247.7 kB, sim 153.7 kB per transfer (0.62x)",
    "fast_slow/htb/4MiB": ("kernel 119.3 kB, sim 75.3 kB per transfer (0.63x): it matched (106.5 kB) only while the "
                           "simulator re-sent ~103 kB per transfer at the MPTCP level (its timer's period was "
                           "recomputed at each re-arm), which loaded the fast path; the kernel re-sent 2 frags in 7 "
                           "transfers (ftrace, docs/testbed.md 'Failover'), the corrected simulator none"),
    "fast_slow/tbf32k/256KiB": "kernel 19.8 kB, sim 10.8 kB per transfer (0.55x)",
    "fast_slow/tbf32k/1MiB": "kernel 127.8 kB, sim 72.4 kB per transfer (0.57x)",
    "jitter/htb/4MiB": "kernel 11.4 kB, sim 31.2 kB per transfer (2.75x)",
    "jitter/tbf32k/4MiB": "kernel 169.2 kB, sim 80.4 kB per transfer (0.48x)",
    "jitter_16mib/tbf32k/16MiB": "kernel 177.5 kB, sim 100.5 kB per transfer (0.57x)",
    "loss/htb/256KiB": "kernel 6.4 kB, sim 0.0 kB per transfer (0.00x)",
    "loss/htb/1MiB": "kernel 12.8 kB, sim 4.3 kB per transfer (0.33x)",
    "tcp_single/tbf32k/1MiB": "kernel 212.9 kB, sim 11.6 kB per transfer (0.05x): " + _TSO_ACKS,
    "tcp_single/tbf32k/4MiB": "kernel 18.8 kB, sim 11.6 kB per transfer (0.62x): " + _TSO_ACKS,
    "tcp_single_16mib/tbf32k/16MiB": "kernel 215.8 kB, sim 13.0 kB per transfer (0.06x): " + _TSO_ACKS,
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
