"""Failover and failback through the Python API and the simulator: what a scheduler does when
a path dies and comes back, measured with `mpsched.metrics`.

The setting (as the core's own tests, crates/mpsched-sim/tests/failover.rs): path "a" 10 ms one
way, path "b" 40 ms, both 10 Mbit/s with 100-packet queues; a game-state stream of 300-byte
messages at 50 Hz for 8 s with a 150 ms deadline. Path "b" alone delivers every message in
about 40 ms, well within the deadline. The receive buffer autotunes as the kernel's does, so it
stays at its initial window for this light stream and the messages are acknowledged by delayed
ACKs (with a fixed 6 MiB buffer each would grow rcv_ssthresh and be ACKed at once, Linux
`tcp_grow_window`, shortening the timeouts these tests count in).
"""

from __future__ import annotations

import polars as pl
import pytest

import mpsched
from mpsched import metrics

from conftest import has_core_runner

pytestmark = pytest.mark.skipif(not has_core_runner(), reason="needs the compiled core")

SETTING = """
duration = "18s"
[[paths]]
name = "a"
rate = "10Mbit"
delay = "10ms"
queue = "100 packets"
[[paths]]
name = "b"
rate = "10Mbit"
delay = "40ms"
queue = "100 packets"
[connection]
scheduler = "{scheduler}"
cc = "cubic"
stale_loss_cnt = {stale}
rcv_buf_autotuning = true
[[workload]]
kind = "messages"
size = "300B"
interval = "20ms"
deadline = "150ms"
stop = "8s"
[record]
interval = "10ms"
"""


def _event(kind: str, at: str = "2s", duration: str | None = "3s") -> str:
    return f'[[path_events]]\nkind = "{kind}"\npath = "a"\nat = "{at}"\n' + (f'duration = "{duration}"\n' if duration else "")


def _run(tmp_path, scheduler: str, event: str = "", stale: int = 4) -> mpsched.Results:
    s = mpsched.loads_scenario(SETTING.format(scheduler=scheduler, stale=stale) + event)
    return mpsched.run(s, tmp_path / f"{scheduler}-{stale}-{abs(hash(event))}", jobs=1)


def _failover(res: mpsched.Results) -> pl.DataFrame:
    stalls = metrics.delivery_stalls(res.flows, res.blocks, res.conn_series)
    return metrics.failover(res.path_events, stalls, res.conn_series, res.subflow_series)


def test_redundant_keeps_every_deadline_the_surviving_path_can_meet(tmp_path):
    ev = _event("blackhole")
    res = _run(tmp_path, "redundant", ev)
    settled = res.blocks.filter(pl.col("sent_ns") >= 500_000_000)  # after the handshake and the join
    assert settled.height == 375
    assert not settled["deadline_missed"].any()
    assert _failover(res)["failover_ms"][0] == 0.0  # no stall beyond the usual wait
    # the same blackhole costs minRTT deadlines (it sends on "a" until a timeout)
    minrtt = _run(tmp_path, "minrtt", ev)
    assert minrtt.blocks["deadline_missed"].any()
    assert _failover(minrtt)["failover_ms"][0] > 150


def test_linux_fails_over_after_stale_loss_cnt_timer_periods(tmp_path):
    # Upstream Linux (net/mptcp/protocol.c, mptcp_subflow_get_send and the MPTCP-level
    # retransmit timer) marks a subflow stale after more than stale_loss_cnt = 4 timer periods
    # without progress and only then sends its pending data on the other subflow. A period is
    # msk->timer_ival as the last push stored it (mptcp_timeout_from_subflow): the time left on
    # "b"'s pending RTO (at most its RTO, about 280 ms, plus a 32 ms timer-wheel slot), or
    # exactly TCP_RTO_MIN = 200 ms after a firing that counted "b" stale once; the two alternate,
    # so two more units of stale_loss_cnt (two more firings) take one of each: 200 to 520 ms.
    fo = {cnt: _failover(_run(tmp_path, "linux", _event("blackhole", duration="6s"), stale=cnt))["failover_ms"][0]
          for cnt in (2, 4, 6)}
    assert 200 <= fo[4] - fo[2] <= 520, fo
    assert 200 <= fo[6] - fo[4] <= 520, fo
    # the default (4): the mark at the fifth firing; of the four periods between the first
    # and the fifth two are exactly TCP_RTO_MIN and none is over 320 ms
    assert 400 <= fo[4] <= 1700, fo


