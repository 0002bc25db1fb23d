"""Path events with a kind, real-time message workloads and stale_loss_cnt: what a user writes
becomes the core's configuration, and mistakes name their field."""

from __future__ import annotations

import pytest

import mpsched
from mpsched.engines.dispatch import path_event_table
from mpsched.scenario.normalize import to_config

BASE = """
duration = "10s"
[[paths]]
name = "wlan"
rate = "20Mbit"
rtt = "20ms"
[[paths]]
name = "lte"
rate = "10Mbit"
rtt = "60ms"
"""


def _scenario(extra: str) -> mpsched.Scenario:
    return mpsched.loads_scenario(BASE + extra)


def _error(extra: str) -> mpsched.ScenarioError:
    with pytest.raises(mpsched.ScenarioError) as e:
        s = _scenario(extra)
        to_config(s.expand()[0])
    return e.value


MESSAGES = """
[[workload]]
kind = "messages"
size = "160B"
interval = "20ms"
deadline = "150ms"
"""


def test_each_event_kind_becomes_the_cores_entry_in_base_units():
    cfg = to_config(_scenario(MESSAGES + """
[[path_events]]
kind = "blackhole"
path = "wlan"
at = "2s"
duration = "1s"
direction = "down"
[[path_events]]
kind = "loss_ramp"
path = "lte"
at = "1s"
ramp = "500ms"
from_loss = "1%"
to_loss = "30%"
[[path_events]]
kind = "rtt_spike"
path = "wlan"
at = "3s"
duration = "2s"
extra_delay = "100ms"
[[path_events]]
kind = "rate_collapse"
path = "wlan"
at = "4s"
rate = "500kbit"
[[path_events]]
kind = "down"
path = "lte"
at = "5s"
duration = "1500ms"
"""))
    s, ms = 1_000_000_000, 1_000_000
    assert cfg["path_events"] == [
        {"kind": "blackhole", "at_ns": 2 * s, "path": 0, "direction": "down", "duration_ns": s},
        {"kind": "loss_ramp", "at_ns": s, "path": 1, "direction": "both", "ramp_ns": 500 * ms, "from_p": 0.01,
         "to_p": 0.3},
        {"kind": "rtt_spike", "at_ns": 3 * s, "path": 0, "direction": "both", "duration_ns": 2 * s,
         "extra_delay_ns": 100 * ms},
        {"kind": "rate_collapse", "at_ns": 4 * s, "path": 0, "direction": "both", "rate_bps": 500_000},
        # a path going down is the original shape both engines read: down, then up again
        {"at_ns": 5 * s, "path": 1, "up": False},
        {"at_ns": 6500 * ms, "path": 1, "up": True},
    ]
    table = path_event_table(cfg)
    assert table["kind"] == ["loss_ramp", "blackhole", "rtt_spike", "rate_collapse", "down"]
    assert table["path"] == ["lte", "wlan", "wlan", "wlan", "lte"]
    assert table["end_ns"] == [None, 3 * s, 5 * s, None, 6500 * ms]


def test_messages_workload_and_stale_loss_cnt_reach_the_core():
    cfg = to_config(_scenario(MESSAGES + """
start = "1s"
messages = 100
[connection]
scheduler = "linux"
stale_loss_cnt = 2
"""))
    (flow,) = cfg["flows"]
    assert flow["start_ns"] == 1_000_000_000
    # 100 messages, the last issued at 1 s + 99 x 20 ms
    assert flow["app"] == {"kind": "messages", "size_bytes": 160, "interval_ns": 20_000_000,
                           "stop_ns": 1_000_000_000 + 99 * 20_000_000 + 1, "deadline_ns": 150_000_000}
    assert cfg["transports"][0]["stale_loss_cnt"] == 2
    hz = to_config(_scenario(MESSAGES.replace('interval = "20ms"', "rate_hz = 50")))
    assert hz["flows"][0]["app"]["interval_ns"] == 20_000_000
    assert hz["flows"][0]["app"]["stop_ns"] == 10_000_000_000  # default: the duration
    assert hz["transports"][0]["stale_loss_cnt"] == 4  # the kernel's default


