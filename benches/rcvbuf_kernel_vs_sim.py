"""A fixed receive (kern11) or send buffer (kern11b) on both engines (issue 11): transfers whose
rate the receive window or the send buffer limits, with `rcv_buf_autotuning = false` (the kernel engine sets SO_RCVBUF =
ceil(rcv_buf x 128/197), engines/kernel/rcvbuf.py), with the naive SO_RCVBUF = rcv_buf (run as
the scenario whose formula gives it: rcv_buf x 197/128, against the simulator's rcv_buf) and with
autotuning. Prints per case the kernel's and the simulator's FCTs (ms) and the median error.

    flock /tmp/mpsched-testbed-queue.lock .venv/bin/python benches/rcvbuf_kernel_vs_sim.py [--reps 3] \
        [--cases tcp,mptcp,table_a,tcp_snd,mptcp1_snd,mptcp_snd] [--modes fixed,naive,autotune] [--ss] [--upload]

Cases: `tcp`: one 100 Mbit/s path, 40 ms RTT, 1 MB queue, 4 MiB downloads, rcv_buf 128 KiB
(a window of a quarter of the BDP: 26 Mbit/s). `mptcp`: reference table A's paths (50 Mbit/s
20 ms + 15 Mbit/s 200 ms RTT), 8 MiB downloads, rcv_buf 512 KiB at connection level. `table_a`:
the same paths, 16 MiB downloads with the default fixed 6 MiB (what tests/test_kernel.py now runs).
All three have a 16 MiB snd_buf. `tcp_snd` / `mptcp1_snd` / `mptcp_snd`: the tcp path (plain TCP / MPTCP on
that one path) and the mptcp paths with a 16 MiB rcv_buf and a send buffer that limits the rate
(snd_buf 128 KiB: 26 Mbit/s on the 40 ms path; 512 KiB on table A); "naive" there gives the kernel SO_SNDBUF = snd_buf (engines/kernel/sndbuf.py
gives about snd_buf / 2). `--ss`: sample the sender's sockets (`ss -tmiH`, `ss -MmiH`; the server's,
the client's with `--upload`) every 20 ms and print the largest sk_sndbuf (tb) and wmem_queued
(w) of the MPTCP socket and subflows. `--upload`: the same transfers as uploads.
Root; about a minute per case and mode on the kernel.
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import statistics
import subprocess
import threading
import time

from mpsched.engines import run_config
from mpsched.engines.kernel.host import PREFIX
from mpsched.engines.kernel.run import run_kernel

MS = 1_000_000


def _link(name: str, rate_bps: int, delay_ns: int, queue_bytes: int) -> dict:
    return {"name": name, "rate_bps": rate_bps, "delay_ns": delay_ns, "queue_bytes": queue_bytes}


def case(name: str, reps: int) -> dict:
    snd = {"tcp_snd": 128 << 10, "mptcp1_snd": 128 << 10, "mptcp_snd": 512 << 10}.get(name, 16 << 20)
    name = name.removesuffix("_snd") if snd < 16 << 20 else name
    if name in ("tcp", "mptcp1"):
        links = [_link("a", 100_000_000, 20 * MS, 1_000_000), _link("a.up", 100_000_000, 20 * MS, 1_000_000)]
        paths, size, rcv, gap = [{"name": "a", "down": [0], "up": [1]}], 4 << 20, 128 << 10, 3000
        proto = "tcp" if name == "tcp" else "mptcp"
    else:
        links = [_link("wlan.down", 50_000_000, 10 * MS, 250_000), _link("wlan.up", 50_000_000, 10 * MS, 250_000),
                 _link("lte.down", 15_000_000, 100 * MS, 500_000), _link("lte.up", 15_000_000, 100 * MS, 500_000)]
        paths = [{"name": "wlan", "down": [0], "up": [1]}, {"name": "lte", "down": [2], "up": [3]}]
        proto, size, rcv, gap = ("mptcp", 8 << 20, 512 << 10, 4000) if name == "mptcp" else ("mptcp", 16 << 20, 6 << 20, 5000)
    rcv = rcv if snd == 16 << 20 else 16 << 20
    return {"seed": 1, "duration_ns": (reps * gap + 2000) * MS, "links": links, "paths": paths,
            "transports": [{"protocol": proto, "scheduler": "linux", "cc": "cubic",
                            "paths": list(range(len(paths))), "rcv_buf_bytes": rcv, "snd_buf_bytes": snd,
                            "rcv_buf_autotuning": False, "join_timing": "fully_established"}],
            "flows": [{"id": i, "transport": 0, "start_ns": i * gap * MS, "app": {"kind": "sized", "size_bytes": size}}
                      for i in range(reps)]}


def variant(cfg: dict, mode: str) -> dict:
    c = copy.deepcopy(cfg)
    t = c["transports"][0]
    if mode == "autotune":
        t["rcv_buf_autotuning"] = True
    elif mode == "naive" and t["snd_buf_bytes"] < 16 << 20:  # the snd_buf whose SO_SNDBUF is about snd_buf
        t["snd_buf_bytes"] *= 2
    elif mode == "naive":  # the rcv_buf whose SO_RCVBUF is the fixed case's rcv_buf itself
        t["rcv_buf_bytes"] = -(-t["rcv_buf_bytes"] * 197 // 128)
    return c


def fcts_ms(tables: dict) -> list[float]:
    f = tables["flows"]
    return [round(x / 1e6, 1) for x, ok in zip(f["fct_ns"], f["completed"]) if ok]


def sample_sender(stop: threading.Event, peaks: dict, side: str) -> None:
    """Largest tb (sk_sndbuf) and w (sk_wmem_queued) of the sender's (namespace `side`: s, c)
    MPTCP sockets and TCP subflows."""
    ns = None
    while ns is None and not stop.is_set():
        out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        ns = next((ln.split()[0] for ln in out.splitlines() if ln.startswith(f"{PREFIX}-{os.getpid()}-{side}")), None)
        time.sleep(0.01)
    while ns and not stop.is_set():
        for kind, flag in (("msk", "-MmiH"), ("subflow", "-tmiH")):
            text = subprocess.run(["ip", "netns", "exec", ns, "ss", flag, "state", "established"],
                                  capture_output=True, text=True).stdout
            for tb, w in re.findall(r"tb(\d+),.*?w(\d+)", text):
                p = peaks.setdefault(kind, [0, 0])
                p[0], p[1] = max(p[0], int(tb)), max(p[1], int(w))
        time.sleep(0.02)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cases", default="tcp,mptcp,table_a")
    ap.add_argument("--modes", default="fixed,naive,autotune")
    ap.add_argument("--ss", action="store_true", help="sample the sender's socket memory (see the module doc)")
    ap.add_argument("--upload", action="store_true", help="the flows are uploads (the client sends)")
    a = ap.parse_args()
    for name in a.cases.split(","):
        for mode in a.modes.split(","):
            base = case(name, a.reps)
            for f in base["flows"] if a.upload else []:
                f["direction"] = "upload"
            cfg = variant(base, mode)
            # naive: the kernel with SO_RCVBUF = rcv_buf against the simulator's rcv_buf window
            stop, peaks = threading.Event(), {}
            t = threading.Thread(target=sample_sender, args=(stop, peaks, "c" if a.upload else "s"), daemon=True)
            if a.ss:
                t.start()
            try:
                k = fcts_ms(run_kernel(cfg))
            finally:
                stop.set()
            s = fcts_ms(run_config(base if mode == "naive" else cfg))
            km, sm = statistics.median(k), statistics.median(s)
            print(f"{name} {mode} rcv_buf {cfg['transports'][0]['rcv_buf_bytes']}: kernel {k} sim {s} "
                  f"median {km:.0f} / {sm:.0f} ms ({(sm - km) / km:+.0%})"
                  + (f" sender peaks [tb, w]: {peaks}" if a.ss else ""), flush=True)


if __name__ == "__main__":
    main()
