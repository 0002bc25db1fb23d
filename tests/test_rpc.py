"""The request / response (RPC) workload through the Python API: each request's latency on a
clean path against the analytic value, conservation, the metrics (`request_latency`,
`rpc_summary`), the request size, bad input named, and the kernel engine's refusal."""

from __future__ import annotations

import polars as pl
import pytest

import mpsched
from mpsched import metrics
from mpsched.scenario import ScenarioError
from mpsched.scenario.normalize import to_config

from conftest import has_core_runner

CLEAN = """
duration = "5s"
[[paths]]
name = "p"
rate = "20Mbit"
delay = "20ms"
queue = "100 packets"
[connection]
protocol = "tcp"
[[workload]]
kind = "rpc"
request = "300B"
response = "4000B"
requests = 20
"""


@pytest.mark.skipif(not has_core_runner(), reason="needs the compiled core")
def test_latency_on_a_clean_path_is_the_analytic_value_and_every_byte_is_delivered_once(tmp_path):
    # Request: 300 B in one segment with 52 B of headers (352 B at 20 Mbit/s: 140.8 us) + 20 ms
    # up; response: 4000 B in three segments (4156 B, 1662.4 us) back to back in the initial
    # window + 20 ms down; nothing waits for an ACK, so delayed ACKs do not enter. The
    # handshake is excluded: a closed loop's first request leaves once the connection is
    # established, behind the handshake's last ACKs on the uplink (52 B, 20.8 us each; two, as
    # the simulator's request half-connection has its own handshake).
    expect_ms = (140_800 + 20_000_000 + 1_662_400 + 20_000_000) / 1e6
    res = mpsched.run(mpsched.loads_scenario(CLEAN), tmp_path / "clean", jobs=1)
    assert res.flows["app"].to_list() == ["rpc"]
    assert res.flows["bytes_delivered"].to_list() == [20 * 4000]
    assert res.blocks.height == 20
    lat = res.blocks["delay_ns"].to_list()
    assert lat == pytest.approx([expect_ms * 1e6 + 41_600] + [expect_ms * 1e6] * 19, abs=1_000)
    m = metrics.request_latency(res.flows, res.blocks).row(0, named=True)
    assert (m["requests"], m["answered"]) == (20, 20)
    assert m["latency_p50_ms"] == pytest.approx(expect_ms, abs=1e-3)
    assert m["latency_p999_ms"] == pytest.approx(expect_ms + 0.0416 * 0.981, abs=1e-3)  # interpolated to request 0
    assert m["deadline_miss_rate"] is None
    summary = mpsched.analysis.rpc_summary(res).row(0, named=True)
    assert summary["latency_p50_ms"] == pytest.approx(expect_ms, abs=1e-3)


@pytest.mark.skipif(not has_core_runner(), reason="needs the compiled core")
def test_a_deadline_shorter_than_the_latency_is_missed_by_every_request(tmp_path):
    s = mpsched.loads_scenario(CLEAN + 'deadline = "40ms"\n')
    res = mpsched.run(s, tmp_path / "late", jobs=1)
    assert metrics.request_latency(res.flows, res.blocks)["deadline_miss_rate"].to_list() == [1.0]
    assert not metrics.request_latency(res.flows.filter(pl.col("app") == "bulk"), res.blocks).height


@pytest.mark.parametrize("extra, field", [
    ('rate_hz = 10\nconcurrency = 2\n', "workload[0].concurrency"),
    ('stop = "2s"\n', "workload[0].stop"),
    ('direction = "upload"\n', "workload[0].direction"),
])
def test_bad_rpc_input_names_its_field(extra, field):
    with pytest.raises(ScenarioError) as e:
        mpsched.loads_scenario(CLEAN + extra)
    assert e.value.field == field


def test_an_rpc_needs_its_response_size_and_count():
    for drop, field in (('response = "4000B"\n', "workload[0].response"), ("requests = 20\n", "workload[0].requests")):
        with pytest.raises(ScenarioError) as e:
            mpsched.loads_scenario(CLEAN.replace(drop, ""))
        assert e.value.field == field


def test_a_request_is_any_positive_size_and_300_bytes_by_default():
    # Requests travel in the connection's byte stream, segmented: no one-packet limit.
    app = to_config(mpsched.loads_scenario(CLEAN.replace('request = "300B"', 'request = "100KB"')))["flows"][0]["app"]
    assert app["request_bytes"] == 100_000
    app = to_config(mpsched.loads_scenario(CLEAN.replace('request = "300B"\n', "")))["flows"][0]["app"]
    assert app["request_bytes"] == 300
    with pytest.raises(ScenarioError) as e:
        mpsched.loads_scenario(CLEAN.replace('request = "300B"', 'request = "0B"'))
    assert e.value.field == "workload[0].request"


def test_the_kernel_engine_refuses_an_rpc_naming_the_field():
    from mpsched.engines.kernel.plan import TestbedConfigError, make_plan

    with pytest.raises(TestbedConfigError) as e:
        make_plan(to_config(mpsched.loads_scenario(CLEAN)))
    assert e.value.field == "flows[0].app.kind"
    assert "'rpc'" in str(e.value) and "sized and bulk" in str(e.value)
