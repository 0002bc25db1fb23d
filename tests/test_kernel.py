"""The kernel testbed on the real Linux MPTCP stack (needs root and MPTCP; skipped otherwise).

Reference table A of docs/testbed.md: path 1 50 Mbit/s with 20 ms RTT, path 2 15 Mbit/s with
200 ms RTT, about one BDP of queue each. The kernel's default scheduler must use both paths for
a 16 MB download and only the fast path for 1 MB (the 200 ms join comes too late), and a run
must leave nothing behind (when interrupted or killed too: test_kernel_lifecycle.py).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from kernel_testbed import MS, link_config, on_time_run, run_leftovers, skip_reason, table_rows, timing_judgeable, two_path_config

pytestmark = pytest.mark.kernel

_reason = skip_reason()
if _reason:
    pytest.skip(_reason, allow_module_level=True)

from mpsched.engines.kernel import run_kernel, run_once  # noqa: E402


@pytest.fixture(scope="module")
def table_a():
    """One run the host kept on time: 1 MB download at 0 s, 16 MB download at 1 s (they do not overlap)."""
    cfg = two_path_config([
        {"id": 1, "transport": 0, "start_ns": 0, "app": {"kind": "sized", "size_bytes": 1 << 20}},
        {"id": 2, "transport": 0, "start_ns": 1000 * MS, "app": {"kind": "sized", "size_bytes": 16 << 20}},
    ])
    tables, diag = on_time_run(cfg)
    return cfg, tables, diag


def test_16mb_download_uses_both_paths_in_plausible_time(table_a):
    _, tables, diag = table_a
    flow = next(r for r in table_rows(tables["flows"]) if r["flow_id"] == 2)
    assert flow["completed"] and flow["bytes_delivered"] == 16 << 20
    subs = [r for r in table_rows(tables["subflows"]) if r["flow_id"] == 2]
    acked = {r["path"]: r["bytes_acked"] for r in subs}
    assert set(acked) == {0, 1}
    # Conservation: the subflows got at least the application's bytes acknowledged.
    assert sum(acked.values()) >= 16 << 20
    links = {r["link"]: r for r in table_rows(tables["links"])}
    assert links["lte.down"]["bytes_forwarded"] >= 0.9 * acked[1]
    assert links["wlan.down"]["bytes_forwarded"] >= 0.9 * acked[0]
    timing_judgeable(diag, "both paths used, conservation")
    # Path 1 alone needs >= 2.8 s. Table A's reference was 2.57 / 3.04 / 3.22 s over 5 runs with
    # the paced, bbr-born server sockets of before; born cubic (2026-11-28) 3.24-3.62 s over 7
    # runs: the WLAN subflow waits behind LTE's head of line after LTE's slow-start losses. Since
    # kern11b the sender's buffer is fixed too (the configuration has no rcv_buf_autotuning, which
    # means false: 16 MiB, as in the simulator) and no longer holds LTE back: 2.56-2.85 s (benches/rcvbuf_kernel_vs_sim.py table_a);
    # with the CPUs held awake (docs/testbed.md), 2.83-2.88 s over 12 runs.
    assert 2.4e9 <= flow["fct_ns"] <= 4.0e9, flow
    share2 = acked[1] / sum(acked.values())
    assert 0.03 <= share2 <= 0.35, acked  # reference: 0.15


def test_1mb_download_uses_only_the_fast_path(table_a):
    _, tables, diag = table_a
    flow = next(r for r in table_rows(tables["flows"]) if r["flow_id"] == 1)
    assert flow["completed"] and flow["bytes_delivered"] == 1 << 20
    timing_judgeable(diag, "the download's completeness")
    # 1 MB at 50 Mbit/s with 20 ms RTT: slow start, ~0.25 s (table A: 0.251-0.254 s).
    assert 0.2e9 <= flow["fct_ns"] <= 0.45e9, flow
    data_on_lte = sum(r["bytes_acked"] for r in table_rows(tables["subflows"]) if r["flow_id"] == 1 and r["path"] == 1)
    assert data_on_lte == 0


def test_series_follow_the_kernel(table_a):
    _, tables, diag = table_a
    s = [r for r in table_rows(tables["subflow_series"]) if r["flow_id"] == 2 and r["path"] == 0]
    assert len(s) > 100  # 10 ms samples over ~3 s
    acked = [r["bytes_acked"] for r in sorted(s, key=lambda r: r["time_ns"])]
    assert all(b >= a for a, b in zip(acked, acked[1:]))
    conn = [r for r in table_rows(tables["conn_series"]) if r["flow_id"] == 2]
    delivered = [r["delivered_bytes"] for r in conn]
    assert delivered == sorted(delivered) and delivered[-1] == 16 << 20
    q = [r for r in table_rows(tables["link_series"]) if r["link"] == "wlan.down"]
    assert len(q) > 100
    drops = [r["dropped_packets"] for r in sorted(q, key=lambda r: r["time_ns"])]
    assert drops == sorted(drops)
    timing_judgeable(diag, "the series' counts and monotonicity")
    srtt_ms = sorted(r["srtt_ns"] / 1e6 for r in s)
    # The smoothed RTT sits between the 20 ms base RTT and base + a full queue (250 kB at 50 Mbit/s = 40 ms).
    assert 19 <= srtt_ms[len(srtt_ms) // 2] <= 70, srtt_ms[len(srtt_ms) // 2]
    # The receiver's progress rises to the flow size; mid-transfer it carries more than LTE alone
    # could (15 Mbit/s less headers: WLAN is used) and no more than both paths. Not "about the
    # WLAN rate": with the server's sockets born cubic (unpaced, as on a server whose default is
    # cubic), LTE's slow start loses segments into its 500 kB queue and the WLAN subflow waits
    # 200-300 ms behind LTE's head of line two or three times; 1.5-3.0 s then carries 28-34 Mbit/s
    # (measured), the paced bbr-born sockets of before about 48.
    mid = [r for r in conn if 1.5e9 <= r["time_ns"] <= 3.0e9]  # after slow start, before the end
    rate_mbps = (mid[-1]["delivered_bytes"] - mid[0]["delivered_bytes"]) * 8 / (mid[-1]["time_ns"] - mid[0]["time_ns"]) * 1e3
    assert 15 * 0.956 < rate_mbps <= 65, rate_mbps
    # cubic fills WLAN's 250 kB drop-tail queue; the qdisc never holds more than its limit.
    peak = max(r["queue_bytes"] for r in q)
    assert 100_000 <= peak <= 250_000 * 1514 // 1500 + 2_400, peak


def test_delayer_is_accurate(table_a):
    """On a run the host kept on time, 90 % of packets leave within 1 ms of their time (the
    feasibility study: p99 under 256 µs), and the delayer's own share of any packet's lateness
    (reading arrivals, issuing verdicts: nfqdelay's own_lateness_ns, the rest being the time the
    packet was due while the delayer waited for the CPU) stays under 0.5 ms at p99. A delayer that
    released one packet per wake-up, or read every arrival before releasing, would fail the latter
    on any host. The testbed holds the CPUs out of halt for the run (fidelity.CpuWakeHold)."""
    _, _, diag = table_a
    if Path("/dev/cpu_dma_latency").exists():
        assert diag["host"]["cpus_held_awake"], diag["host"]
    queues = diag["delayer"]["queues"]
    for q in queues:
        assert q["packets"] > 0
        assert q["host_lateness_ns"]["max"] <= q["lateness_ns"]["max"], q
        assert q["own_lateness_ns"]["max"] <= q["lateness_ns"]["max"], q
    timing_judgeable(diag, "every queue forwarded packets")
    for q in queues:
        assert q["lateness_ns"]["p90"] < 1_000_000, q
        assert q["own_lateness_ns"]["p99"] < 500_000, q


def test_run_leaves_nothing_behind(table_a):
    assert run_leftovers(os.getpid()) == ([], [])
    # Rules only ever go into the router namespace, never the host's.
    host_rules = subprocess.run(["iptables", "-t", "mangle", "-S"], capture_output=True, text=True).stdout
    assert "NFQUEUE" not in host_rules


def test_round_trip_times_match_the_configured_delays():
    """UDP probes (mpxfer ping/echo) see the configured RTT plus at most a little: the feasibility study
    measured ping 20.13 / 20.30 ms and 200.14 / 200.26 ms (min / avg) with its delayer.

    No probe may ever come back sooner than the configured RTT (every round). The "at most a
    little" bounds are the delayer's accuracy, which this VM's host can spoil for a while
    (reference/testbed.md: scheduling stalls of the VM itself; seen here: rounds of 50 probes all
    0.5-1.2 ms late, on the old and the new code alike, between rounds that were on time): a
    round that misses them is measured again, up to three rounds. When all three miss them the
    accuracy cannot be judged on this host now and the test says so (a skip naming the lateness
    seen); the lower bound is asserted on every round regardless."""
    from statistics import median

    from mpsched.engines.kernel.probe import ping_paths

    misses = []
    for _ in range(3):
        rtts = ping_paths(two_path_config([]), count=50)
        late = []
        for path, base_ms in ((0, 20.0), (1, 200.0)):
            got = [r / 1e6 for r in rtts[path]]
            assert len(got) >= 48, got  # no loss configured
            assert base_ms <= min(got), (path, min(got))  # never shorter than configured
            if not (min(got) <= base_ms + 0.5 and median(got) <= base_ms + 1.0):
                late.append((path, min(got), median(got)))
        if not late:
            return
        misses.append(late)
    pytest.skip(f"the host delays every round of probes (path, min ms, median ms): {misses}; "
                "the delayer's accuracy cannot be judged now (never shorter than configured: checked)")


def test_smooth_jitter_varies_the_delay_around_its_mean():
    """±7.5 ms smooth jitter each way on path 0 (period 20 ms): round trips spread over about
    20 ± 15 ms but average 20 ms; the constant path 1 is unaffected.

    The jitter's spread is asserted on every round, its mean on a round the host kept on time:
    path 1's median within 1 ms of its
    200 ms is the delayer's accuracy, which this VM's host can spoil for a while (see
    `test_round_trip_times_match_the_configured_delays`; seen in CI: a median of 201.24 ms in the
    same minute that test found every round late): a round that misses it is measured again, up
    to three rounds, and when all three miss it the test says so (a skip naming the medians)."""
    from statistics import fmean

    from mpsched.engines.kernel.probe import ping_paths

    cfg = two_path_config([])
    for link in cfg["links"][:2]:
        link["jitter"] = {"mode": "smooth", "jitter_ns": 7_500_000, "period_ns": 20_000_000}
    late_medians_ms = []
    for _ in range(3):
        rtts = ping_paths(cfg, count=150)
        got = [r / 1e6 for r in rtts[0]]
        assert len(got) >= 145
        assert min(got) < 15 and max(got) > 25, (min(got), max(got))
        assert min(got) >= 5 - 0.5, min(got)
        constant = sorted(r / 1e6 for r in rtts[1])
        assert 200.0 <= constant[0], constant[0]  # never shorter than configured
        median_ms = constant[len(constant) // 2]  # the median: VM stalls make rare outliers anyway
        if median_ms < 201:
            # An on-time round: the host did not delay the probes, so the jitter's mean is the
            # delayer's (a busy host inflates both paths' round trips: seen, 26 ms here).
            assert abs(fmean(got) - 20) < 3, fmean(got)
            return
        late_medians_ms.append(median_ms)
    pytest.skip(f"the host delays every round of path 1's probes (medians {late_medians_ms} ms against "
                "200 ms); the delayer's accuracy cannot be judged now (the jitter's spread: checked)")


def test_cross_traffic_is_forwarded_at_its_rate():
    """20 Mbit/s of constant-bit-rate UDP for 2 s on WLAN's downlink, 10 Mbit/s on LTE's uplink:
    the router forwards 5 MB and 2.5 MB (IP bytes), and nothing on the other links."""
    cfg = two_path_config([], duration_ns=2_500 * MS)
    cfg["cross_traffic"] = [
        {"links": [0], "rate_bps": 20_000_000, "packet_bytes": 1500, "start_ns": 0, "stop_ns": 2_000 * MS},
        {"links": [3], "rate_bps": 10_000_000, "packet_bytes": 1000, "start_ns": 0, "stop_ns": 2_000 * MS},
    ]
    tables, _ = run_once(cfg)
    links = {r["link"]: r for r in table_rows(tables["links"])}
    assert 0.95 * 5_000_000 <= links["wlan.down"]["bytes_forwarded"] <= 1.02 * 5_000_000, links
    assert 0.95 * 2_500_000 <= links["lte.up"]["bytes_forwarded"] <= 1.02 * 2_500_000, links
    assert links["lte.up"]["packets_forwarded"] == pytest.approx(2_500, rel=0.05)
    assert links["wlan.up"]["bytes_forwarded"] < 10_000 and links["lte.down"]["bytes_forwarded"] < 10_000


def test_upload_with_loss_over_tcp():
    """A TCP upload on path 1 with 2 % Bernoulli loss on its uplink: completes, retransmits,
    and the delayer's losses show in the link table."""
    cfg = two_path_config([{"id": 7, "transport": 0, "start_ns": 0, "direction": "upload",
                            "app": {"kind": "sized", "size_bytes": 2 << 20}}],
                          protocol="tcp", wlan_up_loss=0.02, duration_ns=10_000 * MS)
    tables = run_kernel(cfg)
    flow = table_rows(tables["flows"])[0]
    assert flow["completed"] and flow["bytes_delivered"] == 2 << 20, flow
    assert flow["bytes_retransmitted"] > 0
    links = {r["link"]: r for r in table_rows(tables["links"])}
    up = links["wlan.up"]
    assert up["packets_lost"] > 0
    # 2 % of the packets, within a wide margin (a few hundred packets only)
    assert up["packets_lost"] <= 0.06 * (up["packets_forwarded"] + up["packets_lost"])
    assert links["lte.up"]["bytes_forwarded"] < 10_000  # TCP stays on path 1


