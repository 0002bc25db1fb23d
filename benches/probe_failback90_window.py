"""The receive window after WLAN returns from a `down` or `blackhole` (issue 15, fail15f): one
run of `failover_kernel_vs_sim.py`'s scenario on the testbed while `ss -tmiMH` samples the
client's and the server's MPTCP sockets and tcpdump records the router's ends of the client's
links (rp0 = WLAN, rp1 = LTE). Prints, per 100 ms from 300 ms before WLAN's first data again to
1.5 s after: per path the data received (Mbit/s; on WLAN also the kB of it at sequences LTE had
carried before the return: WLAN's queue from the event), the window the client advertised (kB,
scaled by the wscale of its SYN; the largest and the smallest in the bin) and the right edge it
announced (DATA_ACK + window) less the highest data sequence received on any path (kB: the
sender's room); the client's msk `rb` (sk_rcvbuf) and `r` (sk_rmem_alloc: truesize of the
out-of-order queue, the application reads at once); the server's msk `tb` (sk_sndbuf) and `w`
(sk_wmem_queued: the writer waits while it is above two thirds of `tb`). `--sim` prints the
simulator's run of the same scenario (seed 1) in the same bins from its records (window:
`conn_series`'s `rcv_wnd_bytes` less `ofo_bytes`), for comparison.

    flock /tmp/mpsched-testbed-queue.lock .venv/bin/python benches/probe_failback90_window.py \\
        --kind down [--out /tmp/probe_fb90]
    .venv/bin/python benches/probe_failback90_window.py --kind down --analyse /tmp/probe_fb90
    .venv/bin/python benches/probe_failback90_window.py --kind down --sim

Root for the kernel run (about 20 s). docs/testbed.md ("Session 9: the receive window after
the return, and the queue WLAN keeps (fail15f)") has the numbers.
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
from probe_failover_buffers import SKMEM, samples  # noqa: E402
from failover_kernel_vs_sim import KINDS, one_run  # noqa: E402

BIN_S, BEFORE_S, AFTER_S = 0.1, 0.3, 1.5
LINE = re.compile(r"^(\d+\.\d+) IP (\S+)\.(\d+) > (\S+)\.(\d+): Flags \[([^\]]*)\](.*)$")
GAP_S = 0.5  # a silence on p0 at least this long is the event
#: Only the client's msk: one `ss` a sample keeps the loop fast on a loaded machine.
WATCH = "while :; do echo \"@ $(date +%s%N)\"; ss -tmiMH; sleep 0.002; done"


def watch(stop: threading.Event, out: Path) -> None:
    """`ss` of the client's msk, and tcpdump on the router's ends of the client's links (rp0,
    rp1: the client's own p0 goes down under `down`, which ends a capture on it), started once
    both are up (`probe_failover_buffers.watch` starts tcpdump after a fixed 0.2 s, which a
    loaded machine can beat: no capture)."""
    found = wait_for_namespaces("crs", stop)
    if found is None:
        return
    while not stop.is_set() and "UP" not in subprocess.run(
            ["ip", "netns", "exec", found["r"], "ip", "-o", "link", "show", "dev", "rp1", "up"],
            capture_output=True, text=True).stdout:
        time.sleep(0.01)
    procs = [subprocess.Popen(["ip", "netns", "exec", found[side], "sh", "-c", WATCH],
                              stdout=open(out / f"ss_{side}.log", "w"), stderr=subprocess.DEVNULL) for side in "cs"]
    for dev in ("rp0", "rp1"):
        procs.append(subprocess.Popen(["ip", "netns", "exec", found["r"], "tcpdump", "-Z", "root", "-i", dev, "-s",
                                       "160", "-U", "-w", str(out / f"{dev}.pcap")], stdout=subprocess.DEVNULL,
                                      stderr=open(out / f"{dev}.err", "w")))
    stop.wait()
    for p in procs:
        p.terminate()
        p.wait()


def packets(pcap: Path) -> list[tuple]:
    text = subprocess.run(["tcpdump", "-r", str(pcap), "-tt", "-n", "-S"], capture_output=True, text=True).stdout
    return [m.groups() for m in map(LINE.match, text.splitlines()) if m]


def path_rows(pcap: Path) -> tuple[list[tuple[float, int, int]], list[tuple[float, int, int]]]:
    """(time s, data bytes, data sequence end) of the server's data skbs and (time s, window
    bytes, right edge) of the client's ACKs on one interface, data sequence numbers absolute
    (the DSS mapping's start plus the skb's offset in it, `pcap_window.py`'s arithmetic)."""
    data, acks, wscale, isn = [], [], 256, {}
    for ts, src, _sp, _dst, dport, flags, rest in packets(pcap):
        t = float(ts)
        client = src.startswith("10.0.")
        if "S" in flags:
            ws = re.search(r"wscale (\d+)", rest)
            if client and ws:
                wscale = 1 << int(ws.group(1))
            if not client:
                isn[dport] = int(re.search(r"seq (\d+)", rest).group(1))
            continue
        if client:
            dack, win = re.search(r"dss ack (\d+)", rest), re.search(r"win (\d+)", rest)
            if dack and win:
                acks.append((t, int(win.group(1)) * wscale, int(dack.group(1)) + int(win.group(1)) * wscale))
        else:
            ln = re.search(r"length (\d+)", rest)
            seq = re.search(r"seq \d+:(\d+)", rest)
            dss = re.search(r"dss ack \d+ seq (\d+) subseq (\d+)", rest)
            if ln and int(ln.group(1)) > 0 and seq and dss and dport in isn:
                rel_end = (int(seq.group(1)) - isn[dport]) % (1 << 32)
                data.append((t, int(ln.group(1)), int(dss.group(1)) + rel_end - int(dss.group(2))))
    return data, acks


def return_time(data: list[tuple[float, int, int]]) -> float:
    """WLAN's first data again: the first data skb after a silence of `GAP_S` that starts at
    least 2 s into the transfer (the event is at 3 s; the kernel engine's earlier connections
    end before the transfer's)."""
    start = data[0][0]
    return next(b[0] for a, b in zip(data, data[1:]) if b[0] - a[0] >= GAP_S and a[0] - start > 2.0)


def server_msk(out: Path) -> list[tuple[float, int, int]]:
    """(wall s, sk_sndbuf, sk_wmem_queued) of the server's msk, from its `ss` log."""
    rows = []
    for t, line in samples(out / "ss_s.log"):
        m = SKMEM.search(line)
        if m and "write_seq:" in line:
            rows.append((t / 1e9, int(m.group(3)), int(m.group(4))))
    return rows


def analyse(out: Path) -> None:
    paths = {dev: path_rows(out / f"r{dev}.pcap") for dev in ("p0", "p1")}
    t_ret = return_time(paths["p0"][0])
    msk = [(t / 1e9, SKMEM.search(line)) for t, line in samples(out / "ss_c.log") if "write_seq:" in line]
    srv = server_msk(out) if (out / "ss_s.log").exists() else []
    all_data = sorted(d for dev in paths for d in paths[dev][0])
    # Data WLAN sends after its return whose sequence was sent before the event (below the
    # highest data sequence LTE carried before the return): its queue from the event time.
    old_below = max(d[2] for d in paths["p1"][0] if d[0] < t_ret)
    top_seq = 0
    print(f"WLAN's first data again at {t_ret:.3f} (wall s); bins of {BIN_S * 1e3:.0f} ms from it")
    print("   ms | WLAN Mbit/s (old kB)  win kB max/min  room kB | LTE Mbit/s  win kB max/min  room kB"
          " | client msk rb kB  r kB | server msk sndbuf kB  wmem kB")
    k = -round(BEFORE_S / BIN_S)
    while k * BIN_S < AFTER_S:
        a, b = t_ret + k * BIN_S, t_ret + (k + 1) * BIN_S
        top_seq = max([top_seq] + [d[2] for d in all_data if d[0] < b])
        cells = []
        for dev in ("p0", "p1"):
            data, acks = paths[dev]
            rate = sum(d[1] for d in data if a <= d[0] < b) * 8 / BIN_S / 1e6
            old = sum(d[1] for d in data if a <= d[0] < b and d[2] <= old_below) / 1e3
            w = [x for x in acks if a <= x[0] < b]
            head = f"{rate:6.1f} ({old:4.0f})" if dev == "p0" else f"{rate:6.1f}"
            if w:
                room = (w[-1][2] - top_seq) / 1e3 if top_seq else float("nan")
                cells.append(f"{head}  {max(x[1] for x in w) / 1e3:6.0f} / {min(x[1] for x in w) / 1e3:4.0f}  {room:7.0f}")
            else:
                cells.append(f"{head}  {'-':>13}  {'-':>7}")
        m = [x for t, x in msk if a <= t < b and x]
        mc = f"{max(int(x.group(2)) for x in m) / 1e3:7.0f}  {max(int(x.group(1)) for x in m) / 1e3:5.0f}" if m else "-"
        sv = [x for x in srv if a <= x[0] < b]
        sc = f"{max(x[1] for x in sv) / 1e3:7.0f}  {min(x[2] for x in sv) / 1e3:5.0f}-{max(x[2] for x in sv) / 1e3:.0f}" if sv else "-"
        print(f"{k * BIN_S * 1e3:5.0f} | " + " | ".join(cells) + f" | {mc} | {sc}")
        k += 1


def simulate(kind: str) -> None:
    import polars as pl

    import mpsched
    from mpsched import engines
    from mpsched.scenario.normalize import to_config
    import failover_kernel_vs_sim as f

    toml = f.TOML.format(kind=kind, extra=KINDS[kind], seed=1, at_ms=3000, wlan_gso="gso = true")
    t = engines.run_config(to_config(mpsched.loads_scenario(toml)), "sim")
    conn, sub = pl.DataFrame(t["conn_series"]), pl.DataFrame(t["subflow_series"])
    wlan = sub.filter(pl.col("path") == 0).sort("time_ns")
    grew = wlan.filter((pl.col("bytes_acked") > pl.col("bytes_acked").shift(1)) & (pl.col("time_ns") > 6_000_000_000))
    t_ret = int(grew["time_ns"][0])
    print(f"simulator {kind} seed 1: WLAN's first bytes acknowledged again at {t_ret / 1e6:.0f} ms")
    print("   ms | WLAN Mbit/s | LTE Mbit/s | rcv_wnd kB  ofo kB  window kB (rcv_wnd - ofo)")
    k = -round(BEFORE_S / BIN_S)
    while k * BIN_S < AFTER_S:
        a, b = t_ret + int(k * BIN_S * 1e9), t_ret + int((k + 1) * BIN_S * 1e9)
        rates = []
        for p in (0, 1):
            s = sub.filter((pl.col("path") == p) & (pl.col("time_ns") >= a) & (pl.col("time_ns") < b))
            rates.append((s["bytes_acked"].max() - s["bytes_acked"].min()) * 8 / BIN_S / 1e6 if len(s) else 0.0)
        c = conn.filter((pl.col("time_ns") >= a) & (pl.col("time_ns") < b))
        wnd = c["rcv_wnd_bytes"].max() if "rcv_wnd_bytes" in c.columns else None
        ofo = c["ofo_bytes"].max()
        win = f"{wnd / 1e3:9.0f}  {ofo / 1e3:6.0f}  {(c['rcv_wnd_bytes'] - c['ofo_bytes']).min() / 1e3:6.0f}" if wnd else f"{'-':>9}  {ofo / 1e3:6.0f}"
        print(f"{k * BIN_S * 1e3:5.0f} | {rates[0]:6.1f} | {rates[1]:6.1f} | {win}")
        k += 1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", choices=("down", "blackhole"), default="down")
    ap.add_argument("--out", default="/tmp/probe_fb90")
    ap.add_argument("--analyse", help="only analyse this directory of an earlier run")
    ap.add_argument("--sim", action="store_true", help="the simulator's run instead")
    a = ap.parse_args()
    if a.sim:
        simulate(a.kind)
        return
    if a.analyse:
        analyse(Path(a.analyse))
        return
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    with watching(watch, out):
        print(json.dumps(one_run(a.kind, "kernel", 1)))
    analyse(out)


if __name__ == "__main__":
    main()
