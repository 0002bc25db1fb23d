"""Hostile scenarios: valid ones mutated with hostile values (huge, negative, NaN, empty, wrong
types, path-like and markup names). Whatever the value, the front end either accepts the
scenario or refuses it with a `ScenarioError` naming the field; never another exception; and
what `check` (the planner) accepts, the engine runs without refusing (check agrees with run).
The property runs in-process for speed (the planner is what `mpsched check` calls, the engine
what `mpsched run` calls); a few cases go through the command itself."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mpsched import engines
from mpsched.scenario import Scenario, ScenarioError
from mpsched.scenario.budget import config_estimate
from mpsched.study import plan

from conftest import has_core_runner

pytestmark = pytest.mark.skipif(not has_core_runner(), reason="needs the compiled core")

BASE = {
    "name": "hostile", "duration": "50ms", "seed": 1,
    "paths": [{"name": "fast", "rate": "20Mbit", "rtt": "20ms", "queue": "1BDP"},
              {"name": "slow", "rate": "5Mbit", "rtt": "40ms", "queue": "1BDP"}],
    "connection": {"scheduler": "minrtt", "cc": "cubic"},
    "workload": {"kind": "sized", "size": "8KiB", "repeat": 2, "arrival": "periodic", "interval": "10ms"},
    "record": {"interval": "10ms"},
}

FIELDS = [("duration",), ("seed",), ("name",), ("paths", 0, "rate"), ("paths", 0, "rtt"), ("paths", 0, "queue"),
          ("paths", 1, "loss"), ("paths", 0, "jitter"), ("paths", 0, "jitter_period"), ("paths", 1, "delay"),
          ("paths", 1, "down"), ("connection", "mss"), ("connection", "rcv_buf"), ("connection", "snd_buf"),
          ("connection", "init_cwnd"), ("connection", "scheduler"), ("connection", "cc"),
          ("workload", "size"), ("workload", "repeat"), ("workload", "interval"), ("workload", "kind"),
          ("record", "interval")]
SCHED_PARAMS = {"roundrobin": "num_segments", "linux": "sndbuf_factor", "blest": "lambda_milli", "ecf": "r_beta",
                "daps": "max_plan_slots", "freeze": "threshold_ns", "otias": "queue_limit_cwnds",
                "bm": "bm_lambda", "rp": "rp_srtt_ratio", "bwm": "ewma_gain"}
WORDS = ["0", "-1", "", " ", "nan", "inf", "-inf", "1ns", "1ps", "0ms", "1bit", "0bit", "1B", "0B", "0BDP",
         "1e30Gbit", "1e-30s", "100000s", "10EiB", "1 packet", "0 packets", "unlimited", "../../escape",
         "/tmp/abs", "[/x]", "[bold]x", "a/b", "..", "é€🙂", "1" * 400, "1%", "150%"]

hostile = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 1, 2**31, 2**53 + 1, 2**62, 2**63 - 1, 2**63, 2**64]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(WORDS),
    st.text(max_size=6),
    st.booleans(),
    st.lists(st.sampled_from(["1ms", "10Mbit", "1KiB", 0, 1, "x"]), max_size=3),
    st.just({}),
)


@st.composite
def hostile_scenarios(draw) -> dict:
    data = copy.deepcopy(BASE)
    if draw(st.integers(0, 4)) == 0:  # a scheduler with a hostile parameter
        sched = draw(st.sampled_from(sorted(SCHED_PARAMS)))
        data["connection"] = {"scheduler": sched, "cc": "cubic",
                              "scheduler_params": {SCHED_PARAMS[sched]: draw(hostile)}}
        return data
    for _ in range(draw(st.integers(1, 2))):
        path = draw(st.sampled_from(FIELDS))
        cur = data
        for k in path[:-1]:
            cur = cur[k]
        cur[path[-1]] = draw(hostile)
    return data


def _check(data: dict):
    """What `mpsched check` does: load, then plan (every run normalized and checked as the engine
    will)."""
    return plan(Scenario.from_dict(data))


@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))
@given(hostile_scenarios())
def test_a_hostile_scenario_is_run_or_refused_naming_its_field_and_check_agrees_with_run(data):
    try:
        tasks = _check(data)
    except ScenarioError as e:
        assert e.field or "--force" in e.message, f"no field named: {e}"
        assert "line 1 column" not in str(e)  # never the core's JSON parser
        event("refused")
        return
    for t in tasks:
        if config_estimate(t.config)["events"] > 200_000:
            event("accepted, not tiny: checked only")
            continue
        event("accepted and run")
        try:
            engines.run_config(t.config)
        except engines.EngineError as e:
            pytest.fail(f"check accepted what run refused: {e}")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([str(Path(sys.executable).parent / "mpsched"), *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300)


QUICK = """name = "h"
duration = "50ms"
seed = 1

[[paths]]
name = "a"
rate = "10Mbit"
rtt = "20ms"
queue = {queue}

