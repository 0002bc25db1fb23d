"""Workloads from the scenario to the simulator: Poisson arrivals, web page fetches, CBR blocks,
transfers on one long-lived connection; and the metrics computed from their records."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from mpsched.engines import run_config
from mpsched.metrics import aggregation_benefit, block_delay_summary, goodput, jain_index, window_goodput
from mpsched.scenario.normalize import to_config
from mpsched.scenario import Scenario, ScenarioError
from mpsched.scenario.pages import PAGES

from conftest import SCENARIOS


def _scenario(workload, *, paths=None, duration="30s", connection=None) -> Scenario:
    return Scenario.from_dict({
        "duration": duration,
        "paths": paths or [{"name": "p", "rate": "20Mbit", "rtt": "40ms", "queue": "100 packets"}],
        "connection": connection or {"protocol": "tcp"},
        "workload": workload,
        "record": {"interval": "0"},
    })


def _run(s: Scenario) -> dict[str, pl.DataFrame]:
    tables = run_config(to_config(s))
    return {k: pl.DataFrame(v) for k, v in tables.items() if not k.startswith("_")}


def test_poisson_arrivals_have_the_configured_mean():
    s = _scenario({"size": "1KB", "repeat": 4000, "arrival": "poisson", "mean_gap": "100ms"}, duration="2000s")
    starts = np.array([f["start_ns"] for f in to_config(s)["flows"]], dtype=float)
    gaps = np.diff(starts) / 1e6
    # 3999 exponential gaps: the standard error of the mean is 100 ms / sqrt(3999) = 1.6 ms.
    assert gaps.mean() == pytest.approx(100, abs=5)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.08), "exponential gaps: CV of 1"


def test_page_presets():
    assert [sum(PAGES[p]) for p in ("wikipedia", "google", "amazon", "huffingtonpost")] == [76_000, 220_000, 742_000, 1_146_000]
    assert len(PAGES["median"]) == 66
    assert sum(PAGES["median"]) == 2311 * 1024


def test_a_web_fetch_takes_at_least_one_rtt_more_than_the_same_bytes_pushed():
    objects = ["30KB", "60KB", "10KB", "80KB"]
    fetched = _run(_scenario({"kind": "web", "objects": objects}))
    pushed = _run(_scenario({"kind": "sized", "size": "180KB", "interval": "1s"}))
    f, p = fetched["flows"].row(0, named=True), pushed["flows"].row(0, named=True)
    assert f["completed"] and p["completed"] and f["app"] == "web" and f["units"] == 4
    assert f["fct_ns"] >= p["fct_ns"] + 40_000_000
    assert fetched["blocks"].height == 4


def test_a_preset_page_is_fetched_object_by_object():
    res = _run(_scenario({"kind": "web", "page": "median"}, paths=[{"name": "p", "rate": "50Mbit", "rtt": "20ms"}]))
    b = res["blocks"]
    assert b.height == 66 and b["size_bytes"].sum() == 2311 * 1024
    # each request leaves when the previous object is complete
    assert (b["sent_ns"].to_numpy()[1:] == b["delivered_ns"].to_numpy()[:-1]).all()


def test_transfers_on_one_long_lived_connection():
    s = _scenario({"size": "100KB", "repeat": 5, "arrival": "back_to_back", "reuse_connection": True})
    cfg = to_config(s)
    assert len(cfg["flows"]) == 1 and cfg["flows"][0]["app"] == {"kind": "transfers", "sizes_bytes": [100_000] * 5}
    periodic = to_config(_scenario({"size": "100KB", "repeat": 3, "interval": "2s", "start": "1s", "reuse_connection": True}))
    assert periodic["flows"][0]["app"]["offsets_ns"] == [0, 2_000_000_000, 4_000_000_000]
    res = _run(s)
    flow = res["flows"].row(0, named=True)
    assert flow["units"] == 5 and flow["app"] == "transfers" and flow["completed"]
    b = res["blocks"]
    assert b.height == 5 and (b["sent_ns"].to_numpy()[1:] >= b["delivered_ns"].to_numpy()[:-1]).all()


def test_cbr_block_delay_is_at_least_the_one_way_delay_and_grows_on_the_slow_path():
    paths = [{"name": "low", "rate": "10Mbit", "rtt": "40ms", "queue": "1BDP"},
             {"name": "high", "rate": "10Mbit", "rtt": "300ms", "queue": "1BDP"}]

    def delays(rate):
        res = _run(_scenario({"kind": "cbr", "rate": rate, "stop": "10s"}, paths=paths, duration="20s",
                             connection={"scheduler": "minrtt"}))
        assert res["blocks"]["delay_ns"].min() >= 20_000_000, "no block beats the 20 ms one-way delay"
        return block_delay_summary(res["blocks"], skip_s=1.0).row(0, named=True)

    low, high = delays("4Mbit"), delays("14Mbit")
    assert low["blocks"] == pytest.approx(9 * 4e6 / 8 / 8192, abs=2)
    assert low["delay_median_ms"] < 40
    # 14 Mbit/s does not fit the 10 Mbit/s low-delay path: blocks ride the 150 ms path too
    assert high["delay_mean_ms"] > 2 * low["delay_mean_ms"]
    assert high["variation_mean_abs_ms"] > low["variation_mean_abs_ms"]


def test_a_cbr_writer_without_nodelay_holds_a_blocks_partial_last_segment_for_nagle():
    # 8 KiB blocks every 16 ms on a 40 ms path: with TCP_NODELAY (cbr's default) every block
    # arrives after the same delay; with Nagle on (nodelay = false, Linux's default) a block's
    # partial last segment waits while the previous block's is unacknowledged (Minshall's check).
    paths = [{"name": "low", "rate": "10Mbit", "rtt": "40ms", "queue": "1BDP"}]

    def summary(nodelay):
        res = _run(_scenario({"kind": "cbr", "rate": "4Mbit", "stop": "10s", "nodelay": nodelay}, paths=paths,
                             duration="12s"))
        return block_delay_summary(res["blocks"], skip_s=1.0).row(0, named=True)

    nodelay, nagle = summary(True), summary(False)
    assert nodelay["delay_max_ms"] - nodelay["delay_median_ms"] < 1
    assert nagle["delay_median_ms"] > nodelay["delay_median_ms"] + 5
    assert nagle["variation_mean_abs_ms"] > 1 > nodelay["variation_mean_abs_ms"]


@pytest.mark.parametrize("workload, field", [
    ({"kind": "web", "page": "amazon", "size": "1KB"}, "workload[0].page"),
    ({"kind": "web", "page": "nope"}, "workload[0].page"),
    ({"kind": "web", "page": "amazon", "direction": "upload"}, "workload[0].direction"),
    ({"kind": "cbr"}, "workload[0].rate"),
    ({"kind": "cbr", "rate": "1Mbit", "size": "1KB"}, "workload[0].size"),
    ({"kind": "bulk", "reuse_connection": True}, "workload[0].reuse_connection"),
    ({"kind": "bulk", "rate": "1Mbit"}, "workload[0].rate"),
    ({"kind": "cbr", "rate": "1Mbit", "nodelay": "yes"}, "workload[0].nodelay"),
])
def test_inconsistent_workloads_are_refused(workload, field):
    with pytest.raises(ScenarioError) as e:
        _scenario(workload)
    assert e.value.field == field


def test_workload_scenario_files_load():
    for f in sorted((SCENARIOS / "workloads").glob("*.toml")):
        for s in Scenario.load(f).expand():
            assert to_config(s)["flows"], f


# --- metrics ------------------------------------------------------------------------------------


def test_aggregation_benefit_definition():
    assert aggregation_benefit(10e6, [10e6]) == 0.0, "one path alone"
    assert aggregation_benefit(10e6, [10e6, 5e6]) == 0.0, "as good as the best path"
    assert aggregation_benefit(15e6, [10e6, 5e6]) == 1.0, "the sum of the paths"
    assert aggregation_benefit(12.5e6, [10e6, 5e6]) == pytest.approx(0.5)
    assert aggregation_benefit(5e6, [10e6, 5e6]) == pytest.approx(-0.5), "worse than the best path"
    assert aggregation_benefit(0, [10e6, 5e6]) == -1.0
    with pytest.raises(ValueError):
        aggregation_benefit(1, [])


def test_jain_index():
    assert jain_index([5, 5, 5, 5]) == pytest.approx(1.0)
    assert jain_index([1, 0, 0, 0]) == pytest.approx(0.25)
    assert jain_index([2, 1]) == pytest.approx(0.9)


def _bulk_goodput(paths, protocol, use):
    s = _scenario({"kind": "bulk", "stop": "20s"}, paths=paths, duration="22s",
                  connection={"protocol": protocol, "paths": use, "cc": "cubic", "scheduler": "minrtt"})
    s = s.model_copy(update={"record": s.record.model_copy(update={"interval": "1s"})})
    return window_goodput(_run(s)["conn_series"], 5, 20)["goodput_bps"][0]


def test_goodput_of_a_sized_flow_and_of_a_window():
    res = _run(_scenario({"kind": "bulk", "stop": "10s"}, duration="30s").model_copy(
        update={"record": Scenario.from_dict({"duration": "1s", "paths": [{"name": "p", "rate": "1Mbit", "rtt": "1ms"}],
                                              "workload": {"kind": "bulk"}, "record": {"interval": "1s"}}).record}))
    g = window_goodput(res["conn_series"], 3, 9)["goodput_bps"][0]
    assert 0.9 * 20e6 < g <= 20e6, "a bulk TCP flow fills most of a 20 Mbit/s path"
    flows = goodput(_run(_scenario({"size": "1MB", "interval": "1s"}))["flows"])
    row = flows.row(0, named=True)
    assert row["goodput_bps"] == pytest.approx(8e6 / row["duration_s"])


def test_aggregation_benefit_of_a_real_split_is_close_to_one_and_of_one_path_zero():
    paths = [{"name": "a", "rate": "10Mbit", "rtt": "40ms", "queue": "1BDP"},
             {"name": "b", "rate": "10Mbit", "rtt": "40ms", "queue": "1BDP"}]
    single = [_bulk_goodput(paths, "tcp", [p]) for p in ("a", "b")]
    both = _bulk_goodput(paths, "mptcp", ["a", "b"])
    one = _bulk_goodput(paths, "mptcp", ["a"])
    assert aggregation_benefit(both, single) > 0.85
    assert abs(aggregation_benefit(one, single[:1])) < 0.05


def test_per_path_metrics_of_a_redundant_two_path_transfer():
    from mpsched.metrics import overhead, path_bytes, receive_buffer_series, rtt_max, subflow_throughput

    paths = [{"name": "a", "rate": "10Mbit", "rtt": "40ms", "queue": "1BDP"},
             {"name": "b", "rate": "5Mbit", "rtt": "100ms", "queue": "1BDP"}]
    s = _scenario({"size": "2MB", "interval": "1s"}, paths=paths, duration="20s",
                  connection={"scheduler": "redundant"})
    s = s.model_copy(update={"record": s.record.model_copy(update={"interval": "100ms"})})
    res = _run(s)
    pb = path_bytes(res["subflows"])
    assert pb["share"].sum() == pytest.approx(1.0)
    assert set(pb["path"].to_list()) == {0, 1}
    ov = overhead(res["flows"]).row(0, named=True)
    # the redundant scheduler copies data onto both paths: overhead well above zero
    assert ov["redundant_share"] > 0.2 and ov["overhead_share"] > 0.2
    rtt = rtt_max(res["subflow_series"]).sort("subflow")
    assert rtt["srtt_max_ms"][0] >= 40 and rtt["srtt_max_ms"][1] >= 100, "never below the base RTT"
    tp = subflow_throughput(res["subflow_series"]).drop_nulls("throughput_bps")
    # (one sample can exceed the rate when a recovered hole releases a cumulative ACK jump)
    fast = tp.filter(pl.col("subflow") == 0)["throughput_bps"]
    assert 5e6 < fast.mean() <= 10e6, "on average within the path's rate"
    rb = receive_buffer_series(res["conn_series"])
    assert (rb["ofo_max_kib"].diff().drop_nulls() >= 0).all() and rb["ofo_max_kib"][-1] == rb["ofo_kib"].max()
