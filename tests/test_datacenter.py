"""Data-center scenarios: a `[topology]` (the FatTree or dumbbell of the core's generator) with
the traffic of `003_` (Poisson flows in size classes or from empirical distributions,
background flows), permutation traffic and a shared-bottleneck dumbbell, run like any scenario:
`mpsched check / run / show / plot`, sweeps, stored results."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import mpsched
from mpsched import _core
from mpsched.scenario import datacenter as dc
from mpsched.cli import app
from mpsched.metrics import window_goodput
from mpsched.study import plan
from mpsched.scenario import Scenario, ScenarioError, load_scenario, loads_scenario
from mpsched.scenario.units import parse_rate_bps, parse_time_ns

from conftest import SCENARIOS

DC = SCENARIOS / "datacenter"

TINY = """
name = "tiny_permutation"
seed = [1, 2]
duration = "1.5s"

[topology]
kind = "fattree"
k = 4
host_rate = "100Mbit"
link_delay = "20us"
queue = 100

[connection]
protocol = ["mptcp", "tcp"]
cc = "lia"
subflows = 8
path_choice = "core"
rcv_buf = "1MiB"

[[workload]]
kind = "permutation"

[record]
interval = "500ms"
"""


def _query(background: bool = False, **workload) -> Scenario:
    """query_fattree.toml's query workload changed by `workload`, with or without its
    background flows."""
    data = load_scenario(DC / "query_fattree.toml").to_dict()
    data["workload"] = [{**data["workload"][0], **workload}, *(data["workload"][1:] if background else [])]
    return Scenario.from_dict(data)


def test_poisson_arrivals_per_receiver_have_the_configured_mean():
    s = _query(stop="300s").model_copy(update={"duration": "400s"})
    flows = dc.flows(s)
    gaps = []
    for w in {f["receiver"] for f in flows}:
        starts = np.array(sorted(f["start_ns"] for f in flows if f["receiver"] == w), dtype=float)
        gaps += list(np.diff(starts) / 1e6)
    # 12 workers x ~1500 gaps of mean 200 ms: standard error about 1.5 ms
    assert np.mean(gaps) == pytest.approx(200, abs=8)
    assert np.std(gaps) / np.mean(gaps) == pytest.approx(1.0, abs=0.06)


def test_query_flows_go_from_pod_0_to_the_other_pods_with_sizes_in_the_class():
    flows = dc.flows(_query())
    assert len({f["receiver"] for f in flows}) == 12
    assert {f["sender"] for f in flows} <= {0, 1, 2, 3}
    sizes = [f["app"]["size_bytes"] for f in flows]
    assert min(sizes) >= 2_000 and max(sizes) <= 20_000


def test_a_query_workload_with_a_size_gives_every_flow_that_size():
    # 003_ Table 2: 70 KB short flows, Poisson with a mean gap of 200 ms.
    flows = dc.flows(_query(size="70KB"))
    assert flows and {f["app"]["size_bytes"] for f in flows} == {70_000}
    with pytest.raises(ScenarioError, match=r"workload\[1\]\.size"):
        data = load_scenario(DC / "query_fattree.toml").to_dict()
        data["workload"][1] = {**data["workload"][1], "size": "70KB"}
        data["workload"][1].pop("mean_gap", None)
        Scenario.from_dict(data)


def test_background_loads_the_given_fraction_of_receivers_with_endless_flows():
    s = _query(kind="background", fraction=0.25, mean_gap=None)
    flows = dc.flows(s)
    assert len(flows) == 3 and all(f["app"]["kind"] == "bulk" for f in flows), "a quarter of 12 workers"
    assert len({f["receiver"] for f in flows}) == 3


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


def test_a_topology_scenario_normalizes_to_per_flow_paths_and_mixes_tcp_and_mptcp():
    [task] = plan(load_scenario(DC / "query_fattree.toml"))
    cfg = task.config
    assert len(cfg["links"]) == 96 and [t["protocol"] for t in cfg["transports"]] == ["mptcp", "tcp"]
    n_paths = {t: {len(f["paths"]) for f in cfg["flows"] if f["transport"] == t} for t in (0, 1)}
    assert n_paths == {0: {4}, 1: {1}}, "4 subflows per MPTCP query, 1 path per TCP background flow"
    cols = task.extra_columns["flows"]
    assert set(cols["class"]) == {"query", "background"} and len(cols["flow_id"]) == len(cfg["flows"])


def test_hosts_with_four_interfaces_give_each_of_four_subflows_its_own_access_links():
    # 003_'s setting: every host has one interface (and IP address) per subflow.
    data = loads_scenario(TINY).to_dict()
    data["topology"]["interfaces"] = 4
    data["connection"][0].update(protocol="mptcp", subflows=4)
    data["seed"] = 1
    cfg = plan(Scenario.from_dict(data))[0].config
    names = [lk["name"] for lk in cfg["links"]]
    assert len(names) == 2 * (16 * 4 + 16 * 4 + 16), "host-edge and edge-aggregation links x 4"
    for flow in cfg["flows"]:
        first_hops = [names[cfg["paths"][p]["down"][0]] for p in flow["paths"]]
        assert len(set(first_hops)) == 4, f"each subflow leaves on its own interface: {first_hops}"
        assert {h.split("#")[1] for h in first_hops} == {"0", "1", "2", "3"}


def test_ecmp_spreads_the_subflows_of_a_flow_over_the_cores():
    data = loads_scenario(TINY).to_dict()
    data["connection"][0].update(protocol="mptcp", path_choice="ecmp")
    data["seed"] = 1
    cfg = plan(Scenario.from_dict(data))[0].config
    link_names = [lk["name"] for lk in cfg["links"]]

    def cores(flow) -> set[str]:
        return {name.split("->")[1] for p in flow["paths"] for name in (link_names[i] for i in cfg["paths"][p]["down"])
                if name.split("->")[1].startswith("c")}

    between_pods = [f for f in cfg["flows"] if len(cores(f)) > 0]
    assert between_pods, "a permutation of 16 hosts has flows between pods"
    # 8 subflows hashed over 4 cores: all in one core has probability 4 x (1/4)^8 per flow
    assert all(len(cores(f)) >= 2 for f in between_pods)
    assert set().union(*(cores(f) for f in between_pods)) == {"c0", "c1", "c2", "c3"}


def test_check_run_show_plot_a_sweep_over_seed_and_protocol(tmp_path):
    scen = tmp_path / "tiny.toml"
    scen.write_text(TINY)
    out = tmp_path / "res"
    cli = CliRunner()
    r = cli.invoke(app, ["check", str(scen)])
    assert r.exit_code == 0 and "4 run(s)" in r.output and "protocol: mptcp, tcp" in r.output, r.output
    assert "topology: fattree, 96 links" in r.output, "k = 4: 16 host, 16 edge-aggregation, 16 core links, each way"
    r = cli.invoke(app, ["run", str(scen), "-o", str(out), "-j", "2"])
    assert r.exit_code == 0, r.output
    batches = sorted(d for d in out.iterdir() if d.is_dir() and not d.name.startswith("."))
    assert all((d / "flows.parquet").is_file() and (d / "runs.jsonl").is_file() for d in batches)
    assert duckdb.sql(f"SELECT count(*) FROM '{out}/*/run.parquet'").fetchall() == [(4,)]

    # stored records: each flow knows its hosts and class, each link its tier and rate
    flows = duckdb.sql(f"SELECT protocol, seed, sender, receiver, class FROM '{out}/*/flows.parquet'").pl()
    assert flows.height == 4 * 16 and set(flows["class"]) == {"permutation"}
    per_run = flows.group_by("protocol", "seed").agg(pl.col("receiver").n_unique(), (pl.col("sender") != pl.col("receiver")).all())
    assert per_run["receiver"].to_list() == [16] * 4 and per_run["sender"].all(), "a permutation: every host receives once"

    res = mpsched.load(out)
    from mpsched.analysis import datacenter_summary

    assert set(res.summary()["class"]) == {"permutation"}, "a topology study summarises per class"

    summary = {row["protocol"]: row for row in datacenter_summary(res).iter_rows(named=True)}
    mp, tcp = summary["mptcp"], summary["tcp"]
    assert mp["runs"] == tcp["runs"] == 2
    for row in (mp, tcp):
        assert 0 < row["util_agg_core"] < 1 and 0 < row["util_host"] < 1 and 0 < row["jain_bulk"] <= 1
    # Raiciu et al. §4.1: MPTCP's 8 subflows fill the core that TCP's ECMP collisions leave idle
    assert mp["util_agg_core"] > tcp["util_agg_core"] + 0.05, (mp, tcp)
    assert mp["util_host"] > tcp["util_host"], (mp, tcp)

    r = cli.invoke(app, ["show", str(out)])
    assert r.exit_code == 0 and "util core" in r.output and "permutation" in r.output, r.output
    r = cli.invoke(app, ["show", str(out), "-f", "csv"])
    csv = pl.read_csv(r.output.encode())
    assert {"protocol", "class", "util_agg_core", "jain_bulk"} <= set(csv.columns) and csv.height == 2
    r = cli.invoke(app, ["plot", str(out)])
    assert r.exit_code == 0, r.output
    assert (out / "figures" / "link_utilisation.png").stat().st_size > 10_000

    # a second run resumes: nothing is run again
    before = {d.name: (d / "batch.json").stat().st_mtime_ns for d in batches}
    assert cli.invoke(app, ["run", str(scen), "-o", str(out), "-j", "1"]).exit_code == 0
    after = sorted(d for d in out.iterdir() if d.is_dir() and not d.name.startswith(".") and d.name != "figures")
    assert {d.name: (d / "batch.json").stat().st_mtime_ns for d in after} == before


def test_fct_per_class_and_its_figure_on_query_traffic(tmp_path):
    s = _query(background=True, stop="1.5s").model_copy(update={"duration": "2s"})
    res = mpsched.run(s, tmp_path / "q")
    from mpsched.analysis import class_fct_summary

    rows = {r["class"]: r for r in class_fct_summary(res).iter_rows(named=True)}
    q = rows["query"]
    assert q["completed"] > 50 and q["protocol"] == "mptcp"
    # a 2-20 KB query over a 0.5 ms RTT: a few round trips, well under the 1.5 s of arrivals
    assert 0.2 < q["fct_median_ms"] < 50 and q["fct_median_ms"] <= q["fct_p99_ms"]
    assert rows["background"]["fct_median_ms"] is None, "endless flows have no completion time"
    files = res.plot(tmp_path / "fig")
    assert {f.name for f in files} >= {"fct_cdf_class.png", "link_utilisation.png"}


#: A full data frame on the dumbbell's bottleneck (crates/mpsched-sim/src/topology.rs `dumbbell`:
#: overhead_bytes 0, so a frame is `Segment::wire_bytes`): IP 20 + TCP 20 + timestamps 12 +
#: MSS 1448 (tcp/segment.rs HEADER_BYTES). An MPTCP data segment reserves the 28-byte DSS
#: option (DSS_MAP_ACK_BYTES) out of the MSS, so it carries 1420 bytes of payload in the same
#: 1500: the smaller payload fraction of the two connections, used for a lower bound.
FRAME_BYTES = 20 + 20 + 12 + 1448
MIN_PAYLOAD_BYTES = 1448 - 28


def aimd_link_utilisation(pipe_packets: float, queue_packets: float) -> float:
    """Average use of a drop-tail bottleneck by synchronised AIMD flows that halve on a loss
    (Reno, beta 1/2: the deepest cut of the flows on the dumbbell, so the worst case).

    The aggregate window W (packets) grows linearly from W0 = (P + B) / 2 right after the
    synchronised halving to W1 = P + B, when the queue overflows; P is the pipe (bandwidth x
    base RTT, in frames) and B the queue. While W >= P the link is busy (rate 1); while W < P it
    sends W / P of its rate. Linear growth makes time proportional to W, so the time-weighted
    mean is, when W0 < P (B < P):
        u = [ (P - W0) (W0 + P) / 2 / P + (W1 - P) ] / (W1 - W0)
    and 1 when B >= P (the queue never drains). B = 0.23 P gives about 0.88."""
    p, b = pipe_packets, queue_packets
    w0, w1 = (p + b) / 2, p + b
    if w0 >= p:
        return 1.0
    return ((p - w0) * (w0 + p) / 2 / p + (w1 - p)) / (w1 - w0)


def dumbbell_goodput_floor(rate_bps: float, access_delay_ns: int, bottleneck_delay_ns: int,
                           queue_packets: int) -> float:
    """The fraction of a dumbbell's bottleneck rate two AIMD connections fill with payload at
    least: AIMD utilisation of the link (`aimd_link_utilisation`, base RTT = 2 x (access +
    bottleneck + access)) x the payload fraction of a full frame (the MPTCP one, the smaller)."""
    rtt_s = 2 * (2 * access_delay_ns + bottleneck_delay_ns) / 1e9
    pipe_packets = rate_bps * rtt_s / (8 * FRAME_BYTES)
    return aimd_link_utilisation(pipe_packets, queue_packets) * MIN_PAYLOAD_BYTES / FRAME_BYTES


def test_aimd_link_utilisation_matches_the_sawtooth_by_hand():
    # B = 0.23 P: W0 = 0.615 P, W1 = 1.23 P; (0.385 x 1.615 / 2 + 0.23) / 0.615 = 0.8795.
    assert aimd_link_utilisation(100, 23) == pytest.approx(0.8795, abs=1e-4)
    # B >= P: the window never falls below the pipe.
    assert aimd_link_utilisation(100, 100) == 1.0 and aimd_link_utilisation(100, 250) == 1.0
    # The dumbbell test's smallest buffer: 20 Mbit/s x 100 ms = 166.7 frames, B = 40 = 0.24 P.
    assert dumbbell_goodput_floor(20e6, 1_000_000, 48_000_000, 40) == pytest.approx(0.8835 * 1420 / 1500, abs=1e-3)


def test_coupled_congestion_control_takes_about_a_tcp_share_of_a_shared_bottleneck():
    """RFC 6356 §1 goal 2 on the dumbbell: the MPTCP connection's two subflows against one Reno
    flow. A deterministic drop-tail bottleneck with two flows locks into phase patterns that move
    one run's split by tens of percent, so the ratio is the geometric mean over bottleneck delays
    and queue sizes: 32 settings, since 8 were too few (the phase of the first queue fill alone,
    moved by the receiver's slow-start ACKs, swung their mean from 1.17 to 1.35; over 32 the
    standard error is about 0.04). LIA's aggregate grows by w_max / w_total segments per RTT and halves one
    subflow on a loss: in the fluid model of equal loss rates that is 1 to 1.08 times a TCP flow
    (balanced subflows: AIMD with increase 1/2 and decrease 1/4 of the total window), and LIA's
    known excess in packet-level simulations (Khalili et al., CoNEXT 2012) allows a little more;
    uncoupled subflows each compete like a flow of their own."""
    data = load_scenario(DC / "dumbbell_fairness.toml").to_dict()
    data["connection"][0]["cc"] = ["lia", "cubic"]
    data["topology"].update(
        bottleneck_delay=["4ms", "6ms", "8ms", "12ms", "16ms", "24ms", "32ms", "48ms"],
        queue=[40, 60, 80, 120])
    res = mpsched.run(Scenario.from_dict(data))
    g = window_goodput(res.conn_series, 10, 35).join(res.runs.select("run_id", "cc"), on="run_id")
    per_run = g.group_by("run_id", "cc").agg(
        pl.col("goodput_bps").sum().alias("total"),
        (pl.col("goodput_bps").filter(pl.col("flow_id") == 0).first()
         / pl.col("goodput_bps").filter(pl.col("flow_id") == 1).first()).alias("ratio"))
    # Each run must fill the bottleneck, 90 % or what synchronised AIMD can with its buffer if
    # less (a 40-packet queue is 0.24 of the BDP at 48 ms: 83.6 % of the rate in payload).
    rate_bps, access_ns = parse_rate_bps(data["topology"]["bottleneck_rate"]), parse_time_ns(data["topology"]["access_delay"])

    def floor_bps(r: dict) -> float:
        own = dumbbell_goodput_floor(rate_bps, access_ns, parse_time_ns(r["bottleneck_delay"]), int(r["queue"]))
        return min(0.9, own) * rate_bps

    per_run = per_run.join(res.runs.select("run_id", "bottleneck_delay", "queue"), on="run_id").with_columns(
        floor_bps=pl.struct("bottleneck_delay", "queue").map_elements(floor_bps, return_dtype=pl.Float64))
    assert per_run.height == 64, per_run
    assert (per_run["total"] > per_run["floor_bps"]).all(), per_run.filter(pl.col("total") <= pl.col("floor_bps"))
    ratio = dict(per_run.group_by("cc").agg(pl.col("ratio").log().mean().exp()).iter_rows())
    assert 0.8 < ratio["lia"] < 1.25, ratio
    assert ratio["cubic"] > 2 * ratio["lia"], ratio


@pytest.mark.parametrize("path", sorted(DC.glob("*.toml")), ids=lambda p: p.name)
def test_datacenter_files_round_trip_through_toml(path):
    s = load_scenario(path)
    again = loads_scenario(s.to_toml())
    assert again == s
    assert [t.config for t in plan(again)] == [t.config for t in plan(s)]


def _err(text: str, engine: str = "sim") -> ScenarioError:
    with pytest.raises(ScenarioError) as e:
        plan(loads_scenario(text), engine)
    return e.value


def test_clear_errors_name_the_field():
    e = _err(TINY.replace("k = 4", "k = 3"))
    assert e.field == "topology.k" and "even" in e.message
    e = _err(TINY.replace('kind = "permutation"', 'kind = "empirical"\ndistribution = "zipf"\nmean_gap = "1s"'))
    assert e.field == "workload[0].distribution" and "dctcp" in e.message
    e = _err(TINY.replace('kind = "permutation"', 'kind = "query"'))
    assert e.field == "workload[0].mean_gap"
    e = _err(TINY.replace('kind = "permutation"', 'kind = "query"\nmean_gap = "1s"\nreceivers = [16]'))
    assert e.field == "workload[0].receivers" and "16 hosts" in e.message
    e = _err(TINY.replace('kind = "permutation"', 'kind = "sized"\nsize = "1MB"\ninterval = "1s"'))
    assert e.field == "workload[0].kind"
    e = _err(TINY.replace("[connection]", '[[paths]]\nname = "a"\nrate = "1Mbit"\nrtt = "10ms"\n\n[connection]'))
    assert e.field == "topology" and "not both" in e.message
    e = _err(TINY.replace('host_rate = "100Mbit"', 'host_rate = "100Mbit"\npairs = 3'))
    assert e.field == "topology.pairs"
    e = _err(TINY.replace('kind = "permutation"', 'kind = "query"\nmean_gap = "1s"\nsenders = [5]\nreceivers = [5, 6]'))
    assert e.field == "workload[0].receivers" and "only sender" in e.message


def test_two_host_scenarios_refuse_topology_fields():
    base = 'duration = "1s"\n[[paths]]\nname = "a"\nrate = "1Mbit"\nrtt = "10ms"\n'
    e = _err(base + '[connection]\nsubflows = 4\n[workload]\nsize = "1KB"\ninterval = "1s"\n')
    assert e.field == "connection[0].subflows"
    e = _err(base + '[workload]\nkind = "permutation"\n')
    assert e.field == "workload[0].kind" and "topology" in e.message


def test_the_kernel_engine_refuses_a_topology_naming_the_field(tmp_path):
    e = _err(TINY, engine="kernel")
    assert e.field == "topology" and "simulator only" in e.message
    # the command says so before it looks at the machine (root, namespaces)
    scen = tmp_path / "tiny.toml"
    scen.write_text(TINY)
    for args in (["run", str(scen), "-e", "kernel", "-o", str(tmp_path / "out")], ["validate", str(scen)]):
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 2 and "topology: a [topology] of many hosts runs on the simulator only" in r.output, r.output
    assert not (tmp_path / "out").exists()
