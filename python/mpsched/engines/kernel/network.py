"""Building and tearing down one testbed instance: namespaces, veths, routing, MPTCP endpoints,
shaping, the delayer and its iptables rules.

Everything that emulates the network lives in the router namespace (docs/testbed.md, pitfall 1): a
qdisc or NFQUEUE in the sender's namespace would be charged to the sending socket (veth keeps
the skb's socket reference until `ip_rcv_core`), and TCP Small Queues would then pace the
sender against the emulated queue. Router egress qdiscs and the FORWARD hook come after that
point. Order matters for NFQUEUE: the delayer binds its queues before the rules exist and the
rules go before the delayer stops (a queue without a listener drops, pitfall 2).
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import subprocess
import time
from pathlib import Path

from mpsched.engines.kernel.fidelity import CpuWakeHold
from mpsched.engines.kernel.host import (PREFIX, RUN_ENV, TestbedError, TestbedUnavailable, kill_namespace, native_tool,
                                  ns_sh, probe_features, sh)
from mpsched.engines.kernel.plan import ROUTER_SERVER_ADDR, SERVER_ADDR, UNLIMITED_QUEUE_BYTES, Plan, client_addr, router_addr

_log = logging.getLogger(__name__)

__all__ = ["Testbed", "shaping_commands"]

#: Ethernet header bytes a qdisc counts on top of the IP packet (skb->len at egress).
ETH_HEADER_BYTES = 14
#: Bytes per packet assumed when a queue limit is given in packets (MTU-sized frames).
FRAME_BYTES = 1514
#: htb quantum (bytes per round); the feasibility study used 60000 at up to 500 Mbit/s.
HTB_QUANTUM_BYTES = 60000
#: Set to "1" to make the endpoints send MSS-sized packets (gso_max_segs 1) instead of TSO/GSO
#: super-packets. Off by default: TCP's TSO autosizing already limits a super-packet to about
#: 1 ms of data at the flow's rate, and per-packet processing costs the delayer 2-6x the CPU
#: and collapses above ~200 Mbit/s on 2 vCPUs (benches/RESULTS.md).
SEGMENT_ENV = "MPSCHED_TESTBED_SEGMENT"
#: Real-time priority of the delayer (chrt -f 50, as in the feasibility study).
DELAYER_RT_PRIO = "50"


def _leaf_handle(lk) -> str:
    return f"{lk.path + 16:x}:"


def shaping_commands(plan: Plan) -> list[list[str]]:
    """The router's tc commands: htb at the link rate with a drop-tail bfifo leaf on the egress,
    one class on rp<i> per downlink, one class per path on rsrv for the uplinks. A downlink with
    a token bucket is a tbf (rate, burst, byte limit: its bfifo is the drop-tail queue) at the
    root of rp<i>; an uplink with one keeps its htb class, with burst and cburst the bucket
    (htb lets about one packet more through than tbf after an idle period).

    Limits are bytes in all cases: GSO super-packets would make a packet-count limit (pfifo)
    hold up to 45x more data; a packet limit becomes MTU-sized frames. A trace link queues in the
    delayer, so its bfifo never fills. Qdiscs count skb->len, the Ethernet header included: a
    link with overhead_bytes = 14 has its limit in those bytes already, others in IP bytes."""
    cmds: list[list[str]] = []
    rooted_devs: set[str] = set()
    for lk in plan.links:
        dev = lk.out_dev
        limit = lk.queue_limit_bytes if lk.trace is None else UNLIMITED_QUEUE_BYTES
        if lk.overhead_bytes != ETH_HEADER_BYTES:
            limit = min(limit + limit // 1500 * ETH_HEADER_BYTES, UNLIMITED_QUEUE_BYTES)
        limit = max(limit, FRAME_BYTES)
        rate = f"{lk.rate_bps}bit"
        if lk.burst_bytes is not None and lk.direction == "down":
            cmds.append(["tc", "qdisc", "add", "dev", dev, "root", "handle", _leaf_handle(lk), "tbf",
                         "rate", rate, "burst", str(lk.burst_bytes), "limit", str(limit)])
            continue
        if dev not in rooted_devs:
            cmds.append(["tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb"])
            rooted_devs.add(dev)
        classid = f"1:{lk.path + 1:x}"
        bucket = [] if lk.burst_bytes is None else ["burst", str(lk.burst_bytes), "cburst", str(lk.burst_bytes)]
        cmds.append(["tc", "class", "add", "dev", dev, "parent", "1:", "classid", classid, "htb",
                     "rate", rate, "ceil", rate, *bucket, "quantum", str(HTB_QUANTUM_BYTES)])
        cmds.append(["tc", "qdisc", "add", "dev", dev, "parent", classid, "handle", _leaf_handle(lk),
                     "bfifo", "limit", str(limit)])
        match = ["ip", "src", f"10.0.{lk.path + 1}.0/24"] if lk.direction == "up" else ["u32", "0", "0"]
        cmds.append(["tc", "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1",
                     "u32", "match", *match, "flowid", classid])
    return cmds


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU time a process has used so far (/proc/<pid>/stat fields 14, 15)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def client_routes(plan: Plan, path: int) -> list[list[str]]:
    """The client's routes through p<path>: its table's default, and the main table's when the
    first flow starts on it. The kernel deletes them when the interface goes down
    (`fib_sync_down_dev`); a path coming back has them added again."""
    icw = str(plan.init_cwnd_segments)
    first = plan.flows[0].paths[0] if plan.flows else 0
    via = ["default", "via", router_addr(path), "dev", f"p{path}"]
    out = [["ip", "route", "replace", *via, "table", str(100 + path), "initcwnd", icw]]
    return out + ([["ip", "route", "replace", *via, "initcwnd", icw]] if path == first else [])


class Testbed:
    """One instance: `build()`, then `start_delayer()`; `close()` always undoes everything."""

    def __init__(self, plan: Plan, workdir: Path, tag: str = "0"):
        self.plan = plan
        self.workdir = workdir
        base = f"{PREFIX}-{os.getpid()}"
        self.run_tag = base
        self.cli, self.rtr, self.srv = f"{base}-c{tag}", f"{base}-r{tag}", f"{base}-s{tag}"
        self.delayer: subprocess.Popen | None = None
        self.delayer_stats: dict | None = None
        self.delayer_cpu_s: float | None = None
        self.delayer_wall_s: float | None = None
        self._delayer_started = 0.0
        self.rules: list[list[str]] = []
        self.procs: list[subprocess.Popen] = []
        self.cpu_wake_hold = CpuWakeHold()

    # ------------------------------------------------------------------ build

    def build(self) -> None:
        if not self.cpu_wake_hold.acquire():
            _log.warning("kernel engine: cannot keep the CPUs out of halt (%s); on a VM the hypervisor's "
                         "wake-ups may then hold packets for milliseconds", self.cpu_wake_hold.reason_not_held)
        p = self.plan
        for ns in (self.cli, self.rtr, self.srv):
            r = sh("ip", "netns", "add", ns, check=False)
            if r.returncode != 0:
                raise TestbedUnavailable(f"the kernel testbed cannot run here; creating a network namespace "
                                         f"failed: {r.stderr.strip()} (needs CAP_SYS_ADMIN and CONFIG_NET_NS)")
            ns_sh(ns, "ip", "link", "set", "lo", "up")
        for i in range(p.n_paths):
            sh("ip", "link", "add", f"p{i}", "netns", self.cli, "type", "veth", "peer", "name", f"rp{i}",
               "netns", self.rtr)
            ns_sh(self.cli, "ip", "addr", "add", f"{client_addr(i)}/24", "dev", f"p{i}")
            ns_sh(self.rtr, "ip", "addr", "add", f"{router_addr(i)}/24", "dev", f"rp{i}")
        sh("ip", "link", "add", "srv0", "netns", self.srv, "type", "veth", "peer", "name", "rsrv", "netns", self.rtr)
        ns_sh(self.srv, "ip", "addr", "add", f"{SERVER_ADDR}/24", "dev", "srv0")
        ns_sh(self.rtr, "ip", "addr", "add", f"{ROUTER_SERVER_ADDR}/24", "dev", "rsrv")
        segment = os.environ.get(SEGMENT_ENV) == "1"
        for ns, devs in ((self.cli, [f"p{i}" for i in range(p.n_paths)]), (self.srv, ["srv0"]),
                         (self.rtr, [f"rp{i}" for i in range(p.n_paths)] + ["rsrv"])):
            for dev in devs:
                if segment and ns != self.rtr:
                    # Senders emit MSS-sized packets, so queues and the delayer see what the
                    # simulator models rather than TSO bursts.
                    ns_sh(ns, "ip", "link", "set", "dev", dev, "gso_max_segs", "1")
                ns_sh(ns, "ip", "link", "set", "dev", dev, "up")
        self._routing()
        self._sysctls()
        self._mptcp()
        probe_features(self.rtr, "rsrv")
        self._shaping()

    def _routing(self) -> None:
        p = self.plan
        icw = str(p.init_cwnd_segments)
        ns_sh(self.rtr, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        for i in range(p.n_paths):
            # Source policy routing: a subflow bound to path i's address leaves on p<i>.
            ns_sh(self.cli, "ip", "rule", "add", "from", client_addr(i), "table", str(100 + i))
            for cmd in client_routes(p, i):
                ns_sh(self.cli, *cmd)
        ns_sh(self.srv, "ip", "route", "add", "default", "via", ROUTER_SERVER_ADDR, "dev", "srv0",
              "initcwnd", icw)

    def _sysctls(self) -> None:
        p = self.plan
        # tcp_rmem/wmem are per namespace (net.core.rmem_max is global and untouched: we rely on
        # autotuning, docs/testbed.md pitfall 5). The kernel counts skb overhead against these limits
        # (tcp_adv_win_scale / scaling_ratio), hence twice the configured application buffer.
        rmax = max(2 * p.rcv_buf_bytes, 1 << 20)
        wmax = max(2 * p.snd_buf_bytes, 1 << 20)
        for ns in (self.cli, self.srv):
            ns_sh(ns, "sysctl", "-qw", f"net.ipv4.tcp_rmem=4096 131072 {rmax}")
            ns_sh(ns, "sysctl", "-qw", f"net.ipv4.tcp_wmem=4096 16384 {wmax}")
            # No ssthresh/RTT carried over from an earlier connection to the same host.
            ns_sh(ns, "sysctl", "-qw", "net.ipv4.tcp_no_metrics_save=1")
            ns_sh(ns, "sysctl", "-qw", "net.mptcp.enabled=1")
            ns_sh(ns, "sysctl", "-qw", f"net.mptcp.stale_loss_cnt={p.stale_loss_cnt}")

    def _mptcp(self) -> None:
        p = self.plan
        extra = max(len(p.mptcp_paths) - 1, 0)
        ns_sh(self.srv, "ip", "mptcp", "limits", "set", "subflow", "8", "add_addr_accepted", "0")
        ns_sh(self.cli, "ip", "mptcp", "limits", "set", "subflow", str(extra), "add_addr_accepted", "0")
        for i in p.mptcp_paths:
            # The kernel path manager opens a subflow from every "subflow" endpoint whose address
            # the connection does not use yet, i.e. all paths but the one the client bound to.
            args = ["ip", "mptcp", "endpoint", "add", client_addr(i), "dev", f"p{i}", "id", str(i + 1), "subflow"]
            if i in p.backup_paths:
                args.append("backup")
            ns_sh(self.cli, *args)

    def _shaping(self) -> None:
        for cmd in shaping_commands(self.plan):
            ns_sh(self.rtr, *cmd)

    @staticmethod
    def leaf_handle(lk) -> str:
        return _leaf_handle(lk)

    # ------------------------------------------------------------------ delayer

    def start_delayer(self) -> None:
        delayed = [lk for lk in self.plan.links if lk.needs_delayer]
        if not delayed:
            return
        stats = self.workdir / f"nfqdelay-{self.rtr}.json"
        cmd = [str(native_tool("nfqdelay")), "-g", "-s", str(self.plan.seed), "-o", str(stats),
               "-e", str(self.epoch_file)]
        for lk in delayed:
            trace_file = None
            if lk.trace is not None:
                trace_file = self.workdir / f"trace-{lk.qnum}.txt"
                trace_file.write_text(lk.trace_text())
            cmd += ["-q", lk.delayer_spec(str(trace_file) if trace_file else None)]
        rt = ["chrt", "-f", DELAYER_RT_PRIO] if sh("chrt", "-f", DELAYER_RT_PRIO, "true", check=False).returncode == 0 else []
        self._delayer_started = time.monotonic()
        self.delayer = subprocess.Popen(["ip", "netns", "exec", self.rtr, *rt, *cmd], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, env=self._env())
        ready, _, _ = select.select([self.delayer.stdout], [], [], 5)
        line = self.delayer.stdout.readline() if ready else ""
        if line.strip() != "ready":
            err = self._stop(self.delayer)
            self.delayer = None
            raise TestbedError(f"the delayer did not start: {err.strip() or 'no ready line in 5 s'}")
        for lk in delayed:
            rule = ["-t", "mangle", "-A", "FORWARD", "-i", lk.in_dev, "-o", lk.out_dev]
            if lk.direction == "up":
                rule += ["-s", f"10.0.{lk.path + 1}.0/24"]
            # No --queue-bypass: if the delayer dies, packets drop rather than pass undelayed.
            rule += ["-j", "NFQUEUE", "--queue-num", str(lk.qnum)]
            ns_sh(self.rtr, "iptables", *rule)
            self.rules.append(rule)

    @property
    def epoch_file(self) -> Path:
        return self.workdir / "epoch"

    def set_epoch(self, epoch_ns: int) -> None:
        """Tell the delayer the run's epoch: trace bottlenecks start their trace there, loss
        ramps and RTT spikes are timed from it."""
        timed = (lk.trace is not None or lk.loss_ramp is not None or lk.rtt_spike is not None for lk in self.plan.links)
        if self.delayer is None or not any(timed):
            return
        self.epoch_file.write_text(f"{epoch_ns}\n")
        self.delayer.send_signal(signal.SIGUSR1)

    def stop_delayer(self) -> None:
        for rule in self.rules:
            ns_sh(self.rtr, "iptables", *["-D" if a == "-A" else a for a in rule], check=False)
        self.rules = []
        if self.delayer is not None:
            self.delayer_cpu_s = _cpu_seconds(self.delayer.pid)
            self.delayer_wall_s = time.monotonic() - self._delayer_started
            self._stop(self.delayer)
            self.delayer = None
            path = self.workdir / f"nfqdelay-{self.rtr}.json"
            if path.exists():
                try:
                    self.delayer_stats = json.loads(path.read_text())
                except json.JSONDecodeError:
                    self.delayer_stats = None

    # ------------------------------------------------------------------ processes

    def spawn(self, ns: str, args: list[str], stdout: Path) -> subprocess.Popen:
        """Start a process in `ns` with stdout to a file; it is stopped by `close()`."""
        fh = open(stdout, "w")
        proc = subprocess.Popen(["ip", "netns", "exec", ns, *args], stdout=fh, stderr=subprocess.PIPE, text=True,
                                env=self._env())
        fh.close()
        self.procs.append(proc)
        return proc

    def _env(self) -> dict[str, str]:
        # Marks the run's processes, so leftovers can be found (host.run_processes).
        return {**os.environ, RUN_ENV: self.run_tag}

    @staticmethod
    def _stop(proc: subprocess.Popen, timeout: float = 5) -> str:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        err = proc.stderr.read() if proc.stderr else ""
        for f in (proc.stdout, proc.stderr):
            if f:
                f.close()
        return err or ""

    def stop_processes(self) -> dict[int, str]:
        """Stop every spawned process; returns their stderr by pid (for error messages)."""
        errs = {}
        for proc in self.procs:
            errs[proc.pid] = self._stop(proc)
        self.procs = []
        return errs

    # ------------------------------------------------------------------ counters

    def qdisc_counters(self) -> dict[int, dict[str, int]]:
        """Leaf qdisc counters per link index: bytes/packets sent and drops."""
        out: dict[int, dict[str, int]] = {}
        by_dev: dict[str, list] = {}
        for lk in self.plan.links:
            by_dev.setdefault(lk.out_dev, []).append(lk)
        for dev, lks in by_dev.items():
            r = ns_sh(self.rtr, "tc", "-s", "-j", "qdisc", "show", "dev", dev)
            qdiscs = json.loads(r.stdout or "[]")
            for lk in lks:
                h = self.leaf_handle(lk)
                q = next((q for q in qdiscs if q.get("handle") == h), {})
                out[lk.index] = {"bytes": int(q.get("bytes", 0)), "packets": int(q.get("packets", 0)),
                                 "drops": int(q.get("drops", 0))}
        return out

    # ------------------------------------------------------------------ teardown

    def close(self) -> None:
        """Undo everything, in the safe order; never raises."""
        try:
            self.stop_processes()
        finally:
            try:
                self.stop_delayer()
            finally:
                try:
                    for ns in (self.cli, self.srv, self.rtr):
                        kill_namespace(ns)
                    # The namespaces are gone with their veths, rules, qdiscs and sysctls.
                    deadline = time.monotonic() + 2
                    while time.monotonic() < deadline and any(
                            Path(f"/run/netns/{ns}").exists() for ns in (self.cli, self.srv, self.rtr)):
                        time.sleep(0.05)
                finally:
                    self.cpu_wake_hold.release()
