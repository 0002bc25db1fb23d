"""One kernel run: build the testbed, warm it up, run the flows and cross traffic with the
native tools, collect the kernel's counters, tear down, and return the simulator's tables.

Times in the tables are ns from the run's epoch (the instant the configuration calls 0); all
namespaces share CLOCK_MONOTONIC, which is also what `time.monotonic_ns()` reads.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from mpsched.engines.kernel.events import EventPlayer, played_path_events
from mpsched.engines.kernel.fidelity import CpuTimes, host_summary
from mpsched.engines.kernel.host import (
    WORKDIR_PREFIX, TestbedError, native_tool, ns_sh, preflight, remove_leftovers, testbed_lock,
)
from mpsched.engines.kernel.network import Testbed
from mpsched.engines.kernel.plan import SERVER_ADDR, FlowPlan, Plan, client_addr, make_plan
from mpsched.engines.kernel.rpc import blocks_table
from mpsched.engines.path_table import path_event_table

_log = logging.getLogger(__name__)

__all__ = ["run_kernel", "run_once"]

Tables = dict[str, dict[str, list]]

SERVER_PORT = 5201
CBR_PORT = 9000
#: Flow ids of the warm-up transfers (kept out of the records).
WARMUP_ID_BASE = 1 << 62
#: Time between building the testbed and the epoch: lets every process start and sleep.
EPOCH_LEAD_NS = 200_000_000
#: Extra time after the configured duration for the client to record unfinished flows.
FINISH_GRACE_S = 15.0

FLOW_COLUMNS = ("flow_id", "protocol", "scheduler", "cc", "direction", "app", "size_bytes", "start_ns",
                "end_ns", "fct_ns", "completed", "bytes_delivered", "bytes_sent", "bytes_retransmitted",
                "bytes_redundant")
SUBFLOW_COLUMNS = ("flow_id", "subflow", "path", "bytes_sent", "bytes_acked", "bytes_retransmitted", "rto_count")
#: queue_bytes counts Ethernet headers and queue_packets GSO super-packets as one (what the
#: qdisc holds); dropped_packets is cumulative from the epoch.
LINK_SERIES_COLUMNS = ("time_ns", "link", "queue_bytes", "queue_packets", "dropped_packets")
CONN_COLUMNS = ("time_ns", "flow_id", "delivered_bytes", "ofo_bytes", "rcv_buffer_bytes", "rcv_wnd_bytes")
SERIES_COLUMNS = ("time_ns", "flow_id", "subflow", "path", "cwnd_bytes", "srtt_ns", "in_flight_bytes", "bytes_acked")
LINK_COLUMNS = ("link", "bytes_forwarded", "packets_forwarded", "packets_dropped", "packets_lost")
#: A qdisc counts the Ethernet header of every packet (skb->len at egress); the tables count IP bytes.
ETH_HEADER_BYTES = 14


@contextmanager
def _sigterm_as_exit() -> Iterator[None]:
    """SIGTERM raises SystemExit so `finally` blocks tear the testbed down (Ctrl-C already
    raises KeyboardInterrupt)."""
    def handler(signum, frame):
        raise SystemExit(128 + signum)
    try:
        old = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _json_lines(path: Path) -> list[dict]:
    out = []
    if path.exists():
        for line in path.read_text().splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    pass  # a line cut by a killed process
    return out


def _path_of(caddr: str, n_paths: int) -> int | None:
    for i in range(n_paths):
        if caddr == client_addr(i):
            return i
    return None


#: Set to 1 to leave the server's listener on the namespace's default congestion control (the
#: testbed before issue 11's HyStart analysis, to reproduce its measurements: sockets born with
#: the host's bbr and switched to the flow's cc after the handshake keep TCP pacing on).
INHERIT_CC_ENV = "MPSCHED_TESTBED_INHERIT_CC"


def _listener_cc(plan: Plan) -> list[str]:
    """mpxfer server arguments that give its listener the flows' congestion control, so every
    accepted socket and MPTCP join subflow is born with it (a new namespace's default is the
    host's, and setting another default there is refused unless the host allows that cc)."""
    ccs = {f.cc for f in plan.flows}
    if len(ccs) != 1 or os.environ.get(INHERIT_CC_ENV) == "1":
        return []
    return ["--cc", ccs.pop()]


def _warm_up(tb: Testbed, mpxfer: str, workdir: Path) -> None:
    """One small TCP transfer per path: resolves neighbours and wakes the delayer, so the first
    timed packet does not pay for it (docs/testbed.md, pitfall 6)."""
    p = tb.plan
    lines = [FlowPlan(WARMUP_ID_BASE + i, "tcp", "cubic", (i,), "download", "sized", 2000, None, 0).line()
             for i in range(p.n_paths)]
    flows = workdir / "warmup.flows"
    flows.write_text("\n".join(lines) + "\n")
    max_rtt_s = max(lk.delay_ns + lk.jitter_ns for lk in p.links) * 4 / 1e9
    timeout_ns = int((5 + 10 * max_rtt_s) * 1e9)
    r = ns_sh(tb.cli, mpxfer, "client", "--server", SERVER_ADDR, "--port", str(SERVER_PORT),
              "--epoch-ns", str(time.monotonic_ns()), "--deadline-ns", str(timeout_ns),
              "--sample-ns", "0", "--flows", str(flows), check=False, timeout=timeout_ns / 1e9 + 5)
    done = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    bad = [d for d in done if not d.get("completed")]
    if len(done) != p.n_paths or bad:
        raise TestbedError(f"warm-up transfers failed on the testbed (paths not forwarding?): {r.stdout} {r.stderr}")


def run_once(cfg: dict[str, Any], plan: Plan | None = None, workdir: Path | None = None) -> tuple[Tables, dict]:
    """Run `cfg` once on a fresh testbed; returns (tables, diagnostics)."""
    plan = plan or make_plan(cfg)
    preflight()
    with testbed_lock():
        remove_leftovers()
        return _run_once(cfg, plan, workdir)


def _run_once(cfg: dict[str, Any], plan: Plan, workdir: Path | None) -> tuple[Tables, dict]:
    mpxfer = str(native_tool("mpxfer"))
    own_tmp = workdir is None
    # named after this process, so a leftover is known to be one once the process is gone
    tmp = tempfile.TemporaryDirectory(prefix=f"{WORKDIR_PREFIX}{os.getpid()}-") if own_tmp else None
    work = Path(tmp.name) if tmp else workdir
    tb = Testbed(plan, work)
    player: EventPlayer | None = None
    try:
        with _sigterm_as_exit():
            tb.build()
            tb.start_delayer()
            server_out = work / "server.jsonl"
            tb.spawn(tb.srv, [mpxfer, "server", "--port", str(SERVER_PORT),
                              "--sample-ns", str(plan.sample_interval_ns), *_listener_cc(plan),
                              "--rcvbuf-bytes", str(plan.listener_so_rcvbuf_bytes),
                              "--sndbuf-bytes", str(plan.listener_so_sndbuf_bytes)], server_out)
            sinks = set()
            for c in plan.cross:
                sinks.add(tb.cli if c.direction == "down" else tb.srv)
            for ns in sorted(sinks):
                tb.spawn(ns, [mpxfer, "sink", "--port", str(CBR_PORT)], work / f"sink-{ns}.jsonl")
            _wait_for_line(server_out, "ready", 5)
            _warm_up(tb, mpxfer, work)
            before = tb.qdisc_counters()
            cpu_before = CpuTimes.read()
            epoch = time.monotonic_ns() + EPOCH_LEAD_NS
            tb.set_epoch(epoch)
            qmon_out = work / "qmon.jsonl"
            if plan.sample_interval_ns > 0:
                tb.spawn(tb.rtr, [str(native_tool("qmon")), "--sample-ns", str(plan.sample_interval_ns),
                                  "--kind", "bfifo"], qmon_out)
            for k, c in enumerate(plan.cross):
                src_ns, dst, bind = ((tb.srv, client_addr(c.path), SERVER_ADDR) if c.direction == "down"
                                     else (tb.cli, SERVER_ADDR, client_addr(c.path)))
                tb.spawn(src_ns, [mpxfer, "cbr", "--dst", dst, "--port", str(CBR_PORT), "--bind", bind,
                                  "--rate-bps", str(c.rate_bps), "--packet-bytes", str(c.packet_bytes),
                                  "--epoch-ns", str(epoch), "--start-ns", str(c.start_ns),
                                  "--stop-ns", str(min(c.stop_ns, plan.duration_ns))], work / f"cbr-{k}.jsonl")
            player = EventPlayer(tb, epoch)
            player.start()
            flows_file = work / "run.flows"
            flows_file.write_text("".join(f.line() + "\n" for f in plan.flows))
            client_out = work / "client.jsonl"
            client = tb.spawn(tb.cli, [mpxfer, "client", "--server", SERVER_ADDR, "--port", str(SERVER_PORT),
                                       "--epoch-ns", str(epoch), "--deadline-ns", str(plan.duration_ns),
                                       "--sample-ns", str(plan.sample_interval_ns), "--flows", str(flows_file)],
                              client_out)
            wait_s = (epoch - time.monotonic_ns() + plan.duration_ns) / 1e9 + FINISH_GRACE_S
            try:
                client.wait(timeout=max(wait_s, 1))
            except subprocess.TimeoutExpired:
                raise TestbedError(f"the client did not finish within the run's duration + {FINISH_GRACE_S} s") from None
            # Let the cross traffic and the server's final reports finish.
            while time.monotonic_ns() < epoch + plan.duration_ns and any(
                    p.poll() is None for p in tb.procs if p is not client and "cbr" in p.args):
                time.sleep(0.05)
            time.sleep(0.2)
            player.stop()
            after = tb.qdisc_counters()
            errs = tb.stop_processes()
            tb.stop_delayer()
            tables = _tables(plan, epoch, _json_lines(client_out), _json_lines(server_out), before, after,
                             tb.delayer_stats)
            tables["link_series"] = _link_series(plan, epoch, _json_lines(qmon_out), before)
            if player.log:  # failover and failback count from when each change took effect
                tables["path_events"] = played_path_events(path_event_table(cfg), player.log)
            diag = {"delayer": tb.delayer_stats, "delayer_cpu_s": tb.delayer_cpu_s,
                    "delayer_wall_s": tb.delayer_wall_s, "stderr": {k: v for k, v in errs.items() if v.strip()},
                    "notes": plan.notes, "events": player.log,
                    "host": host_summary(cpu_before, CpuTimes.read(), tb.delayer_stats, tb.cpu_wake_hold.held)}
            stall = diag["host"]["stall"]
            if stall:  # the records are the kernel's, but their timing is not the configured network's
                _log.warning("kernel engine: this run's timing is not the configured network's: %s", stall)
            return tables, diag
    finally:
        if player is not None:
            player.stop()
        tb.close()
        if tmp:
            tmp.cleanup()


def _wait_for_line(path: Path, kind: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(d.get("type") == kind for d in _json_lines(path)):
            return
        time.sleep(0.02)
    raise TestbedError(f"the transfer server did not start (no '{kind}' in {timeout_s} s)")


def _tables(plan: Plan, epoch: int, client: list[dict], server: list[dict], before: dict, after: dict,
            delayer: dict | None) -> Tables:
    by_id = {f.flow_id: f for f in plan.flows}
    # The sender reports subflows: the server for downloads, the client for uploads.
    sender_lines = [d for d in server + client if d.get("flow_id") in by_id and d.get("type") in ("sample", "subflow")]
    results = {d["flow_id"]: d for d in client if d.get("type") == "flow" and d.get("flow_id") in by_id}

    subflows = {c: [] for c in SUBFLOW_COLUMNS}
    series = {c: [] for c in SERIES_COLUMNS}
    sent: dict[int, int] = {}
    retrans: dict[int, int] = {}
    last_sample: dict[tuple[int, str, int], dict] = {}
    finals: dict[tuple[int, str, int], dict] = {}
    for d in sender_lines:
        f = by_id[d["flow_id"]]
        key = (d["flow_id"], d["caddr"], d["cport"])
        if d["type"] == "sample":
            last_sample[key] = d
            path = _path_of(d["caddr"], plan.n_paths)
            series["time_ns"].append(d["t_ns"] - epoch)
            series["flow_id"].append(f.flow_id)
            series["subflow"].append(f.paths.index(path) if path in f.paths else -1)
            series["path"].append(path)
            series["cwnd_bytes"].append(d["cwnd_bytes"])
            # tcpi_rtt is 0 until the subflow has an RTT sample: unknown, not zero.
            series["srtt_ns"].append(d["srtt_ns"] or None)
            series["in_flight_bytes"].append(d["in_flight_bytes"])
            series["bytes_acked"].append(d["bytes_acked"])
        else:
            finals[key] = d
    # A subflow closed before the final report only has samples: its last sample stands in.
    for key, d in last_sample.items():
        finals.setdefault(key, d)
    for (fid, caddr, _port), d in sorted(finals.items(), key=lambda kv: (kv[0][0], kv[1]["t_ns"])):
        f = by_id[fid]
        path = _path_of(caddr, plan.n_paths)
        subflows["flow_id"].append(fid)
        subflows["subflow"].append(f.paths.index(path) if path in f.paths else -1)
        subflows["path"].append(path)
        subflows["bytes_sent"].append(d["bytes_sent"])
        subflows["bytes_acked"].append(d["bytes_acked"])
        subflows["bytes_retransmitted"].append(d["bytes_retrans"])
        subflows["rto_count"].append(d.get("rto_count"))
        sent[fid] = sent.get(fid, 0) + d["bytes_sent"]
        retrans[fid] = retrans.get(fid, 0) + d["bytes_retrans"]

    # The receiver's progress (client for downloads, server for uploads). The kernel does not
    # expose the MPTCP out-of-order queue or the receive memory in use to the application.
    conn = {c: [] for c in CONN_COLUMNS}
    for d in sorted((d for d in client + server if d.get("type") == "conn" and d.get("flow_id") in by_id),
                    key=lambda d: (d["flow_id"], d["t_ns"])):
        conn["time_ns"].append(d["t_ns"] - epoch)
        conn["flow_id"].append(d["flow_id"])
        conn["delivered_bytes"].append(d["delivered_bytes"])
        conn["ofo_bytes"].append(None)
        conn["rcv_buffer_bytes"].append(None)
        conn["rcv_wnd_bytes"].append(None)

    flows = {c: [] for c in FLOW_COLUMNS}
    for f in plan.flows:
        r = results.get(f.flow_id, {})
        completed = bool(r.get("completed", False))
        end = r.get("end_ns")
        end_rel = end - epoch if end else None
        fct = (end - r["connect_ns"]) if completed and f.kind in ("sized", "rpc", "messages") and end and r.get("connect_ns") else None
        flows["flow_id"].append(f.flow_id)
        flows["protocol"].append(f.protocol)
        flows["scheduler"].append("linux")
        flows["cc"].append(f.cc)
        flows["direction"].append(f.direction)
        flows["app"].append(f.kind)
        flows["size_bytes"].append(f.size_bytes)
        flows["start_ns"].append(f.start_ns)
        flows["end_ns"].append(end_rel)
        flows["fct_ns"].append(fct)
        flows["completed"].append(completed)
        flows["bytes_delivered"].append(r.get("bytes_delivered", 0))
        flows["bytes_sent"].append(sent.get(f.flow_id))
        flows["bytes_retransmitted"].append(retrans.get(f.flow_id))
        flows["bytes_redundant"].append(None)

    lost, trace_drops = {}, {}
    for q in (delayer or {}).get("queues", []):
        lost[q["qnum"]] = q["lost"]
        trace_drops[q["qnum"]] = q.get("queue_drops", 0)
    links = {c: [] for c in LINK_COLUMNS}
    for lk in sorted(plan.links, key=lambda lk: lk.index):
        b, a = before.get(lk.index, {}), after.get(lk.index, {})
        links["link"].append(lk.name)
        packets = a.get("packets", 0) - b.get("packets", 0)
        links["bytes_forwarded"].append(a.get("bytes", 0) - b.get("bytes", 0) - ETH_HEADER_BYTES * packets)
        links["packets_forwarded"].append(packets)
        # Drop-tail drops of the bfifo (this run only); random losses are the delayer's, which
        # counts over its whole life, warm-up included (a few packets at most).
        # A trace link's drop-tail queue is in the delayer (whole run, warm-up included).
        links["packets_dropped"].append(a.get("drops", 0) - b.get("drops", 0)
                                        + (trace_drops.get(lk.qnum, 0) if lk.trace is not None else 0))
        links["packets_lost"].append(lost.get(lk.qnum, 0) if lk.needs_delayer else 0)
    tables = {"flows": flows, "subflows": subflows, "subflow_series": series, "conn_series": conn, "links": links}
    rpcs = {f.flow_id: f.rpc for f in plan.flows if f.rpc is not None}
    if rpcs:
        # A download's receiver is the client; an upload's (messages) the server.
        tables["blocks"] = blocks_table(rpcs, [d for d in client + server if d.get("type") == "block"],
                                        plan.duration_ns)
    return tables


def _link_series(plan: Plan, epoch: int, samples: list[dict], before: dict) -> dict[str, list]:
    """Queue occupancy of every link's bfifo over time (native/qmon.c samples)."""
    from mpsched.engines.kernel.network import Testbed

    # Trace links queue in the delayer, not in their bfifo: no series for them.
    by_leaf = {(lk.out_dev, Testbed.leaf_handle(lk)): lk for lk in plan.links if lk.trace is None}
    out: dict[str, list] = {c: [] for c in LINK_SERIES_COLUMNS}
    for d in samples:
        lk = by_leaf.get((d.get("dev"), d.get("handle")))
        t = d.get("t_ns", 0) - epoch
        if lk is None or t < 0 or t > plan.duration_ns:
            continue
        out["time_ns"].append(t)
        out["link"].append(lk.name)
        out["queue_bytes"].append(d["backlog_bytes"])
        out["queue_packets"].append(d["qlen"])
        out["dropped_packets"].append(d["drops"] - before.get(lk.index, {}).get("drops", 0))
    return out


def run_kernel(config: dict[str, Any], repetitions: int = 1, diagnostics: list[dict] | None = None) -> Tables:
    """Run a normalized configuration on the real Linux MPTCP stack `repetitions` times, each on
    a freshly built testbed; returns the simulator's tables (`flows`, `subflows`,
    `subflow_series`, `conn_series`, `links`; `blocks` for rpc flows), with a `repetition` column
    when repetitions > 1. `diagnostics`, when given, receives each repetition's diagnostics in
    order (`diag["host"]`: whether the host kept the run's time, fidelity.py)."""
    if repetitions < 1:
        raise ValueError("repetitions must be >= 1")
    plan = make_plan(config)
    for note in plan.notes:  # what the kernel runs differently from the simulator, said once a run
        _log.warning("kernel engine: %s", note)
    merged: Tables = {}
    for rep in range(repetitions):
        tables, diag = run_once(config, plan)
        if diagnostics is not None:
            diagnostics.append(diag)
        for name, cols in tables.items():
            n = len(next(iter(cols.values()), []))
            if repetitions > 1:
                cols = {"repetition": [rep] * n, **cols}
            if name not in merged:
                merged[name] = {k: list(v) for k, v in cols.items()}
            else:
                for k, v in cols.items():
                    merged[name][k].extend(v)
    return merged
