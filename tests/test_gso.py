"""A path's `gso` (issue 11): on the kernel testbed the sender's TSO skbs (`tcp_tso_autosize`
segments, about 1 ms at the pacing rate, at least 2) pass the veth, the delayer and the router's
qdisc whole, and the client acknowledges each skb once (captured on srv0: 326 of 328 ACKs of a
tcp_single/tbf32k/1MiB run end on an skb boundary). `gso = true` makes the simulator do the same;
the kernel engine keeps skbs whole unless told `gso = false` (its delayer then segments)."""

from __future__ import annotations

import copy

import pytest

from conftest import has_core_runner
from mpsched.engines import run_config
from mpsched.engines.kernel.errors import TestbedConfigError
from mpsched.engines.kernel.plan import make_plan
from mpsched.scenario import Scenario, ScenarioError
from mpsched.scenario.normalize import to_config

BASE = {
    "duration": "4s",
    "seed": 3,
    "paths": [{"name": "a", "rate": "20Mbit", "rtt": "40ms", "queue": "1BDP"}],
    "connection": {"protocol": "tcp", "cc": "cubic"},
    "workload": {"size": "1MiB", "repeat": 1, "interval": "3s"},
}
SEGMENTS = -(-(1 << 20) // 1448)  # data segments of a 1 MiB transfer


def config(gso=None, **path) -> dict:
    d = copy.deepcopy(BASE)
    d["paths"][0].update(path)
    if gso is not None:
        d["paths"][0]["gso"] = gso
    return to_config(Scenario.from_dict(d).expand()[0])


def test_gso_reaches_the_path_only_when_given():
    assert "gso" not in config()["paths"][0]
    assert config(True)["paths"][0]["gso"] is True and config(False)["paths"][0]["gso"] is False


def test_a_bad_gso_names_the_field():
    with pytest.raises(ScenarioError, match=r"paths\[0\]\.gso"):
        config("sometimes")


@pytest.mark.skipif(not has_core_runner(), reason="needs the compiled core")
def test_a_gso_path_carries_skbs_and_the_receiver_acknowledges_each_once():
    per_segment, whole = run_config(config(), "sim"), run_config(config(True), "sim")
    for t in (per_segment, whole):
        assert t["flows"]["completed"] == [True] and t["flows"]["bytes_delivered"] == [1 << 20]
    seg, skb = (dict(zip(t["links"]["link"], t["links"]["packets_forwarded"])) for t in (per_segment, whole))
    # Per segment: every segment is a packet, and each one grows the receiver's rcv_ssthresh
    # towards the fixed 6 MiB buffer, so each is acknowledged at once (Linux `tcp_grow_window`
    # re-arms quickack; the testbed's client does so through slow start).
    assert seg["a.down"] >= SEGMENTS and seg["a.up"] >= 0.95 * seg["a.down"]
    # Whole skbs: at least two segments per packet after the first flights, one ACK per skb.
    assert skb["a.down"] < 0.6 * SEGMENTS
    assert 0.8 * skb["a.down"] <= skb["a.up"] <= 1.2 * skb["a.down"]
    assert skb["a.up"] < 0.6 * seg["a.up"]


@pytest.mark.skipif(not has_core_runner(), reason="needs the compiled core")
def test_gso_runs_are_deterministic():
    a, b = run_config(config(True), "sim"), run_config(config(True), "sim")
    assert a["flows"] == b["flows"] and a["links"] == b["links"]


def test_the_kernel_engine_segments_in_its_delayer_when_gso_is_false():
    spec = lambda cfg: make_plan(cfg).links[0].delayer_spec()  # noqa: E731
    assert not spec(config()).endswith(",gso=0") and not spec(config(True)).endswith(",gso=0")
    assert spec(config(False)).endswith(",gso=0")


def test_the_kernel_engine_refuses_whole_skbs_on_a_lossy_path():
    assert make_plan(config(False, loss="1%")).links[0].delayer_spec().endswith(",gso=0")
    with pytest.raises(TestbedConfigError, match=r"paths\[0\]\.gso"):
        make_plan(config(True, loss="1%"))


@pytest.mark.skipif(not has_core_runner(), reason="needs the compiled core")
def test_an_skb_longer_than_the_bucket_is_segmented_not_dropped():
    # tbf segments a GSO skb longer than its bucket (tbf_segment); dropping it would lose every
    # skb of 3 or more segments here (a 4 KiB bucket holds two frames).
    shaped = dict(burst="4KiB", overhead="14B")
    per_segment, whole = run_config(config(**shaped), "sim"), run_config(config(True, **shaped), "sim")
    assert whole["flows"]["completed"] == [True] and whole["flows"]["bytes_delivered"] == [1 << 20]
    assert whole["flows"]["bytes_retransmitted"][0] <= per_segment["flows"]["bytes_retransmitted"][0] + 20 * 1448
    assert whole["flows"]["fct_ns"][0] < 1.1 * per_segment["flows"]["fct_ns"][0]