def test_linux_takes_an_interface_down_for_a_blackhole(tmp_path):
    # The upstream kernel does not watch interfaces (the in-kernel path manager registers no
    # netdevice notifier; __mptcp_subflow_active reads the TCP state only): the subflow on the
    # dead interface is found stale after the same timer periods as a blackholed one, its data
    # is re-sent on "b" (failover well before the path returns at 8 s), and it carries again
    # at its next backed-off retransmission, not at once.
    # The two may land one firing apart (the kernel's own down runs fall in clusters one timer
    # period apart around the blackhole's, docs/testbed.md "Failover"): at most one period.
    down = _failover(_run(tmp_path, "linux", _event("down", duration="6s")))["failover_ms"][0]
    black = _failover(_run(tmp_path, "linux", _event("blackhole", duration="6s")))["failover_ms"][0]
    assert 400 <= down <= 1700 and abs(down - black) <= 320, (down, black)
    back = _failover(_run(tmp_path, "linux", _event("down")))["failback_ms"][0]
    assert 100 < back <= 2100, back


@pytest.mark.parametrize("scheduler", ["minrtt", "linux"])
def test_a_path_that_comes_back_carries_traffic_again(tmp_path, scheduler):
    res = _run(tmp_path, scheduler, _event("down"))
    assert res.path_events["end_ns"][0] == 5_000_000_000
    if scheduler == "minrtt":
        # Interface down 2 s to 5 s: the out-of-tree kernel's hosts see it come back and use
        # it at once (within 100 ms).
        assert _failover(res)["failback_ms"][0] <= 100
    # Blackhole 2 s to 5 s: the hosts notice nothing; the next retransmission of the backed-off
    # timer on "a" (RTO about 260 ms, doubled at each expiry: the next after 5 s is near 5.9 s)
    # gets through and "a" carries messages again: within one backed-off RTO (2.1 s) of the end.
    res = _run(tmp_path, scheduler, _event("blackhole"))
    assert _failover(res)["failback_ms"][0] <= 2100


def test_the_failure_metrics_are_empty_where_nothing_failed(tmp_path):
    res = _run(tmp_path, "minrtt")
    assert res.path_events.is_empty()
    assert _failover(res).is_empty()
    summary = mpsched.analysis.resilience_summary(res)
    assert summary["failover_ms"][0] is None if "failover_ms" in summary.columns else True
    assert summary["deadline_miss_rate"][0] == 0.0
    # an event on a path the connection does not depend on costs nothing: an RTT spike on "b",
    # which minRTT does not use while "a" is faster
    spike = '[[path_events]]\nkind = "rtt_spike"\npath = "b"\nat = "2s"\nduration = "1s"\nextra_delay = "50ms"\n'
    assert _failover(_run(tmp_path, "minrtt", spike))["failover_ms"][0] == 0.0


def test_min_rtt_moves_every_message_off_a_blackholed_path_at_its_first_timeout(tmp_path):
    # After the first retransmission timeout on "a", minRTT sends new messages on "b" and the
    # data "a" held (sent, and queued behind a window of one segment) is reinjected there (the
    # out-of-tree kernel's mptcp_reinject_data walks the subflow's whole write queue): nothing
    # waits for "a"'s backed-off timeouts, so every message sent from 1 s after the blackhole
    # to its end (2 s to 5 s) meets its deadline over "b" alone.
    res = _run(tmp_path, "minrtt", _event("blackhole"))
    later = res.blocks.filter(pl.col("sent_ns").is_between(3_000_000_000, 5_000_000_000, closed="left"))
    assert later.height == 100
    assert not later["deadline_missed"].any(), later.filter(pl.col("deadline_missed"))["delay_ns"].max()


BULK = """
duration = "7s"
[[paths]]
name = "a"
rate = "10Mbit"
delay = "10ms"
queue = "1BDP"
[[paths]]
name = "b"
rate = "10Mbit"
delay = "30ms"
queue = "1BDP"
[connection]
scheduler = "linux"
[[workload]]
kind = "bulk"
stop = "6s"
[record]
interval = "10ms"
"""


