"""A fixed receive buffer on the kernel testbed (issue 11, cap11): the two simulator tests built on
the initial `rcv_ssthresh` (`tests::rack::with_rack_tlp_a_tail_loss_is_repaired_by_a_probe_not_the_rto`,
`tests::failover::linux_resends_the_head_data_frag_on_the_drained_subflow_...`), run as kernel
scenarios with a fixed receive buffer (`rcv_buf_autotuning = false`, `rcv_buf` = `--rcvbuf`: since
kern11 the kernel engine sets the client's SO_RCVBUF to the value whose window is `rcv_buf`,
engines/kernel/rcvbuf.py; cap11's numbers were taken with SO_RCVBUF = `--rcvbuf` itself, through a
probe-only hook that is gone) or autotuned (`--rcvbuf 0`), while tcpdump records the
client's interfaces. Prints, per connection, the client's ACKs (time from the SYN, segments
covered, window) and the server's data (first sends, resends), in ms.

    flock /tmp/mpsched-testbed-queue.lock .venv/bin/python benches/probe_rcvbuf.py rack \\
        --rcvbuf 6291456 [--out /tmp/probe_rcvbuf]
    flock /tmp/mpsched-testbed-queue.lock .venv/bin/python benches/probe_rcvbuf.py failover --rcvbuf 262144

`rack`: plain TCP, 100 Mbit/s, 20 ms RTT, downloads of 20 segments (28 960 bytes), the first
transmission of the last two dropped in the router (`iptables -t mangle -m connbytes` ahead of the delayer: the
connection's reply packets 21 and 22 = SYN-ACK, the ACK of the request, data 1..20; the endpoints send single
segments, MPSCHED_TESTBED_SEGMENT=1). `failover`: MPTCP `linux` over 20 Mbit/s 20 ms + 10 Mbit/s
60 ms, a bulk download, path `a` blackholed both ways at 2 s for 3 s. Root; about 10-15 s each.
docs/testbed.md ("The initial rcv_ssthresh of a fixed buffer") has the numbers. `rack` also prints,
from the server's capture, each resend's time after the last ACK of new data reached the server
(the tail loss probe's timeout; tcp11m); `--lost 1` drops only the last segment (one segment out:
the delayed-ACK allowance and the RTO clamp). docs/testbed.md ("Session 6: the tail loss probe's
timing and short tbf transfers (tcp11m)").
"""

from __future__ import annotations

import argparse
import bisect
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchio import wait_for_namespaces  # noqa: E402
from mpsched.engines.kernel.run import SERVER_PORT, run_kernel  # noqa: E402
from mpsched.scenario import Scenario  # noqa: E402
from mpsched.scenario.normalize import to_config  # noqa: E402

MSS = 1448
RACK = """
duration = "6s"
seed = 1
[[paths]]
name = "a"
rate = "100Mbit"
rtt = "20ms"
queue = "1MB"
[connection]
protocol = "tcp"
scheduler = "linux"
cc = "cubic"
rcv_buf = "{rcvbuf}B"
rcv_buf_autotuning = {autotune}
loss_recovery = "rack_tlp"
[workload]
kind = "sized"
size = "28960B"
repeat = 5
arrival = "periodic"
interval = "1s"
"""
FAILOVER = """
duration = "6s"
seed = 1
[[paths]]
name = "a"
rate = "20Mbit"
rtt = "20ms"
queue = "1MB"
[[paths]]
name = "b"
rate = "10Mbit"
rtt = "60ms"
queue = "1MB"
[connection]
scheduler = "linux"
cc = "cubic"
rcv_buf = "{rcvbuf}B"
rcv_buf_autotuning = {autotune}
join_timing = "fully_established"
[[workload]]
kind = "bulk"
stop = "5s"
[[path_events]]
kind = "blackhole"
path = "a"
at = "2s"
duration = "3s"
"""
# The connection's reply-direction packets 21-22: data segments 19 and 20 (see the module doc),
# dropped ahead of the delayer's NFQUEUE: conntrack counts a packet when it enters the router, so
# a rule after the 10 ms delay reads the count of the whole flight (it dropped data 11-20).
DROP = ["iptables", "-t", "mangle", "-I", "FORWARD", "1", "-p", "tcp", "--sport", str(SERVER_PORT), "-m", "connbytes",
        "--connbytes", "21:22", "--connbytes-dir", "reply", "--connbytes-mode", "packets", "-j", "DROP"]


