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
#: kernel's HyStart"), at a 1-minute load of 0-3.9 (the settings column), GSO skbs kept whole;
#: four heavy-tailed cells (fast_slow/*/4MiB, jitter/htb/1MiB, equal/htb/1MiB) have 21 flows, 14
#: added 2026-11-29 (benches/grid_more_reps.py), and jitter/htb/4MiB too (14 added by tcp11t at
#: load 7.7, for its bimodal retransmissions).
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
#: TCP ACK delays (a 24 us body with 0.4 ms stalls in 4.9 % of packets, spells of 4), and since
#: tcp11n (session 9) Nagle with Minshall's check for writers without TCP_NODELAY and MPTCP
#: mappings cut at the window's edge in bytes (Linux `tcp_nagle_test`, `mptcp_check_allowed_size`, tcp11y).
#: 61 of 64 cells agree since loss11 measured loss/htb/1MiB 21 times (its share is bimodal: kernel median 0.43 over 21 flows, 0.40 over the first 7); 60 of 64 (59 before ofo11's MPTCP buffer at the msk's scaling_ratio, which brought loss/tbf32k/4MiB's path-2 share in (0.37 against 0.40); 57 before session 9's Nagle and byte cut, also on main before tcp11z; 56 at tcp11n, 55 before tcp11n, 54 at 6147fda, 52 before tcp11h; docs/testbed.md
#: "Session 6: retransmissions on tbf and cross-traffic cells (tcp11n)").
_SEG = "the kernel's own per-segment run (gso = false, tcp11e, load 6-8)"
_RWIN = "(tcp11h: with the window capped by rcv_ssthresh)"
KNOWN_MISSES: dict[str, str] = {
    "fast_slow/htb/4MiB": "sim 2840 ms vs kernel 2536 ms (+12%; 2845 before session 9's Nagle and byte cut; 2891, +14%, at tcp11z), kernel p10-p90 2236-2568 ms over 21 flows, simulator p10-p90 2387-3107, share 0.07 vs 0.08: the simulator's 21 transfers form clusters (about 2.0-2.3 s and 3.2-3.3 s; the kernel's sit at 2.5 s); with fo15's writer and tcp11k's PRR the median sits in the slower cluster (2389 ms, in, before them); what puts a third of the simulator's transfers above 3.1 s (no RTOs there) is not identified",
    "fast_slow/tbf32k/256KiB": "sim 75 ms vs kernel 86 ms (-12%; 76 before tcp11z), kernel p10-p90 84-88 ms, path-2 share 0.00 vs 0.00: with skbs the tail drop of the per-segment simulator (+76 %) is gone; now faster than the kernel, resending as much (17.0 kB against 19.8)",
    "loss/tbf32k/256KiB": "sim 153 ms vs kernel 168 ms (-9%; 152 before session 9's Nagle and byte cut), kernel p10-p90 152-168 ms, path-2 share 0.17 vs 0.22 (0.15 before tcp11z): the share misses; short flows under tbf are faster in the simulator; not analysed",
}


#: cell id -> the median retransmitted bytes per transfer, kernel and simulator, where they are
#: not within RETRANS_FACTOR (1.5x) of each other (measured as KNOWN_MISSES). Not part of the
#: cell's verdict yet: the retransmission goal of issue 11 is reported, and enforced only where
#: the two agree today (58 of 64 cells with ofo11's MPTCP buffer at the msk's scaling_ratio, which brought jitter/htb/4MiB in (11.4 kB against 11.4); 57 with session 9's Nagle and byte cut; 56 with tcp11z's host timing; 55 also after tcp11p; 53 before tcp11n; 46 at 6147fda before tcp11j's receiver RTT, 47 before tcp11h's window
#: cap, 45 per segment with the old ACK rule). With skbs the short flows resend as the kernel does;
#: the misses left are mostly MPTCP cells at 1-4 MiB under tbf or with UDP cross traffic where the
#: simulator resends 1.8-2.5x the kernel (its subflows overshoot further, equal/tbf32k/1MiB above),
#: and plain TCP under tbf, where the kernel resends more.
#: Why plain TCP under tbf resends more on the kernel (measured with benches/probe_hystart.py).
_TSO_ACKS = ("the kernel's HyStart under tbf ends late in 15 of 21 stored transfers (1, 4 and 16 MiB: the same "
             "slow start) and overshoots; its only usable ACK train (round 3, 3-segment skbs ACKed 1.82 ms apart, "
             "0.18 ms inside hystart_ack_delta) breaks on one ACK late by 0.2-2.2 ms (host timing; at high load "
             "also the writer refilling a starved send buffer late); the simulator's endpoint timing model breaks it "
             "in 4 of 21 (5 of 21 before tcp11z fitted it to the testbed's ACK delays: its increases of more than "
             "0.79 ms from one ACK to the next are 0.09 % against 0.6-1.5 % measured, and on the loaded testbed half the "
             "breaks were the writer's late refills) (docs/testbed.md 'Session 7: what breaks the kernel's HyStart "
             "train under tbf', 'Session 8: the ACKs' delay on the testbed')")
#: Where Session 9 (tcp11h) traced the htb retransmission cells.
_S9 = "docs/testbed.md 'Session 9: the equal/htb retransmission modes and htb's early release'"
RETRANS_MISSES: dict[str, str] = {
    "cross_udp/htb/4MiB": "kernel 96.6 kB, sim 183.4 kB per transfer (1.90x; 190.3 before session 9's Nagle and byte cut, 191.7 before tcp11z): the excess is the UDP path's (sim 166 kB median on it, kernel 24-86 in 9 flows re-run by tcp11t); there HyStart's delay test fires on the ACK that enters recovery (15 of 21 subflows, cwnd 94-96), so HyStart cannot lower ssthresh in recovery, and each recovery's end jumps cwnd from the PRR window to ssthresh: 4 recoveries per subflow; the kernel's ends flat at 24-43 (docs/testbed.md 'Session 7: where the simulator's extra retransmissions come from')",
    "equal/htb/1MiB": "kernel 19.8 kB, sim 36.9 kB per transfer (1.86x; 11.4 kB, 0.58x, before tcp11z's host timing): both engines are bimodal (kernel: 12 of 21 transfers 7-20 kB, 9 of 21 40-223 kB; the simulator's high mode 13 of 21). The kernel's high mode follows a broken HyStart train; the simulator's trains all hold, and its high mode is a 2-3-skb loss at the first subflow's exit that stalls the second subflow on the MPTCP window, followed by a burst (" + _S9 + ")",
    "equal/htb/4MiB": "kernel 12.8 kB, sim 36.9 kB per transfer (2.9x): out with tcp11z's host timing (12.8, equal, before); its first MiB is equal/htb/1MiB's, with the same two modes (kernel: 2 of 7 transfers in the high mode, 40 and 108 kB); within 1.5x (9.9 kB) with htb's early release prototyped, which loses other cells (" + _S9 + ")",
    "equal/tbf32k/1MiB": "kernel 130.9 kB, sim 230.0 kB per transfer (1.76x; 228.6 before session 9's Nagle and byte cut, 240.0 before tcp11z; 1.94x before tcp11n's HyStart in recovery)",
    "tcp_single/tbf32k/1MiB": "kernel 212.9 kB, sim 15.9 kB per transfer (0.07x): " + _TSO_ACKS,
    "tcp_single_16mib/tbf32k/16MiB": "kernel 215.8 kB, sim 17.4 kB per transfer (0.08x): " + _TSO_ACKS,
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