[workload]
kind = "sized"
size = "8KiB"
interval = "10ms"
"""


@pytest.mark.parametrize("text,field", [
    (QUICK.format(queue="0"), "paths[0].queue"),
    (QUICK.format(queue='"1BDP"').replace("seed = 1", "seed = 9223372036854775808"), "seed"),
    (QUICK.format(queue='"1BDP"').replace('name = "h"', 'name = "[/x]"'), "name"),
    (QUICK.format(queue='"1BDP"').replace("seed = 1", "seed = " + "9" * 5000), ""),
    ("x = " + "[" * 1000 + "]" * 1000 + "\n" + QUICK.format(queue='"1BDP"'), ""),
    (QUICK.format(queue='"1BDP"') + '\n[record]\ninterval = "1ns"\n', "record.interval"),
    (QUICK.format(queue='"1BDP"') + '\n[connection]\nmss = 1\n', "mss"),
    (QUICK.format(queue='"1BDP"') + '\n[connection]\nrcv_buf = "4GiB"\n', "rcv_buf"),
    (QUICK.format(queue='"1BDP"') + '\n[connection]\nscheduler = "roundrobin"\nscheduler_params = {num_segments = 4611686018427387904}\n',
     "scheduler_params"),
])
def test_the_command_refuses_hostile_input_with_one_message_and_check_agrees(tmp_path, text, field):
    f = tmp_path / "s.toml"
    f.write_text(text)
    for args in (["check", str(f)], ["run", str(f), "-o", str(tmp_path / "out")]):
        r = _cli(*args, cwd=tmp_path)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr and r.stderr.startswith("error:"), r.stderr
        assert field in r.stderr
    assert not (tmp_path / "results").exists()


def test_a_seed_list_of_a_hundred_thousand_is_refused_at_check_with_the_estimate():
    data = copy.deepcopy(BASE)
    data["seed"] = list(range(100_000))
    with pytest.raises(ScenarioError) as e:
        _check(data)
    assert "100,000 runs" in str(e.value) and "--force" in str(e.value)


def test_a_record_interval_of_one_nanosecond_is_refused_with_the_estimate_unless_forced():
    data = copy.deepcopy(BASE)
    data["record"] = {"interval": "1ns"}
    with pytest.raises(ScenarioError) as e:
        _check(data)
    assert e.value.field == "record.interval" and "rows" in e.value.message
    assert len(plan(Scenario.from_dict(data), force=True)) == 1


def test_every_shipped_scenario_and_study_is_within_the_limits():
    """The limits sit above everything we ship (a sample of each file's runs is estimated)."""
    from mpsched.scenario import load_scenario
    from mpsched.scenario.budget import LIMITS, check_config_budget, check_scenario_budget
    from mpsched.scenario.normalize import normalize
    from mpsched.scenario.sweep import expand

    root = Path(__file__).resolve().parents[1]
    files = [f for d in ("scenarios", "experiments") for f in sorted((root / d).rglob("*.toml"))
             if f.name != "published.toml"]
    assert len(files) > 20
    for f in files:
        s = load_scenario(f)
        check_scenario_budget(s)
        runs = expand(s)
        for r in runs[:: max(1, len(runs) // 3)]:
            check_config_budget(normalize(r.scenario).config)
    assert LIMITS["runs"] >= 10_000


def test_the_core_refuses_out_of_range_scheduler_parameters_itself_with_the_bounds_python_checks():
    """Python checks the bounds the core exports; with the Python check bypassed, the core's
    registry refuses the same values, naming the parameter (no wrapped arithmetic behind it)."""
    import json

    from mpsched import _core, registry
    from mpsched.engines import ConfigRefused, sim
    from mpsched.scenario.normalize import to_config

    core = json.loads(_core.schedulers_json())
    registry.schedulers()
    assert (registry.MAX_PARAM_INT, registry.MAX_PARAM_NS) == (core["max_param_int"], core["max_param_ns"])
    config = to_config(Scenario.from_dict(copy.deepcopy(BASE)).expand()[0])
    for name, key, value in [("roundrobin", "num_segments", 2**62), ("linux", "sndbuf_factor", registry.MAX_PARAM_INT + 1),
                             ("freeze", "probe_interval_ns", registry.MAX_PARAM_NS + 1)]:
        config["transports"][0].update(scheduler=name, scheduler_params={key: value})
        with pytest.raises(ConfigRefused, match=key):
            sim.check_config(config)
        with pytest.raises(ValueError, match=key):
            registry.check_scheduler_params(name, {key: value})


def test_the_core_refuses_a_receive_buffer_above_tcps_largest_window():
    """No receiver offers more than 65535 << 14 bytes (RFC 7323), and the senders' sequence
    offsets rely on a flight under 4 GiB: a normalized config past it is refused by the core too,
    naming the field, not run into a panic."""
    from mpsched.engines import ConfigRefused, sim
    from mpsched.scenario.normalize import to_config

    config = to_config(Scenario.from_dict(copy.deepcopy(BASE)).expand()[0])
    config["transports"][0]["rcv_buf_bytes"] = 65_535 << 14
    sim.check_config(config)
    config["transports"][0]["rcv_buf_bytes"] = (65_535 << 14) + 1
    with pytest.raises(ConfigRefused, match="rcv_buf_bytes"):
        sim.check_config(config)
