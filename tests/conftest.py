"""Shared fixtures: hypothesis profiles and a synthetic engine for front-end tests.

Hypothesis: the "fast" profile (default) keeps `make test` quick; HYPOTHESIS_PROFILE=slow runs
many more examples.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("fast", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("slow", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# CI (CI=true): the same examples on every run, so a landing never depends on luck; run locally
# (or with HYPOTHESIS_PROFILE=slow) to explore new ones.
settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "fast"))

REPO = Path(__file__).resolve().parent.parent
SCENARIOS = REPO / "scenarios"


def synthetic_tables(config: dict) -> dict[str, dict[str, list]]:
    """Plausible record tables computed from a configuration, for testing everything after the
    engine. A sized flow's FCT is one base RTT of its first path plus its size over the summed
    rates of its paths, scaled by a per-scheduler factor; every sized flow completes. Each flow
    has one subflow per path, bytes split in proportion to the rates."""
    links = config["links"]
    flows, subflows, sseries, cseries = {}, {}, {}, {}
    for k in ("flow_id", "protocol", "scheduler", "cc", "direction", "app", "size_bytes", "start_ns", "end_ns",
              "fct_ns", "completed", "bytes_delivered", "bytes_sent", "bytes_retransmitted", "bytes_redundant"):
        flows[k] = []
    for k in ("flow_id", "subflow", "path", "bytes_sent", "bytes_acked", "bytes_retransmitted", "rto_count"):
        subflows[k] = []
    for k in ("time_ns", "flow_id", "subflow", "path", "cwnd_bytes", "srtt_ns", "in_flight_bytes", "bytes_acked"):
        sseries[k] = []
    for k in ("time_ns", "flow_id", "delivered_bytes", "ofo_bytes", "rcv_buffer_bytes", "rcv_wnd_bytes"):
        cseries[k] = []
    factor = {"minrtt": 1.0, "roundrobin": 1.5}
    for f in config["flows"]:
        t = config["transports"][f["transport"]]
        paths = [config["paths"][i] for i in t["paths"]]
        rates = [links[p["down"][0]]["rate_bps"] for p in paths]
        rtt = sum(links[p["down"][0]]["delay_ns"] + links[p["up"][0]]["delay_ns"] for p in paths[:1])
        size = f["app"].get("size_bytes", 0)
        fct = int((rtt + size * 8e9 / sum(rates)) * factor.get(t["scheduler"], 1.2))
        for k, v in (("flow_id", f["id"]), ("protocol", t["protocol"]), ("scheduler", t["scheduler"]),
                     ("cc", t["cc"]), ("direction", f["direction"]), ("app", f["app"]["kind"]),
                     ("size_bytes", size), ("start_ns", f["start_ns"]), ("end_ns", f["start_ns"] + fct),
                     ("fct_ns", fct), ("completed", True), ("bytes_delivered", size), ("bytes_sent", size),
                     ("bytes_retransmitted", 0), ("bytes_redundant", 0)):
            flows[k].append(v)
        for j, (p, r) in enumerate(zip(paths, rates)):
            share = size * r // sum(rates)
            for k, v in (("flow_id", f["id"]), ("subflow", j), ("path", p["name"]), ("bytes_sent", share),
                         ("bytes_acked", share), ("bytes_retransmitted", 0), ("rto_count", 0)):
                subflows[k].append(v)
            for step in range(5):
                tm = f["start_ns"] + step * fct // 4
                for k, v in (("time_ns", tm), ("flow_id", f["id"]), ("subflow", j), ("path", p["name"]),
                             ("cwnd_bytes", 14480 * (step + 1)), ("srtt_ns", rtt), ("in_flight_bytes", 0),
                             ("bytes_acked", share * step // 4)):
                    sseries[k].append(v)
        for step in range(5):
            for k, v in (("time_ns", f["start_ns"] + step * fct // 4), ("flow_id", f["id"]),
                         ("delivered_bytes", size * step // 4), ("ofo_bytes", 1448 * (step % 2)),
                         ("rcv_buffer_bytes", t["rcv_buf_bytes"]), ("rcv_wnd_bytes", t["rcv_buf_bytes"])):
                cseries[k].append(v)
    return {
        "flows": flows,
        "subflows": subflows,
        "subflow_series": sseries,
        "conn_series": cseries,
        "link_series": {"time_ns": [0] * len(links), "link": [lk["name"] for lk in links],
                        "queue_bytes": [0] * len(links), "queue_packets": [0] * len(links),
                        "dropped_packets": [0] * len(links)},
        "links": {"link": [lk["name"] for lk in links], "bytes_forwarded": [0] * len(links),
                  "packets_forwarded": [0] * len(links), "packets_dropped": [0] * len(links)},
        "blocks": {"flow_id": [f["id"] for f in config["flows"]], "block": [0] * len(config["flows"])},
        "_stats": {"events": 1},
    }


@pytest.fixture
def fake_engine(monkeypatch):
    """Route the "sim" engine to `synthetic_tables` (in-process runs only: jobs=1)."""
    from mpsched import engines

    calls = []

    def run_config(config, engine="sim"):
        calls.append(config)
        return synthetic_tables(config)

    monkeypatch.setattr(engines, "run_config", run_config)
    monkeypatch.setattr(engines, "check_engine", lambda engine: None)
    return calls


def has_core_runner() -> bool:
    from mpsched import _core

    return hasattr(_core, "run_json")
