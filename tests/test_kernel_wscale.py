"""A fixed receive buffer's window scale on the kernel testbed (kbuf11, engines/kernel/wscale.py):
which rcv_buf values Linux 6.18 can give, and the note for the others. No root needed."""

from __future__ import annotations

import copy

import pytest

from mpsched.engines.kernel import make_plan
from mpsched.engines.kernel import wscale
from mpsched.engines.kernel.rcvbuf import so_rcvbuf_bytes

MS = 1_000_000


def config(rcv_buf_bytes: int, direction: str = "download") -> dict:
    link = lambda name: {"name": name, "rate_bps": 50_000_000, "delay_ns": 10 * MS, "queue_bytes": 250_000}  # noqa: E731
    return {
        "seed": 1, "duration_ns": 1_000 * MS,
        "links": [link("a.down"), link("a.up")],
        "paths": [{"name": "a", "down": [0], "up": [1]}],
        "transports": [{"protocol": "mptcp", "scheduler": "linux", "cc": "cubic", "paths": [0],
                        "rcv_buf_bytes": rcv_buf_bytes, "snd_buf_bytes": 4 << 20}],
        "flows": [{"id": 1, "transport": 0, "start_ns": 0, "direction": direction,
                   "app": {"kind": "sized", "size_bytes": 1000}}],
    }


def test_the_handshake_scale_is_ilog2_of_the_locked_buffers_full_space_minus_15():
    # tcp_select_initial_window: clamp(ilog2(window_clamp) - 15, 0, 14), window_clamp = SO_RCVBUF.
    assert [wscale.handshake_wscale(v) for v in (2896, 65_535, 65_536, 131_071, 131_072, 1 << 30, 1 << 31)] == \
        [0, 0, 1, 1, 2, 14, 14]
    assert wscale.window_cap_bytes(0) == 65_535 and wscale.window_cap_bytes(8) == 16_776_960


@pytest.mark.parametrize("rcv_buf,ok", [
    (65_535, True), (65_536, True),       # scale 0, at most one byte above the cap 65 535
    (65_537, False), (100_000, False),    # dc11b's 100 KB: SO_RCVBUF 64 975, scale 0, window 65 535
    (100_862, False), (100_863, True),    # SO_RCVBUF 65 536: scale 1, cap 131 070
    (110_000, True), (128 << 10, True), ((128 << 10) + 1, False),
    (6 << 20, False),                     # the simulator's default: scale 6, cap 4 194 240
    (8 << 20, True), (16 << 20, True), ((16 << 20) + 1, False), (32 << 20, True),
])
def test_which_fixed_windows_the_kernel_can_give(rcv_buf, ok):
    assert wscale.honoured(rcv_buf, so_rcvbuf_bytes) is ok


def test_every_refused_value_lies_between_the_two_nearest_honoured_ones():
    # Exhaustive over scales 0 to 2 (and a sample higher up): the neighbours are honoured, they
    # bracket the value, and the values just inside them are refused, so they are the nearest.
    values = list(range(60_000, 420_000, 7)) + [(6 << 20) + k * 99_991 for k in range(40)]
    refused = 0
    for b in values:
        if wscale.honoured(b, so_rcvbuf_bytes):
            continue
        refused += 1
        below, above = wscale.honoured_neighbours(b, so_rcvbuf_bytes)
        assert below < b < above, b
        assert wscale.honoured(below, so_rcvbuf_bytes) and wscale.honoured(above, so_rcvbuf_bytes)
        assert not wscale.honoured(below + 1, so_rcvbuf_bytes) and not wscale.honoured(above - 1, so_rcvbuf_bytes)
    assert refused > len(values) // 3  # the bands are wide: from 65536 << s to ~1.54 x that, in every scale
    assert wscale.honoured_neighbours(100_000, so_rcvbuf_bytes) == (65_536, 100_863)
    assert wscale.honoured_neighbours(6 << 20, so_rcvbuf_bytes) == (4 << 20, 6_455_295)


@pytest.mark.parametrize("direction", ["download", "upload"])
def test_a_fixed_window_the_kernel_cannot_give_runs_with_the_cap_and_says_so(direction):
    plan = make_plan(config(100_000, direction))
    assert plan.flows[0].so_rcvbuf_bytes == so_rcvbuf_bytes(100_000)  # the run goes on, capped
    (note,) = [n for n in plan.notes if n.startswith("transports[0].rcv_buf_bytes")]
    assert "window scale 0" in note and "65535 bytes" in note
    assert "65536 or 100863 bytes" in note and "rcv_buf_autotuning = true" in note


def test_honoured_and_autotuned_buffers_still_plan():
    for b in (65_536, 100_863, 16 << 20):
        plan = make_plan(config(b))
        assert plan.flows[0].so_rcvbuf_bytes == so_rcvbuf_bytes(b)
        assert not [n for n in plan.notes if "rcv_buf_bytes" in n]
    auto = copy.deepcopy(config(100_000))
    auto["transports"][0]["rcv_buf_autotuning"] = True  # autotuning sets no SO_RCVBUF: no cap to check
    plan = make_plan(auto)
    assert plan.flows[0].so_rcvbuf_bytes == 0 and not [n for n in plan.notes if "rcv_buf_bytes" in n]


def test_the_note_reaches_the_user_of_a_kernel_run(monkeypatch, caplog):
    """run_kernel logs the plan's notes as warnings before it runs (here the run itself is
    replaced: no root needed), so a capped window is never silent."""
    from mpsched.engines.kernel import run as kernel_run

    monkeypatch.setattr(kernel_run, "run_once", lambda cfg, plan: ({}, {}))
    with caplog.at_level("WARNING", logger="mpsched.engines.kernel.run"):
        kernel_run.run_kernel(config(100_000))
    assert any("transports[0].rcv_buf_bytes" in r.getMessage() and "65535 bytes" in r.getMessage()
               for r in caplog.records)


def test_the_simulator_caps_a_fixed_window_as_the_kernel_does():
    # One file, one network: a 100 KB fixed buffer gets window scale 0 on Linux, so at most
    # 65 535 bytes are in flight; over 40 ms that is 13.1 Mbit/s on a 100 Mbit/s path. The
    # simulator's `linux` receiver offers the same cap (tcp/receiver/grow.rs), while 128 KiB,
    # which fits its scale, runs at twice that.
    import mpsched
    from mpsched import engines
    from mpsched.scenario.normalize import to_config

    def goodput_bps(rcv_buf: str) -> float:
        toml = f"""
duration = "4s"
[[paths]]
name = "a"
rate = "100Mbit"
rtt = "40ms"
queue = "1BDP"
[connection]
scheduler = "linux"
rcv_buf = "{rcv_buf}"
[[workload]]
kind = "bulk"
"""
        flows = engines.run_config(to_config(mpsched.loads_scenario(toml)))["flows"]
        return flows["bytes_delivered"][0] * 8 / 4.0

    cap_bps = 65_535 * 8 / 0.040
    assert 0.85 * cap_bps < goodput_bps("100KB") <= 1.01 * cap_bps
    assert goodput_bps("128KiB") > 1.8 * cap_bps
