"""What holds the surviving path back during a failover, on the kernel (issue 15): one run of
`failover_kernel_vs_sim.py`'s scenario (default `rate_collapse`) on the testbed while watchers
sample `ss -tmiM` / `ss -tmi` in the client and the server namespaces and `tcpdump` records the
client's interfaces. Prints, from the event to 1.3 s after it: the receiver's connection-level
buffer (msk `rb` = sk_rcvbuf, `r` = sk_rmem_alloc, i.e. truesize of the out-of-order queue) and
the window it advertised on each path; the sender's connection-level send buffer (msk `tb` =
sk_sndbuf, `w` = sk_wmem_queued) and its subflows' `tb` and largest cwnd.

    flock /tmp/mpsched-testbed-queue.lock .venv/bin/python benches/probe_failover_buffers.py \\
        [--kind rate_collapse] [--out /tmp/probe_failover]

Root; one kernel run (about 20 s). docs/testbed.md ("Failover") has the numbers.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchio import wait_for_namespaces, watching  # noqa: E402
from failover_kernel_vs_sim import KINDS, one_run  # noqa: E402


WATCH = "while :; do echo \"@ $(date +%s%N)\"; ss -tmiMH; ss -tmiH state established; sleep 0.005; done"
EVENT_S, SPAN_S = 3.0, 1.3  # the bench's event time; how long after it to look
SKMEM = re.compile(r"skmem:\(r(\d+),rb(\d+),t\d+,tb(\d+),f-?\d+,w(\d+)")


def watch(stop: threading.Event, out: Path) -> None:
    found = wait_for_namespaces("cs", stop)
    if found is None:
        return
    time.sleep(0.2)  # the testbed's sysctls and routes first
    procs = [subprocess.Popen(["ip", "netns", "exec", ns, "sh", "-c", WATCH], stdout=open(out / f"ss_{side}.log", "w"),
                              stderr=subprocess.DEVNULL) for side, ns in found.items()]
    for dev in ("p0", "p1"):
        procs.append(subprocess.Popen(["ip", "netns", "exec", found["c"], "tcpdump", "-Z", "root", "-i", dev, "-s", "160",
                                       "-U", "-w", str(out / f"{dev}.pcap")], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
    stop.wait()
    for p in procs:
        p.terminate()
        p.wait()


def samples(log: Path) -> list[tuple[int, str]]:
    """(wall ns, line) of every socket line of an `ss` log."""
    out, t = [], 0
    for line in log.read_text().splitlines():
        if line.startswith("@ "):
            t = int(line[2:])
        elif "skmem:" in line:
            out.append((t, line))
    return out


def msk_start_ns(rows: list[tuple[int, str]]) -> int:
    """The first sample of the MPTCP connection: about its connect(), the run's epoch + ~0.1 s."""
    return next(t for t, line in rows if "write_seq:" in line and "rcv_nxt:" in line)


