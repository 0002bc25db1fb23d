"""The kernel engine's real-time `messages` flows without root: mpxfer's flows line (either
direction), the message count the simulator issues, and its block lines -> the simulator's
`blocks` table (one-way delay from each message's due time, deadline misses, unread messages)."""

from __future__ import annotations

import polars as pl
import pytest

import mpsched
from mpsched.engines.kernel.plan import TestbedConfigError, client_addr, make_plan
from mpsched.engines.kernel.rpc import blocks_table
from mpsched.scenario.normalize import to_config

MS = 1_000_000

VOIP = """
duration = "2s"
[[paths]]
name = "p"
rate = "20Mbit"
delay = "20ms"
queue = "100 packets"
[connection]
protocol = "tcp"
[[workload]]
kind = "messages"
size = "160B"
interval = "20ms"
deadline = "150ms"
start = "100ms"
stop = "1s"
"""


@pytest.mark.parametrize("direction", ["download", "upload"])
def test_a_messages_flow_runs_as_mpxfer_messages_with_the_simulators_count(direction):
    cfg = to_config(mpsched.loads_scenario(VOIP + f'direction = "{direction}"\n'))
    f = make_plan(cfg).flows[0]
    # From 100 ms until 1 s every 20 ms: 45 messages (the simulator's interval_units: ceil).
    assert (f.kind, f.direction, f.rpc.count, f.size_bytes) == ("messages", direction, 45, 45 * 160)
    # The client's SO_SNDBUF only when it sends (uploads); the server's listener has the download's.
    client_sndbuf = f.so_sndbuf_bytes if direction == "upload" else 0
    assert f.so_sndbuf_bytes > 0
    assert f.line() == (f"{f.flow_id} tcp cubic {client_addr(0)} {direction} messages 45 {100 * MS} "
                        f"{f.so_rcvbuf_bytes} {client_sndbuf} 1 160 0 {20 * MS} 0")


def test_message_blocks_are_stamped_with_their_due_time_and_unread_ones_miss_their_deadline():
    cfg = to_config(mpsched.loads_scenario(VOIP))
    f = make_plan(cfg).flows[0]
    # The receiver prints the messages it read whole (relative to the epoch); message 2 never came.
    lines = [{"type": "block", "flow_id": f.flow_id, "block": 0, "delivered_ns": 161 * MS},
             {"type": "block", "flow_id": f.flow_id, "block": 1, "delivered_ns": 300 * MS},
             *({"type": "block", "flow_id": f.flow_id, "block": k, "delivered_ns": (111 + 20 * k) * MS}
               for k in range(3, 45))]
    b = pl.DataFrame(blocks_table({f.flow_id: f.rpc}, lines, cfg["duration_ns"]))
    assert b["block"].to_list() == list(range(45))
    assert b["sent_ns"].to_list() == [(100 + 20 * k) * MS for k in range(45)]
    assert b["delay_ns"].to_list()[:4] == [61 * MS, 180 * MS, None, 11 * MS]
    assert b["deadline_missed"].to_list()[:4] == [False, True, True, False]
    assert b["size_bytes"].to_list() == [160] * 45
    assert b["deadline_missed"].sum() == 2


def test_a_messages_flow_that_sends_nothing_is_refused_naming_the_field():
    cfg = to_config(mpsched.loads_scenario(VOIP))
    cfg["flows"][0]["app"]["stop_ns"] = cfg["flows"][0]["start_ns"]
    with pytest.raises(TestbedConfigError) as e:
        make_plan(cfg)
    assert e.value.field == "flows[0].app.stop_ns"