def test_a_fixed_receive_buffer_limits_the_kernel_as_it_limits_the_simulator():
    """rcv_buf_autotuning = false with a 128 KiB rcv_buf on a 100 Mbit/s, 40 ms path (BDP 500 kB):
    the window, not the link, sets the rate (128 KiB per round trip, 26 Mbit/s), so a 4 MiB
    download takes about 1.3 s. The kernel engine sets the SO_RCVBUF whose window is rcv_buf
    (engines/kernel/rcvbuf.py); its time must be the simulator's within 10 %. Taking rcv_buf itself
    as SO_RCVBUF would give the kernel a 54 % larger window and a third less time; autotuning,
    the window of the whole BDP (under 0.6 s)."""
    from mpsched.engines import run_config

    path = link_config("a", 100_000_000, 20 * MS, 1_000_000)
    cfg = {"seed": 3, "duration_ns": 5_000 * MS,
           "links": [path, {**path, "name": "a.up"}], "paths": [{"name": "a", "down": [0], "up": [1]}],
           "transports": [{"protocol": "tcp", "scheduler": "linux", "cc": "cubic", "paths": [0],
                           "rcv_buf_bytes": 128 << 10, "snd_buf_bytes": 4 << 20, "rcv_buf_autotuning": False}],
           "flows": [{"id": 1, "transport": 0, "start_ns": 0, "app": {"kind": "sized", "size_bytes": 4 << 20}}]}
    tables, diag = on_time_run(cfg)
    kernel = table_rows(tables["flows"])[0]
    sim = table_rows(run_config(cfg)["flows"])[0]
    assert kernel["completed"] and sim["completed"], (kernel, sim)
    timing_judgeable(diag, "both completed")
    window_bound_ns = (4 << 20) / (128 << 10) * 40 * MS  # one window per round trip at most
    assert kernel["fct_ns"] >= 0.95 * window_bound_ns, kernel
    assert kernel["fct_ns"] == pytest.approx(sim["fct_ns"], rel=0.10), (kernel["fct_ns"], sim["fct_ns"])


