"""The kernel testbed's parts that need neither root nor MPTCP: the plan (what the testbed
refuses, and how it maps a configuration), the comparison with the simulator, the delayer's
timing logic (native/test_nfqdelay_core.c) and the message a machine without root gets."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mpsched.engines.kernel import TestbedConfigError, make_plan
from mpsched.engines.kernel.rcvbuf import so_rcvbuf_bytes
from mpsched.engines.kernel.sndbuf import so_sndbuf_bytes
from mpsched.study.validate import compare, validate
from mpsched.engines.kernel.plan import client_addr

MS = 1_000_000
REPO = Path(__file__).resolve().parents[1]


def base_config():
    def link(name, rate, delay):
        return {"name": name, "rate_bps": rate, "delay_ns": delay, "queue_bytes": 250_000}
    return {
        "seed": 5, "duration_ns": 10_000 * MS,
        "links": [link("wlan.down", 50_000_000, 10 * MS), link("wlan.up", 50_000_000, 10 * MS),
                  link("lte.down", 15_000_000, 100 * MS), link("lte.up", 15_000_000, 100 * MS)],
        "paths": [{"name": "wlan", "down": [0], "up": [1]}, {"name": "lte", "down": [2], "up": [3]}],
        "transports": [{"protocol": "mptcp", "scheduler": "linux", "cc": "cubic", "paths": [1, 0],
                        "rcv_buf_bytes": 8 << 20, "snd_buf_bytes": 8 << 20}],
        "flows": [{"id": 4, "transport": 0, "start_ns": 5 * MS, "app": {"kind": "sized", "size_bytes": 1000}}],
    }


def test_plan_maps_paths_to_router_interfaces_and_queues():
    plan = make_plan(base_config())
    by_name = {lk.name: lk for lk in plan.links}
    assert (by_name["lte.down"].out_dev, by_name["lte.down"].in_dev) == ("rp1", "rsrv")
    assert (by_name["lte.up"].out_dev, by_name["lte.up"].in_dev) == ("rsrv", "rp1")
    assert len({lk.qnum for lk in plan.links}) == 4
    assert by_name["lte.down"].delayer_spec() == f"{by_name['lte.down'].qnum},delay_us=100000.000"
    # The flow binds to its transport's first path: the MP_CAPABLE subflow goes over LTE.
    # Then the client's SO_RCVBUF and SO_SNDBUF: no rcv_buf_autotuning is false, as in the
    # simulator's core, so the receiving socket gets the fixed 8 MiB window's buffer (and the
    # sending socket, here the server's listener, the fixed send buffer); last, nodelay: a sized
    # transfer leaves Nagle on unless the scenario says otherwise.
    assert plan.flows[0].line() == f"4 mptcp cubic {client_addr(1)} download sized 1000 {5 * MS} {so_rcvbuf_bytes(8 << 20)} 0 0"
    assert plan.mptcp_paths == (0, 1)


def test_a_scenarios_nodelay_reaches_mpxfer_and_the_simulator_alike():
    import mpsched
    from mpsched.scenario.normalize import to_config

    def flow(workload: str) -> tuple[dict, str]:
        cfg = to_config(mpsched.loads_scenario('duration = "5s"\n[[paths]]\nname = "a"\nrate = "10Mbit"\n'
                                               'rtt = "20ms"\n[connection]\nprotocol = "tcp"\n[workload]\n' + workload))
        return cfg["flows"][0], make_plan(cfg).flows[0].line().split()[10]

    # without the field, mpxfer's own default per kind and no key for the simulator's core
    # (whose `AppConfig::nodelay_by_default` is the same): sized transfers leave Nagle on
    sized, nodelay = flow('kind = "sized"\nsize = "1MB"\ninterval = "1s"\n')
    assert "nodelay" not in sized and nodelay == "0"
    rpc = 'kind = "rpc"\nrequests = 10\nresponse = "4KB"\n'
    assert flow(rpc)[1] == "1"
    # given, both engines get it: TCP_NODELAY on a sized transfer, Nagle on for an rpc
    sized, nodelay = flow('kind = "sized"\nsize = "1MB"\ninterval = "1s"\nnodelay = true\n')
    assert sized["nodelay"] is True and nodelay == "1"
    rpc_nagle, nodelay = flow(rpc + "nodelay = false\n")
    assert rpc_nagle["nodelay"] is False and nodelay == "0"


def test_plan_delayer_spec_carries_jitter_and_loss():
    cfg = base_config()
    cfg["links"][2]["jitter"] = {"mode": "smooth", "jitter_ns": 75 * MS, "period_ns": 200 * MS}
    cfg["links"][2]["loss"] = {"model": "bernoulli", "p": 0.01}
    cfg["links"][3]["jitter"] = {"mode": "reorder", "jitter_ns": 5 * MS, "distribution": "normal"}
    plan = make_plan(cfg)
    down = next(lk for lk in plan.links if lk.name == "lte.down")
    up = next(lk for lk in plan.links if lk.name == "lte.up")
    assert down.delayer_spec().endswith(",jitter_us=75000.000,mode=smooth,period_us=200000.000,loss=0.01,gso=0")
    assert up.delayer_spec().endswith(",jitter_us=5000.000,mode=reorder,dist=normal")
    cfg["links"][1]["loss"] = {"model": "gilbert_elliott", "p_good_bad": 0.01, "p_bad_good": 0.2,
                               "loss_good": 0.0, "loss_bad": 0.5}
    wlan_up = next(lk for lk in make_plan(cfg).links if lk.name == "wlan.up")
    assert wlan_up.delayer_spec().endswith(",ge=0.01:0.2:0.0:0.5,gso=0")


def test_trace_links_queue_in_the_delayer():
    cfg = base_config()
    cfg["links"][2]["capacity"] = {"kind": "trace", "opportunities_ms": [1, 1, 3], "packet_bytes": 1500}
    cfg["links"][2]["queue_bytes"] = 90_000
    lte_down = next(lk for lk in make_plan(cfg).links if lk.name == "lte.down")
    assert lte_down.needs_delayer and lte_down.trace_text() == "1\n1\n3\n"
    assert lte_down.delayer_spec("/t") == (f"{lte_down.qnum},delay_us=100000.000,trace=/t,tpkt=1500,"
                                           "qlimit=90000,gso=0")
    with pytest.raises(ValueError):
        lte_down.delayer_spec()


def test_links_without_delay_or_loss_skip_the_delayer():
    cfg = base_config()
    cfg["links"][0]["delay_ns"] = 0
    plan = make_plan(cfg)
    assert [lk.needs_delayer for lk in plan.links] == [False, True, True, True]


@pytest.mark.parametrize("mutate, field, words", [
    (lambda c: c["paths"][0].__setitem__("down", [0, 2]), "paths[0].down", "exactly one link"),
    (lambda c: c["paths"][1].__setitem__("up", [1]), "paths[1].up", "already"),
    (lambda c: c["links"][0].__setitem__("loss", {"model": "gilbert_elliott", "p_good_bad": 0.1,
                                                   "p_bad_good": 1.5, "loss_good": 0, "loss_bad": 0.5}),
     "links[0].loss.p_bad_good", "[0, 1]"),
    (lambda c: c["links"][2].__setitem__("capacity", {"kind": "trace", "opportunities_ms": [3, 2]}),
     "links[2].capacity.opportunities_ms", "non-decreasing"),
    (lambda c: c["links"][2].__setitem__("capacity", {"kind": "schedule", "steps": [
        {"at_ns": 5, "rate_bps": 1}, {"at_ns": 4, "rate_bps": 1}]}), "links[2].capacity.steps", "increasing"),
    (lambda c: c["transports"][0].__setitem__("cc", "olia"), "transports[0].cc", "upstream Linux"),
    (lambda c: c["transports"][0].__setitem__("scheduler", "blest"), "transports[0].scheduler", "only in the simulator"),
    (lambda c: c.__setitem__("path_events", [{"at_ns": 1, "path": 2, "up": False}]), "path_events[0].path", "no path"),
    (lambda c: c["flows"].append(dict(c["flows"][0])), "flows[1].id", "duplicate"),
    (lambda c: c["transports"][0].__setitem__("protocol", "tcp"), "transports[0].paths", "exactly one path"),
    (lambda c: c["links"][0].update(capacity={"kind": "trace", "opportunities_ms": [1]},
                                    jitter={"mode": "reorder", "jitter_ns": 1000}), "links[0].jitter.mode", "smooth"),
    (lambda c: c["links"][0].__setitem__("overhead_bytes", 24), "links[0].overhead_bytes", "only in the simulator"),
    (lambda c: c["links"][2].update(impairments="after_queue", loss={"model": "bernoulli", "p": 0.01}),
     "links[2].impairments", "before_queue"),
    (lambda c: c["links"][2].update(burst_bytes=32768, capacity={"kind": "schedule", "steps": [
        {"at_ns": 5, "rate_bps": 1}]}), "links[2].burst_bytes", "constant rate"),
    (lambda c: c["links"][0].__setitem__("burst_bytes", 1500), "links[0].burst_bytes", "full frame"),
    (lambda c: c["links"][0].__setitem__("transmitter", "serialise"), "links[0].transmitter", "htb"),
])
def test_plan_refuses_what_the_kernel_cannot_do(mutate, field, words):
    cfg = copy.deepcopy(base_config())
    mutate(cfg)
    with pytest.raises(TestbedConfigError) as e:
        make_plan(cfg)
    assert e.value.field == field
    assert words in str(e.value)


def test_events_become_testbed_commands_in_time_order():
    from mpsched.engines.kernel.events import actions_for

    cfg = base_config()
    cfg["links"][2]["capacity"] = {"kind": "schedule", "steps": [{"at_ns": 2 * MS, "rate_bps": 0},
                                                                 {"at_ns": 9 * MS, "rate_bps": 5_000_000}]}
    cfg["path_events"] = [{"at_ns": 7 * MS, "path": 0, "up": True}, {"at_ns": 3 * MS, "path": 0, "up": False},
                          {"kind": "blackhole", "at_ns": 4 * MS, "duration_ns": 2 * MS, "path": 1}]
    acts = actions_for(make_plan(cfg))
    assert [a[0] for a in acts] == [2 * MS, 3 * MS, 4 * MS, 6 * MS, 7 * MS, 9 * MS]
    where, rate0 = acts[0][2][0]
    assert where == "router"
    assert rate0[:4] == ["tc", "class", "change", "dev"] and rate0[4] == "rp1" and "8bit" in rate0  # never 0
    # A path down is the client's interface going; coming back, its routes are added again.
    assert acts[1][2] == [("client", ["ip", "link", "set", "p0", "down"])]
    up = acts[4][2]
    assert up[0] == ("client", ["ip", "link", "set", "p0", "up"])
    assert all(w == "client" and c[:3] == ["ip", "route", "replace"] and "p0" in c for w, c in up[1:])
    assert any("table" in c and "100" in c for _, c in up[1:])
    # A blackhole is DROP rules in the router, deleted exactly as inserted.
    on, off = [c for _, c in acts[2][2]], [c for _, c in acts[3][2]]
    assert all(c[:4] == ["iptables", "-t", "mangle", "-I"] and "DROP" in c for c in on)
    assert [c[3:5] for c in off] == [["-D", "FORWARD"]] * 2
    assert [c[5:] for c in off] == [c[6:] for c in on]
    assert {c[c.index("-o") + 1] for c in on} == {"rp1", "rsrv"}


def _tables(fcts_by_size, acked_by_path):
    flows = {"flow_id": [], "size_bytes": [], "fct_ns": [], "completed": []}
    i = 0
    for size, fcts in fcts_by_size.items():
        for f in fcts:
            flows["flow_id"].append(i)
            flows["size_bytes"].append(size)
            flows["fct_ns"].append(f)
            flows["completed"].append(True)
            i += 1
    # an unfinished flow never counts
    flows["flow_id"].append(i)
    flows["size_bytes"].append(1000)
    flows["fct_ns"].append(None)
    flows["completed"].append(False)
    subflows = {"flow_id": [0] * len(acked_by_path), "path": list(acked_by_path),
                "bytes_acked": list(acked_by_path.values())}
    return {"flows": flows, "subflows": subflows}


def test_compare_reports_median_error_share_and_distance():
    sim = _tables({1000: [100, 110, 120], 16000: [1000, 1000]}, {0: 750, 1: 250})
    ker = _tables({1000: [200, 220, 240]}, {0: 900, 1: 100})
    out = compare(sim, ker)
    fct = out["fct"]
    assert fct["size_bytes"] == [1000, 16000]
    assert fct["sim_median_ns"][0] == 110 and fct["kernel_median_ns"][0] == 220
    assert fct["median_rel_error"][0] == pytest.approx(-0.5)
    assert fct["ks_distance"][0] == pytest.approx(1.0)  # disjoint distributions
    assert fct["kernel_n"][1] == 0 and fct["median_rel_error"][1] is None
    share = out["path_share"]
    assert share["sim_share"] == [0.75, 0.25] and share["kernel_share"] == [0.9, 0.1]
    assert share["difference"] == pytest.approx([-0.15, 0.15])
    same = compare(sim, sim)["fct"]
    assert same["median_rel_error"][0] == 0 and same["ks_distance"][0] == 0


def test_validate_names_paths_and_draws(tmp_path):
    rng = np.random.default_rng(1)
    sim = _tables({1 << 20: list(rng.normal(250e6, 5e6, 20))}, {0: 1, 1: 1})
    ker = _tables({1 << 20: list(rng.normal(260e6, 5e6, 20))}, {0: 1})
    out = validate(base_config(), sim, ker, out=tmp_path)
    assert out["path_share"]["path_name"] == ["wlan", "lte"]
    assert (tmp_path / "validation.png").stat().st_size > 1000


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("cc") is None, reason="needs make and a C compiler")
def test_delayer_timing_core(tmp_path):
    """native/test_nfqdelay_core.c: constant delay, smooth jitter bounds/mean/order, reorder
    overtakes, Bernoulli loss rate, histogram edges, spec parsing."""
    r = subprocess.run(["make", "-s", "-C", str(REPO / "native"), "check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "all checks passed" in r.stdout


def test_without_root_one_clear_message():
    code = ("from mpsched.engines.kernel import preflight, TestbedUnavailable\n"
            "try:\n    preflight()\nexcept TestbedUnavailable as e:\n    print('MSG', e)\n")
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("needs setpriv to drop root")
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", code]
    else:
        cmd = [sys.executable, "-c", code]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd="/", env={**os.environ, "HOME": "/"})
    assert "Traceback" not in r.stderr, r.stderr
    assert r.stdout.startswith("MSG the kernel testbed needs root"), r.stdout + r.stderr


def test_validation_scenarios_fit_the_testbed():
    """Every scenario in scenarios/validation/ loads, normalizes and is accepted by the testbed."""
    from mpsched.scenario.normalize import to_config
    from mpsched.scenario import Scenario

    files = sorted((REPO / "scenarios" / "validation").glob("*.toml"))
    assert len(files) >= 4
    for f in files:
        for run in Scenario.load(f).expand():
            plan = make_plan(to_config(run))
            assert plan.flows and plan.n_paths == 2, f.name


def _shaping(cfg):
    from mpsched.engines.kernel.network import shaping_commands

    return [" ".join(c) for c in shaping_commands(make_plan(cfg))]


def test_a_bucket_downlink_is_a_tbf_and_an_uplink_an_htb_class_with_that_burst():
    cfg = base_config()
    for i in range(4):
        cfg["links"][i]["burst_bytes"] = 32768
    cmds = _shaping(cfg)
    # Downlinks: tbf at the root of rp<i>, its byte FIFO the drop-tail queue, no htb there.
    assert "tc qdisc add dev rp0 root handle 10: tbf rate 50000000bit burst 32768 limit 252324" in cmds
    assert "tc qdisc add dev rp1 root handle 11: tbf rate 15000000bit burst 32768 limit 252324" in cmds
    assert not any(" rp0 " in c and "htb" in c for c in cmds)
    # Uplinks share rsrv: htb classes whose burst and cburst are the bucket.
    assert ("tc class add dev rsrv parent 1: classid 1:2 htb rate 15000000bit ceil 15000000bit burst 32768 "
            "cburst 32768 quantum 60000") in cmds
    assert "tc qdisc add dev rsrv parent 1:2 handle 11: bfifo limit 252324" in cmds


def test_without_a_bucket_the_links_stay_htb():
    cmds = _shaping(base_config())
    assert not any("tbf" in c or "burst" in c for c in cmds)
    assert "tc class add dev rp0 parent 1: classid 1:1 htb rate 50000000bit ceil 50000000bit quantum 60000" in cmds


def test_overhead_14_is_what_a_veth_qdisc_counts_so_its_limit_is_not_converted():
    cfg = base_config()
    cmds0 = _shaping(cfg)
    # In IP bytes (overhead 0): 250000 B hold 166 full packets, each 14 B longer on the wire.
    assert "tc qdisc add dev rp0 parent 1:1 handle 10: bfifo limit 252324" in cmds0
    cfg["links"][0]["overhead_bytes"] = 14
    assert "tc qdisc add dev rp0 parent 1:1 handle 10: bfifo limit 250000" in _shaping(cfg)


def test_impairments_placement_is_noted_or_accepted():
    cfg = base_config()
    cfg["links"][2]["loss"] = {"model": "bernoulli", "p": 0.01}
    assert any("before the queue" in n for n in make_plan(cfg).notes)
    cfg["links"][2]["impairments"] = "before_queue"
    assert not any("before the queue" in n for n in make_plan(cfg).notes)
    # A constant delay commutes with a FIFO: "after_queue" without loss or jitter is the same link.
    cfg = base_config()
    cfg["links"][2]["impairments"] = "after_queue"
    assert make_plan(cfg).links[2].delay_ns == 100 * MS


def test_an_htb_transmitter_or_a_burst_with_any_transmitter_is_what_the_kernel_builds():
    for extra in ({"transmitter": "htb"}, {"transmitter": "serialise", "burst_bytes": 32768}):
        cfg = base_config()
        cfg["links"][0].update(extra)
        assert make_plan(cfg).links[0].burst_bytes == extra.get("burst_bytes")


def test_the_server_listener_gets_the_flows_congestion_control(monkeypatch):
    """Server sockets must be born with the flows' cc: one born with the namespace default (the
    host's, e.g. bbr) and switched after the handshake stays paced (docs/testbed.md, HyStart)."""
    from mpsched.engines.kernel.run import INHERIT_CC_ENV, _listener_cc

    monkeypatch.delenv(INHERIT_CC_ENV, raising=False)
    cfg = base_config()
    assert _listener_cc(make_plan(cfg)) == ["--cc", cfg["transports"][0]["cc"]]
    mixed = copy.deepcopy(cfg)
    mixed["transports"].append({**mixed["transports"][0], "cc": "reno"})
    mixed["flows"].append({**mixed["flows"][0], "id": 99, "transport": 1})
    assert _listener_cc(make_plan(mixed)) == []  # no single cc: each socket switches itself
    monkeypatch.setenv(INHERIT_CC_ENV, "1")
    assert _listener_cc(make_plan(cfg)) == []


