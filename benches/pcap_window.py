"""The MPTCP-level send window in a capture of the testbed's server interface (issue 11,
tcp11h): per data skb and per ACK of one connection, the data sequence the server has sent
(`msk_nxt`, from the DSS mappings), the client's DATA_ACK and the right edge it announces
(DATA_ACK + window, `wnd_end` the furthest so far), and the room left (`wnd_end - msk_nxt`), in
segments of 1448 bytes. Times are ms from the connection's MP_CAPABLE SYN.

    .venv/bin/python benches/pcap_window.py /tmp/probe_hystart/equal_tbf32k_1MiB.pcap [--conn N] [--until-ms T]

The capture is `benches/probe_hystart.py CELL --pcap` (tcpdump -s 128 on srv0); needs tcpdump.
"""

from __future__ import annotations

import argparse
import re
import subprocess

MSS = 1448
LINE = re.compile(r"^(\d+\.\d+) IP (\S+)\.(\d+) > (\S+)\.(\d+): Flags \[([^\]]*)\](.*)$")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("pcap")
    ap.add_argument("--conn", type=int, default=0, help="the N-th MPTCP connection of the capture")
    ap.add_argument("--until-ms", type=float, default=200.0)
    a = ap.parse_args()
    text = subprocess.run(["tcpdump", "-r", a.pcap, "-tt", "-n", "-S"], capture_output=True, text=True).stdout
    rows = [m.groups() for m in map(LINE.match, text.splitlines()) if m]
    starts = [float(r[0]) for r in rows if r[4] == "5201" and "S" in r[5] and "capable" in r[6]]
    t0, t1 = starts[a.conn], starts[a.conn + 1] if a.conn + 1 < len(starts) else float("inf")
    isn: dict[str, int] = {}
    base = None
    msk_nxt = wnd_end = data_ack = 0
    for ts, _src, sport, _dst, dport, flags, rest in rows:
        t = float(ts)
        ms = (t - t0) * 1e3
        if not t0 <= t < t1 or ms > a.until_ms:
            continue
        if sport == "5201":  # the server's data skbs
            if "S" in flags:
                isn[dport] = int(re.search(r"seq (\d+)", rest).group(1))
                continue
            seq = re.search(r"seq (\d+):(\d+)", rest)
            dss = re.search(r"dss ack \d+ seq (\d+) subseq (\d+) len \d+", rest)
            if not (seq and dss) or dport not in isn:
                continue
            end = int(seq.group(2)) - isn[dport]
            dsn, subseq = int(dss.group(1)), int(dss.group(2))
            base = dsn if base is None else base
            msk_nxt = max(msk_nxt, dsn - base + end - subseq)
            print(f"{ms:8.2f} data sf:{dport} {(end - int(seq.group(1)) + isn[dport]) / MSS:4.1f} seg  "
                  f"msk_nxt {msk_nxt // MSS} wnd_end {wnd_end // MSS} room {(wnd_end - msk_nxt) // MSS}")
        else:  # the client's ACKs: DATA_ACK and the window (scaled by 256: wscale 8 on the testbed)
            dack, win = re.search(r"dss ack (\d+)", rest), re.search(r"win (\d+)", rest)
            if not (dack and win) or base is None:
                continue
            data_ack = max(data_ack, int(dack.group(1)) - base)
            edge = int(dack.group(1)) - base + int(win.group(1)) * 256
            wnd_end = max(wnd_end, edge)
            print(f"{ms:8.2f} ack  sf:{sport} data_ack {data_ack // MSS} edge {edge // MSS} "
                  f"(window {(edge - data_ack) // MSS}) room {(wnd_end - msk_nxt) // MSS}{' sack' if 'sack' in rest else ''}")


if __name__ == "__main__":
    main()