def test_a_fixed_send_buffer_limits_the_kernel_as_it_limits_the_simulator():
    """rcv_buf_autotuning = false also fixes the send buffer (the simulator: endpoint.rs). A
    128 KiB snd_buf on a 100 Mbit/s, 40 ms path (BDP 500 kB) with a 16 MiB window: the sender
    holds at most 128 KiB unacknowledged, one buffer per round trip (26 Mbit/s), so a 4 MiB MPTCP
    download takes at least 1.28 s. The kernel engine gives the server's listener the SO_SNDBUF
    whose limit is snd_buf (engines/kernel/sndbuf.py); autotuned, the kernel's sender grows to
    1 MiB and takes about 0.66 s (docs/testbed.md, kern11b). The kernel's writer refills the
    buffer only once a third of it is free (sk_stream_is_writeable), which the simulator's fixed
    buffer does not model: on average 5/6 of the buffer in flight, so up to 6/5 of its time
    (measured 1.57-1.72 s; 1.59-1.60 s in five runs since the testbed holds the CPUs awake,
    2026-12-01, against the simulator's 1.51 s)."""
    from mpsched.engines import run_config

    path = link_config("a", 100_000_000, 20 * MS, 1_000_000)
    cfg = {"seed": 3, "duration_ns": 5_000 * MS,
           "links": [path, {**path, "name": "a.up"}], "paths": [{"name": "a", "down": [0], "up": [1]}],
           "transports": [{"protocol": "mptcp", "scheduler": "linux", "cc": "cubic", "paths": [0],
                           "rcv_buf_bytes": 16 << 20, "snd_buf_bytes": 128 << 10, "rcv_buf_autotuning": False}],
           "flows": [{"id": 1, "transport": 0, "start_ns": 0, "app": {"kind": "sized", "size_bytes": 4 << 20}}]}
    tables, diag = on_time_run(cfg)
    kernel = table_rows(tables["flows"])[0]
    sim = table_rows(run_config(cfg)["flows"])[0]
    assert kernel["completed"] and sim["completed"], (kernel, sim)
    timing_judgeable(diag, "both completed")
    buffer_bound_ns = (4 << 20) / (128 << 10) * 40 * MS  # one send buffer per round trip at most
    assert kernel["fct_ns"] >= 0.95 * buffer_bound_ns, kernel
    assert 0.95 * sim["fct_ns"] <= kernel["fct_ns"] <= 1.25 * sim["fct_ns"], (kernel["fct_ns"], sim["fct_ns"])


