"""The kernel's HyStart replayed from a capture of the testbed's server interface (issue 11,
tcp11s): per plain-TCP connection of `benches/probe_hystart.py CELL --pcap` (tcpdump on srv0:
the sender's skbs before segmentation and the client's ACKs as they reach the server), replays
Linux 6.18's `hystart_update` (net/ipv4/tcp_cubic.c) on every ACK and prints, per round, when
it started (ms from the SYN-ACK), cwnd, how long the ACK train held (ACKs within
`hystart_ack_delta_us` = 2 ms of the train's last one, from the round's first ACK) against the
threshold ((delay_min + ack_delay) / 2: the server's sockets are unpaced), the ACK that broke it
(the gap, the segments it covered and the skbs they left in), the round's minimum RTT over its
first 8 samples against the delay test, and where slow start ended in the replay.

    .venv/bin/python benches/hystart_rounds.py /tmp/probe_hystart/tcp_single_tbf32k_1MiB.pcap [--conn N] [--acks]
    .venv/bin/python benches/hystart_rounds.py CELL.pcap --path 2   # MPTCP: only the subflows of path 2 (tcp11v)

Replay assumptions: cwnd in slow start = 10 + segments delivered (cumulatively or by SACK) before
the ACK, as `tcp_slow_start` grows it; the RTT sample is `ca_rtt_us`: from the send time of the
latest skb the ACK newly delivers (never retransmitted); the replay stops at the first
retransmission (then loss recovery decides). `hystart_ack_delay` is taken as 1 ms (its cap: four
64 KB GSO bursts at the slow-start pacing rate take longer than 1 ms below 260 MB/s). ACK times
are the capture's (the stack's `tcp_mstamp` is taken a few us later).
"""

from __future__ import annotations

import argparse
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from mpsched.engines.kernel.plan import client_addr

MSS = 1448
ACK_DELTA_US = 2000
ACK_DELAY_US = 1000
LOW_WINDOW = 16
MIN_SAMPLES = 8
#: A segment on the wire as tbf counts it (skb length with the Ethernet header).
WIRE_BYTES = 1514
LINE = re.compile(r"^(\d+\.\d+) IP (\S+)\.(\d+) > (\S+)\.(\d+): Flags \[([^\]]*)\](.*)$")


@dataclass
class Conn:
    t0: float
    isn: int
    client: str = ""  # the client's address: which path the (sub)flow runs on
    client_port: str = ""  # with the address, names the (sub)flow in `ss` (probe_hystart.py's log)
    skbs: list[tuple[float, int, int, bool]] = field(default_factory=list)  # t, start, end, retransmitted
    acks: list[tuple[float, int, list[tuple[int, int]]]] = field(default_factory=list)  # t, ack, sack blocks


def parse(pcap: str, port: str) -> list[Conn]:
    run = subprocess.run(["tcpdump", "-r", pcap, "-tt", "-n", "-S"], capture_output=True, text=True)
    if run.returncode != 0:
        raise ValueError(f"pcap: tcpdump cannot read {pcap}: {run.stderr.strip()}")
    text = run.stdout
    conns: dict[str, Conn] = {}
    order: list[str] = []
    nxt: dict[str, int] = {}
    for m in map(LINE.match, text.splitlines()):
        if not m:
            continue
        ts, _src, sport, dst, dport, flags, rest = m.groups()
        t = float(ts)
        if sport == port:  # the server's segments
            if "S" in flags:
                conns[dport] = Conn(t, int(re.search(r"seq (\d+)", rest).group(1)), dst, dport)
                order.append(dport)
                nxt[dport] = 0
                continue
            seq = re.search(r"seq (\d+):(\d+)", rest)
            if dport not in conns or not seq:
                continue
            c = conns[dport]
            start, end = int(seq.group(1)) - c.isn - 1, int(seq.group(2)) - c.isn - 1
            c.skbs.append((t, start, end, start < nxt[dport]))
            nxt[dport] = max(nxt[dport], end)
        elif dport == port and sport in conns:
            c = conns[sport]
            ack = re.search(r"ack (\d+)", rest)
            if not ack or "S" in flags or "F" in flags:
                continue
            sacks = [(int(a) - c.isn - 1, int(b) - c.isn - 1) for a, b in re.findall(r"(\d+):(\d+)", rest.split("sack", 1)[1])] \
                if "sack" in rest else []
            c.acks.append((t, int(ack.group(1)) - c.isn - 1, sacks))
    return [conns[p] for p in order]


