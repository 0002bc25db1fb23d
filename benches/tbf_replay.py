"""Replays Linux tbf over the data skbs of a server capture (issue 11, tcp11y): which skbs the
router's tbf must drop, given what the kernel's sender emitted, against the skbs the sender resent.

    .venv/bin/python benches/tbf_replay.py CELL /tmp/probe_hystart/CELL.pcap [--port P] [--lag-us D]

CELL is the grid cell the capture ran (its downlinks give rate, bucket, byte limit and framing);
the capture is `benches/probe_hystart.py CELL --pcap` (tcpdump of srv0: every skb whole, as TCP
hands it to the veth, before the delayer and the router's qdisc). Each skb reaches its path's tbf
a constant delay after it leaves srv0 (the delayer's), so the capture's times serve as the
queue's. The queue is 6.18 `sch_tbf.c` with its default bfifo child: an skb is dropped when the
bfifo's backlog plus its `qdisc_pkt_len` (every segment's headers and 14 B Ethernet header, as
`qdisc_pkt_len_init` counts a GSO skb) exceeds `limit`; the head leaves when the bucket (tokens
in ns of the rate, capped at `burst`'s time, refilled from the last departure) covers it, and
stays in the bfifo until then. This is the simulator's token-bucket link (`net/shaper.rs`,
`net/link.rs`), so a capture whose drops this predicts shows the link model is not what differs.

`--lag-us D` makes every departure that waited for tokens leave D us late (the watchdog's
hrtimer and the NET_TX softirq), to see how close to a drop each round came. `--verbose` prints
every skb's arrival (backlog, tokens) and departure for `--port`.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
from pathlib import Path

from mpsched.engines.kernel.plan import client_addr
from mpsched.study.grid import cells

GRID = Path(__file__).resolve().parent.parent / "scenarios" / "validation" / "grid"
#: ip header line (time, IP total length) then the TCP line of `tcpdump -tt -n -S -v`.
IP_LINE = re.compile(r"^(\d+\.\d+) IP \(.*length (\d+)\)")
TCP_LINE = re.compile(r"^\s+\S+\.5201 > (\d+\.\d+\.\d+\.\d+)\.(\d+): Flags \[[^\]]*\], .*?seq (\d+):(\d+).*length (\d+)")


def data_skbs(pcap: str) -> dict[tuple[str, str], list[tuple[float, int, int, int]]]:
    """(client address, port) -> the server's data skbs: (time s, first byte, end byte, IP length)."""
    txt = subprocess.run(["tcpdump", "-r", pcap, "-tt", "-n", "-S", "-v"], capture_output=True, text=True).stdout
    out: dict[tuple[str, str], list] = collections.defaultdict(list)
    ip = None
    for line in txt.splitlines():
        if m := IP_LINE.match(line):
            ip = (float(m.group(1)), int(m.group(2)))
        elif (m := TCP_LINE.match(line)) and ip is not None and int(m.group(5)) > 0:
            out[(m.group(1), m.group(2))].append((ip[0], int(m.group(3)), int(m.group(4)), ip[1]))
    return out