def test_path_failure_moves_the_transfer_to_the_other_path():
    """WLAN fails 0.5 s into an 8 MiB MPTCP download: the kernel moves the rest to LTE and the
    flow completes. 20 s of room: the kernel's failover has a long tail (one run of the failover
    bench took 10.9 s for this download, docs/testbed.md "Failover"), and when this test also
    started an LTE-only flow at 8 s in the same run, a late download shared LTE with it and
    missed the old 12 s end once in four CI runs."""
    cfg = two_path_config([
        {"id": 1, "transport": 0, "start_ns": 0, "app": {"kind": "sized", "size_bytes": 8 << 20}},
    ], duration_ns=20_000 * MS)
    # A blackhole: since the kernel engine plays a down as a real `ip link set down`, the kernel
    # sometimes leaves this download incomplete after it (1 run in 3 in this module; a finding of
    # issue 15, not analysed yet); a blackhole is what the upstream kernel sees of a dead path
    # either way (docs/testbed.md, "Failover").
    cfg["path_events"] = [{"kind": "blackhole", "at_ns": 500 * MS, "path": 0}]
    tables, diag = run_once(cfg)
    assert all(e["ok"] and e["done_ns"] - e["at_ns"] < 100 * MS for e in diag["events"]), diag["events"]
    flows = {r["flow_id"]: r for r in table_rows(tables["flows"])}
    assert flows[1]["completed"], flows[1]
    mine = [r for r in table_rows(tables["subflows"]) if r["flow_id"] == 1]
    acked = {r["path"]: r["bytes_acked"] for r in mine}
    sent = {r["path"]: r["bytes_sent"] for r in mine}
    # At most 0.5 s of WLAN (50 Mbit/s, 3.1 MB incl. slow start); the rest went over LTE. A byte
    # the receiver got over WLAN was sent there; the bytes in flight on WLAN when it failed may
    # reach the receiver with their subflow ACK lost (acknowledged at the MPTCP level over LTE),
    # so what LTE carried is bounded by what WLAN *sent*, not by what it got acknowledged.
    assert acked[0] < 3_500_000 and acked[1] >= 8_388_608 - sent[0], (acked, sent)
    # 8 MiB minus what WLAN carried, at 15 Mbit/s, after a retransmission timeout or two.
    assert flows[1]["fct_ns"] > (8_388_608 - acked[0]) * 8 / 15e6 * 1e9


