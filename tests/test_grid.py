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
#: Kernel side: since 2026-11-30 kernel.csv is ONE host's quiet measurement: kernel build
#: 6.18.44-fc-v657 (the testbed machine's build today), a 1-minute load of 0.0-0.8 with nothing else
#: running (the settings column), the server sockets born cubic (docs/testbed.md "The kernel's
#: HyStart"), GSO skbs kept whole; 7 flows a cell and 21 in 22 cells: the 18 heavy-tailed ones (the
#: cells that had 21 before, and every cell whose first 7 flows span p90/p10 > 1.15) and four whose
#: share or retransmissions were bimodal (the three 256 KiB htb cells, jitter_16mib/htb/16MiB;
#: benches/grid_more_reps.py).
#: Until then it was the v782 host's (load 0-4) with 14 v657 rows in one cell, a mixed reference,
#: kept as benches/data/grid_kernel-v782-20261128.csv: the kernel's own medians moved by up to 2x
#: between the two builds (docs/testbed.md "Every remaining miss: mechanism and evidence").
#: Simulator side: HyStart's rounds as Linux 6.18 tracks them, the endpoint timing model on
#: ([host_delay], measured on the testbed), SIM_SEEDS seeds pooled (21 flows), the grid's paths
#: with `gso = true` as the testbed carries them (the lossy path per segment, as the delayer
#: segments there), and the receiver re-arming quickack for every skb that grows rcv_ssthresh
#: (Linux `tcp_grow_window`, tcp11e), and the MPTCP receiver announcing min(free buffer, the
#: subflow's rcv_ssthresh) at DATA_ACK (Linux `__tcp_select_window`, `mptcp_set_rwin`, tcp11h),
#: and the receiver-side RTT that times autotuning as 6.18 keeps it (a smaller sample latched at
#: once, one sample per echoed 1 ms timestamp, tcp11j), the sender's window counted in segments
#: (Linux `tcp_cwnd_test`, rpck15), the writer of the testbed's mpxfer (256 KiB writes, the
#: socket writable while a third of its send buffer is free, fo15), and fast recovery's PRR
#: counting each delivered segment once (Linux `tcp_cwnd_reduction`, tcp11k), and cubic's HyStart running on every ACK's RTT sample, SACKs and fast recovery included
#: (Linux `pkts_acked`, tcp11n), and since tcp11z the grid's [host_delay] fitted to the testbed's
#: TCP ACK delays, since host11 (session 13) to the same quiet v657 host's
#: (benches/data/ack_delay-20261130-v657-quiet.csv.gz: an 11 us body with 0.13 ms stalls in 6 % of
#: packets, spells of 8; tcp11z's fit to the loaded v782 host was 24 us, 0.4 ms, 4.9 %, 4), and since
#: tcp11n (session 9) Nagle with Minshall's check for writers without TCP_NODELAY and MPTCP
#: mappings cut at the window's edge in bytes (Linux `tcp_nagle_test`, `mptcp_check_allowed_size`, tcp11y).
#: Since htbwin11 (session 13) the htb cells' links use htb's transmitter (`transmitter = "htb"`, as the
#: testbed shapes them). Against the one-host reference, with both of session 13's changes, 58 of 64
#: cells agree and 58 of 64 resend within 1.5x since the three 256 KiB htb cells and
#: jitter_16mib/htb/16MiB have 21 kernel flows (59 / 57 with 7; with 7 flows the quiet host's
#: timing fit alone gave 56 / 59, htb's transmitter alone 60 / 58, neither 60 / 58); the same simulator gave 61 / 58 against the v782
#: reference; its history of gains: docs/testbed.md "The agreement grid", the two changes: "Session 13:
#: the grid on one host", "Session 13: the grid's htb cells on htb's transmitter"). miss11's loaded
#: v657 run of the old miss cells: benches/data/grid_v657-20261129.csv.
_HOST11 = "docs/testbed.md 'Session 13: the grid on one host'"
_FS11C = "docs/testbed.md 'Session 11: the fast_slow/htb/4MiB clusters'"
_RD11 = "docs/testbed.md 'Session 11: the unread window on ofo11's receiver'"
_V657 = "miss11, docs/testbed.md 'Every remaining miss: mechanism and evidence'"
_HTB11 = "docs/testbed.md 'Session 12: why every short htb transfer loses on the kernel'"
_FS1M = "docs/testbed.md 'Session 13: the fast subflow of fast_slow/htb/1MiB loses earlier, not later'"
_HTBWIN11 = "docs/testbed.md 'Session 13: the grid's htb cells on htb's transmitter with the 256-byte window'"
_SHARE256 = "docs/testbed.md 'Session 13: where the join's share in the 256 KiB htb cells diverges'"
KNOWN_MISSES: dict[str, str] = {
    "loss/htb/256KiB": "sim share 0.28 vs kernel 0.34 (165 vs 160 ms, +3%): kernel 0.34-0.35 in 11 of 21 flows, 0.19-0.27 in 9 (its first 7 flows had a median of 0.27, and the cell agreed); as cross_udp/htb/256KiB",
    "cross_udp/htb/256KiB": "sim 146 ms vs kernel 157 ms (-7%), share 0.27 vs 0.34 (kernel 0.34-0.35 in 12 of 21 flows, all taking 157 ms, 0.23-0.32 in the 9 that take 173-176 ms; with tcp11z's timing fit the simulator carried 0.26-0.29 in 16 of 21, 0.36 in the other 5): since htbwin11 the htb cells use htb's transmitter (with the wire: 0.30, ok); the kernel's path 2 carries a third also in its lossless transfers, so the first subflow's tail drop (" + _HTB11 + ") is not the whole gap (" + _HTBWIN11 + "); the kernel's share is decided at 101-110 ms, when the msk's second buffer growth opens the window by 33-36 segments with the last 27-35 unsent (the sender held at the edge of an 81-86-segment window) and the join takes them; the simulator's window (rcv_ssthresh climbing from 45 segments, then 100-115 of buffer) never holds the sender there (" + _SHARE256 + ")",
    "equal/htb/256KiB": "sim 156 ms vs kernel 156 ms (+0%), share 0.28 vs 0.34 (kernel 0.34-0.35 in 17 of 21 flows, five of them lossless; with tcp11z's timing fit the simulator carried 0.26-0.29 in 16 of 21, whose first subflow grows to 61-64 segments without the kernel's tail drop, 0.36-0.37 in the 5 that leave slow start at 42): as cross_udp/htb/256KiB (" + _HTBWIN11 + ")",
    "fast_slow/htb/1MiB": "sim 211 ms vs kernel 412 ms (-49%), kernel p10-p90 221-412 ms over 21 flows (216 ms on the v782 host), share 0.00 vs 0.04: the v657 kernel has three modes, 412 ms (14 of 21: 27 segments on the 2 Mbit/s join), 353 ms (4: 16 segments) and 213-221 ms (3: none), the simulator always the last; traced (host11, strace of the server's send calls): the join's arrival grows the msk's send buffer and wakes the writer (`__mptcp_sync_sndbuf` -> `mptcp_write_space`), whose last chunk then goes to the idle join (linger time 0, `mptcp_subflow_get_send`) in 6 of 7 transfers, because the fast subflow's overshoot loss (first retransmission at a median 149 ms) held the writer back; on the merged tree (htb transmitter, refitted host timing) the simulator's fast subflow drops one 5-segment skb 109 ms after its first data (kernel: 116-128 ms, median 123, at a flight of 79-83 segments against the simulator's 79; cwnd per round alike) and its DATA_ACK recovers at ~158 ms on the server's clock, 9 ms before its join is established, so its last write never waits for the join; the kernel's recovery ends at a median ~172 ms, racing its join (165-185 ms). Why the simulator's queue overflows ~2 segments of flight earlier is not traced (" + _HOST11 + "; " + _FS1M + ")",
    "fast_slow/tbf32k/256KiB": "sim 75 ms vs kernel 87 ms (-13%), kernel p10-p90 84-87 ms over 21 flows (86 ms on the v782 host), share 0.00 vs 0.00: the kernel's window narrows during a tbf burst by the unread bytes (`__mptcp_space` counts `sk_rmem_alloc`; the ACKs leave in the softirq before `mptcp_recvmsg` reads: 44 -> 35 segments in round 2) and opens at round 3 to the first subflow's `rcv_ssthresh`, grown to its own clamp (`tcp_grow_window`: 76 segments against 51); rd11's two models together give 78 ms but resend 34.1 kB, and the grid falls to 57 / 53 of 64 (" + _RD11 + ").",
    "loss/tbf32k/256KiB": "sim 152 ms vs kernel 170 ms (-10%), kernel p10-p90 163-211 ms over 21 flows, share 0.17 vs 0.17: the simulator's median just outside (158 ms, -7%, with tcp11z's timing fit); the kernel's spread is wide (155-294 ms, 0-48 kB resent); not traced",
}