def replay(c: Conn, show_acks: bool, backlog: list | None = None, rate_bps: float = 20e6) -> str:
    """Linux `cubictcp_acked` -> `hystart_update` over the capture; returns how slow start ended."""
    sent = sorted(c.skbs)
    first_rexmit = next((t for t, _s, _e, r in sent if r), float("inf"))
    i_sent = 0
    snd_nxt = snd_una = 0
    delivered: set[int] = set()  # segment indices delivered (cum or SACK)
    tx_of: dict[int, tuple[float, int, bool]] = {}  # segment index -> send time, skb size, retransmitted
    delay_min = 0
    rnd = None
    rounds = []
    prev_delay, prev_t = 0, 0.0
    ms = lambda t: (t - c.t0) * 1e3  # noqa: E731
    for t, ack, sacks in c.acks:
        while i_sent < len(sent) and sent[i_sent][0] <= t:
            st, s, e, r = sent[i_sent]
            for k in range(s // MSS, (e + MSS - 1) // MSS):
                tx_of[k] = (st, (e - s + MSS - 1) // MSS, r or tx_of.get(k, (0, 0, False))[2])
            snd_nxt = max(snd_nxt, e)
            i_sent += 1
        if t >= first_rexmit:
            break
        cwnd = 10 + len(delivered)
        new = [k for k in range(snd_una // MSS, ack // MSS) if k not in delivered]
        for a, b in sacks:
            new += [k for k in range(a // MSS, b // MSS) if k not in delivered and k >= ack // MSS]
        if not new:
            continue
        latest = max(new, key=lambda k: tx_of.get(k, (0, 0, True))[0])
        tx = tx_of.get(latest)
        delivered.update(new)
        snd_una = max(snd_una, ack)
        if tx is None or tx[2]:
            continue
        delay = max(1, round((t - tx[0]) * 1e6))
        delay_min = delay if delay_min == 0 else min(delay_min, delay)
        if rnd is None or snd_una > rnd["end_seq"]:
            rnd = {"start": t, "last": t, "end_seq": snd_nxt, "cwnd": cwnd, "curr": 1 << 31, "n": 0, "acks": 0,
                   "broke": None, "held_ms": 0.0, "gaps": [], "segs": []}
            rounds.append(rnd)
        rnd["acks"] += 1
        gap = (t - rnd["last"]) * 1e6
        rnd["gaps"].append(gap)
        rnd["segs"].append(len(new))
        if backlog is not None and len(new) <= 4 and rnd["acks"] > 1 and delay > delay_min + 1500 \
                and prev_delay > delay_min + 1500 and not sacks:
            backlog.append((len(new), (t - prev_t) * 1e3 - len(new) * WIRE_BYTES * 8e3 / rate_bps))
        before_rtt = prev_delay
        prev_delay, prev_t = delay, t
        if show_acks:
            print(f"  {ms(t):8.2f} ack {snd_una // MSS:5d} +{len(new)} seg (skb {tx[1]}) rtt {delay / 1e3:6.2f} "
                  f"gap {gap / 1e3:5.2f} cwnd {cwnd}")
        if cwnd < LOW_WINDOW:
            continue
        thr = (delay_min + ACK_DELAY_US) >> 1
        if rnd["broke"] is None and gap <= ACK_DELTA_US:
            rnd["last"] = t
            rnd["held_ms"] = (t - rnd["start"]) * 1e3
            if (t - rnd["start"]) * 1e6 > thr:
                return summary(rounds, ms) + f"\n  -> ACK train at {ms(t):.1f} ms, cwnd {cwnd} (threshold {thr / 1e3:.2f} ms)"
        elif rnd["broke"] is None:
            # Was the skb that broke it sent on an ACK (ACK clock) or later (the writer's own send)?
            last_ack_before = max((a for a, _x, _y in c.acks if a <= tx[0]), default=c.t0)
            rnd["broke"] = (gap / 1e3, len(new), sorted({tx_of[k][1] for k in new if k in tx_of}), ms(t),
                            (tx[0] - last_ack_before) * 1e3, before_rtt / 1e3, delay / 1e3)
        rnd["curr"] = min(rnd["curr"], delay)
        if rnd["n"] < MIN_SAMPLES:
            rnd["n"] += 1
        elif rnd["curr"] > delay_min + min(max(delay_min >> 3, 4000), 16000):
            return summary(rounds, ms) + (f"\n  -> delay at {ms(t):.1f} ms, cwnd {cwnd} (min RTT {rnd['curr'] / 1e3:.2f} "
                                          f"ms > {(delay_min + min(max(delay_min >> 3, 4000), 16000)) / 1e3:.2f})")
    end = "loss (first retransmission at %.1f ms)" % ms(first_rexmit) if first_rexmit < float("inf") else "never"
    return summary(rounds, ms) + f"\n  -> no HyStart exit before {end}"


def summary(rounds: list[dict], ms) -> str:
    out = []
    for n, r in enumerate(rounds):
        big = sum(1 for g in r["gaps"][1:] if g > ACK_DELTA_US)
        segs = {}
        for s in r["segs"]:
            segs[s] = segs.get(s, 0) + 1
        broke = (f"broke at {r['broke'][3]:.1f} ms: gap {r['broke'][0]:.2f} ms, ACK of {r['broke'][1]} seg in skbs "
                 f"{r['broke'][2]} (sent {r['broke'][4]:.2f} ms after the last ACK; RTT {r['broke'][5]:.1f} -> "
                 f"{r['broke'][6]:.1f} ms)") if r["broke"] else "unbroken"
        out.append(f"  round {n:2d} at {ms(r['start']):7.1f} ms cwnd {r['cwnd']:4d} acks {r['acks']:3d} "
                   f"train held {r['held_ms']:5.1f} ms, {broke}; gaps > 2 ms: {big}; "
                   f"segs/ACK {dict(sorted(segs.items()))}; min RTT of first 8 {r['curr'] / 1e3:.2f} ms")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("pcap")
    ap.add_argument("--conn", type=int, default=-1, help="only the N-th connection (default: all)")
    ap.add_argument("--port", default="5201", help="the server's port")
    ap.add_argument("--acks", action="store_true", help="print every ACK of the replay too")
    ap.add_argument("--path", type=int, default=0,
                    help="only (sub)flows whose client address is path N's (10.0.N.1; the testbed's plan), "
                         "e.g. an MPTCP connection's subflow on path 2 (default: every path)")
    ap.add_argument("--jitter", type=float, default=0.0, metavar="RATE_BPS",
                    help="also print the ACK gaps' excess over the skbs' serialisation at RATE_BPS while the "
                         "queue is backlogged (both ACKs' RTT > delay_min + 1.5 ms), by skb size")
    a = ap.parse_args()
    if not Path(a.pcap).is_file():
        ap.error(f"pcap: no file {a.pcap}; capture one with benches/probe_hystart.py CELL --pcap")
    try:
        conns = parse(a.pcap, a.port)
    except ValueError as err:
        ap.error(str(err))
    if not conns:
        ap.error(f"pcap: no connection to port {a.port} in {a.pcap} (--port names the server's port)")
    if a.path < 0:
        ap.error(f"--path: {a.path} is not a path number; give 1 for the first path, 2 for the second, 0 for all")
    if a.path:
        conns = [c for c in conns if c.client == client_addr(a.path - 1)]
        if not conns:
            ap.error(f"--path: no connection from path {a.path}'s address {client_addr(a.path - 1)} in {a.pcap}")
    excess: list[tuple[int, float]] = []
    for n, c in enumerate(conns):
        if a.conn in (-1, n):
            print(f"connection {n} ({c.client}:{c.client_port}):")
            print(replay(c, a.acks, excess, a.jitter or 20e6))
    if a.jitter:
        for segs in sorted({s for s, _ in excess}):
            xs = sorted(x for s, x in excess if s == segs)
            q = lambda f: xs[min(len(xs) - 1, int(f * len(xs)))]  # noqa: E731
            print(f"ACKs of {segs} segments, backlogged: {len(xs)}, gap minus serialisation (ms): p10 {q(0.1):+.3f} "
                  f"p50 {q(0.5):+.3f} p90 {q(0.9):+.3f} p99 {q(0.99):+.3f} max {xs[-1]:+.3f}; "
                  f"> +0.18 ms: {sum(x > 0.18 for x in xs) / len(xs):.3f}, > +0.79 ms: {sum(x > 0.79 for x in xs) / len(xs):.3f}")


if __name__ == "__main__":
    main()
