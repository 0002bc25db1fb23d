"""The endpoint timing model from the user's side: `[host_delay]` in a scenario (units,
validation, normalization) and what it changes on the validation scenarios (seeds spread the
completion times on constant-delay paths; a seed is still reproducible)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mpsched.scenario import ScenarioError, loads_scenario
from mpsched.scenario.normalize import to_config

from conftest import REPO, SCENARIOS, has_core_runner

MPSCHED = str(Path(sys.executable).parent / "mpsched")
BASE = (SCENARIOS / "quick.toml").read_text()


def _scenario(host_delay: str | None):
    return loads_scenario(BASE + (f"\n[host_delay]\n{host_delay}\n" if host_delay is not None else ""))


def test_absent_means_no_model_and_the_config_has_no_field():
    assert "host_delay" not in to_config(_scenario(None).expand()[0])


def test_median_and_p99_become_nanoseconds():
    cfg = to_config(_scenario('median = "68us"\np99 = "0.417ms"').expand()[0])
    assert cfg["host_delay"] == {"median_ns": 68_000, "p99_ns": 417_000}


def test_a_floor_becomes_nanoseconds_and_a_zero_floor_is_no_floor():
    cfg = to_config(_scenario('median = "68us"\np99 = "0.417ms"\nfloor = "30us"').expand()[0])
    assert cfg["host_delay"] == {"median_ns": 68_000, "p99_ns": 417_000, "floor_ns": 30_000}
    zero = to_config(_scenario('median = "68us"\np99 = "0.417ms"\nfloor = "0us"').expand()[0])
    assert zero == to_config(_scenario('median = "68us"\np99 = "0.417ms"').expand()[0])


def test_a_stall_table_becomes_parts_per_million_and_nanoseconds():
    cfg = to_config(_scenario('median = "25us"\np99 = "284us"\n[host_delay.stall]\nprobability = "1.38%"\n'
                              'median = "859us"\np99 = "1.709ms"').expand()[0])
    assert cfg["host_delay"] == {"median_ns": 25_000, "p99_ns": 284_000,
                                 "stall": {"per_million": 13_800, "run_packets": 1, "median_ns": 859_000,
                                           "p99_ns": 1_709_000}}


STALL = 'median = "25us"\np99 = "284us"\n[host_delay.stall]\n'


@pytest.mark.parametrize("body, field, words", [
    (STALL + 'probability = 0.01\nmedian = "1ms"\np99 = "0.5ms"', "host_delay.stall.p99", "at least the stall's median"),
    (STALL + 'probability = 0\nmedian = "1ms"\np99 = "2ms"', "host_delay.stall.probability", "positive"),
    (STALL + 'probability = "120%"\nmedian = "1ms"\np99 = "2ms"', "host_delay.stall.probability", "[0, 1]"),
    (STALL + 'probability = 0.01\np99 = "2ms"', "host_delay.stall.median", "required"),
    (STALL + 'probability = 0.01\nmedian = "1ms"\np99 = "3s"', "host_delay.stall.p99", "at most 1s"),
    (STALL + 'probability = 0.01\nmedian = "1ms"\np99 = "2ms"\nrun_packets = 0', "host_delay.stall.run_packets",
     "at least 1"),
    (STALL + 'probability = 0.6\nmedian = "1ms"\np99 = "2ms"', "host_delay.stall.probability", "too high"),
])
def test_bad_stalls_are_one_error_naming_the_field(body, field, words):
    with pytest.raises(ScenarioError) as e:
        _scenario(body)
    assert len(e.value.problems) == 1 and e.value.field == field and words in str(e.value), str(e.value)


@pytest.mark.parametrize("body, field, words", [
    ('median = "68us"\np99 = "20us"', "host_delay.p99", "at least the median"),
    ('median = "0us"\np99 = "20us"', "host_delay.median", "positive"),
    ('median = "68us"', "host_delay.p99", "required"),
    ('median = "68us"\np99 = "2s"', "host_delay.p99", "at most 1s"),
    ('median = "68furlongs"\np99 = "1ms"', "host_delay.median", "unit"),
    ('median = "68us"\np99 = "1ms"\nmean = "1ms"', "host_delay.mean", ""),
    ('median = "68us"\np99 = "1ms"\nfloor = "68us"', "host_delay.floor", "below the median"),
    ('median = "68us"\np99 = "1ms"\nfloor = "-5us"', "host_delay.floor", "negative"),
])
def test_bad_values_are_one_error_naming_the_field(body, field, words):
    with pytest.raises(ScenarioError) as e:
        _scenario(body)
    assert len(e.value.problems) == 1 and e.value.field == field and words in str(e.value), str(e.value)


def test_the_cli_refuses_a_bad_host_delay_with_exit_2(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(BASE + '\n[host_delay]\nmedian = "1ms"\np99 = "10us"\n')
    p = subprocess.run([MPSCHED, "run", str(bad), "--out", str(tmp_path / "o")], capture_output=True, text=True)
    assert p.returncode == 2 and "host_delay.p99" in p.stderr and "Traceback" not in p.stderr + p.stdout


@pytest.mark.skipif(not has_core_runner(), reason="needs the compiled core")
def test_on_the_grid_seeds_spread_the_fct_and_a_seed_repeats_itself():
    from mpsched.engines import run_config
    from mpsched.scenario import Scenario

    # equal: two constant-delay 20 Mbit/s paths; 1 MiB downloads, one flow per run
    run = next(r for r in Scenario.load(REPO / "scenarios/validation/grid/equal.toml").expand()
               if to_config(r)["flows"][0]["app"]["size_bytes"] == 1 << 20 and "burst_bytes" not in to_config(r)["links"][0])
    cfg = to_config(run)
    assert cfg["host_delay"]["median_ns"] > 0
    cfg["flows"] = cfg["flows"][:1]

    def fct(seed, model=True):
        c = {**cfg, "seed": seed}
        if not model:
            c.pop("host_delay")
        return run_config(c, "sim")["flows"]["fct_ns"][0]

    assert len({fct(s, model=False) for s in range(1, 5)}) == 1        # constant delays: seeds alike
    with_model = [fct(s) for s in range(1, 5)]
    assert len(set(with_model)) == 4
    assert run_config({**cfg, "seed": 3}, "sim") == run_config({**cfg, "seed": 3}, "sim")


@pytest.mark.skipif(not has_core_runner(), reason="needs the compiled core")
def test_a_floor_reaches_the_core_and_a_seed_still_repeats_itself():
    from mpsched.engines import run_config

    run = _scenario('median = "68us"\np99 = "417us"\nfloor = "40us"').expand()[0]
    cfg = {**to_config(run), "seed": 2}
    floored = run_config(cfg, "sim")
    assert floored == run_config(cfg, "sim")
    plain = {**cfg, "host_delay": {k: v for k, v in cfg["host_delay"].items() if k != "floor_ns"}}
    assert run_config(plain, "sim")["flows"]["fct_ns"] != floored["flows"]["fct_ns"]


@pytest.mark.skipif(not has_core_runner(), reason="needs the compiled core")
def test_stalls_reach_the_core_slow_the_transfer_and_a_seed_still_repeats_itself():
    from mpsched.engines import run_config

    run = _scenario(STALL + 'probability = "5%"\nmedian = "2ms"\np99 = "4ms"').expand()[0]
    cfg = {**to_config(run), "seed": 2}
    stalled = run_config(cfg, "sim")
    assert stalled == run_config(cfg, "sim")
    plain = {**cfg, "host_delay": {k: v for k, v in cfg["host_delay"].items() if k != "stall"}}
    assert sum(run_config(plain, "sim")["flows"]["fct_ns"]) < sum(stalled["flows"]["fct_ns"])