def test_a_swept_event_kind_keeps_each_kinds_own_parameters():
    s = _scenario(MESSAGES + """
[[path_events]]
kind = ["blackhole", "rate_collapse"]
path = "wlan"
at = "2s"
rate = "1Mbit"
""")
    runs = s.expand()
    assert [r.path_events[0].kind for r in runs] == ["blackhole", "rate_collapse"]
    assert "rate_bps" not in to_config(runs[0])["path_events"][0]
    assert to_config(runs[1])["path_events"][0]["rate_bps"] == 1_000_000
    from mpsched.study import plan

    assert [t.params["event.kind"] for t in plan(s)] == ["blackhole", "rate_collapse"]


@pytest.mark.parametrize("extra, field, words", [
    ('[[path_events]]\nkind = "blackhole"\npath = "wlan"\nat = "1s"\nrate = "1Mbit"\n', "path_events[0].rate",
     "does not take"),
    ('[[path_events]]\nkind = "rtt_spike"\npath = "wlan"\nat = "1s"\n', "path_events[0].extra_delay", "needs"),
    ('[[path_events]]\nkind = "rate_collapse"\npath = "wlan"\nat = "1s"\nrate = "0"\n', "path_events[0].rate",
     "positive"),
    ('[[path_events]]\nkind = "loss_ramp"\npath = "wlan"\nat = "1s"\nto_loss = "130%"\n', "path_events[0].to_loss",
     "[0, 1]"),
    ('[[path_events]]\nkind = "loss_ramp"\npath = "wlan"\nat = "1s"\nramp = "2s"\nduration = "1s"\nto_loss = 0.1\n',
     "path_events[0].duration", "ramp"),
    ('[[path_events]]\nkind = "melt"\npath = "wlan"\nat = "1s"\n', "path_events[0].kind", "blackhole"),
    ('[[path_events]]\nkind = "down"\npath = "wlan"\nat = "1s"\nup = true\n', "path_events[0].up", "duration"),
    ('[[path_events]]\npath = "wlan"\nat = "1s"\n', "path_events[0].kind", "kind"),
    ('[[path_events]]\nkind = "down"\npath = "wifi"\nat = "1s"\n', "path_events[0].path", "unknown path"),
    ('[[path_events]]\nkind = "down"\npath = "wlan"\nat = "11s"\n', "path_events[0].at", "end of the run"),
])
def test_a_bad_path_event_names_its_field(extra, field, words):
    e = _error(MESSAGES + extra)
    assert e.field == field and words in e.message, e


@pytest.mark.parametrize("extra, field", [
    ('rate_hz = 50\n', "workload[0].interval"),            # both interval and rate_hz
    ('messages = 10\nstop = "5s"\n', "workload[0].messages"),
    ('block = "8KiB"\n', "workload[0].block"),
    ('messages = 1000\n', "workload[0].messages"),        # 1000 x 20 ms does not fit in 10 s
])
def test_a_bad_messages_workload_names_its_field(extra, field):
    assert _error(MESSAGES + extra).field == field


def test_deadline_belongs_to_messages_and_stale_loss_cnt_is_a_byte():
    assert _error('[[workload]]\nkind = "bulk"\ndeadline = "1s"\n').field == "workload[0].deadline"
    e = _error('[[workload]]\nkind = "bulk"\n[connection]\nstale_loss_cnt = 300\n')
    assert e.field == "connection[0].stale_loss_cnt"


