"""Where the short htb transfers lose, from the server's capture (issue 11, htb11).

`benches/probe_hystart.py CELL --pcap` captures the server's srv0: the skbs TCP hands to the
veth (GSO, before segmentation) and the client's ACKs. Per data subflow of one path this script

1. replays the router's downlink as the kernel engine builds it (`engines/kernel/network.py`
   `shaping_commands`: an htb class at the link rate, tc's default `burst 1600b`, over a
   drop-tail `bfifo` of the link's byte limit) from the skbs' send times, with htb's rule
   (`htb_class_mode`: a packet leaves when the class's tokens are >= 0, then pays its
   transmission time; `htb_hysteresis` 0), and a `bfifo` that admits an skb only while its
   backlog plus the skb's `qdisc_pkt_len` (segments x 1514 B with GSO) stays within the limit
   (`bfifo_enqueue`). It prints the skbs the replay drops and the skbs whose data the server
   later resent, with the backlog each met (the delayer's constant delay before the queue
   shifts every arrival alike, so it drops out);
2. checks Nagle's hold of the subflow's last segment: Linux `tcp_nagle_check` with Minshall's
   rule (`tcp_minshall_check`) holds a sub-MSS segment while an earlier sub-MSS segment is
   unacknowledged; the script prints the last data skb, the gap before it, the last earlier skb
   that ended in a short segment and when the ACK covering it arrived.

    .venv/bin/python benches/htb_queue_replay.py /tmp/htb11/k/equal_htb_256KiB.pcap [--path 0]
        [--rate-bps 20000000] [--limit-bytes 50000] [--mss 1420]

Times are ms from the subflow's first ACK seen at the server. The replay is exact only for
an idle class at the start and a perfectly timed htb; the testbed's timers and delayer move
a real departure by tens of microseconds, so near the limit the replay and the kernel may
disagree by a segment or two (docs/testbed.md, "Session 12: ... (htb11)").
"""

from __future__ import annotations

import argparse
import math
import re
import subprocess
from collections import defaultdict
from dataclasses import dataclass

from mpsched.engines.kernel.plan import SERVER_ADDR, client_addr

#: A full segment on the veth as the qdisc counts it: 1420 B of MPTCP payload, 80 B of
#: IP/TCP headers and options, 14 B of Ethernet header.
WIRE_BYTES = 1514
#: tc's default htb burst on the testbed (`rate / get_hz() + mtu`, docs/testbed.md Session 9).
HTB_BURST_BYTES = 1600
LINE = re.compile(r"^(\d+\.\d+) IP (\S+)\.(\d+) > (\S+)\.(\d+): Flags \[([^\]]*)\], "
                  r"(?:seq (\d+):(\d+), )?(?:ack (\d+))?")


@dataclass
class Skb:
    t_s: float
    seq: int
    end: int


def read_capture(pcap: str, addr: str) -> tuple[dict[str, list[Skb]], dict[str, list[tuple[float, int]]]]:
    """Data skbs the server sent to `addr` and the ACKs from it, per client port."""
    text = subprocess.run(["tcpdump", "-r", pcap, "-tt", "-n", "-S"], capture_output=True, text=True,
                          check=True).stdout
    data: dict[str, list[Skb]] = defaultdict(list)
    acks: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        t, src, sport, dst, dport, _flags, s0, s1, ack = m.groups()
        if src == SERVER_ADDR and dst == addr and s0 and int(s1) > int(s0):
            data[dport].append(Skb(float(t), int(s0), int(s1)))
        elif src == addr and dst == SERVER_ADDR and ack:
            acks[sport].append((float(t), int(ack)))
    return data, acks


def replay(skbs: list[Skb], rate_bps: float, limit_bytes: int, mss: int) -> list[tuple[Skb, int, bool, bool]]:
    """(skb, backlog it met, dropped by the replay, its data resent later) for each original skb."""
    credit_s = HTB_BURST_BYTES * 8 / rate_bps
    tokens_s, t_c, departures = credit_s, 0.0, []  # departures: (time, bytes) of admitted skbs
    highest, out = 0, []
    resent = [s for i, s in enumerate(skbs) if s.seq < max((x.end for x in skbs[:i]), default=0)]
    for skb in skbs:
        if skb.seq < highest:
            continue  # a retransmission: not part of the first flight's queue
        highest = max(highest, skb.end)
        size = math.ceil((skb.end - skb.seq) / mss) * WIRE_BYTES
        backlog = sum(b for d, b in departures if d > skb.t_s)
        dropped = backlog + size > limit_bytes
        if not dropped:
            head = max(skb.t_s, departures[-1][0] if departures else 0.0)
            avail = min(tokens_s + (head - t_c), credit_s)
            depart = head if avail >= 0 else head - avail
            tokens_s, t_c = min(tokens_s + (depart - t_c), credit_s) - size * 8 / rate_bps, depart
            departures.append((depart, size))
        lost = any(skb.seq <= r.seq < skb.end for r in resent)
        out.append((skb, backlog, dropped, lost))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("pcap")
    ap.add_argument("--path", type=int, default=0, help="the path whose subflows are replayed (0: path a)")
    ap.add_argument("--rate-bps", type=float, default=20e6)
    ap.add_argument("--limit-bytes", type=int, default=50_000, help="the bfifo's limit (the link's queue)")
    ap.add_argument("--mss", type=int, default=1420, help="payload bytes per segment")
    a = ap.parse_args()
    data, acks = read_capture(a.pcap, client_addr(a.path))
    for port, skbs in data.items():
        if len(skbs) < 5 or not acks[port]:
            continue
        t0 = acks[port][0][0]
        rows = replay(skbs, a.rate_bps, a.limit_bytes, a.mss)
        n_resent = sum(1 for i, s in enumerate(skbs) if s.seq < max((x.end for x in skbs[:i]), default=0))
        print(f"port {port}: {len(skbs)} skbs, {n_resent} resent, replayed peak backlog "
              f"{max(r[1] for r in rows)} B")
        for skb, backlog, dropped, lost in rows:
            if dropped or lost:
                print(f"  {(skb.t_s - t0) * 1e3:8.2f} ms  {math.ceil((skb.end - skb.seq) / a.mss)} segs  backlog "
                      f"{backlog:6d} B  {'replay drops' if dropped else '':12s}  {'resent' if lost else ''}")
        small = [s for s in skbs[:-1] if (s.end - s.seq) % a.mss]
        last, prev = skbs[-1], skbs[-2]
        if small:
            acked = next((t for t, ack in acks[port] if ack >= small[-1].end), None)
            acked_ms = f"{(acked - t0) * 1e3:.2f} ms" if acked else "never"
            print(f"  last skb {last.end - last.seq} B at {(last.t_s - t0) * 1e3:.2f} ms, "
                  f"{(last.t_s - prev.t_s) * 1e3:.2f} ms after the one before; the last earlier skb ending "
                  f"short left at {(small[-1].t_s - t0) * 1e3:.2f} ms, acknowledged at {acked_ms}")


if __name__ == "__main__":
    main()
