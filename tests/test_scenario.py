"""The scenario model: example files load, random valid scenarios round-trip through TOML,
random invalid ones give one clear error naming the field (never a traceback)."""

from __future__ import annotations

import copy
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

import mpsched
from mpsched.cli import app
from mpsched.study import plan
from mpsched.scenario import Scenario, ScenarioError, load_scenario, loads_scenario
from mpsched.scenario.sweep import expand

from conftest import SCENARIOS

SCHEDULERS = ["minrtt", "ecf", "roundrobin", "redundant", "blest"]


def test_example_scenarios_load_and_expand():
    quick = load_scenario(SCENARIOS / "quick.toml")
    assert quick.name == "quick"
    assert len(quick.expand()) == 4
    cfs = load_scenario(SCENARIOS / "cfs_wlan_lte_short.toml")
    runs = expand(cfs)
    assert len(runs) == 2 * 6 * 5 * 3  # WLAN rate (Table 1 and congested) x schedulers x sizes x seeds
    # Table 1 of the CFS paper, in base units.
    cfg = plan(cfs)[0].config
    wlan_down, _, lte_down, lte_up = cfg["links"]
    assert (wlan_down["rate_bps"], wlan_down["delay_ns"]) == (500_000_000, 10_000_000)
    assert (lte_down["rate_bps"], lte_down["delay_ns"], lte_up["delay_ns"]) == (150_000_000, 100_000_000, 100_000_000)
    assert lte_down["jitter"] == {"mode": "smooth", "jitter_ns": 75_000_000, "period_ns": 200_000_000}
    # 1 BDP of LTE: 150 Mbit/s x 200 ms = 3.75 MB
    assert lte_down["queue_bytes"] == 3_750_000
    sizes = sorted({f["app"]["size_bytes"] for t in plan(cfs) for f in t.config["flows"]})
    assert sizes == [65536, 131072, 262144, 524288, 1048576]
    assert all(len(t.config["flows"]) == 30 for t in plan(cfs)[:5])


# --- random valid scenarios ----------------------------------------------------------------------

names = st.lists(st.sampled_from(["wlan", "lte", "eth", "sat", "p5"]), min_size=1, max_size=3, unique=True)
rates = st.one_of(
    st.builds(lambda n: f"{n}bit", st.integers(1_000, 10**10)),  # a bare number is refused (issue 13)
    st.builds(lambda n, p: f"{n}{p}", st.integers(1, 999), st.sampled_from(["kbit", "Mbit", "Gbit", "Mbps", "Mbit/s"])),
)
queues = st.sampled_from(["1BDP", "0.5 BDP", "100 packets", "250KB", "64KiB", "unlimited"])
losses = st.one_of(
    st.sampled_from(["0%", "1%", "0.5%", 0.001, 0]),
    st.just({"model": "gilbert_elliott", "p_good_bad": 0.01, "p_bad_good": "20%", "loss_good": 0, "loss_bad": 0.5}),
    st.just({"model": "bernoulli", "p": "2%"}),
)


def sweep(strategy, max_size=3):
    """A scalar, or a list of distinct values (a sweep)."""
    return st.one_of(strategy, st.lists(strategy, min_size=1, max_size=max_size, unique_by=repr))


@st.composite
def scenarios(draw):
    path_names = draw(names)
    paths = []
    for n in path_names:
        rtt_ms = draw(st.integers(2, 400))
        p = {"name": n, "rate": draw(sweep(rates)), "rtt": f"{rtt_ms}ms"}
        if draw(st.booleans()):
            p["jitter"] = f"{draw(st.integers(0, rtt_ms // 2))}ms"
            p["jitter_mode"] = draw(st.sampled_from(["smooth", "reorder"]))
        if draw(st.booleans()):
            p["queue"] = draw(queues)
        if draw(st.booleans()):
            p["loss"] = draw(losses)
        if draw(st.booleans()):
            p["up"] = {"rate": draw(rates)}
        paths.append(p)
    repeat = draw(st.integers(1, 5))
    conn = {"scheduler": draw(sweep(st.sampled_from(SCHEDULERS))), "cc": draw(st.sampled_from(["cubic", "reno", "lia"]))}
    if len(path_names) > 1 and draw(st.booleans()):
        conn["backup"] = [path_names[-1]]
    work = {"kind": "sized", "size": draw(sweep(st.sampled_from(["64KiB", "1MB", "1500B", 20000]))), "repeat": repeat}
    if draw(st.booleans()):
        work.update(arrival="periodic", interval="500ms")
    else:
        work.update(arrival="poisson", mean_gap="200ms")
    data = {
        "name": "generated",
        "seed": draw(sweep(st.integers(0, 2**63 - 1))),
        "duration": f"{repeat * 0.5 + draw(st.integers(1, 5))}s",
        "paths": paths,
        "connection": conn,
        "workload": work,
    }
    if draw(st.booleans()):
        data["cross_traffic"] = [{"path": path_names[0], "rate": "1Mbit", "direction": "up"}]
    return data