def test_the_kernel_engine_plays_every_event_kind():
    from mpsched.engines.kernel.events import actions_for
    from mpsched.engines.kernel.plan import TestbedConfigError, make_plan

    bulk = '[[workload]]\nkind = "bulk"\n[connection]\nscheduler = "linux"\n'
    plan = make_plan(to_config(_scenario(bulk + """
[[path_events]]
kind = "blackhole"
path = "wlan"
at = "1s"
duration = "1s"
direction = "up"
[[path_events]]
kind = "rate_collapse"
path = "lte"
at = "2s"
duration = "3s"
direction = "down"
rate = "1Mbit"
""")))
    s = 1_000_000_000
    acts = [(a[0], a[1]) for a in actions_for(plan)]
    assert acts == [(s, "path 0 uplink blackhole on"), (2 * s, "lte.down rate 1000000"),
                    (2 * s, "path 0 uplink blackhole off"), (5 * s, "lte.down rate 10000000")]
    drop = actions_for(plan)[0][2]
    assert drop == [("router", ["iptables", "-t", "mangle", "-I", "FORWARD", "1", "-i", "rp0", "-o", "rsrv", "-j", "DROP"])]
    # A loss ramp and an RTT spike are the affected links' delayer schedules, timed from the
    # run's epoch (native/nfqdelay ramp= and spike=, in microseconds); one of each per link.
    ramp = '[[path_events]]\nkind = "loss_ramp"\npath = "wlan"\nat = "1s"\nduration = "2s"\nramp = "1s"\nto_loss = "10%"\n'
    spike = '[[path_events]]\nkind = "rtt_spike"\npath = "lte"\nat = "1s"\ndirection = "up"\nextra_delay = "50ms"\n'
    plan = make_plan(to_config(_scenario(bulk + ramp + spike)))
    specs = {(lk.path, lk.direction): lk.delayer_spec() for lk in plan.links}
    assert specs[(0, "down")].endswith(",ramp=1000000.000:1000000.000:3000000.000:0.0:0.1,gso=0")
    assert "ramp=" in specs[(0, "up")] and "spike=" not in specs[(0, "up")]
    assert ",spike=1000000.000:" in specs[(1, "up")] and specs[(1, "up")].endswith(":50000.000")
    assert "spike=" not in specs[(1, "down")] and "ramp=" not in specs[(1, "down")]
    with pytest.raises(TestbedConfigError) as e:
        make_plan(to_config(_scenario(bulk + ramp + ramp)))
    assert e.value.field == "path_events[1].kind"


def test_the_kernel_engine_sets_stale_loss_cnt_per_host_and_refuses_two_values():
    from mpsched.engines.kernel.plan import TestbedConfigError, make_plan

    kernel = '[[workload]]\nkind = "bulk"\n[[connection]]\nname = "a"\nscheduler = "linux"\nstale_loss_cnt = 2\n'
    assert make_plan(to_config(_scenario(kernel))).stale_loss_cnt == 2
    two = kernel + ('[[connection]]\nname = "b"\nscheduler = "linux"\nstale_loss_cnt = 6\n'
                    '[[workload]]\nkind = "bulk"\nconnection = "b"\n')
    with pytest.raises(TestbedConfigError) as e:
        make_plan(to_config(_scenario(two)))
    assert e.value.field == "transports" and "same stale_loss_cnt" in str(e.value)


def test_the_kernel_measures_an_event_from_when_its_change_took_effect():
    """The kernel's event player lands each change one `ip netns exec` late; its path_events
    table carries the times the commands returned, so failover and failback do not count the
    testbed's lag as the stack's. Delayer-played events and failed commands keep their times."""
    from mpsched.engines.kernel.events import played_path_events

    table = {"event": [0, 1, 2], "kind": ["blackhole", "rate_collapse", "loss_ramp"], "path": ["wlan", "lte", "wlan"],
             "path_index": [0, 1, 0], "direction": ["both"] * 3,
             "at_ns": [3_000_000_000, 3_000_000_000, 5_000_000_000], "end_ns": [6_000_000_000, 6_000_000_000, None]}
    log = [{"at_ns": 3_000_000_000, "done_ns": 3_052_000_000, "path": 0, "ok": True, "what": "path 0 blackhole on"},
           {"at_ns": 6_000_000_000, "done_ns": 6_031_000_000, "path": 0, "ok": True, "what": "path 0 blackhole off"},
           # a rate collapse changes both of the path's links: in force once the later one is
           {"at_ns": 3_000_000_000, "done_ns": 3_008_000_000, "path": 1, "ok": True, "what": "lte.down rate 500000"},
           {"at_ns": 3_000_000_000, "done_ns": 3_015_000_000, "path": 1, "ok": True, "what": "lte.up rate 500000"},
           {"at_ns": 6_000_000_000, "done_ns": 6_090_000_000, "path": 1, "ok": False, "what": "lte.down rate 10000000"}]
    got = played_path_events(table, log)
    assert got["at_ns"] == [3_052_000_000, 3_015_000_000, 5_000_000_000]
    assert got["end_ns"] == [6_031_000_000, 6_000_000_000, None]
    assert table["at_ns"][0] == 3_000_000_000, "the configuration's table is left as it was"