def watch(stop: threading.Event, out: Path, n_paths: int, drop: bool) -> None:
    found = wait_for_namespaces("crs", stop)
    if found is None:
        return
    # tcpdump fails on a link not up yet (under load the testbed takes longer to build).
    for ns, dev in [(found["c"], f"p{i}") for i in range(n_paths)] + [(found["s"], "srv0")]:
        while not stop.is_set() and ",UP" not in subprocess.run(["ip", "netns", "exec", ns, "ip", "link", "show", dev],
                                                                capture_output=True, text=True).stdout:
            time.sleep(0.01)
    time.sleep(0.05)
    if drop:
        subprocess.run(["ip", "netns", "exec", found["r"], *DROP], check=True)
    procs = [subprocess.Popen(["ip", "netns", "exec", found["c"], "tcpdump", "-Z", "root", "-i", f"p{i}", "-s", "160",
                               "-U", "-w", str(out / f"p{i}.pcap")], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for i in range(n_paths)]
    # The server's side sees what it sends on every path, also what the router drops.
    procs.append(subprocess.Popen(["ip", "netns", "exec", found["s"], "tcpdump", "-Z", "root", "-i", "srv0", "-s", "160",
                                   "-U", "-w", str(out / "srv0.pcap")], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL))
    ss = "while :; do echo \"@ $(date +%s%N)\"; ss -tmiH state established; sleep 0.02; done"
    procs.append(subprocess.Popen(["ip", "netns", "exec", found["c"], "sh", "-c", ss], stdout=open(out / "ss_c.log", "w"),
                                  stderr=subprocess.DEVNULL))
    stop.wait()
    time.sleep(0.3)
    for p in procs:
        p.terminate()
        p.wait()


LINE = re.compile(r"^(\d+\.\d+) IP (\S+)\.(\d+) > (\S+)\.(\d+): Flags \[([^\]]*)\](.*)$")


def rows(pcap: Path) -> list[tuple]:
    text = subprocess.run(["tcpdump", "-r", str(pcap), "-tt", "-n", "-S"], capture_output=True, text=True).stdout
    return [m.groups() for m in map(LINE.match, text.splitlines()) if m]


def probe_report(out: Path) -> None:
    """Per connection, at the server (srv0): how long after the last ACK of new data arrived,
    and after the last first transmission left, each resend left (the tail loss probe first)."""
    conns: dict[str, list] = {}
    for r in rows(out / "srv0.pcap"):
        conns.setdefault(r[4] if r[2] == str(SERVER_PORT) else r[2], []).append(r)
    for port, rs in conns.items():
        synack = next((r for r in rs if r[5] == "S."), None)
        if not synack:
            continue
        isn = int(re.search(r"seq (\d+)", synack[6]).group(1))
        seen: set[int] = set()
        last_ack, last_first, out_rows = (0.0, 0.0), 0.0, []
        for ts, _s, sport, _d, _dp, flags, rest in rs:
            t = float(ts)
            if sport == str(SERVER_PORT):
                m = re.search(r"seq (\d+):", rest)
                if m and (a := int(m.group(1)) - isn) in seen:
                    out_rows.append(f"seg {(a - 1) // MSS + 1} resent {(t - last_ack[0]) * 1e3:.2f} ms after the ACK of "
                                    f"{last_ack[1]:.0f} segs, {(t - last_first) * 1e3:.2f} ms after the last new data")
                elif m:
                    seen.add(a)
                    last_first = t
            elif (m := re.search(r"ack (\d+)", rest)) and "S" not in flags and "sack" not in rest:
                acked = (int(m.group(1)) - isn - 1) / MSS
                if acked > last_ack[1]:
                    last_ack = (t, acked)
        print(f"-- connection {port} (server side): " + "; ".join(out_rows))


def rack_report(out: Path) -> None:
    """Per connection: the client's ACKs and the server's data, ms from the SYN."""
    conns: dict[str, list] = {}
    for r in rows(out / "p0.pcap"):
        port = r[2] if r[4] == str(SERVER_PORT) else r[4]
        conns.setdefault(port, []).append(r)
    for port, rs in conns.items():
        syn = next((r for r in rs if r[5] == "S"), None)
        synack = next((r for r in rs if r[5] == "S." ), None)
        if not syn or not synack:
            continue
        t0 = float(syn[0])
        isn = int(re.search(r"seq (\d+)", synack[6]).group(1))
        seen: set[int] = set()
        ev = []
        for ts, _s, sport, _d, _dp, flags, rest in rs:
            ms = (float(ts) - t0) * 1e3
            win = re.search(r"win (\d+)", rest)
            if sport == str(SERVER_PORT):
                m = re.search(r"seq (\d+):(\d+)", rest)
                if m:
                    a, b = int(m.group(1)) - isn, int(m.group(2)) - isn
                    k = (a - 1) // MSS + 1
                    ev.append(f"{ms:7.2f} data seg {k}{' RESENT' if a in seen else ''}")
                    seen.add(a)
            else:
                m = re.search(r"ack (\d+)", rest)
                if m and "S" not in flags:
                    acked = (int(m.group(1)) - isn - 1) / MSS
                    sack = " sack" if "sack" in rest else ""
                    ev.append(f"{ms:7.2f} ack {acked:5.2f} seg win {win.group(1) if win else '?'}{sack}")
        print(f"-- connection {port}: {len(ev)} events")
        print("\n".join(ev))


class Ranges:
    """Disjoint half-open byte ranges sent on one path."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def overlaps(self, a: int, b: int) -> bool:
        k = bisect.bisect_right(self.starts, a) - 1
        if k >= 0 and self.ends[k] > a:
            return True
        return k + 1 < len(self.starts) and self.starts[k + 1] < b

    def add(self, a: int, b: int) -> None:
        k = bisect.bisect_right(self.starts, a) - 1
        if k >= 0 and self.ends[k] >= a:
            self.ends[k] = max(self.ends[k], b)
        else:
            self.starts.insert(k + 1, a)
            self.ends.insert(k + 1, b)


def failover_report(out: Path, from_ms: float = 1950.0, to_ms: float = 3300.0) -> None:
    """The server's data on both paths around the blackhole (at 2 s), ms from the MP_CAPABLE
    SYN: bursts of new data, subflow-level resends (TCP sequence sent before on that subflow)
    and MPTCP reinjections (data sequence sent before on another subflow), in kB of the
    connection's data (the server's capture); and the client's ACKs on each path."""
    pkts = []
    for r in rows(out / "srv0.pcap"):
        client = r[3] if r[2] == str(SERVER_PORT) else r[1]
        pkts.append((float(r[0]), int(client.split(".")[2]) - 1, r))
    t0 = next(t for t, _i, r in pkts if r[5] == "S" and "capable" in r[6])
    isn: dict[tuple[int, str], int] = {}
    sub_max: dict[int, int] = {}
    base, last_ack0 = None, None
    sent = {0: Ranges(), 1: Ranges()}
    last = None
    acks = {0: 0, 1: 0}
    for t, i, (_ts, _s, sport, _d, dport, flags, rest) in pkts:
        ms = (t - t0) * 1e3
        if sport == str(SERVER_PORT) and "S" in flags:
            isn[(i, dport)] = int(re.search(r"seq (\d+)", rest).group(1))
            continue
        if sport != str(SERVER_PORT):
            if from_ms <= ms <= to_ms and "dss ack" in rest:
                acks[i] += 1
                last_ack0 = ms if i == 0 else last_ack0
            continue
        seq = re.search(r"seq (\d+):(\d+)", rest)
        dss = re.search(r"seq (\d+) subseq (\d+) len \d+", rest)
        if not seq or not dss or (i, dport) not in isn:
            continue
        a, b = int(seq.group(1)) - isn[(i, dport)], int(seq.group(2)) - isn[(i, dport)]
        d0 = int(dss.group(1)) + a - int(dss.group(2))
        base = d0 if base is None else base
        d0 -= base
        if a < sub_max.get(i, 0):
            kind = "resend"
        else:
            kind = "reinject" if sent[1 - i].overlaps(d0, d0 + b - a) else "new"
        sub_max[i] = max(sub_max.get(i, 0), b)
        sent[i].add(d0, d0 + b - a)
        if not from_ms <= ms <= to_ms:
            continue
        key = (i, kind)
        if last and last[0] == key and ms - last[2] < 2.0:
            last[2], last[4] = ms, d0 + b - a
            last[5] += b - a
            continue
        if last:
            _burst(last)
        last = [key, ms, ms, d0, d0 + b - a, b - a]
    if last:
        _burst(last)
    print("client ACKs with a DATA_ACK in the window, per path:", acks, "; the last on path 0 reached the server at",
          last_ack0 and round(last_ack0, 1), "ms")