def n_runs(data) -> int:
    """The number of runs a scenario dict should expand to, counted independently of sweep.py."""
    def count(v):
        return len(v) if isinstance(v, list) else 1

    n = count(data["seed"]) * count(data["connection"]["scheduler"]) * count(data["workload"]["size"])
    for p in data["paths"]:
        n *= count(p["rate"]) * (count(p["loss"]) if not isinstance(p.get("loss"), dict) and "loss" in p else 1)
    return n


@given(scenarios())
def test_valid_scenarios_round_trip_through_toml(data):
    s1 = Scenario.from_dict(data)
    text = s1.to_toml()
    s2 = loads_scenario(text)
    assert s2 == s1
    assert s2.to_toml() == text


@given(scenarios())
def test_expansion_count_is_the_product_of_the_lists(data):
    s = Scenario.from_dict(data)
    tasks = plan(s, force=True)  # the expansion, not the work budget (tested in test_hostile)
    assert len(tasks) == n_runs(data)
    assert len({t.run_id for t in tasks}) == len(tasks)
    # every run is concrete, and each swept value shows in the run's parameters
    for t in tasks:
        assert isinstance(t.config["transports"][0]["scheduler"], str)
        assert t.params["seed"] == t.config["seed"]
    seeds = data["seed"] if isinstance(data["seed"], list) else [data["seed"]]
    assert {t.config["seed"] for t in tasks} == set(seeds)


# --- random invalid scenarios --------------------------------------------------------------------

def _mutations(data):
    """(mutated dict, the field path the error must name) pairs, one per kind of mistake."""
    out = []
    d = copy.deepcopy(data); d["paths"][0]["bogus"] = 1; out.append((d, "paths[0].bogus"))
    d = copy.deepcopy(data); d["paths"][0]["rate"] = "-5Mbit"; out.append((d, "paths[0].rate"))
    d = copy.deepcopy(data); d["paths"][0]["rate"] = "5 parsecs"; out.append((d, "paths[0].rate"))
    d = copy.deepcopy(data); d["paths"][0]["rtt"] = ["10ms", "10ms"]; out.append((d, "paths[0].rtt"))
    d = copy.deepcopy(data); d["connection"]["scheduler"] = ""; out.append((d, "connection[0].scheduler"))
    d = copy.deepcopy(data); d["connection"]["cc"] = "vegas"; out.append((d, "connection[0].cc"))
    d = copy.deepcopy(data); d["connection"]["paths"] = ["nowhere"]; out.append((d, "connection[0].paths[0]"))
    d = copy.deepcopy(data); d["workload"]["repeat"] = "many"; out.append((d, "workload[0].repeat"))
    d = copy.deepcopy(data); d["workload"]["size"] = []; out.append((d, "workload[0].size"))
    d = copy.deepcopy(data); del d["duration"]; out.append((d, "duration"))
    d = copy.deepcopy(data); d["seed"] = -1; out.append((d, "seed"))
    d = copy.deepcopy(data); d["paths"][0]["trace"] = "no/such/trace.down"; out.append((d, "paths[0].trace"))
    d = copy.deepcopy(data); d["paths"][0]["loss"] = {"model": "gilbert_elliott", "p": 0.1}; out.append((d, "paths[0].loss"))
    return out


@given(scenarios(), st.data())
def test_invalid_scenarios_name_the_field(data, pick):
    bad, field = pick.draw(st.sampled_from(_mutations(data)))
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(bad)
    assert e.value.field == field, str(e.value)
    assert e.value.message and "\n" not in e.value.message


@given(scenarios(), st.data())
def test_invalid_scenarios_exit_2_without_traceback(data, pick):
    import tomli_w

    bad, field = pick.draw(st.sampled_from(_mutations(data)))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bad.toml"
        path.write_text(tomli_w.dumps(bad))
        result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert field in result.output


