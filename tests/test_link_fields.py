"""The link fields of issue 11 (`burst`, `overhead`, `impairments` per path) and the connection's
`loss_recovery`: units, defaults, sweeps, per-direction overrides, the errors naming the field,
and what they change in the simulator (a token bucket sends a first flight back to back)."""

from __future__ import annotations

import copy

import pytest

from conftest import has_core_runner
from mpsched.engines import run_config
from mpsched.scenario import Scenario, ScenarioError
from mpsched.scenario.normalize import to_config
from mpsched.scenario.sweep import expand

BASE = {
    "duration": "3s",
    "paths": [{"name": "a", "rate": "10Mbit", "rtt": "20ms"}],
    "connection": {"protocol": "tcp"},
    "workload": {"size": "64KiB", "repeat": 1, "interval": "1s"},
}


def scenario(path=None, conn=None) -> Scenario:
    d = copy.deepcopy(BASE)
    d["paths"][0].update(path or {})
    d["connection"].update(conn or {})
    return Scenario.from_dict(d)


def links(s: Scenario) -> list[dict]:
    return to_config(s.expand()[0])["links"]


def test_defaults_leave_the_cores_defaults():
    cfg = to_config(scenario().expand()[0])
    assert all(not {"burst_bytes", "overhead_bytes", "impairments"} & set(lk) for lk in cfg["links"])
    assert cfg["transports"][0]["loss_recovery"] == "rack_tlp"
    assert all("burst_bytes" not in lk for lk in links(scenario({"burst": "none"})))


def test_fields_reach_both_links_with_units_and_a_direction_overrides():
    s = scenario({"burst": "32KiB", "overhead": "14B", "impairments": "before_queue",
                  "up": {"burst": "none", "impairments": "after_queue"}})
    down, up = links(s)
    assert (down["burst_bytes"], down["overhead_bytes"], down["impairments"]) == (32768, 14, "before_queue")
    assert "burst_bytes" not in up and (up["overhead_bytes"], up["impairments"]) == (14, "after_queue")
    assert links(scenario({"burst": "32KB"}))[0]["burst_bytes"] == 32000  # SI, as every size


def test_fields_sweep():
    s = scenario({"burst": ["none", "32KiB"]}, {"loss_recovery": ["rack_tlp", "rfc6675"]})
    runs = expand(s)
    got = {(to_config(r.scenario)["links"][0].get("burst_bytes"), to_config(r.scenario)["transports"][0]["loss_recovery"])
           for r in runs}
    assert got == {(b, m) for b in (None, 32768) for m in ("rack_tlp", "rfc6675")}


@pytest.mark.parametrize("path, conn, field, words", [
    ({"burst": "1KB"}, {}, "paths[0].burst", "one full frame"),
    ({"burst": "1500B", "overhead": "14B"}, {}, "paths[0].burst", "1514"),
    ({"burst": "lots"}, {}, "paths[0].burst", "size"),
    ({"overhead": "300B"}, {}, "paths[0].overhead", "at most 256"),
    ({"impairments": "inside"}, {}, "paths[0].impairments", "'before_queue' or 'after_queue'"),
    ({"burst": "32KiB", "schedule": [{"at": "1s", "rate": "5Mbit"}]}, {}, "paths[0].burst", "constant rate"),
    ({}, {"loss_recovery": "newreno"}, "connection[0].loss_recovery", "'rack_tlp'"),
    ({"transmitter": "fifo"}, {}, "paths[0].transmitter", "'serialise' or 'htb'"),
    ({"transmitter": "htb", "schedule": [{"at": "1s", "rate": "5Mbit"}]}, {}, "paths[0].transmitter", "constant rate"),
])
def test_bad_values_name_the_field(path, conn, field, words):
    with pytest.raises(ScenarioError) as e:
        links(scenario(path, conn))
    assert e.value.field.replace("connection.", "connection[0].") == field or e.value.field == field, str(e.value)
    assert words in e.value.message


@pytest.mark.skipif(not has_core_runner(), reason="needs the compiled core")
def test_a_token_bucket_sends_the_first_flight_faster():
    """At 2 Mbit/s a 32 KiB bucket lets a flight (up to 32 KiB of frames) leave back to back
    instead of one 1514-byte frame per 6 ms, so the flow finishes sooner; but the bucket never
    lets more than burst + rate x t bytes through by time t (tokens are conserved)."""
    def fct(burst):
        s = scenario({"rate": "2Mbit", "overhead": "14B", "burst": burst})
        return run_config(to_config(s.expand()[0]), "sim")["flows"]["fct_ns"][0]
    serial, bucket = fct("none"), fct("32KiB")
    assert bucket < serial
    frames = -(-65536 // 1448)
    wire_bytes = 65536 + frames * (20 + 32 + 14)  # IP, TCP with timestamps, Ethernet
    assert bucket >= (wire_bytes - 32768) * 8 / 2e6 * 1e9


@pytest.mark.skipif(not has_core_runner(), reason="needs the compiled core")
def test_an_htb_link_ends_a_flight_one_skb_time_sooner_than_a_wire():
    """Linux htb (the kernel engine's shaper) sends a packet while its class owes no tokens and
    charges it after, so each packet leaves one packet time before a wire would deliver it; the
    rate is the same. At 2 Mbit/s a 64 KiB transfer ends a few frames' time sooner, never more
    than a flight's worth of frames (the bucket holds 1600 B, the rest is paid back at the rate)."""
    def fct(transmitter):
        s = scenario({"rate": "2Mbit", "overhead": "14B", "transmitter": transmitter})
        assert links(s)[0].get("transmitter") == (None if transmitter is None else transmitter)
        return run_config(to_config(s.expand()[0]), "sim")["flows"]["fct_ns"][0]
    wire, htb = fct(None), fct("htb")
    frame_ns = 1514 * 8 / 2e6 * 1e9
    assert wire - 12 * frame_ns < htb <= wire - frame_ns, (wire, htb)
    assert fct("serialise") == wire
