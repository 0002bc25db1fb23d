"""Failover, failback, stalls and message delays (`mpsched.metrics`) on tables whose answer is
known by hand."""

from __future__ import annotations

import math

import polars as pl
import pytest

from mpsched import metrics

MS = 1_000_000


def _events(*rows) -> pl.DataFrame:
    """path_events rows: (kind, path_index, at_ms, end_ms or None)."""
    return pl.DataFrame(
        {"event": list(range(len(rows))), "kind": [r[0] for r in rows], "path": [f"p{r[1]}" for r in rows],
         "path_index": [r[1] for r in rows], "direction": ["both"] * len(rows),
         "at_ns": [r[2] * MS for r in rows], "end_ns": [None if r[3] is None else r[3] * MS for r in rows]},
        schema_overrides={"end_ns": pl.Int64})


NO_EVENTS = _events()


def _messages() -> tuple[pl.DataFrame, pl.DataFrame]:
    """One flow of four messages sent every 20 ms; the third is held until 300 ms (a path
    failed under it) and the fourth, behind it in order, arrives with it."""
    flows = pl.DataFrame({"flow_id": [0], "app": ["messages"], "completed": [True]})
    blocks = pl.DataFrame({
        "flow_id": [0, 0, 0, 0], "block": [0, 1, 2, 3],
        "sent_ns": [0, 20 * MS, 40 * MS, 60 * MS], "delivered_ns": [10 * MS, 30 * MS, 300 * MS, 300 * MS],
        "delay_ns": [10 * MS, 10 * MS, 260 * MS, 240 * MS], "deadline_ns": [150 * MS] * 4,
        "deadline_missed": [False, False, True, True]})
    return flows, blocks


def test_message_delay_quantiles_and_deadline_miss_rate():
    blocks = pl.DataFrame({
        "flow_id": [0, 0, 0, 0], "block": [0, 1, 2, 3], "sent_ns": [0, 20 * MS, 40 * MS, 60 * MS],
        "delivered_ns": [10 * MS, 40 * MS, 70 * MS, None], "delay_ns": [10 * MS, 20 * MS, 30 * MS, None],
        "deadline_ns": [25 * MS] * 4, "deadline_missed": [False, False, True, True]},
        schema_overrides={"delivered_ns": pl.Int64, "delay_ns": pl.Int64})
    row = metrics.message_delay(blocks).row(0, named=True)
    assert row["messages"] == 4 and row["delivered"] == 3
    assert row["delay_p50_ms"] == pytest.approx(20.0)
    assert row["delay_p99_ms"] == pytest.approx(29.8)  # 20 + 0.98 x (30 - 20), linear
    assert row["deadline_miss_rate"] == pytest.approx(0.5)  # late, and never delivered
    no_deadline = blocks.with_columns(pl.lit(None, pl.Int64).alias("deadline_ns"), pl.lit(False).alias("deadline_missed"))
    assert metrics.message_delay(no_deadline)["deadline_miss_rate"][0] is None


def test_message_waits_and_the_longest_stall():
    flows, blocks = _messages()
    stalls = metrics.delivery_stalls(flows, blocks, pl.DataFrame())
    # each message waits from max(previous delivery, its send time) to its delivery
    assert stalls["start_ns"].to_list() == [0, 20 * MS, 40 * MS, 300 * MS]
    assert stalls["stall_ns"].to_list() == [10 * MS, 10 * MS, 260 * MS, 0]
    assert metrics.longest_stall(stalls)["longest_stall_ms"][0] == pytest.approx(260.0)


def test_failover_of_messages_from_the_event_to_the_first_delivery_again():
    flows, blocks = _messages()
    stalls = metrics.delivery_stalls(flows, blocks, pl.DataFrame())
    fo = metrics.failover(_events(("blackhole", 0, 45, None)), stalls, pl.DataFrame(), pl.DataFrame())
    row = fo.row(0, named=True)
    # the 260 ms wait is longer than twice the 10 ms waits before the event: delivery resumed at 300 ms
    assert row["failover_ms"] == pytest.approx(255.0)
    assert row["failover90_ms"] is None and row["failback_ms"] is None  # units; no recovery
    # an event after the flow's last wait cost nothing; no event at all: nothing to report
    late = metrics.failover(_events(("down", 0, 400, 500)), stalls, pl.DataFrame(), pl.DataFrame())
    assert late["failover_ms"][0] == 0.0
    assert metrics.failover(NO_EVENTS, stalls, pl.DataFrame(), pl.DataFrame()).is_empty()