@pytest.mark.parametrize("text", ["duration = \n", "[[paths]\nname='x'", "a = 1\na = 2"])
def test_toml_syntax_errors_exit_2(tmp_path, text):
    path = tmp_path / "broken.toml"
    path.write_text(text)
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 2
    assert "TOML syntax error" in result.output and "Traceback" not in result.output


def test_unknown_scheduler_is_checked_against_the_registry():
    reg = mpsched.schedulers()
    if reg is None:
        pytest.skip("this build of the core does not export schedulers_json yet")
    data = {"duration": "5s", "paths": [{"name": "a", "rate": "10Mbit", "rtt": "10ms"}],
            "connection": {"scheduler": "fastest"}, "workload": {"size": "10KB", "interval": "1s"}}
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(data)
    assert e.value.field == "connection[0].scheduler"
    assert "minrtt" in e.value.message  # lists what is allowed


def test_trace_is_resolved_against_the_scenario_file_and_read(tmp_path):
    (tmp_path / "traces").mkdir()
    # 3 opportunities in 4 ms, twice: 1500 B x 6 / 8 ms = 9 Mbit/s mean
    (tmp_path / "traces" / "cell.down").write_text("1\n1\n4\n5\n5\n8\n")
    (tmp_path / "s.toml").write_text(
        'duration = "5s"\n[[paths]]\nname = "cell"\nrtt = "40ms"\nqueue = "1BDP"\n'
        '[paths.down]\ntrace = "traces/cell.down"\n[paths.up]\nrate = "2Mbit"\n'
        '[workload]\nsize = "10KB"\ninterval = "1s"\n'
    )
    s = load_scenario(tmp_path / "s.toml")
    down, up = plan(s)[0].config["links"]
    assert down["capacity"] == {"kind": "trace", "opportunities_ms": [1, 1, 4, 5, 5, 8], "packet_bytes": 1500}
    assert down["rate_bps"] == 9_000_000
    assert down["queue_bytes"] == math.ceil(9_000_000 * 0.04 / 8)
    assert up["capacity"] == {"kind": "constant"} and up["rate_bps"] == 2_000_000


def test_rtt_jitter_loss_and_queue_normalize_per_direction():
    s = Scenario.from_dict({
        "duration": "10s", "seed": 7,
        "paths": [{"name": "a", "rate": "100Mbit", "rtt": "50ms", "jitter": "5ms", "jitter_mode": "reorder",
                   "loss": "1%", "queue": "2BDP", "up": {"rate": "10Mbit", "loss": 0, "queue": "20 packets"}}],
        "workload": {"size": "1MB", "repeat": 2, "interval": "2s", "start": "1s"},
        "record": {"interval": "0"},
    })
    cfg = plan(s)[0].config
    down, up = cfg["links"]
    assert down["delay_ns"] == up["delay_ns"] == 25_000_000
    assert down["jitter"] == {"mode": "reorder", "jitter_ns": 5_000_000, "distribution": "uniform"}
    assert down["loss"] == {"model": "bernoulli", "p": 0.01} and up["loss"] == {"model": "none"}
    assert down["queue_bytes"] == 2 * 100_000_000 * 50_000_000 // 8_000_000_000
    assert up["queue_packets"] == 20 and "queue_bytes" not in up
    assert [f["start_ns"] for f in cfg["flows"]] == [1_000_000_000, 3_000_000_000]
    assert cfg["record"] == {"sample_interval_ns": 0}
    assert cfg["seed"] == 7 and cfg["duration_ns"] == 10_000_000_000


def test_poisson_arrivals_are_seeded_and_have_the_mean_gap():
    base = {"duration": "10000s", "paths": [{"name": "a", "rate": "10Mbit", "rtt": "10ms"}],
            "workload": {"size": "10KB", "repeat": 2000, "arrival": "poisson", "mean_gap": "1s"}}
    starts = lambda seed: [f["start_ns"] for f in plan(Scenario.from_dict({**base, "seed": seed}))[0].config["flows"]]  # noqa: E731
    a, b = starts(1), starts(2)
    assert a == starts(1) and a != b
    gaps = [y - x for x, y in zip(a, a[1:])]
    assert min(gaps) >= 0
    mean_s = sum(gaps) / len(gaps) / 1e9
    assert 0.9 < mean_s < 1.1  # 1999 exponential gaps: sd of the mean ~2.2%


