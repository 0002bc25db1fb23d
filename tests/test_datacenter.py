"""Data-center scenarios: the FatTree from the core's generator, the traffic of `003_` (Poisson
partition-aggregate flows in size classes or from empirical distributions, background flows),
permutation traffic and a shared-bottleneck dumbbell, run through the simulator."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mpsched import _core
from mpsched import datacenter as dc
from mpsched.metrics import window_goodput

from conftest import SCENARIOS

DC = SCENARIOS / "datacenter"


def _query(**traffic) -> dc.DatacenterScenario:
    s = dc.load(DC / "query_fattree.toml")
    t = s.traffic[0].model_copy(update=traffic)
    return s.model_copy(update={"traffic": [t]})


def test_poisson_arrivals_per_worker_have_the_configured_mean():
    s = _query(stop="300s")
    flows = dc._flows(s, 400 * 10**9)
    gaps = []
    for w in {f["receiver"] for f in flows}:
        starts = np.array(sorted(f["start_ns"] for f in flows if f["receiver"] == w), dtype=float)
        gaps += list(np.diff(starts) / 1e6)
    # 12 workers x ~1500 gaps of mean 200 ms: standard error about 1.5 ms
    assert np.mean(gaps) == pytest.approx(200, abs=8)
    assert np.std(gaps) / np.mean(gaps) == pytest.approx(1.0, abs=0.06)


def test_query_flows_go_from_pod_0_to_the_other_pods_with_sizes_in_the_class():
    flows = dc._flows(_query(), 10 * 10**9)
    assert len({f["receiver"] for f in flows}) == 12
    assert {f["sender"] for f in flows} <= {0, 1, 2, 3}
    sizes = [f["app"]["size_bytes"] for f in flows]
    assert min(sizes) >= 2_000 and max(sizes) <= 20_000


def test_the_empirical_distribution_is_sampled_by_inverting_its_cdf():
    sizes, probs = dc.flow_size_cdf("dctcp")
    assert probs[0] == 0 and probs[-1] == 1 and sizes[-1] == 3e7
    draws = dc.sample_sizes(np.random.default_rng(1), 40_000, cdf="dctcp")
    # F(x) = 0.5 lies between (50 KB, 0.40) and (80 KB, 0.53): 50 000 + 0.1 / 0.13 x 30 000
    assert np.median(draws) == pytest.approx(50_000 + 0.1 / 0.13 * 30_000, rel=0.05)
    assert (draws <= 10_000).mean() == pytest.approx(0.15, abs=0.01)


def test_the_core_builds_a_k4_fattree_with_one_subflow_per_core_path():
    flows = [{"sender": 0, "receiver": 12, "flow_id": 0, "subflows": 4, "choice": "explicit"},
             {"sender": 0, "receiver": 2, "flow_id": 1, "subflows": 4, "choice": "explicit"}]
    tree = {"k": 4, "host_rate_bps": 10**8, "edge_agg_rate_bps": 2 * 10**8, "agg_core_rate_bps": 4 * 10**8,
            "link_delay_ns": 20_000, "queue_packets": 100}
    built = json.loads(_core.topology_json(json.dumps({"kind": "fattree", "tree": tree, "flows": flows})))
    assert built["hosts"] == 16 and len(built["links"]) == 96
    inter, intra = built["flow_paths"]
    cores = {built["links"][built["paths"][p]["down"][2]]["name"].split("->")[1] for p in inter}
    assert cores == {"c0", "c1", "c2", "c3"}, "between pods: one subflow per core switch"
    assert len(set(intra)) == 2, "within a pod: two paths (one per aggregation switch), each used twice"
    with pytest.raises(ValueError, match="k must be even"):
        _core.topology_json(json.dumps({"kind": "fattree", "tree": {**tree, "k": 3}, "flows": []}))


def _utilisation(transport: str) -> float:
    s = dc.load(DC / "permutation_fattree.toml")
    s = s.model_copy(update={"traffic": [t.model_copy(update={"transport": transport}) for t in s.traffic]})
    res = dc.run(s)
    return window_goodput(res["conn_series"], 2, 3)["goodput_bps"].sum() / (16 * 100e6)


def test_mptcp_uses_more_of_the_fattree_than_tcp_on_a_permutation():
    tcp, mptcp = _utilisation("tcp"), _utilisation("mptcp")
    assert mptcp > tcp + 0.1, (tcp, mptcp)
    assert mptcp < 1.0


def _mptcp_to_tcp(cc: str) -> float:
    s = dc.load(DC / "dumbbell_fairness.toml")
    s = s.model_copy(update={"transport": [t.model_copy(update={"cc": cc}) if t.name == "mptcp" else t for t in s.transport]})
    g = window_goodput(dc.run(s)["conn_series"], 10, 35).sort("flow_id")["goodput_bps"].to_list()
    assert sum(g) > 0.9 * 20e6, "the two flows fill the bottleneck"
    return g[0] / g[1]


def test_coupled_congestion_control_takes_no_more_than_tcp_on_a_shared_bottleneck():
    lia, uncoupled = _mptcp_to_tcp("lia"), _mptcp_to_tcp("cubic")
    assert lia < 1.1, "LIA's two subflows together take about a TCP flow's share, not more"
    assert uncoupled > 1.3 * lia, "uncoupled subflows each compete like a TCP flow"


def test_datacenter_scenario_files_build():
    for f in sorted(DC.glob("*.toml")):
        cfg = dc.to_config(dc.load(f))
        assert cfg["flows"] and all(fl["paths"] for fl in cfg["flows"]), f


def test_bad_references_are_refused():
    s = dc.load(DC / "query_fattree.toml").model_dump(by_alias=True)
    s["traffic"][0]["transport"] = "nope"
    with pytest.raises(ValueError, match="unknown transport"):
        dc.DatacenterScenario.model_validate(s)