def test_a_rate_step_applies_on_the_kernel():
    """LTE-only TCP bulk from 0 to 3 s; LTE's rate is cut from 15 to 5 Mbit/s at 1 s."""
    cfg = two_path_config([
        {"id": 2, "transport": 1, "start_ns": 0, "app": {"kind": "bulk", "stop_ns": 3_000 * MS}},
    ], duration_ns=4_000 * MS)
    cfg["transports"].append({**cfg["transports"][0], "protocol": "tcp", "paths": [1]})
    cfg["links"][2]["capacity"] = {"kind": "schedule", "steps": [{"at_ns": 1000 * MS, "rate_bps": 5_000_000}]}
    tables, diag = run_once(cfg)
    assert all(e["ok"] and e["done_ns"] - e["at_ns"] < 100 * MS for e in diag["events"]), diag["events"]
    flows = {r["flow_id"]: r for r in table_rows(tables["flows"])}
    # TCP bulk over LTE: 1 s at 15 Mbit/s then 2 s at 5 Mbit/s, minus slow start over 200 ms RTT.
    got = flows[2]["bytes_delivered"] * 8 / 1e6
    assert 4 <= got <= 0.956 * (15 + 2 * 5), got


def test_trace_driven_link_delivers_one_packet_per_opportunity():
    """WLAN's downlink as a Mahimahi trace with one 1500-byte opportunity per ms (12 Mbit/s of
    IP packets, 11.6 Mbit/s of TCP payload): a 3 s TCP bulk download gets just under that."""
    cfg = two_path_config([{"id": 1, "transport": 0, "start_ns": 0, "app": {"kind": "bulk", "stop_ns": 3_000 * MS}}],
                          protocol="tcp", duration_ns=3_500 * MS)
    cfg["links"][0]["capacity"] = {"kind": "trace", "opportunities_ms": [1]}
    cfg["links"][0]["queue_bytes"] = 60_000
    tables, diag = run_once(cfg)
    got = table_rows(tables["flows"])[0]["bytes_delivered"]
    ceiling = 1448 * 3000  # one full segment per ms
    assert 0.85 * ceiling <= got <= ceiling, got
    q = next(q for q in diag["delayer"]["queues"] if q["qnum"] == 1)
    assert 0 < q["queue_max_bytes"] <= 60_000  # cubic fills the trace queue, never beyond its limit
    wlan_down = next(r for r in table_rows(tables["links"]) if r["link"] == "wlan.down")
    assert wlan_down["packets_dropped"] > 0  # and overflows it