def _transfer() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """A transfer sampled every 10 ms: 1000 B a sample to 50 ms, nothing until 130 ms, then
    500 B a sample to 200 ms. Its subflow on path 1 acknowledges 300 B until 110 ms, 800 B from
    120 ms."""
    t = list(range(0, 201, 10))
    d = [min(x, 50) * 100 if x <= 120 else 5000 + (x - 120) * 50 for x in t]
    conn = pl.DataFrame({"flow_id": [0] * len(t), "time_ns": [x * MS for x in t], "delivered_bytes": d})
    flows = pl.DataFrame({"flow_id": [0], "app": ["bulk"], "completed": [True]})
    sub = pl.DataFrame({"flow_id": [0] * 3, "subflow": [1] * 3, "path": ["lte"] * 3, "path_index": [1] * 3,
                        "time_ns": [100 * MS, 110 * MS, 120 * MS], "bytes_acked": [300, 300, 800]})
    return flows, conn, sub


def test_transfer_stall_failover_to_90_percent_and_failback():
    flows, conn, sub = _transfer()
    stalls = metrics.delivery_stalls(flows, pl.DataFrame(), conn)
    # between the growth at 50 ms and the next at 130 ms: 80 ms less one 10 ms sample
    assert metrics.longest_stall(stalls)["longest_stall_ms"][0] == pytest.approx(70.0)
    fo = metrics.failover(_events(("blackhole", 1, 55, 100)), stalls, conn, sub, window_s=0.02)
    row = fo.row(0, named=True)
    assert row["failover_ms"] == pytest.approx(75.0)  # 130 ms - 55 ms
    # the rate with the event in force (second half of 55..100 ms) is 0: no reference
    assert row["failover90_ms"] is None
    assert row["failback_ms"] == pytest.approx(20.0)  # path 1 carries more at 120 ms
    # without an end: the reference is the rate over 127.5..200 ms (3500 B in 72.5 ms, 48 B/ms);
    # the first 20 ms window from the first byte again (130 ms) carries 1000 B, 50 B/ms: 90 % reached
    row = metrics.failover(_events(("down", 0, 55, None)), stalls, conn, sub, window_s=0.02).row(0, named=True)
    assert row["failover90_ms"] == pytest.approx(75.0)
    # before the stall, 60..80 ms carried nothing but 40..60 ms 1000 B: a window is never
    # counted before delivery resumed, however much was in flight when the event struck
    row = metrics.failover(_events(("down", 0, 35, None)), stalls, conn, sub, window_s=0.02).row(0, named=True)
    assert row["failover_ms"] == pytest.approx(95.0) and row["failover90_ms"] == pytest.approx(95.0)
    assert row["failback_ms"] is None


def test_an_event_that_costs_nothing_is_zero():
    t = list(range(0, 201, 10))
    conn = pl.DataFrame({"flow_id": [0] * len(t), "time_ns": [x * MS for x in t], "delivered_bytes": [x * 100 for x in t]})
    flows = pl.DataFrame({"flow_id": [0], "app": ["bulk"], "completed": [True]})
    stalls = metrics.delivery_stalls(flows, pl.DataFrame(), conn)
    assert metrics.longest_stall(stalls)["longest_stall_ms"][0] == 0.0
    row = metrics.failover(_events(("rtt_spike", 0, 55, None)), stalls, conn, pl.DataFrame(), window_s=0.02).row(0, named=True)
    assert row["failover_ms"] == 0.0 and row["failover90_ms"] == pytest.approx(5.0)  # the first sample after


def test_sent_per_delivered():
    flows = pl.DataFrame({"flow_id": [0, 1], "bytes_sent": [3000, 10], "bytes_delivered": [1000, 0]})
    out = metrics.sent_per_delivered(flows)
    assert out["sent_per_delivered"][0] == pytest.approx(3.0)
    assert out["sent_per_delivered"][1] is None or math.isnan(out["sent_per_delivered"][1])


def _path_series(increments: dict[int, int], *, handover_ms: int | None = None) -> pl.DataFrame:
    """A subflow series on path 1 sampled every 10 ms from 0 to 700 ms, `increments[t_ms]` bytes
    acknowledged in the sample ending at t_ms (0 where not given); with `handover_ms` a second
    subflow on the path carries the increments from then on (the first stays where it was)."""
    t = list(range(0, 701, 10))
    split = handover_ms if handover_ms is not None else 10**9
    cols: list[list[int]] = [[], []]
    totals = [0, 0]
    for x in t:
        totals[x >= split] += increments.get(x, 0)
        cols[0].append(totals[0])
        cols[1].append(totals[1])
    n = 2 if handover_ms is not None else 1
    return pl.concat([pl.DataFrame({"flow_id": [0] * len(t), "subflow": [k] * len(t), "path": ["wlan"] * len(t),
                                    "path_index": [1] * len(t), "time_ns": [x * MS for x in t],
                                    "bytes_acked": cols[k]}) for k in range(n)])


