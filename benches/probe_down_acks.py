"""Where the ACKs in flight go when the client's interface goes down (issue 15): one run of
`failover_kernel_vs_sim.py`'s `down` on the testbed while `tcpdump` records the client's WLAN
interface (p0) and the server's (srv0). Prints the WLAN subflow's ACKs (client 10.0.1.1 to the
server) around the event: the client's last ACK on p0 before it went down, the ACKs the server
still received after that, with how far they moved the acknowledged sequence, and the first
ACKs the server received after the return (how much each newly acknowledged).

    flock /tmp/mpsched-testbed-queue.lock .venv/bin/python benches/probe_down_acks.py [--out /tmp/probe_down]
    .venv/bin/python benches/probe_down_acks.py --sim [--seed 2]

Root; one kernel run (about 20 s). `--sim` prints the simulator's WLAN series around the event
and the return instead (bytes acknowledged per 10 ms sample). docs/testbed.md ("Session 11:
`down`'s in-flight ACKs") has the numbers.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchio import wait_for_namespaces, watching  # noqa: E402
from failover_kernel_vs_sim import KINDS, TOML, one_run  # noqa: E402

ACK = re.compile(r"^(\d+\.\d+) IP 10\.0\.1\.1\.(\d+) > 10\.9\.0\.1\.(\d+): Flags \[[^\]]*\], .*?ack (\d+),")
SHOWN = 12  # ACKs printed after the return


def watch(stop, out: Path) -> None:
    found = wait_for_namespaces("cs", stop)
    if found is None:
        return
    for side, dev in (("c", "p0"), ("s", "srv0")):  # the veths are moved in after the namespace exists
        while not stop.is_set() and subprocess.run(["ip", "netns", "exec", found[side], "ip", "link", "show", dev],
                                                   capture_output=True).returncode:
            time.sleep(0.005)
    procs = [subprocess.Popen(["ip", "netns", "exec", found[side], "tcpdump", "-Z", "root", "-i", dev, "-s", "128",
                               "-U", "-w", str(out / f"{dev}.pcap")], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for side, dev in (("c", "p0"), ("s", "srv0"))]
    stop.wait()
    for p in procs:
        p.terminate()
        p.wait()


def acks(pcap: Path) -> list[tuple[float, int]]:
    """(time s, ack number relative to the first) of the WLAN subflow's packets from the client:
    the busiest connection from 10.0.1.1 (the warm-up transfer's few packets are left out)."""
    dump = subprocess.run(["tcpdump", "-nn", "-tt", "-S", "-r", str(pcap), "src host 10.0.1.1 and tcp"],
                          capture_output=True, text=True).stdout
    rows = [(float(m.group(1)), (m.group(2), m.group(3)), int(m.group(4))) for m in map(ACK.match, dump.splitlines()) if m]
    if not rows:
        return []
    ports = [r[1] for r in rows]
    busiest = max(set(ports), key=ports.count)
    rows = [r for r in rows if r[1] == busiest]
    first = rows[0][2]
    return [(t, (a - first) % (1 << 32)) for t, _, a in rows]


def summarize(out: Path) -> None:
    client, server = acks(out / "p0.pcap"), acks(out / "srv0.pcap")
    if not client or not server:
        print("no capture")
        return
    # The interface went down after the client's last packet before the 3 s silence.
    gaps = [(b[0] - a[0], a) for a, b in zip(client, client[1:])]
    _, last = max(gaps)
    print(f"client's last ACK on p0 before the outage: t={last[0]:.6f} ack {last[1]}")
    after = [(t, a) for t, a in server if t > last[0] and t < last[0] + 1.0]
    base = max((a for t, a in server if t <= last[0]), default=None)
    if base is not None and after:
        top = max(a for _, a in after)
        print(f"server: {len(after)} WLAN ACKs after it (+{(after[0][0] - last[0]) * 1e3:.1f} to "
              f"+{(after[-1][0] - last[0]) * 1e3:.1f} ms), acknowledging {top - base} B more")
    else:
        print("server: no WLAN ACK after the client's last one")
    back = [(t, a) for t, a in server if t > last[0] + 2.5]
    prev = max((a for t, a in server if t <= last[0] + 2.5), default=0)
    print("server: the first WLAN ACKs after the return (time from the outage, bytes newly acknowledged):")
    for t, a in back[:SHOWN]:
        print(f"  +{(t - last[0]) * 1e3:8.1f} ms  +{max(a - prev, 0)} B")
        prev = max(prev, a)


def sim(seed: int) -> None:
    import polars as pl

    import mpsched
    from mpsched import engines
    from mpsched.scenario.normalize import to_config

    toml = TOML.format(kind="down", extra=KINDS["down"], seed=seed, at_ms=3000, wlan_gso="gso = true")
    t = engines.run_config(to_config(mpsched.loads_scenario(toml)), "sim")
    print(pl.DataFrame(t["links"]))
    sub = pl.DataFrame(t["subflow_series"]).filter(pl.col("path") == 0).sort("time_ns")
    sub = sub.with_columns(newly_acked=pl.col("bytes_acked").diff()).filter(
        pl.col("time_ns").is_between(2_960_000_000, 3_040_000_000) | (pl.col("time_ns") >= 6_000_000_000))
    moved = sub.filter((pl.col("time_ns") < 6_000_000_000) | (pl.col("newly_acked") > 0)).head(20)
    with pl.Config(tbl_rows=30):
        print(moved.select("time_ns", "bytes_acked", "newly_acked", "cwnd_bytes", "srtt_ns"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/probe_down")
    ap.add_argument("--sim", action="store_true", help="the simulator's series instead (no testbed)")
    ap.add_argument("--seed", type=int, default=2)
    a = ap.parse_args()
    if a.sim:
        sim(a.seed)
        return
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    with watching(watch, out):
        print(json.dumps(one_run("down", "kernel", 1)))
    summarize(out)


if __name__ == "__main__":
    main()
