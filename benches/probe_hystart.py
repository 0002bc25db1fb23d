"""The kernel's HyStart on the testbed (issue 11): run one grid cell on the kernel (root) while a
watcher in the server namespace (the client's with --client: rcv_rtt, rcv_space) reads the HyStart counters (`nstat`) and the senders' `ss -ti`
(cwnd, ssthresh, rtt) every few ms; prints the counters at the end of the run and, per
connection and subflow, where slow start ended (the first sample with a finite ssthresh).

    sudo .venv/bin/python benches/probe_hystart.py equal/htb/1MiB [--out DIR] [--client]

`--client --mem` samples the client's sockets with skmem and its MPTCP sockets (`ss -ntmiH -t -M`,
one sample per ~20 ms under load: rcvbuf, rcv_space, rcv_ssthresh, rcv_rtt over time), and with
`--pcap` also captures the server's srv0 (`DIR/server.pcap`, for benches/pcap_window.py) (tcp11q).
`--pcap --hops` also captures path 0's veth at both ends, the router's rp0 (data as the bottleneck
releases it, ACKs as they reach the router) and the client's p0 (data as the client receives it,
ACKs as they leave it): `DIR/router_rp0.pcap`, `DIR/client_p0.pcap`, for benches/ack_delay.py
(tcp11z: where each ACK's delay arises).

Wrap it in the testbed's flock (one kernel run per machine).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import threading
import time
from pathlib import Path

from benchio import wait_for_namespace
from mpsched.engines.kernel.run import run_kernel
from mpsched.study.grid import cells

GRID = Path(__file__).resolve().parent.parent / "scenarios" / "validation" / "grid"
#: The counters the watcher reads (nstat globs): HyStart's, and with --counters the loss
#: detection and recovery ones (tcp11n: where the kernel loses and resends).
HYSTART = "'TcpExtTCPHystart*'"
RECOVERY = ("'TcpExtTCPHystart*' 'TcpExtTCPLostRetransmit' 'TcpExtTCPSackRecovery' 'TcpExtTCPLossProbe*' "
            "'TcpExtTCPSpuriousRTOs' 'TcpExtTCPTimeouts' 'TcpExtTCPFastRetrans' 'TcpExtTCPSlowStartRetrans' "
            "'TcpExtTCPSACKReorder' 'TcpExtTCPDSACK*' 'TcpExtTCPSackRecoveryFail' 'TcpExtTCPLossUndo' "
            "'TcpExtTCPPartialUndo' 'TcpExtTCPSackFailures' 'TcpExtTCPLossFailures' 'TcpRetransSegs' 'TcpOutSegs' "
            "'TcpExtTCPSpuriousRtxHostQueues' 'TcpExtTCPFullUndo' 'TcpExtTCPDSACKUndo'")


def watch_cmd(counters: str, mem: bool = False) -> str:
    # --mem (tcp11q): the sockets' skmem (rb = sk_rcvbuf, r = sk_rmem_alloc) and the MPTCP
    # sockets' (`ss -M`: the msk, whose rcvbuf autotuning sizes the connection's window).
    # Without nstat (tens of ms a sample under load), about one sample per 10 ms.
    if mem:
        return "while :; do echo \"@ $(date +%s%N)\"; ss -ntmiH -t -M; done"
    return (f"while :; do echo \"@ $(date +%s%N)\"; nstat -asz {counters} | tail -n +2; "
            "ss -tinH state established; sleep 0.003; done")


def watch(stop: threading.Event, out: Path, pcap: bool, side: str = "s", counters: str = HYSTART,
          mem: bool = False) -> None:
    ns = wait_for_namespace(side, stop)
    if ns is None:
        return
    time.sleep(0.3)  # the testbed's sysctls and routes first
    with open(out, "w") as fh:
        procs = [subprocess.Popen(["ip", "netns", "exec", ns, "sh", "-c", watch_cmd(counters, mem)], stdout=fh,
                                  stderr=subprocess.DEVNULL)]
        if pcap:
            # The sender's view: data skbs as TCP hands them to srv0 (GSO, before any
            # segmentation) and the ACKs as they reach it.
            # (srv0 may not be up yet on a loaded host: wait for it.)
            cap = (f"until ip -o link show srv0 2>/dev/null | grep -q 'state UP'; do sleep 0.02; done; "
                   f"exec tcpdump -Z root -i srv0 -s 128 -U -w {out.with_suffix('.pcap')}")
            procs.append(subprocess.Popen(["ip", "netns", "exec", ns, "sh", "-c", cap], stdout=subprocess.DEVNULL,
                                          stderr=open(out.with_suffix(".tcpdump.txt"), "w")))
        stop.wait()
        time.sleep(0.2)  # the last packets into the hop captures
        for proc in procs:
            proc.terminate()
            proc.wait()


def capture_hop(stop: threading.Event, side: str, iface: str, pcap: Path) -> None:
    """tcpdump on `iface` in the namespace of `side` ("r" router, "c" client) until `stop`."""
    ns = wait_for_namespace(side, stop)
    if ns is None:
        return
    cap = (f"until ip -o link show {iface} 2>/dev/null | grep -q 'state UP'; do sleep 0.02; done; "
           f"exec tcpdump -Z root -i {iface} -s 128 -U -w {pcap} tcp")
    while True:
        proc = subprocess.Popen(["ip", "netns", "exec", ns, "sh", "-c", cap], stdout=subprocess.DEVNULL,
                                stderr=open(pcap.with_suffix(".tcpdump.txt"), "w"))
        # A namespace listed before it is mounted: `ip netns exec` fails at once; try again.
        if stop.wait(0.2) or proc.poll() is None:
            break
    stop.wait()
    time.sleep(0.2)
    proc.terminate()
    proc.wait()

def capture_router(stop: threading.Event, out: Path, devs: list[str]) -> None:
    """tcpdump on the router's egress devices (tcp11y): a tbf's departures, timestamped as the
    qdisc hands each skb to the veth (`dev_queue_xmit_nit`), one capture per device."""
    ns = wait_for_namespace("r", stop)
    if ns is None:
        return
    procs = []
    for dev in devs:
        cap = (f"until ip -o link show {dev} 2>/dev/null | grep -q 'state UP'; do sleep 0.02; done; "
               f"exec tcpdump -Z root -i {dev} -s 128 -U -w {out}_{dev}.pcap")
        procs.append(subprocess.Popen(["ip", "netns", "exec", ns, "sh", "-c", cap], stdout=subprocess.DEVNULL,
                                      stderr=open(f"{out}_{dev}.tcpdump.txt", "w")))
    stop.wait()
    for proc in procs:
        proc.terminate()
        proc.wait()


def summarize(log: Path) -> None:
    text = log.read_text()
    counters: dict[str, int] = {}
    for m in re.finditer(r"^(Tcp\w+)\s+(\d+)", text, re.M):
        counters[m.group(1)] = int(m.group(2))
    print("counters at the end:", counters or "none (all zero)")
    # One line per socket: 'ESTAB ... local peer \n\t cubic ... cwnd:N ssthresh:M ...'
    first_ss: dict[str, tuple[int, str]] = {}
    max_cwnd: dict[str, int] = {}
    last: dict[str, str] = {}
    now = 0
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("@ "):
            now = int(line[2:])
            continue
        if "cwnd:" not in line or i == 0:
            continue
        key = " ".join(lines[i - 1].split()[2:4])
        cwnd = int(re.search(r"cwnd:(\d+)", line).group(1))
        max_cwnd[key] = max(max_cwnd.get(key, 0), cwnd)
        last[key] = line
        m = re.search(r" ssthresh:(\d+)", line)
        if m and key not in first_ss:
            retr = re.search(r"retrans:\d+/(\d+)", line)
            first_ss[key] = (now, f"ssthresh {m.group(1)} cwnd {cwnd} retrans {retr.group(1) if retr else 0} "
                                  f"rtt {re.search(r'rtt:([0-9.]+)', line).group(1)}")
    def field(line: str, name: str) -> str:
        m = re.search(rf"\b{name}[: ]([^ ]+)", line)
        return m.group(1) if m else "-"

    for key in max_cwnd:
        end = last[key]
        print(f"{key}: max cwnd {max_cwnd[key]}; slow start ended: {first_ss.get(key, (0, 'never seen'))[1]}; "
              f"last sample: bytes_sent {field(end, 'bytes_sent')} bytes_retrans {field(end, 'bytes_retrans')} "
              f"sndbuf_limited {field(end, 'sndbuf_limited')} retrans {field(end, 'retrans')} "
              f"reordering {field(end, 'reordering')} reord_seen {field(end, 'reord_seen')} "
              f"dsack_dups {field(end, 'dsack_dups')} {'join' if 'flags:J' in end else ''}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("cell")
    ap.add_argument("--out", default="/tmp/probe_hystart")
    ap.add_argument("--pcap", action="store_true", help="also capture srv0 with tcpdump (LOG.pcap)")
    ap.add_argument("--hops", action="store_true",
                    help="with --pcap: also capture the router's rp0 and the client's p0 (path 0's veth)")
    ap.add_argument("--gso-off", action="store_true",
                    help="every path gso = false: the delayer segments the sender's skbs, so the client "
                         "receives (and acknowledges) single segments")
    ap.add_argument("--flows", type=int, default=0, help="run only the first N flows of the cell (0: all)")
    ap.add_argument("--client", action="store_true",
                    help="watch the client's sockets instead (the receiver: rcv_rtt, rcv_space, rcv_ssthresh)")
    ap.add_argument("--counters", action="store_true",
                    help="also read the loss-detection and recovery counters (TCPLostRetransmit, TCPSackRecovery, "
                         "TCPLossProbes, DSACKs, ...) and print the links' drops")
    ap.add_argument("--mem", action="store_true",
                    help="with --client: sample skmem and the MPTCP sockets too (rcvbuf over time; tcp11q)")
    ap.add_argument("--router", action="store_true",
                    help="also capture the router's downlink devices rp<i> (DIR/CELL_rp<i>.pcap: the qdisc's "
                         "departures, for benches/tbf_replay.py --router; tcp11y)")
    a = ap.parse_args()
    cell = next(c for c in cells(GRID) if c.id == a.cell)
    if a.gso_off:
        cell.config["paths"] = [{**p, "gso": False} for p in cell.config["paths"]]
    if a.flows:
        cell.config["flows"] = cell.config["flows"][:a.flows]
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / (a.cell.replace("/", "_") + ("_gso_off" if a.gso_off else "") + ("_client" if a.client else "") + ".log")
    stop = threading.Event()
    t = threading.Thread(target=watch, args=(stop, log, a.pcap and not a.client, "c" if a.client else "s",
                                                   RECOVERY if a.counters else HYSTART, a.mem), daemon=True)
    t.start()
    threads = [t]
    if a.client and a.mem and a.pcap:
        # tcp11q: the server's capture (the announced windows) next to the client's skmem.
        threads.append(threading.Thread(target=watch, args=(stop, out / "server.log", True), daemon=True))
        threads[-1].start()
    if a.hops and a.pcap:
        for side, iface in (("r", "rp0"), ("c", "p0")):
            name = "router_rp0" if side == "r" else "client_p0"
            threads.append(threading.Thread(target=capture_hop, args=(stop, side, iface, out / f"{name}.pcap"),
                                            daemon=True))
            threads[-1].start()

    if a.router:
        devs = [f"rp{i}" for i in range(len(cell.config["paths"]))]
        threads.append(threading.Thread(target=capture_router, args=(stop, log.with_suffix(""), devs), daemon=True))
        threads[-1].start()
    try:
        tables = run_kernel(cell.config, repetitions=1)
    finally:
        stop.set()
        for th in threads:
            th.join()
    summarize(log)
    if a.counters:
        print("links:", tables.get("links"))
        print("flows retransmitted bytes:", tables["flows"].get("bytes_retransmitted"))
        print("flows completion s:", tables["flows"].get("fct_ns"))


if __name__ == "__main__":
    main()
