"""`experiments/datacenter_short_flows/` runs the setup 003_ prints: Table 2's host split (§4.1:
hosts paired one to one, a third of them send the background, the others the short flows),
§5.2.1's 1-16 KB queries, Table 1's RTT; and the scenario fields behind them (`pairing`,
`size_range`) refuse what they cannot mean, naming the field."""

from __future__ import annotations

import pytest

from mpsched.experiments import STUDIES, scenarios_of
from mpsched.scenario import ScenarioError, loads_scenario
from mpsched.scenario import datacenter as dc
from mpsched.scenario.sweep import expand
from mpsched.study import plan

STUDY = STUDIES["datacenter_short_flows"]


def _concrete(name: str, quick: bool = False):
    """Every run's scenario of one study file (sweeps expanded)."""
    return [r.scenario for r in expand(scenarios_of(STUDY, quick)[name])]


@pytest.mark.parametrize("quick", [False, True])
def test_table2_background_senders_are_a_third_of_the_hosts_and_never_send_short_flows(quick):
    for s in _concrete("table2.toml", quick):
        flows = dc.flows(s)
        n = dc.host_count(s)
        bg = {f["sender"] for f in flows if f["class"] == "background"}
        short = {f["sender"] for f in flows if f["class"] == "query"}
        assert bg.isdisjoint(short)
        assert len(bg) == round(n / 3) == 5 and len(short) == n - len(bg)
        # one to one: each host sends to one partner, and no host receives from two senders
        partner = {}
        for f in flows:
            assert partner.setdefault(f["sender"], f["receiver"]) == f["receiver"] != f["sender"]
        assert len(set(partner.values())) == len(partner) == n
        # the background is endless, the short flows 70 KB
        assert all(f["app"]["kind"] == "bulk" for f in flows if f["class"] == "background")
        assert {f["app"]["size_bytes"] for f in flows if f["class"] == "query"} == {70_000}


def test_the_permutation_changes_with_the_seed_and_is_shared_by_the_workloads():
    runs = _concrete("table2.toml")
    perms = {tuple(sorted(dc.partners(s).items())) for s in runs}
    assert len(perms) == len({s.seed for s in runs}) > 1


@pytest.mark.parametrize("name", ["query.toml", "query_nobg.toml"])
def test_the_queries_are_1_to_16_kb_from_pod_0_to_the_12_workers(name):
    for s in _concrete(name)[:2]:
        q = [f for f in dc.flows(s) if f["class"] == "query"]
        sizes = [f["app"]["size_bytes"] for f in q]
        assert min(sizes) >= 1_000 and max(sizes) <= 16_000
        assert max(sizes) > 14_000 and min(sizes) < 3_000  # the whole range is used, uniform
        assert {f["sender"] for f in q} <= {0, 1, 2, 3} and {f["receiver"] for f in q} == set(range(4, 16))


def test_the_longest_propagation_rtt_is_table_1s_half_millisecond():
    from mpsched.scenario.units import parse_time_ns

    for name in STUDY.files:
        s = _concrete(name)[0]
        # between pods a packet crosses 6 links each way
        assert 12 * parse_time_ns(s.topology.link_delay) == pytest.approx(500_000, rel=0.01)


BASE = """
name = "split"
duration = "1s"
[topology]
kind = "fattree"
k = 4
host_rate = "100Mbit"
[connection]
protocol = "tcp"
"""


def _err(workloads: str) -> ScenarioError:
    with pytest.raises(ScenarioError) as e:
        plan(loads_scenario(BASE + workloads))
    return e.value


def test_paired_workloads_refuse_overlapping_senders_and_receivers_naming_the_field():
    e = _err('[[workload]]\nkind = "background"\nsenders = [0, 1]\npairing = "permutation"\n'
             '[[workload]]\nkind = "query"\nmean_gap = "100ms"\nsenders = [1, 2]\npairing = "permutation"\n')
    assert e.field == "workload[1].senders" and "host 1 already sends workload[0]" in e.message
    e = _err('[[workload]]\nkind = "query"\nmean_gap = "100ms"\nsenders = [1]\nreceivers = [2]\npairing = "permutation"\n')
    assert e.field == "workload[0].receivers" and "partner" in e.message
    e = _err('[[workload]]\nkind = "query"\nmean_gap = "100ms"\npairing = "permutation"\n')
    assert e.field == "workload[0].senders"
    e = _err('[[workload]]\nkind = "background"\nsenders = [16]\npairing = "permutation"\n')
    assert e.field == "workload[0].senders" and "16 hosts" in e.message


def test_size_range_is_checked_naming_the_field():
    e = _err('[[workload]]\nkind = "query"\nmean_gap = "100ms"\nsize_range = ["16KB", "1KB"]\n')
    assert e.field == "workload[0].size_range" and "low <= high" in e.message
    e = _err('[[workload]]\nkind = "query"\nmean_gap = "100ms"\nsize = "1KB"\nsize_range = ["1KB", "2KB"]\n')
    assert e.field == "workload[0].size_range"
    e = _err('[[workload]]\nkind = "sized"\nsize = "1KB"\ninterval = "1s"\nsize_range = ["1KB", "2KB"]\n')
    assert e.field == "workload[0].size_range"