def test_flows_past_the_end_are_refused_and_back_to_back_is_simulator_only():
    base = {"duration": "3s", "paths": [{"name": "a", "rate": "10Mbit", "rtt": "10ms"}]}
    with pytest.raises(ScenarioError, match="lengthen duration"):
        plan(Scenario.from_dict({**base, "workload": {"size": "1KB", "repeat": 4, "interval": "1s"}}))
    b2b = Scenario.from_dict({**base, "workload": {"size": "1KB", "repeat": 3, "arrival": "back_to_back", "gap": "5ms"}})
    task = plan(b2b)[0]
    assert [f["start_ns"] for f in task.config["flows"]] == [0, 3_000_000_000, 3_000_000_000]  # placed at run time
    assert list(task.chain) == [{"flow": 1, "after": 0, "gap_ns": 5_000_000}, {"flow": 2, "after": 1, "gap_ns": 5_000_000}]
    with pytest.raises(ScenarioError) as e:
        plan(b2b, engine="kernel")
    assert e.value.field == "workload" and "simulator only" in e.value.message
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict({**base, "workload": {"size": "1KB", "interval": "1s", "gap": "1s"}})
    assert e.value.field == "workload[0].gap"


def _leaves(x, path=()):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(x, list) and x and isinstance(x[0], dict):
        for i, v in enumerate(x):
            yield from _leaves(v, path + (i,))
    else:
        yield path


junk = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12), st.lists(st.integers(-3, 3), max_size=3), st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


@given(scenarios(), st.data(), junk)
def test_any_value_anywhere_is_either_accepted_or_a_scenario_error(data, pick, value):
    """Fuzz: put an arbitrary value at an arbitrary place; the front end never fails with anything
    but a ScenarioError (which the CLI prints as one line, exit 2)."""
    path = pick.draw(st.sampled_from(list(_leaves(data))))
    bad = copy.deepcopy(data)
    target = bad
    for key in path[:-1]:
        target = target[key]
    if value is None:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    try:
        plan(Scenario.from_dict(bad))
    except ScenarioError as e:
        assert e.message and "\n" not in e.message


@pytest.mark.parametrize("path", sorted(SCENARIOS.rglob("*.toml")), ids=lambda p: str(p.relative_to(SCENARIOS)))
def test_every_scenario_file_in_the_repository_is_valid(path):
    tasks = plan(load_scenario(path))
    assert tasks and all(t.config["flows"] for t in tasks)


def test_scheduler_parameters_are_checked_by_name_and_kind():
    reg = {s.name: s for s in (mpsched.schedulers() or [])}
    if "ecf" not in reg or "rp" not in reg:
        pytest.skip("this build of the core does not export ecf and rp in its registry")
    base = {"duration": "5s", "paths": [{"name": "a", "rate": "10Mbit", "rtt": "10ms"}],
            "workload": {"size": "10KB", "interval": "1s"}}
    ok = Scenario.from_dict({**base, "connection": {"scheduler": "ecf+rp", "scheduler_params": {"r_beta": 2, "rp_penalize": False}}})
    assert plan(ok)[0].config["transports"][0]["scheduler_params"] == {"r_beta": 2, "rp_penalize": False}
    for params, words in (({"beta": 2}, "unknown parameter"), ({"rp_penalize": 1}, "boolean")):
        with pytest.raises(ScenarioError) as e:
            Scenario.from_dict({**base, "connection": {"scheduler": "ecf+rp", "scheduler_params": params}})
        assert e.value.field == "connection[0].scheduler_params" and words in e.value.message


def test_a_size_on_a_bulk_workload_points_to_the_sized_kind():
    data = {"duration": "5s", "paths": [{"name": "a", "rate": "10Mbit", "rtt": "10ms"}],
            "workload": {"kind": "bulk", "size": "1MiB"}}
    with pytest.raises(ScenarioError) as e:
        Scenario.from_dict(data)
    assert e.value.field == "workload[0].size"
    assert 'kind = "sized"' in e.value.message


def test_one_sized_flow_needs_no_interval_and_two_do():
    one = {"duration": "5s", "paths": [{"name": "a", "rate": "10Mbit", "rtt": "10ms"}],
           "workload": {"kind": "sized", "size": "1MiB"}}
    assert len(Scenario.from_dict(one).expand()) == 1
    for more in ({"repeat": 2}, {"size": None, "sizes": ["1KB", "2KB"]}):
        two = copy.deepcopy(one)
        two["workload"].update(more)
        two["workload"] = {k: v for k, v in two["workload"].items() if v is not None}
        with pytest.raises(ScenarioError) as e:
            Scenario.from_dict(two)
        assert e.value.field == "workload[0].interval"