def test_a_fixed_receive_buffer_gets_the_so_rcvbuf_whose_window_is_rcv_buf():
    """rcv_buf_autotuning = false (absent: false, as in the core) sets SO_RCVBUF on the receiving
    socket, sized so that Linux's window for it (2 x SO_RCVBUF x scaling_ratio / 256 once the
    first segment measured the ratio) is the simulator's rcv_buf; true leaves it to autotuning."""
    from mpsched.engines.kernel.rcvbuf import TESTBED_SCALING_RATIO

    def window(so_rcvbuf: int) -> int:  # __tcp_win_from_space(ratio, sk_rcvbuf = 2 x SO_RCVBUF)
        return 2 * so_rcvbuf * TESTBED_SCALING_RATIO >> 8

    for rcv_buf in (4096, 128 << 10, 6 << 20, 16 << 20, 1_000_003):
        v = so_rcvbuf_bytes(rcv_buf)
        assert window(v) >= rcv_buf > window(v - 1), rcv_buf  # the smallest buffer that allows it
        assert v < rcv_buf  # the kernel counts skb overhead: SO_RCVBUF doubles, the ratio takes ~23 %
    cfg = base_config()
    assert make_plan(cfg).flows[0].so_rcvbuf_bytes == so_rcvbuf_bytes(8 << 20)
    assert make_plan(cfg).listener_so_rcvbuf_bytes == 0  # no upload: the server's listener autotunes
    cfg["transports"][0]["rcv_buf_autotuning"] = True
    assert make_plan(cfg).flows[0].so_rcvbuf_bytes == 0
    up = base_config()
    up["flows"][0]["direction"] = "upload"
    plan = make_plan(up)
    assert (plan.flows[0].so_rcvbuf_bytes, plan.listener_so_rcvbuf_bytes) == (so_rcvbuf_bytes(8 << 20),) * 2


