"""When the join starts carrying data, and how much it carries per round (issue 11, share256).

Kernel side: reads the server's capture of `benches/probe_hystart.py CELL --pcap --out DIR`
(`DIR/server.pcap`, tcpdump on srv0) and prints, per MPTCP connection, for the first subflow
(MP_CAPABLE) and the join (MP_JOIN): the SYN's time, the server's first and last data skb, and
the payload bytes the server sent in each 10 ms bin from the connection's SYN (retransmissions
included), with the join's share of all bytes sent.

    .venv/bin/python benches/join_timeline.py --pcap DIR/server.pcap [--opening N]

`--opening N` also prints, for the first N connections (benches/pcap_window.py's numbering), the
first ACK after 90 ms that opens the MPTCP window by 25 segments or more (the msk's receive
buffer growing, `mptcp_rcv_space_adjust`) and the segments each subflow sends after it: in the
256 KiB htb cells the join takes the transfer's last ~27-35 segments there in the kernel's
fast mode (docs/testbed.md, share256).

Simulator side: runs the grid cell (`--cell equal/htb/256KiB`, its scenario's seed and the
next `--seeds - 1`) with a 1 ms record interval and prints the same per flow from
`subflow_series` (bytes sent per 10 ms bin, as acknowledged + in flight: a lost segment
leaves the count; cwnd in segments at each bin's end; time 0 one RTT, 20 ms, before the first
subflow's first send, where the kernel's SYN is).

    .venv/bin/python benches/join_timeline.py --cell equal/htb/256KiB --seeds 3
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

LINE = re.compile(r"^(\d+\.\d+) IP (\S+)\.(\d+) > (\S+)\.(\d+): Flags \[([^\]]*)\](.*)$")
BIN_MS = 10.0
SEG_B = 1448


def kernel(pcap: str) -> None:
    text = subprocess.run(["tcpdump", "-r", pcap, "-tt", "-n", "-S"], capture_output=True, text=True).stdout
    rows = [m.groups() for m in map(LINE.match, text.splitlines()) if m]
    conns: list[dict] = []  # each: t0, subflows {client port: dict}
    owner: dict[str, dict] = {}
    for ts, _src, sport, _dst, dport, flags, rest in rows:
        t = float(ts)
        if dport == "5201" and flags == "S":
            if "capable" in rest:
                conns.append({"t0": t, "sf": {}})
                kind = "first"
            elif "join" in rest and conns:
                kind = "join"
            else:
                continue
            c = conns[-1]
            c["sf"][sport] = {"kind": kind, "syn_ms": (t - c["t0"]) * 1e3, "bins": defaultdict(int),
                              "first_ms": None, "last_ms": None, "bytes": 0, "skbs": []}
            owner[sport] = c
            continue
        if sport != "5201" or dport not in owner:
            continue
        seq = re.search(r"seq (\d+):(\d+)", rest)
        if not seq:
            continue
        n = int(seq.group(2)) - int(seq.group(1))
        c = owner[dport]
        s = c["sf"][dport]
        ms = (t - c["t0"]) * 1e3
        s["first_ms"] = ms if s["first_ms"] is None else s["first_ms"]
        s["last_ms"] = ms
        s["bytes"] += n
        s["bins"][int(ms // BIN_MS)] += n
        s["skbs"].append((ms, n))
    for i, c in enumerate(conns):
        total = sum(s["bytes"] for s in c["sf"].values())
        if not total:
            continue
        join = [s for s in c["sf"].values() if s["kind"] == "join"]
        share = sum(s["bytes"] for s in join) / total
        print(f"conn {i}: {total} B sent, join share {share:.3f}")
        for s in c["sf"].values():
            first = f"{s['first_ms']:.1f}" if s["first_ms"] is not None else "-"
            last = f"{s['last_ms']:.1f}" if s["last_ms"] is not None else "-"
            bins = " ".join(f"{s['bins'].get(b, 0) / SEG_B:4.1f}" for b in range(0, 20))
            print(f"  {s['kind']:5s} syn {s['syn_ms']:6.1f} data {first}-{last} ms {s['bytes']:6d} B | segs/10ms: {bins}")
        for s in c["sf"].values():
            if s["kind"] == "join" and s["skbs"]:
                first = s["skbs"][:12]
                print("  join's first skbs (ms, segs): " + " ".join(f"{ms:.1f}:{n / SEG_B:.0f}" for ms, n in first))


def opening(pcap: str, n_conns: int) -> None:
    here = Path(__file__).resolve().parent
    for conn in range(n_conns):
        out = subprocess.run([sys.executable, str(here / "pcap_window.py"), pcap, "--conn", str(conn), "--until-ms", "200"],
                             capture_output=True, text=True).stdout.splitlines()
        first_sf = prev_room = None
        opened, after = None, {True: 0.0, False: 0.0}
        for line in out:
            f = line.split()
            ms, kind, sf = float(f[0]), f[1], f[2]
            first_sf = sf if first_sf is None else first_sf  # the MP_CAPABLE subflow speaks first
            room = int(line.rsplit("room", 1)[1].split()[0])
            if opened is None and kind == "ack" and ms > 90 and prev_room is not None and room - prev_room >= 25:
                opened = (ms, room)
            elif opened is not None and kind == "data":
                after[sf == first_sf] += float(f[3])
            prev_room = room
        where = f"at {opened[0]:.1f} ms, room {opened[1]} segs" if opened else "never after 90 ms"
        print(f"conn {conn}: window opens {where}; segs sent after: first {after[True]:.1f}, join {after[False]:.1f}")


def sim(cell_id: str, seeds: int) -> None:
    from mpsched.engines import run_config
    from mpsched.study.grid import cells, flow_rows

    cell = next(c for c in cells("scenarios/validation/grid") if c.id == cell_id)
    for k in range(seeds):
        cfg = {**cell.config, "seed": int(cell.config["seed"]) + k, "record": {**cell.config.get("record", {}), "sample_interval_ns": 1_000_000}}
        tables = run_config(cfg, "sim")
        flows = {r["flow_id"]: r for r in flow_rows(tables, len(cfg["paths"]))}
        s = tables["subflow_series"]
        per: dict[tuple[int, int], list] = defaultdict(list)
        for t, f, sf, acked, fl, cwnd in zip(s["time_ns"], s["flow_id"], s["subflow"], s["bytes_acked"],
                                             s["in_flight_bytes"], s["cwnd_bytes"]):
            # sent so far = acknowledged + in flight (the capture counts the server's sends)
            per[(int(f), int(sf))].append((int(t), int(acked) + int(fl), int(cwnd)))
        for fid, row in sorted(flows.items()):
            # time 0: one RTT before the first subflow's first send, as the kernel's SYN
            first0 = next((t for t, a, _ in per.get((fid, 0), []) if a > 0), 0)
            t0 = first0 - int(cfg["paths"][0]["rtt_ns"] if "rtt_ns" in cfg["paths"][0] else 20e6)
            print(f"seed {cell.config['seed'] + k} flow {fid}: fct {row['fct_s'] * 1e3:.1f} ms share "
                  f"{row['path2_share']:.3f} resent {row['retrans_bytes']}")
            for sf in (0, 1):
                pts = per.get((fid, sf), [])
                if not pts:
                    continue
                first = next(((t - t0) / 1e6 for t, a, _ in pts if a > 0), None)  # first sample with bytes sent
                bins, cw = defaultdict(int), {}
                prev = 0
                for t, a, c in pts:
                    b = int((t - t0) / 1e6 // BIN_MS)
                    bins[b] += a - prev
                    prev = a
                    cw[b] = c
                acked = " ".join(f"{bins.get(b, 0) / SEG_B:4.1f}" for b in range(0, 20))
                cws = " ".join(f"{cw.get(b, 0) // SEG_B:3d}" for b in range(0, 20))
                print(f"  sf{sf} first sent {first if first is None else round(first, 1)} ms | sent segs/10ms: {acked}")
                print(f"      cwnd segs at bin end: {cws}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pcap")
    ap.add_argument("--cell")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--opening", type=int, default=0, help="connections to check for the window's opening")
    a = ap.parse_args()
    if a.pcap:
        kernel(a.pcap)
        opening(a.pcap, a.opening)
    if a.cell:
        sim(a.cell, a.seeds)


if __name__ == "__main__":
    main()