class Tbf:
    """6.18 tbf with its bfifo child, driven by arrival times (ns)."""

    def __init__(self, rate_bps: int, burst_bytes: int, limit_bytes: int, lag_ns: float):
        self.ns_per_byte = 8e9 / rate_bps
        self.buffer_ns = burst_bytes * self.ns_per_byte
        self.tokens_ns, self.t_c = self.buffer_ns, -1e30
        self.limit, self.lag_ns = limit_bytes, lag_ns
        self.queue: collections.deque = collections.deque()   # (len, arrival ns, tag)
        self.backlog = 0
        self.departures: list[tuple[float, object]] = []

    def run_until(self, t_ns: float) -> None:
        while self.queue:
            length, arrived, tag = self.queue[0]
            cost = length * self.ns_per_byte
            head = max(arrived, self.t_c)
            have = min(self.buffer_ns, self.tokens_ns + head - self.t_c)
            dep = head if have >= cost else self.t_c + cost - self.tokens_ns + self.lag_ns
            if dep > t_ns:
                return
            self.tokens_ns = min(self.buffer_ns, self.tokens_ns + dep - self.t_c) - cost
            self.t_c = dep
            self.backlog -= length
            self.queue.popleft()
            self.departures.append((dep, tag))

    def arrive(self, t_ns: float, length: int, tag: object) -> bool:
        """False: the bfifo drops it (`backlog + len > limit`)."""
        self.run_until(t_ns)
        if self.backlog + length > self.limit:
            return False
        self.queue.append((length, t_ns, tag))
        self.backlog += length
        return True


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("cell")
    ap.add_argument("pcap")
    ap.add_argument("--port", help="only this client port's connection (subflow)")
    ap.add_argument("--lag-us", type=float, default=0.0)
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    cell = next((c for c in cells(GRID) if c.id == a.cell), None)
    if cell is None:
        raise SystemExit(f"error: no grid cell {a.cell!r} (e.g. equal/tbf32k/256KiB)")
    skbs = data_skbs(a.pcap)
    for i, path in enumerate(cell.config["paths"]):
        link = cell.config["links"][path["down"][0]]
        if link.get("burst_bytes") is None:
            raise SystemExit(f"error: {a.cell} has no token bucket on path {path['name']} (a tbf cell is needed)")
        addr = client_addr(i)
        tbf = Tbf(link["rate_bps"], link["burst_bytes"], link["queue_bytes"], a.lag_us * 1e3)
        frame = link["overhead_bytes"]
        arrivals = []
        for (cli, port), pk in skbs.items():
            if cli != addr or (a.port and port != a.port):
                continue
            isn, seen = pk[0][1], set()
            for t, s0, s1, iplen in pk:
                arrivals.append((t, port, s0 - isn, s1 - isn, iplen, s0 in seen))
                seen.add(s0)
        arrivals.sort()
        if not arrivals:
            continue
        mss = max(s1 - s0 for _, _, s0, s1, iplen, _ in arrivals if s1 - s0 < 1500 and iplen == 1500) \
            if any(iplen == 1500 for *_, iplen, _ in arrivals) else 1420
        first: dict[str, float] = {}
        predicted, resent = [], []
        for t, port, s0, s1, iplen, again in arrivals:
            first.setdefault(port, t)
            nseg = max(1, -(-(s1 - s0) // mss))
            hdr = iplen - (s1 - s0)
            length = frame + iplen + (nseg - 1) * (frame + hdr)     # qdisc_pkt_len of a GSO skb
            tag = (port, s0 // mss, nseg)
            ms = (t - first[port]) * 1e3
            if a.verbose:
                tbf.run_until(t * 1e9)
                have = min(tbf.buffer_ns, tbf.tokens_ns + t * 1e9 - tbf.t_c) / 1e6 if tbf.t_c > -1e29 else 0
                print(f"  {port} {ms:8.3f} ms seg {s0 // mss} x{nseg} len {length} backlog {tbf.backlog} "
                      f"tokens {have:.2f} ms{' (resend)' if again else ''}")
            if again:
                resent.append((port, s0 // mss, nseg, round(ms, 2)))
            if not tbf.arrive(t * 1e9, length, tag):
                predicted.append((port, s0 // mss, nseg, round(ms, 2), tbf.backlog))
        tbf.run_until(float("inf"))
        print(f"path {path['name']} ({addr}, {link['rate_bps'] / 1e6:g} Mbit/s, bucket {link['burst_bytes']} B, "
              f"limit {link['queue_bytes']} B, mss {mss})")
        print("  predicted drops (port, segment, segments, ms after the connection's first data, backlog B):")
        for d in predicted:
            print("   ", d)
        print("  resent skbs (port, segment, segments, ms):")
        for r in resent:
            print("   ", r)


if __name__ == "__main__":
    main()
