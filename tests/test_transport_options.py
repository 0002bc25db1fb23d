"""The connection options that make the simulator behave like upstream Linux
(`rcv_buf_autotuning`, `join_timing`): they round-trip, sweep, reach the core's transport,
change what the simulator does, refuse bad values naming the field, and the kernel engine
says what it does with them."""

from __future__ import annotations

import copy

import pytest

from mpsched.engines import run_config
from mpsched.scenario.normalize import to_config
from mpsched.scenario import Scenario, ScenarioError, loads_scenario
from mpsched.scenario.sweep import expand
from mpsched.engines.kernel import make_plan
from mpsched.engines.kernel.rcvbuf import so_rcvbuf_bytes

BASE = {
    "duration": "5s",
    "paths": [{"name": "a", "rate": "50Mbit", "rtt": "20ms"}, {"name": "b", "rate": "15Mbit", "rtt": "200ms"}],
    "connection": {"scheduler": "minrtt"},
    "workload": {"size": "4MB", "repeat": 1, "interval": "1s"},
}


def scenario(**conn) -> Scenario:
    d = copy.deepcopy(BASE)
    d["connection"].update(conn)
    return Scenario.from_dict(d)


def test_defaults_keep_the_simulators_behaviour():
    t = to_config(scenario().expand()[0])["transports"][0]
    assert t["rcv_buf_autotuning"] is False and t["join_timing"] == "oot"


def test_options_round_trip_through_toml_and_reach_the_transport():
    s = scenario(rcv_buf_autotuning=True, join_timing="fully_established")
    again = loads_scenario(s.to_toml())
    assert again.connection[0].rcv_buf_autotuning is True
    assert again.connection[0].join_timing == "fully_established"
    t = to_config(again.expand()[0])["transports"][0]
    assert t["rcv_buf_autotuning"] is True and t["join_timing"] == "fully_established"


def test_options_sweep():
    s = scenario(rcv_buf_autotuning=[False, True], join_timing=["oot", "fully_established"])
    runs = expand(s)
    assert len(runs) == 4
    transports = [to_config(r.scenario)["transports"][0] for r in runs]
    got = {(t["rcv_buf_autotuning"], t["join_timing"]) for t in transports}
    assert got == {(a, j) for a in (False, True) for j in ("oot", "fully_established")}
    assert {(r.params["rcv_buf_autotuning"], r.params["join_timing"]) for r in runs} == got


@pytest.mark.parametrize("field, value, words", [
    ("rcv_buf_autotuning", "yes", "true or false"),
    ("rcv_buf_autotuning", 1, "true or false"),
    ("join_timing", "upstream", "'oot' or 'fully_established'"),
    ("join_timing", ["oot", "oot"], "repeat"),
])
def test_bad_values_name_the_field(field, value, words):
    with pytest.raises(ScenarioError) as e:
        scenario(**{field: value})
    assert e.value.field == f"connection[0].{field}"
    assert words in e.value.message


def test_the_simulator_honours_them():
    """A 4 MB round-robin download on table A's paths (20 ms and 200 ms RTT): autotuning starts
    with a 64 KiB window, so a flow whose initial window (40 segments) doubles past it in the
    second round trip takes longer (with 10 segments the window keeps ahead, as Linux 6.18's
    grows it for a sender in slow start); upstream timing opens the second subflow one RTT of
    the first path (20 ms) later."""
    def run(**conn):
        d = copy.deepcopy(BASE)
        d["connection"].update(scheduler="roundrobin", **conn)
        d["record"] = {"interval": "1ms"}
        tables = run_config(to_config(Scenario.from_dict(d).expand()[0]))
        assert tables["flows"]["completed"] == [True]
        return tables

    def second_subflow_first_data_ns(tables):
        s = tables["subflow_series"]
        return min(t for t, sf, f in zip(s["time_ns"], s["subflow"], s["in_flight_bytes"]) if sf == 1 and f > 0)

    plain = run()
    assert (run(rcv_buf_autotuning=True, init_cwnd=40)["flows"]["fct_ns"][0]
            > run(init_cwnd=40)["flows"]["fct_ns"][0])
    delay_ns = second_subflow_first_data_ns(run(join_timing="fully_established")) - second_subflow_first_data_ns(plain)
    assert 18_000_000 <= delay_ns <= 22_000_000, delay_ns


def test_kernel_accepts_what_it_does_and_says_what_it_cannot_do():
    kernel = scenario(scheduler="linux", rcv_buf_autotuning=True, join_timing="fully_established")
    assert make_plan(to_config(kernel.expand()[0])).notes == []
    assert [f.so_rcvbuf_bytes for f in make_plan(to_config(kernel.expand()[0])).flows] == [0]  # autotunes
    sim_only = scenario(scheduler="linux")
    plan = make_plan(to_config(sim_only.expand()[0]))
    assert any(n.startswith("join_timing: the kernel cannot join at the SYN-ACK") for n in plan.notes), plan.notes
    # A fixed receive buffer is honoured, so nothing to note: the client's socket gets the
    # SO_RCVBUF whose window is rcv_buf (engines/kernel/rcvbuf.py).
    assert not [n for n in plan.notes if n.startswith("rcv_buf_autotuning")], plan.notes
    assert [f.so_rcvbuf_bytes for f in plan.flows] == [so_rcvbuf_bytes(6 << 20)]  # the default rcv_buf


def test_validation_scenarios_describe_the_kernel():
    """scenarios/validation/ compares the simulator with the kernel: they ask the simulator for
    the kernel's autotuning and join timing, so the kernel has nothing to note about them."""
    from conftest import SCENARIOS

    files = sorted((SCENARIOS / "validation").glob("*.toml"))
    assert files
    for f in files:
        for run in Scenario.load(f).expand():
            cfg = to_config(run)
            assert all(t["rcv_buf_autotuning"] and t["join_timing"] == "fully_established"
                       for t in cfg["transports"]), f.name
            notes = make_plan(cfg).notes
            assert not [n for n in notes if n.startswith(("rcv_buf_autotuning", "join_timing"))], (f.name, notes)


def test_the_grid_stays_what_its_kernel_data_measured():
    """validation/grid/kernel.csv was measured with receive-buffer autotuning (before the kernel
    engine could fix the buffer, kern11): every grid scenario asks for it, so re-measuring the grid
    (`mpsched validate --grid`) gives the kernel no SO_RCVBUF and the simulator the same warm-up;
    with autotuning the sender autotunes too (no SO_SNDBUF, kern11b), as when kernel.csv was taken."""
    from conftest import SCENARIOS

    files = sorted((SCENARIOS / "validation" / "grid").glob("*.toml"))
    assert len(files) >= 8
    for f in files:
        for run in Scenario.load(f).expand():
            cfg = to_config(run)
            assert all(t["rcv_buf_autotuning"] for t in cfg["transports"]), f.name
            plan = make_plan(cfg)
            assert {fl.so_rcvbuf_bytes for fl in plan.flows} == {0} and plan.listener_so_rcvbuf_bytes == 0, f.name
            assert {fl.so_sndbuf_bytes for fl in plan.flows} == {0} and plan.listener_so_sndbuf_bytes == 0, f.name