#: 1000 B a sample to the event (200-300 ms), nothing during it nor to 340 ms, 600 B a sample from
#: 350 to 400 ms (the path ramping up again), 1000 B a sample from 410 ms on.
RECOVERY = {**{x: 1000 for x in range(10, 201, 10)}, **{x: 600 for x in range(350, 401, 10)},
            **{x: 1000 for x in range(410, 701, 10)}}


def _failback(sub: pl.DataFrame, event=("blackhole", 1, 200, 300)) -> dict:
    t = list(range(0, 701, 10))
    conn = pl.DataFrame({"flow_id": [0] * len(t), "time_ns": [x * MS for x in t], "delivered_bytes": [x * 100 for x in t]})
    flows = pl.DataFrame({"flow_id": [0], "app": ["bulk"], "completed": [True]})
    stalls = metrics.delivery_stalls(flows, pl.DataFrame(), conn)
    return metrics.failover(_events(event), stalls, conn, sub, window_s=0.1).row(0, named=True)


def test_failback_to_90_percent_of_the_pre_event_rate():
    # pre-event rate: 1000 B a 10 ms sample (the second half of 10..200 ms); 90 % of it over
    # 100 ms is 9000 B. The window from 380 ms carries 2 x 600 + 8 x 1000 = 9200 B, the one
    # from 370 ms 3 x 600 + 7 x 1000 = 8800 B: back to 90 % 80 ms after the end (300 ms), where
    # the first bytes again came 50 ms after it.
    row = _failback(_path_series(RECOVERY))
    assert row["failback_ms"] == pytest.approx(50.0)
    assert row["failback90_ms"] == pytest.approx(80.0)
    # the path's subflows are summed: the same bytes carried by a second subflow after the
    # event (the first one carried the pre-event rate) give the same answer
    assert _failback(_path_series(RECOVERY, handover_ms=300))["failback90_ms"] == pytest.approx(80.0)
    # a path that only slowed (half its rate during the event) and is at full rate at once
    # afterwards: the first window from its first bytes after the end (10 ms) reaches 90 %
    slowed = {x: 1000 if x <= 200 or x > 300 else 500 for x in range(10, 701, 10)}
    assert _failback(_path_series(slowed), ("rtt_spike", 1, 200, 300))["failback90_ms"] == pytest.approx(10.0)
    # no window starts before the path carries again: a backlog of 5000 B acknowledged at once
    # at 350 ms would let the window from the end (300 ms: 4 empty samples, 5000 B, 5 x 1000 B)
    # reach 90 %, but the first window counted starts at 350 ms
    burst = {**{x: 1000 for x in range(10, 201, 10)}, 350: 5000, **{x: 1000 for x in range(360, 701, 10)}}
    row = _failback(_path_series(burst))
    assert row["failback_ms"] == pytest.approx(50.0) and row["failback90_ms"] == pytest.approx(50.0)


def test_failback_to_90_percent_is_undefined_where_nothing_can_recover():
    # no end: no failback; a path that carried nothing before the event: no rate to regain;
    # a path that never regains 90 % before the last sample; no event: no row
    assert _failback(_path_series(RECOVERY), ("down", 1, 200, None))["failback90_ms"] is None
    late_start = {x: 1000 for x in range(350, 701, 10)}
    assert _failback(_path_series(late_start))["failback90_ms"] is None
    weak = {**{x: 1000 for x in range(10, 201, 10)}, **{x: 800 for x in range(310, 701, 10)}}
    row = _failback(_path_series(weak))
    assert row["failback_ms"] == pytest.approx(10.0) and row["failback90_ms"] is None
    flows = pl.DataFrame({"flow_id": [0], "app": ["bulk"], "completed": [True]})
    conn = pl.DataFrame({"flow_id": [0, 0], "time_ns": [0, 10 * MS], "delivered_bytes": [0, 100]})
    stalls = metrics.delivery_stalls(flows, pl.DataFrame(), conn)
    assert metrics.failover(NO_EVENTS, stalls, conn, _path_series(RECOVERY)).is_empty()