def test_a_path_that_stopped_takes_longer_to_regain_its_rate_than_one_that_slowed(tmp_path):
    # A bulk download over "a" and "b"; "a" is blackholed, or takes 100 ms more each way, from
    # 2 s to 4 s. After the blackhole "a" carries again only at its next backed-off
    # retransmission and restarts from one segment (slow start after an RTO); after the spike
    # it never stopped and its window is open at once. The time to 90 % of the pre-event rate
    # (`failback90_ms`) says so; the time to the first bytes again (`failback_ms`) is shorter.
    back = {}
    for kind, extra in (("blackhole", ""), ("rtt_spike", 'extra_delay = "100ms"\n')):
        ev = f'[[path_events]]\nkind = "{kind}"\npath = "a"\nat = "2s"\nduration = "2s"\n{extra}'
        res = mpsched.run(mpsched.loads_scenario(BULK + ev), tmp_path / kind, jobs=1)
        row = _failover(res).row(0, named=True)
        assert row["failback90_ms"] is not None and row["failback90_ms"] >= 0, row
        back[kind] = row
    assert back["blackhole"]["failback90_ms"] > back["rtt_spike"]["failback90_ms"] + 200, back
    assert back["blackhole"]["failback90_ms"] > back["blackhole"]["failback_ms"], back
    # no event: nothing to recover from, no row
    assert _failover(mpsched.run(mpsched.loads_scenario(BULK), tmp_path / "none", jobs=1)).is_empty()



WLAN_LTE = """
duration = "9s"
seed = 1
[[paths]]
name = "wlan"
rate = "20Mbit"
rtt = "20ms"
queue = "1BDP"
gso = true
[[paths]]
name = "lte"
rate = "10Mbit"
rtt = "60ms"
queue = "1BDP"
gso = true
[connection]
scheduler = "linux"
rcv_buf_autotuning = true
join_timing = "fully_established"
[[workload]]
kind = "bulk"
stop = "8s"
[[path_events]]
kind = "down"
path = "wlan"
at = "3s"
duration = "3s"
[record]
interval = "10ms"
"""


def test_linux_path_back_from_down_resends_its_queue_and_regains_its_rate_at_once(tmp_path):
    # `benches/failover_kernel_vs_sim.py`'s setting: WLAN goes down from 3 s to 6 s. Upstream
    # Linux numbers a subflow's data when it queues it (`tcp_skb_entail`), so WLAN keeps what
    # the scheduler had queued on it, though LTE delivers that data meanwhile, and sends it
    # first when it comes back: its window grows from one segment on those bytes while LTE
    # drains the data sent during the event, and WLAN is back at 90 % of its pre-event rate
    # within 200 ms of its first bytes again (the testbed: 60-171 ms, after sending 0.3-0.6 MB
    # from before the event; docs/testbed.md, "Session 9 ... (fail15f)"). Dropping that queue
    # lets WLAN run ahead of LTE by the send buffer and wait for it: 0.5-1 s.
    res = mpsched.run(mpsched.loads_scenario(WLAN_LTE), tmp_path / "down", jobs=1)
    row = _failover(res).row(0, named=True)
    assert row["failback_ms"] is not None and row["failback90_ms"] is not None, row
    assert row["failback90_ms"] - row["failback_ms"] <= 200, row


def test_a_down_interface_loses_what_is_sent_to_it_not_what_it_sent(tmp_path):
    # The kernel engine's `down` is the client's interface (`ip link set p0 down`): the ACKs
    # the client sent before are already in the router's delay line and queue and reach the
    # server (benches/probe_down_acks.py: 8 ACKs, 24140 B more acknowledged, 1-10 ms after the
    # client's last packet on p0), while what the router still holds for the client is lost.
    # So WLAN's acknowledged bytes grow in the 20 ms after the event, and after the return its
    # first ACKs acknowledge one segment each (a slow start from one, as on the testbed), not
    # the 19 segments at once whose ACKs a path losing its uplink's contents had dropped.
    res = mpsched.run(mpsched.loads_scenario(WLAN_LTE), tmp_path / "down", jobs=1)
    at_ns, end_ns = res.path_events["at_ns"][0], res.path_events["end_ns"][0]
    wlan = res.subflow_series.filter(pl.col("path") == "wlan").sort("time_ns")
    wlan = wlan.with_columns(newly=pl.col("bytes_acked").diff()).filter(pl.col("newly") > 0)
    during = wlan.filter(pl.col("time_ns").is_between(at_ns + 1, at_ns + 20_000_000))
    assert during["newly"].sum() > 10 * 1448, during
    assert wlan.filter(pl.col("time_ns").is_between(at_ns + 20_000_000, end_ns)).is_empty()
    first_back = wlan.filter(pl.col("time_ns") > end_ns)["newly"][0]
    assert first_back <= 2 * 1448, first_back


