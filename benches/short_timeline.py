"""Where a short download's time goes on the testbed (issue 11, short11): reads the three captures
of `benches/probe_hystart.py CELL --pcap --hops --out DIR` (the client's p0, the router's rp0 and
the server's srv0; one clock for all namespaces) and prints, per flow that carried most of its
bytes on path 0:

- `hs`: the client's SYN -> SYN-ACK (the handshake's round trip, as the client sees it);
- `req`: SYN-ACK -> the request's first byte leaving the client (the client's application:
  `connect()` returns, `mpxfer` writes its request);
- `think`: the request reaching srv0 -> the first data leaving srv0 (the server's application:
  `accept()`, a thread, reading the request, `TCP_CONGESTION`, the first `send()`);
- `rounds`: the time between the first data of consecutive rounds at the client (a gap over
  10 ms starts a round), i.e. the ACK-clocked round trips;
- `last`: SYN -> the last data byte at the client; `read`: that -> the client's "done" byte (its
  `recv()` returning the last byte and the next `send()`).

Then, per kind of packet, how long the router took over the path's one-way delay (`--delay-ms`):
rp0 -> srv0 for the client's packets (the delayer, the uplink qdisc, the veth), srv0 -> rp0
for the server's (the delayer and the downlink qdisc: with a tbf bucket that holds the round,
no wait for tokens). The simulator's endpoint timing model (`[host_delay]`) was fitted to the
ACKs' path only (tcp11z); the data's pass through the delayer is not in it.

    flock /tmp/mpsched-testbed-queue.lock .venv/bin/python benches/probe_hystart.py tcp_single/tbf32k/64KiB --pcap --hops --counters --out D
    .venv/bin/python benches/short_timeline.py D --delay-ms 20
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
from collections import defaultdict
from pathlib import Path

LINE = re.compile(r"^(\d+\.\d+) IP (\S+) > (\S+): Flags \[([^\]]*)\], (.*)$")
SERVER_PORT = ".5201"
#: A gap between data packets at the client longer than this starts a new round.
ROUND_GAP_S = 0.010


def read(pcap: Path) -> list[tuple[tuple[str, str, str, str], float]]:
    """(source, destination, flags, the rest without the window) and the time of each packet."""
    txt = subprocess.run(["tcpdump", "-r", str(pcap), "-nn", "-tt", "-S"], capture_output=True, text=True,
                         check=True).stdout
    out = []
    for line in txt.splitlines():
        m = LINE.match(line)
        if m:
            t, src, dst, flags, rest = m.groups()
            out.append(((src, dst, flags, re.sub(r"win \d+, ", "", rest)), float(t)))
    return out


def length(key: tuple[str, str, str, str]) -> int:
    m = re.search(r"length (\d+)", key[3])
    return int(m.group(1)) if m else 0


def timelines(cli: list, srv: dict, min_bytes: int) -> list[dict]:
    flows: dict[str, list] = defaultdict(list)
    for key, t in cli:
        to_server = key[1].endswith(SERVER_PORT)
        flows[key[0] if to_server else key[1]].append((t, to_server, key))
    rows = []
    for conn, pk in flows.items():
        data = [(t, k) for t, up, k in pk if not up and length(k) > 0]
        if sum(length(k) for _, k in data) < min_bytes:
            continue
        syn = next(t for t, up, k in pk if up and "S" in k[2])
        synack = next(t for t, up, k in pk if not up and "S" in k[2])
        req_key, req = next((k, t) for t, up, k in pk if up and length(k) > 0)
        last = data[-1][0]
        done = next((t for t, up, k in pk if up and length(k) == 1 and t > last), None)
        srv_first = next((srv[k] for _, k in data if k in srv), None)
        starts = [data[0][0]] + [b[0] for a, b in zip(data, data[1:]) if b[0] - a[0] > ROUND_GAP_S]
        rows.append({"flow": conn, "hs": synack - syn, "req": req - synack,
                     "think": srv_first - srv[req_key] if srv_first and req_key in srv else None,
                     "rounds": [b - a for a, b in zip(starts, starts[1:])], "last": last - syn,
                     "read": done - last if done else None})
    return rows


def excess(cli: list, rtr: dict, srv: dict, delay_s: float) -> dict[str, list[float]]:
    groups: dict[str, list[float]] = defaultdict(list)
    prev: dict[tuple[str, bool], float] = {}
    for key, t in cli:
        up = key[1].endswith(SERVER_PORT)
        conn = (key[0] if up else key[1], up)
        first = t - prev.get(conn, float("-inf")) > 0.005
        prev[conn] = t
        if key not in rtr or key not in srv:
            continue
        n = length(key)
        if up:
            kind = "SYN" if "S" in key[2] else "request" if n > 0 else "ACK, first of a round" if first else "ACK"
            groups["client -> server: " + kind].append(srv[key] - rtr[key] - delay_s)
        else:
            kind = "SYN-ACK" if "S" in key[2] else ("data, first of a round" if first else "data") if n > 0 else "pure ACK"
            groups["server -> client: " + kind].append(rtr[key] - srv[key] - delay_s)
    return groups


def quantiles_us(v: list[float]) -> str:
    v = sorted(v)
    n = len(v)
    return (f"n {n:4d}  p10 {v[n // 10] * 1e6:6.0f}  median {statistics.median(v) * 1e6:6.0f}  "
            f"p90 {v[9 * n // 10] * 1e6:6.0f} us")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--delay-ms", type=float, required=True, help="path 0's one-way delay (half its rtt)")
    ap.add_argument("--min-bytes", type=int, default=20000, help="flows with fewer data bytes on path 0 are left out")
    a = ap.parse_args()
    server = [p for p in a.dir.glob("*.pcap") if p.name not in ("client_p0.pcap", "router_rp0.pcap")]
    cli = read(a.dir / "client_p0.pcap")
    # The first sighting of each packet (tcpdump text repeats only for true duplicates).
    rtr = dict(reversed(read(a.dir / "router_rp0.pcap")))
    srv = dict(reversed(read(server[0])))
    rows = timelines(cli, srv, a.min_bytes)
    ms = lambda x: "-" if x is None else f"{x * 1e3:.2f}"  # noqa: E731
    for r in rows:
        print(f"{r['flow']}: hs {ms(r['hs'])} req {ms(r['req'])} think {ms(r['think'])} "
              f"rounds {' '.join(ms(x) for x in r['rounds'])} last {ms(r['last'])} read {ms(r['read'])} ms")
    for k in ("hs", "req", "think", "last", "read"):
        v = [r[k] for r in rows if r[k] is not None]
        if v:
            print(f"{k:6s} median {statistics.median(v) * 1e3:8.3f}  min {min(v) * 1e3:8.3f}  max {max(v) * 1e3:8.3f} ms")
    rounds = [x for r in rows for x in r["rounds"]]
    if rounds:
        print(f"rounds median {statistics.median(rounds) * 1e3:8.3f}  min {min(rounds) * 1e3:8.3f}  "
              f"max {max(rounds) * 1e3:8.3f} ms")
    print(f"over the one-way delay of {a.delay_ms} ms, rp0 <-> srv0:")
    for kind, v in sorted(excess(cli, rtr, srv, a.delay_ms / 1e3).items()):
        print(f"  {kind:40s} {quantiles_us(v)}")


if __name__ == "__main__":
    main()