@pytest.mark.parametrize("change,field,words", [
    ({"rcv_buf_bytes": 1000}, "transports[0].rcv_buf_bytes", "rcv_buf_autotuning = true"),
    ({"rcv_buf_bytes": 1 << 31}, "transports[0].rcv_buf_bytes", "2896 to"),
    ({"rcv_buf_autotuning": "no"}, "transports[0].rcv_buf_autotuning", "true or false"),
])
def test_a_fixed_receive_buffer_the_kernel_cannot_have_is_one_clear_error(change, field, words):
    cfg = base_config()
    cfg["transports"][0].update(change)
    with pytest.raises(TestbedConfigError) as e:
        make_plan(cfg)
    assert e.value.field == field and words in str(e.value)


def test_uploads_share_the_servers_listener_so_their_buffers_must_agree():
    cfg = base_config()
    cfg["flows"][0]["direction"] = "upload"
    cfg["transports"].append({**cfg["transports"][0], "rcv_buf_bytes": 1 << 20})
    cfg["flows"].append({**cfg["flows"][0], "id": 99, "transport": 1})
    with pytest.raises(TestbedConfigError) as e:
        make_plan(cfg)
    assert e.value.field == "transports[*].rcv_buf_bytes" and "one listener" in str(e.value)
    cfg["flows"][1]["direction"] = "download"  # a download's buffer is the client's own socket
    plan = make_plan(cfg)
    assert [f.so_rcvbuf_bytes for f in plan.flows] == [so_rcvbuf_bytes(8 << 20), so_rcvbuf_bytes(1 << 20)]


