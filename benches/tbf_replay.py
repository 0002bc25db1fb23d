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
hrtimer and the NET_TX softirq); tokens carry over, so this only moves the knife-edge cases.
`--verbose` prints every skb's arrival (backlog, tokens) for `--port`. `--router` reads the
router's captures (`probe_hystart.py CELL --pcap --router`: CELL_rp<i>.pcap next to the server's)
and lists the skbs the tbf really dropped (sent on srv0, never dequeued onto rp<i>) and the
transit srv0 -> rp<i> of each round's first skb (the delayer's delay plus any wait for tokens).
`--htb` replays an htb cell instead (short11): 6.18 htb's class at rate = ceil with its bfifo
leaf (`htb_class_mode`, `htb_charge_class`: the head leaves while the class owes nothing and is
charged after; tc's default 1 600-B burst), the simulator's `transmitter = "htb"`.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
from pathlib import Path

from mpsched.engines.kernel.plan import client_addr
from mpsched.study.grid import cells

#: tc's default htb burst on this host (`rate / get_hz() + mtu`, get_hz() 10^9; fail15h).
HTB_BURST_BYTES = 1600
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


class Htb(Tbf):
    """6.18 htb, one class at rate = ceil with its bfifo leaf (short11): the head leaves while the
    class owes nothing (`htb_class_mode`: tokens >= 0 with `htb_hysteresis` off) and is charged
    after (`htb_charge_class`: tokens capped at the buffer, less the skb's time, possibly below
    zero); tc's default burst is `rate / get_hz() + mtu` = 1 600 B here (fail15h)."""

    def run_until(self, t_ns: float) -> None:
        while self.queue:
            length, arrived, tag = self.queue[0]
            head = max(arrived, self.t_c)
            have = min(self.buffer_ns, self.tokens_ns + head - self.t_c)
            dep = head if have >= 0 else head - have + self.lag_ns
            if dep > t_ns:
                return
            self.tokens_ns = min(self.buffer_ns, self.tokens_ns + dep - self.t_c) - length * self.ns_per_byte
            self.t_c = dep
            self.backlog -= length
            self.queue.popleft()
            self.departures.append((dep, tag))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("cell")
    ap.add_argument("pcap")
    ap.add_argument("--port", help="only this client port's connection (subflow)")
    ap.add_argument("--lag-us", type=float, default=0.0)
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--router", action="store_true", help="also read the router's CELL_rp<i>.pcap captures")
    ap.add_argument("--htb", action="store_true",
                    help="an htb cell: replay htb's class (1 600-B burst, charged after sending) instead of tbf")
    a = ap.parse_args()
    cell = next((c for c in cells(GRID) if c.id == a.cell), None)
    if cell is None:
        fail(f"cell: no grid cell {a.cell!r}; give one of scenarios/validation/grid, e.g. equal/tbf32k/256KiB")
    if not Path(a.pcap).is_file():
        fail(f"pcap: {a.pcap} does not exist; capture one with benches/probe_hystart.py CELL --pcap")
    skbs = data_skbs(a.pcap)
    for i, path in enumerate(cell.config["paths"]):
        link = cell.config["links"][path["down"][0]]
        if (link.get("burst_bytes") is None) != a.htb:
            raise SystemExit(f"error: {a.cell} path {path['name']}: a tbf cell needs a bucket, --htb a cell without")
        addr = client_addr(i)
        tbf = (Htb(link["rate_bps"], HTB_BURST_BYTES, link["queue_bytes"], a.lag_us * 1e3) if a.htb
               else Tbf(link["rate_bps"], link["burst_bytes"], link["queue_bytes"], a.lag_us * 1e3))
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
        print(f"path {path['name']} ({addr}, {link['rate_bps'] / 1e6:g} Mbit/s, "
              f"{'htb' if a.htb else 'tbf'} bucket {HTB_BURST_BYTES if a.htb else link['burst_bytes']} B, "
              f"limit {link['queue_bytes']} B, mss {mss})")
        listing("predicted drops (port, segment, segments, ms after the connection's first data, backlog B)", predicted)
        listing("resent skbs (port, segment, segments, ms)", resent)
        print("  new segments per slow-start round (a round starts after 5 ms without a new skb):")
        for port, counts in rounds(arrivals, mss).items():
            print(f"    {port}: {counts}")
        if a.router:
            router_view(Path(a.pcap).with_suffix(""), i, addr, skbs, mss, a.port, predicted)


def rounds(arrivals: list, mss: int) -> dict[str, list[int]]:
    """Per port, the segments first sent in each round (resends not counted)."""
    out: dict[str, list[int]] = {}
    last: dict[str, float] = {}
    for t, port, s0, s1, _iplen, again in arrivals:
        if again:
            continue
        counts = out.setdefault(port, [])
        if port not in last or t - last[port] > 5e-3:
            counts.append(0)
        counts[-1] += -(-(s1 - s0) // mss)
        last[port] = t
    return out


def router_view(base: Path, path: int, addr: str, skbs: dict, mss: int, only: str | None, predicted: list) -> None:
    """The skbs the router's tbf dropped and each round's first transit (see the module text)."""
    rtr_pcap = Path(f"{base}_rp{path}.pcap")
    if not rtr_pcap.is_file():
        fail(f"--router: {rtr_pcap} does not exist; capture with probe_hystart.py CELL --pcap --router")
    rtr = data_skbs(str(rtr_pcap))
    guessed = {(p, seg) for p, seg, *_ in predicted}
    dropped, firsts = [], []
    for (cli, port), pk in sorted(skbs.items()):
        if cli != addr or (only and port != only) or (cli, port) not in rtr:
            continue
        left: dict[tuple[int, int], collections.deque] = collections.defaultdict(collections.deque)
        for t, s0, s1, _ in rtr[(cli, port)]:
            left[(s0, s1)].append(t)
        isn, t0, prev = pk[0][1], pk[0][0], None
        for t, s0, s1, _ in pk:
            seg, ms = (s0 - isn) // mss, (t - t0) * 1e3
            if not left[(s0, s1)]:
                dropped.append((port, seg, -(-(s1 - s0) // mss), round(ms, 2), (port, seg) in guessed))
            elif prev is None or t - prev > 5e-3:   # a round's first skb (5 ms of silence before it)
                firsts.append((port, round(ms, 2), round((left[(s0, s1)][0] - t) * 1e3, 3)))
            if left[(s0, s1)]:
                left[(s0, s1)].popleft()
            prev = t
    listing("dropped by the router's tbf (port, segment, segments, ms, predicted by the replay)", dropped)
    listing("transit srv0 -> rp of each round's first skb (port, ms, transit ms)", firsts)


def listing(title: str, rows: list) -> None:
    print(f"  {title}:")
    for row in rows:
        print("   ", row)


def fail(msg: str) -> None:
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    main()