def _burst(b: list) -> None:
    (path, kind), t0, t1, d0, d1, n = b
    print(f"{t0:8.1f}-{t1:8.1f} ms path {path} {kind:8s} dsn {d0 / 1e3:9.1f}-{d1 / 1e3:9.1f} kB ({n} B)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=("rack", "failover"))
    ap.add_argument("--rcvbuf", type=int, default=6 << 20,
                    help="the scenario's rcv_buf (the window) in bytes, rcv_buf_autotuning = false; 0 = autotuning")
    ap.add_argument("--out", default="/tmp/probe_rcvbuf")
    ap.add_argument("--lost", type=int, choices=(1, 2), default=2,
                    help="rack: drop the first transmission of the last 1 or 2 of the 20 segments")
    a = ap.parse_args()
    out = Path(a.out) / f"{a.case}_{a.rcvbuf}"
    out.mkdir(parents=True, exist_ok=True)
    text = (RACK if a.case == "rack" else FAILOVER).format(rcvbuf=a.rcvbuf or (6 << 20),
                                                              autotune="true" if a.rcvbuf == 0 else "false")
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as fh:
        fh.write(text)
    cfg = to_config(next(iter(Scenario.load(fh.name).expand())))
    if a.case == "rack":
        os.environ["MPSCHED_TESTBED_SEGMENT"] = "1"
        DROP[DROP.index("21:22")] = f"{23 - a.lost}:22"
    stop = threading.Event()
    t = threading.Thread(target=watch, args=(stop, out, len(cfg["paths"]), a.case == "rack"), daemon=True)
    t.start()
    try:
        tables = run_kernel(cfg, repetitions=1)
    finally:
        stop.set()
        t.join()
    print("FCT ms:", [x and round(x / 1e6, 1) for x in tables["flows"].get("fct_ns", [])])
    sub = tables["subflows"]
    print("subflows:", {k: sub[k] for k in ("path", "rto_count", "bytes_retransmitted") if k in sub})
    (rack_report if a.case == "rack" else failover_report)(out)
    if a.case == "rack":
        probe_report(out)


if __name__ == "__main__":
    sys.exit(main())