def test_an_htb_shaped_path_comes_back_from_a_rate_collapse_at_its_own_rtt(tmp_path):
    # The testbed shapes each path with an htb class, which sends a packet while the class owes
    # no tokens and charges it after (docs/testbed.md, "Session 12: rate_collapse's recovery"):
    # below its rate a path adds no serialisation. After WLAN's 3 s at 500 kbit/s its window
    # (~40-50 kB) is below the path's BDP, so its delivery rate is its bytes in flight over its
    # RTT: the kernel's WLAN carries its flight in 20.5-21.9 ms 100-300 ms after the end (10
    # quiet runs), the path's 20 ms; a serialising link adds one skb's time (21.8-23.0 ms), which
    # kept the simulator's recovery 6-8 points of rate below the kernel's.
    def flight_ms(transmitter: str) -> list[float]:
        toml = WLAN_LTE.replace('gso = true\n', f'gso = true\ntransmitter = "{transmitter}"\n')
        toml = toml.replace('kind = "down"', 'kind = "rate_collapse"\nrate = "500kbit"')
        res = mpsched.run(mpsched.loads_scenario(toml), tmp_path / transmitter, jobs=1)
        end_ns = res.path_events["end_ns"][0]
        wlan = res.subflow_series.filter(pl.col("path") == "wlan").sort("time_ns")
        out = []
        for a, b in ((100, 200), (200, 300)):
            w = wlan.filter(pl.col("time_ns").is_between(end_ns + a * 1_000_000, end_ns + b * 1_000_000))
            rate = (w["bytes_acked"][-1] - w["bytes_acked"][0]) / (w["time_ns"][-1] - w["time_ns"][0])
            out.append(w["in_flight_bytes"].mean() / rate / 1e6)
        return out
    htb, wire = flight_ms("htb"), flight_ms("serialise")
    assert all(20.0 <= t <= 21.5 for t in htb), htb
    assert all(t > 21.5 for t in wire), wire


def test_a_loss_ramp_stretches_the_lossy_subflows_rtt_estimate_as_on_the_kernel(tmp_path):
    # 0 to 30 % loss on WLAN (both ways, per segment) over 3-4 s, held to 6 s. Linux measures
    # an ACK's RTT from the first transmission of the earliest segment it newly acknowledges or
    # SACKs (`tcp_ack_update_rtt`), and a dupack to a retransmission whose original arrived
    # echoes the original's timestamp (`tcp_sequence` refuses the old segment before
    # `tcp_replace_ts_recent`): after lost ACKs the sample is the original's age. The testbed's
    # WLAN subflow (`ss`, benches/probe_failback_loss_ramp.py) went from srtt 23-31 ms to 69 and
    # 234 ms in two runs, its RTO to 0.4 and 1.9 s; an estimate from timestamp echoes alone
    # stayed within 10 % of the pre-event srtt (docs/testbed.md, "Session 10 ... (fail15g)").
    # Without that first-transmission sample (lr15: not in the model) the old echoes alone, with
    # the Eifel undo, stretch it, in about half the runs: the losses are random, and a run
    # whose early losses spare the ACKs keeps its estimate. Over seeds 1-12, 7 runs stretch it
    # past twice the pre-event median, 4 of them past 4x (3 with CUBIC's hold in µs, session 16;
    # the kernel's second run 7.5x); two seeds alone would judge the draw, not the model.
    stretch = []
    for seed in range(1, 13):
        toml = WLAN_LTE.replace('kind = "down"', 'kind = "loss_ramp"\nto_loss = "30%"\nramp = "1s"')
        toml = toml.replace("seed = 1", f"seed = {seed}").replace('queue = "1BDP"\ngso = true\n[[paths]]',
                                                                'queue = "1BDP"\n[[paths]]', 1)
        res = mpsched.run(mpsched.loads_scenario(toml), tmp_path / f"ramp{seed}", jobs=1)
        wlan = res.subflow_series.filter(pl.col("path") == "wlan")
        before = wlan.filter(pl.col("time_ns").is_between(2_500_000_000, 2_990_000_000))["srtt_ns"].median()
        during = wlan.filter(pl.col("time_ns").is_between(3_000_000_000, 6_500_000_000))["srtt_ns"].max()
        stretch.append(during / before)
    assert sum(r > 2 for r in stretch) >= 6, stretch
    assert max(stretch) > 4, stretch
