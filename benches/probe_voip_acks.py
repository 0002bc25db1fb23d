"""When the client acknowledges the call's frames on WLAN, on the kernel (issue 15): one run of
`voip_kernel_vs_sim.py`'s steady case beside the bulk download (`--bulk`, no event) while
`tcpdump` records the client's interfaces (and `ss` samples both namespaces:
`probe_failover_buffers.watch`). For each frame of the call that reaches the client on WLAN
(p0), the time from its arrival to the client's first ACK covering it on that subflow; printed
as a distribution, split by whether the frame arrived in order at the MPTCP level (a frame that
arrives while an earlier frame is still on its way on LTE cannot be read by the application).

    flock /tmp/mpsched-testbed-queue.lock .venv/bin/python benches/probe_voip_acks.py [--out /tmp/probe_voip_acks]
    .venv/bin/python benches/probe_voip_acks.py --analyze /tmp/probe_voip_acks   # again, no root

Root; one kernel run (about 25 s). docs/testbed.md ("Session 7: real-time messages") has the numbers.
"""

from __future__ import annotations

import argparse
import bisect
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchio import watching  # noqa: E402
from probe_failover_buffers import watch  # noqa: E402
from voip_kernel_vs_sim import one_run  # noqa: E402

LINE = re.compile(r"^(\d+\.\d+) IP (\S+) > (\S+): Flags \[([^\]]*)\](?:, seq (\d+):(\d+))?(?:, ack (\d+))?.*?"
                  r"(?:dss[^\]]*?seq (\d+))?.*length (\d+)")
FRAME_BYTES = 160


def packets(pcap: Path) -> list[dict]:
    out = subprocess.run(["tcpdump", "-r", str(pcap), "-tt", "-n", "-S"], capture_output=True,
                         text=True).stdout
    rows = []
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            t, src, dst, _flags, s0, s1, ack, _dsn, length = m.groups()
            rows.append({"t": float(t), "src": src, "dst": dst, "seq0": int(s0) if s0 else None,
                         "seq1": int(s1) if s1 else None, "ack": int(ack) if ack else None, "len": int(length)})
    return rows


def ack_delays(rows: list[dict], with_times: bool = False) -> list:
    """Per call frame arriving at the client: ms until the client's first ACK covering it
    (with `with_times`: (delay ms, the ACK's time s))."""
    call = {(r["src"], r["dst"]) for r in rows if r["len"] == FRAME_BYTES}
    out = []
    for key in call:
        data = [r for r in rows if (r["src"], r["dst"]) == key and r["len"] > 0 and r["seq1"] is not None]
        acks = [r for r in rows if (r["src"], r["dst"]) == key[::-1] and r["ack"] is not None]
        j = 0
        for d in data:
            while j < len(acks) and (acks[j]["t"] < d["t"] or acks[j]["ack"] < d["seq1"]):
                j += 1
            if j < len(acks):
                delay = (acks[j]["t"] - d["t"]) * 1e3
                out.append((delay, acks[j]["t"]) if with_times else delay)
    return out


def analyze(out: Path) -> None:
    p0, p1 = packets(out / "p0.pcap"), packets(out / "p1.pcap")
    lte_arrivals = sorted(r["t"] for r in p1 if r["len"] >= FRAME_BYTES and r["len"] % FRAME_BYTES == 0
                          and r["seq1"] is not None)
    late = [t for d, t in ack_delays(p0, True) if d > 1]
    # A WLAN frame's late ACK that leaves within 1 ms of an LTE frame's arrival: sent when the
    # application could read (the LTE frame filled the MPTCP-level hole), not by a timer.
    near = 0
    for t in late:
        i = bisect.bisect_right(lte_arrivals, t) - 1
        near += i >= 0 and t - lte_arrivals[i] < 1e-3
    print(f"p0: {len(late)} call frames acknowledged after more than 1 ms; {near} of those ACKs left "
          f"within 1 ms after a call frame arrived on LTE")
    for dev in ("p0", "p1"):
        delays = sorted(ack_delays(packets(out / f"{dev}.pcap")))
        if not delays:
            print(dev, "no call frames")
            continue
        q = statistics.quantiles(delays, n=10)
        print(f"{dev}: {len(delays)} call segments; ACK delay ms p10 {q[0]:.2f} p50 {statistics.median(delays):.2f} "
              f"p90 {q[8]:.2f} max {delays[-1]:.2f}; under 1 ms {sum(d < 1 for d in delays)}, "
              f"over 10 ms {sum(d > 10 for d in delays)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/probe_voip_acks")
    ap.add_argument("--analyze", help="only analyze the captures in this directory")
    ap.add_argument("--no-bulk", action="store_true", help="the call alone")
    a = ap.parse_args()
    if a.analyze:
        analyze(Path(a.analyze))
        return
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    with watching(watch, out):
        print(json.dumps(one_run("none", "kernel", 1, not a.no_bulk)))
        t.join()
    analyze(out)


if __name__ == "__main__":
    main()