#: cell id -> the median retransmitted bytes per transfer, kernel and simulator, where they are
#: not within RETRANS_FACTOR (1.5x) of each other (measured as KNOWN_MISSES). Not part of the
#: cell's verdict: the retransmission goal of issue 11 is reported, and enforced where the two agree
#: (59 of 64 against the one-host reference with both of session 13's changes and CUBIC's hold of
#: `cnt` (session 16: loss/htb/1MiB went from 7.1 to 8.5 kB simulated against the kernel's 11.4); 58 before it; 59 with [host_delay]
#: fitted to it alone; 58 with tcp11z's v782 fit, whose misses were three equal htb cells, where its high-loss mode (a 2-3-skb loss at the
#: first subflow's slow-start exit, docs/testbed.md "Session 9: the equal/htb retransmission modes
#: and htb's early release") took 13 of 21 equal/htb/1MiB transfers with that fit, 1 of 21 with
#: the quiet host's, and jitter/htb/4MiB; against v782's reference plain TCP under tbf
#: missed, its v782 kernel resending 13x more after broken HyStart trains: "Session 7: what breaks
#: the kernel's HyStart train under tbf"; the quiet v657 host's trains all held, 28 of 28). Counted
#: alike on both engines (tcpi_bytes_retrans against the simulator's bytes_retransmitted, checked
#: by miss11).
RETRANS_MISSES: dict[str, str] = {
    "cross_udp/htb/256KiB": "kernel 5.7 kB, sim 0.0 kB per transfer (7 of 21 simulator transfers resend 2.8-4.3 kB): the kernel's bfifo drops 1-2 skbs of the first subflow's last slow-start round, at 45-50 kB of its 50 kB (" + _HTB11 + "); with htb's transmitter the simulator's first subflow peaks 1.7-2.7 kB under that, sending 2-segment skbs where the kernel sends 3-4 (traced with the window patch) (with the wire it resent 8.5 kB, its serialising link counting the skb in service); not fixed (" + _HTBWIN11 + ")",
    "equal/htb/256KiB": "kernel 5.7 kB, sim 0.0 kB per transfer (4 of 21 simulator transfers resend 2.8-4.3 kB, 5 of 7 kernel ones 5.7 kB): as cross_udp/htb/256KiB",
    "fast_slow/tbf32k/256KiB": "kernel 35.5 kB, sim 17.0 kB per transfer (0.48x, 21 kernel flows; 19.8 kB on the v782 host, 42.5 kB in miss11's loaded v657 run): the same rounds as its FCT miss (KNOWN_MISSES)",
    "jitter/htb/4MiB": "kernel 34.1 kB, sim 14.2 kB per transfer (0.42x, 21 kernel flows; 11.4 kB on the v782 host): both engines are bimodal (below 20 kB or 24-111 kB per transfer) and the median falls in either mode: below 20 kB in 7 of 21 kernel transfers against 11 of 21 simulated (Fisher p 0.35), Mann-Whitney p 0.89 over the resent bytes; v782's kernel had 11 of 21 low",
    "loss/htb/256KiB": "kernel 5.7 kB, sim 1.4 kB per transfer (the path's random losses among the simulator's resends): as cross_udp/htb/256KiB",
    "jitter_16mib/htb/16MiB": "kernel 63.9 kB, sim 38.3 kB per transfer (0.60x, 21 flows each) since CUBIC's hold and epoch count jiffies (docs/testbed.md, Session 17: CUBIC's clock); 49.7 kB with the µs hold. The kernel's transfers spread over 22.7-276.9 kB, 5 of 21 above 190 kB, the simulator's over 17.0-276.3 kB with 2 above 140 kB; Mann-Whitney p 0.036 (0.099 before)",
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