def summarize(out: Path, lead_s: float, from_s: float = EVENT_S) -> None:
    cli, srv = samples(out / "ss_c.log"), samples(out / "ss_s.log")
    t0 = msk_start_ns(srv) - int(lead_s * 1e9)
    at, end = t0 + int(from_s * 1e9), t0 + int((from_s + SPAN_S) * 1e9)
    rx = [SKMEM.search(line) for t, line in cli if "write_seq:" in line and at <= t <= end]
    if rx:
        top = max(rx, key=lambda m: int(m.group(1)))
        print(f"receiver msk: rcvbuf {top.group(2)} B, rmem at most {top.group(1)} B (truesize) during the event")
    for dev in ("p0", "p1"):
        dump = subprocess.run(["tcpdump", "-nn", "-tt", "-r", str(out / f"{dev}.pcap"), "src net 10.0.0.0/16"],
                              capture_output=True, text=True).stdout
        wins = [int(m.group(2)) for m in (re.match(r"(\d+\.\d+) .* win (\d+),", x) for x in dump.splitlines())
                if m and at <= float(m.group(1)) * 1e9 <= end]
        scale = 256  # wscale 8 on the testbed's client (tcp_rmem[2] of twice the buffer)
        if wins:
            print(f"{dev}: {len(wins)} ACKs, advertised window {min(wins) * scale}-{max(wins) * scale} B")
    tx = [(t, SKMEM.search(line)) for t, line in srv if "write_seq:" in line and at <= t <= end]
    for t, m in tx[:: max(len(tx) // 8, 1)]:
        print(f"  +{(t - at) / 1e9:5.2f} s sender msk: sndbuf {m.group(3)} B, wmem {m.group(4)} B "
              f"(a blocked writer wakes below {2 * int(m.group(3)) // 3})")
    cwnd: dict[str, int] = {}
    tb: dict[str, str] = {}
    for _, line in srv:
        flags = re.search(r"flags:(\S+)", line)
        c = re.search(r" cwnd:(\d+)", line)
        if flags and c and "bytes_sent" in line:
            key = "first (MP_CAPABLE)" if flags.group(1).startswith("M") else "join"
            cwnd[key] = max(cwnd.get(key, 0), int(c.group(1)))
            tb[key] = SKMEM.search(line).group(3)
    for key in cwnd:
        print(f"sender subflow {key}: largest cwnd {cwnd[key]}, sndbuf {tb[key]} B")


def per_sample(out: Path, lead_s: float, from_s: float) -> None:
    """Every `ss` sample of the server's span: the msk's `sndbuf` and `wmem` and, per subflow (by
    the client's address: 10.0.1.1 WLAN, 10.0.2.1 LTE), its unacknowledged segments, queued but
    unsent bytes (`notsent`, data the scheduler gave it) and cwnd."""
    srv = samples(out / "ss_s.log")
    t0 = msk_start_ns(srv) - int(lead_s * 1e9)
    at, end = t0 + int(from_s * 1e9), t0 + int((from_s + SPAN_S) * 1e9)
    rows: dict[int, dict[str, str]] = {}
    head, t = "", 0
    for line in (out / "ss_s.log").read_text().splitlines():
        if line.startswith("@ "):
            t = int(line[2:])
        elif "skmem:" not in line:
            head = line  # the socket's addresses (the next line holds its details)
        elif at <= t <= end:
            row = rows.setdefault(t, {})
            if "write_seq:" in line:
                m = SKMEM.search(line)
                row["msk"] = f"sndbuf {m.group(3)} wmem {m.group(4)}"
            elif "tcp-ulp-mptcp" in line:
                name = "wlan" if "10.0.1.1:" in head else "lte" if "10.0.2.1:" in head else "?"
                u, n, c = (re.search(rf"{k}:(\d+)", line) for k in ("unacked", " notsent", " cwnd"))
                row[name] = (f"unacked {u.group(1) if u else 0} notsent {n.group(1) if n else 0} "
                             f"cwnd {c.group(1) if c else '?'}")
    for t, row in sorted(rows.items()):
        print(f"+{(t - at) / 1e6:6.0f} ms  msk {row.get('msk', '-')} | wlan {row.get('wlan', '-')} | "
              f"lte {row.get('lte', '-')}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", choices=tuple(KINDS), default="rate_collapse")
    ap.add_argument("--out", default="/tmp/probe_failover")
    ap.add_argument("--lead-s", type=float, default=0.1,
                    help="run epoch to the MPTCP socket's first sample (connect), s")
    ap.add_argument("--from-s", type=float, default=EVENT_S,
                    help="look from this run time on (the event's end: 6), s")
    ap.add_argument("--summary-only", action="store_true", help="read an earlier run's logs in --out")
    ap.add_argument("--samples", action="store_true", help="also print every sample of the span")
    a = ap.parse_args()
    out = Path(a.out)
    if a.summary_only:
        summarize(out, a.lead_s, a.from_s)
        if a.samples:
            per_sample(out, a.lead_s, a.from_s)
        return
    out.mkdir(parents=True, exist_ok=True)
    with watching(watch, out):
        print(json.dumps(one_run(a.kind, "kernel", 1)))
    summarize(out, a.lead_s, a.from_s)
    if a.samples:
        per_sample(out, a.lead_s, a.from_s)


if __name__ == "__main__":
    main()