def test_run_validation_compares_both_engines(tmp_path):
    """Both engines on one small configuration: the comparison has both sides' numbers."""
    from mpsched import _core
    from mpsched.study.validate import run_validation

    if not hasattr(_core, "run_json"):
        pytest.skip("the compiled simulator core has no run_json (rebuild with `make setup`)")
    cfg = two_path_config([{"id": i, "transport": 0, "start_ns": i * 600 * MS,
                            "app": {"kind": "sized", "size_bytes": 1 << 20}} for i in range(2)],
                          protocol="tcp", duration_ns=2_000 * MS)
    out = run_validation(cfg, repetitions=1, sim_seeds=1, out=tmp_path)
    fct = out["fct"]
    assert fct["size_bytes"] == [1 << 20] and fct["sim_n"] == [2] and fct["kernel_n"] == [2]
    # TCP on the 20 ms path: 1 MB is mostly slow start, 0.2-0.45 s on both engines.
    assert 0.2e9 <= fct["sim_median_ns"][0] <= 0.45e9 and 0.2e9 <= fct["kernel_median_ns"][0] <= 0.45e9, fct
    assert out["path_share"]["kernel_share"][0] > 0.99
    assert (tmp_path / "validation.png").exists()


def test_rpc_requests_are_answered_and_timed_like_the_simulator_records_them():
    """An open-loop RPC over MPTCP (50 requests of 300 B at 50 a second, 16 KB responses): the
    kernel engine returns the simulator's `blocks` table, one row per request stamped on its
    20 ms grid, every response read whole, each latency at least WLAN's round trip plus the
    response's transmission and, with nothing else on the paths, within a few round trips."""
    cfg = two_path_config([{"id": 1, "transport": 0, "start_ns": 0, "direction": "download",
                            "app": {"kind": "rpc", "requests": 50, "request_bytes": 300,
                                    "response_bytes": 16_000, "interval_ns": 20 * MS, "deadline_ns": 100 * MS}}],
                          duration_ns=4_000 * MS)
    tables, _diag = run_once(cfg)
    flows = {r["flow_id"]: r for r in table_rows(tables["flows"])}
    assert flows[1]["completed"] and flows[1]["app"] == "rpc", flows[1]
    assert flows[1]["bytes_delivered"] == 50 * 16_000
    blocks = table_rows(tables["blocks"])
    assert [b["block"] for b in blocks] == list(range(50))
    # Open loop: request k is due at k * 20 ms (a wait for the handshake counts in its latency).
    assert [b["sent_ns"] for b in blocks] == [k * 20 * MS for k in range(50)]
    delivered = [b["delivered_ns"] for b in blocks]
    assert delivered == sorted(delivered), "responses are read in request order"
    assert all(b["delay_ns"] == b["delivered_ns"] - b["sent_ns"] >= 20 * MS for b in blocks), blocks
    assert all(b["deadline_missed"] == (b["delay_ns"] > 100 * MS) for b in blocks)