def test_a_fixed_send_buffer_gets_the_so_sndbuf_whose_limit_is_snd_buf():
    """rcv_buf_autotuning = false fixes the send buffer too, as in the simulator (endpoint.rs):
    the sending socket (the server's listener for downloads and RPC responses, the client's
    socket for uploads and RPC requests) gets SO_SNDBUF whose kernel limit, 2 x SO_SNDBUF counted
    as payload plus one 40-byte data-frag header per 32 KiB page frag (mptcp_sendmsg), is
    snd_buf of payload; true leaves both sides to autotuning."""
    def payload_limit(so_sndbuf: int) -> int:  # sk_wmem_queued < sk_sndbuf = 2 x SO_SNDBUF
        sk_sndbuf, frag = 2 * so_sndbuf, 32_768 - 40
        return sk_sndbuf - 40 * -(-sk_sndbuf // (frag + 40))

    for snd_buf in (4608, 128 << 10, 4 << 20, 16 << 20, 1_000_003):
        v = so_sndbuf_bytes(snd_buf)
        assert payload_limit(v) >= snd_buf > payload_limit(v - 1), snd_buf  # the smallest that holds it
        assert snd_buf / 2 < v < snd_buf / 2 * 1.01  # one 40-byte header per 32 KiB: 0.12 to 0.9 %
    cfg = base_config()
    plan = make_plan(cfg)
    assert (plan.flows[0].so_sndbuf_bytes, plan.listener_so_sndbuf_bytes) == (so_sndbuf_bytes(8 << 20),) * 2
    assert plan.flows[0].line().split()[9] == "0"  # a download: the client's socket sends no data
    cfg["transports"][0]["rcv_buf_autotuning"] = True
    plan = make_plan(cfg)
    assert (plan.flows[0].so_sndbuf_bytes, plan.listener_so_sndbuf_bytes) == (0, 0)
    up = base_config()
    up["flows"][0]["direction"] = "upload"
    plan = make_plan(up)
    assert plan.listener_so_sndbuf_bytes == 0  # no download: the listener autotunes its send buffer
    assert plan.flows[0].line().endswith(f" {so_rcvbuf_bytes(8 << 20)} {so_sndbuf_bytes(8 << 20)} 0")


@pytest.mark.parametrize("change,field,words", [
    ({"snd_buf_bytes": 4000}, "transports[0].snd_buf_bytes", "SOCK_MIN_SNDBUF"),
    ({"snd_buf_bytes": 1 << 31}, "transports[0].snd_buf_bytes", "rcv_buf_autotuning = true"),
    ({"snd_buf_bytes": 2.5e6}, "transports[0].snd_buf_bytes", "got 2500000.0"),
])
def test_a_fixed_send_buffer_the_kernel_cannot_have_is_one_clear_error(change, field, words):
    cfg = base_config()
    cfg["transports"][0].update(change)
    with pytest.raises(TestbedConfigError) as e:
        make_plan(cfg)
    assert e.value.field == field and words in str(e.value)
    cfg["transports"][0]["rcv_buf_autotuning"] = True  # autotuned: snd_buf is only the cap
    make_plan(cfg)


def test_downloads_share_the_servers_listener_so_their_send_buffers_must_agree():
    cfg = base_config()
    cfg["transports"].append({**cfg["transports"][0], "snd_buf_bytes": 1 << 20})
    cfg["flows"].append({**cfg["flows"][0], "id": 99, "transport": 1})
    with pytest.raises(TestbedConfigError) as e:
        make_plan(cfg)
    assert e.value.field == "transports[*].snd_buf_bytes" and "one listener" in str(e.value)
    cfg["flows"][1]["direction"] = "upload"  # an upload's data leaves from the client's own socket
    plan = make_plan(cfg)
    assert [f.so_sndbuf_bytes for f in plan.flows] == [so_sndbuf_bytes(8 << 20), so_sndbuf_bytes(1 << 20)]
    assert plan.listener_so_sndbuf_bytes == so_sndbuf_bytes(8 << 20)