def test_voip_messages_each_way_are_timed_one_way_on_the_shared_clock():
    """A VoIP-like call each way over MPTCP (a 160 B frame every 20 ms for 2 s, deadline 150 ms):
    the kernel engine returns the simulator's `blocks` table for the download (read by the client)
    and the upload (read by the server), one row per frame stamped on its 20 ms grid, every frame
    read whole and in order. The delay is one way: never below WLAN's 10 ms one-way delay, and the
    fastest frames arrive under WLAN's 20 ms round trip (a round-trip or a clock error would put
    every frame above it); LTE's 100 ms one way fits the deadline, so none is missed."""
    frames = 100
    app = {"kind": "messages", "size_bytes": 160, "interval_ns": 20 * MS, "deadline_ns": 150 * MS,
           "stop_ns": 200 * MS + (frames - 1) * 20 * MS + 1}
    cfg = two_path_config([{"id": 1, "transport": 0, "start_ns": 200 * MS, "direction": "download", "app": app},
                           {"id": 2, "transport": 0, "start_ns": 200 * MS, "direction": "upload", "app": app}],
                          duration_ns=4_000 * MS)
    missed_runs = []
    for _ in range(3):
        tables, diag = run_once(cfg)
        flows = {r["flow_id"]: r for r in table_rows(tables["flows"])}
        blocks = table_rows(tables["blocks"])
        missed = []
        for fid in (1, 2):
            assert flows[fid]["completed"] and flows[fid]["app"] == "messages", flows[fid]
            assert flows[fid]["bytes_delivered"] == frames * 160, flows[fid]
            b = [r for r in blocks if r["flow_id"] == fid]
            assert [r["block"] for r in b] == list(range(frames))
            assert [r["sent_ns"] for r in b] == [200 * MS + k * 20 * MS for k in range(frames)]
            delivered = [r["delivered_ns"] for r in b]
            assert None not in delivered and delivered == sorted(delivered), "frames are read in order"
            delays = sorted(r["delay_ns"] for r in b)
            assert all(r["delay_ns"] == r["delivered_ns"] - r["sent_ns"] for r in b)
            assert 10 * MS <= delays[0] < 20 * MS, (fid, delays[:3], delays[-3:])
            if any(r["deadline_missed"] for r in b):
                missed.append((fid, [d // 1000 for d in delays[-5:]]))
        if not missed:
            return
        # A busy host can stall the run for a while (seen in a loaded run: the last frames of a
        # call read together, 134-202 ms late, a burst released by one stall): such a run says
        # nothing of the deadline, so it is measured again; three misses in a row are a failure.
        late_max_ms = [q["lateness_ns"]["max"] / 1e6 for q in (diag.get("delayer") or {}).get("queues", [])
                       if "lateness_ns" in q]
        missed_runs.append((missed, f"delayer's largest lateness {max(late_max_ms, default=0):.1f} ms"))
    pytest.fail(f"frames missed the 150 ms deadline in three runs in a row (flow, last delays in us): {missed_runs}")
