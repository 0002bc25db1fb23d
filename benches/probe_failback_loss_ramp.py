"""What WLAN's subflow is doing when a `loss_ramp` ends (issue 15, fail15g): one run of
`failover_kernel_vs_sim.py`'s `loss_ramp` scenario on the testbed while `ss -tiH` samples the
server's TCP subflows (rto, backoff, rtt, cwnd, unacked, ca state, lastsnd / lastack), then per
sample around the event's end (6 s) WLAN's subflow state; `--sim` prints the simulator's WLAN
subflow for the same seconds from its records (seed N).

    flock /tmp/mpsched-testbed-queue.lock .venv/bin/python benches/probe_failback_loss_ramp.py --out /tmp/lr
    .venv/bin/python benches/probe_failback_loss_ramp.py --analyse /tmp/lr
    .venv/bin/python benches/probe_failback_loss_ramp.py --sim --seed 1

Root for the kernel run (about 20 s). docs/testbed.md ("Session 10: ... (fail15g)") has the numbers.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchio import wait_for_namespaces, watching  # noqa: E402
from failover_kernel_vs_sim import one_run  # noqa: E402

WATCH = "while :; do echo \"@ $(date +%s%N)\"; ss -tiH state established; sleep 0.003; done"
#: The server's undo and timeout counters (lr15), every 0.3 s in a second loop so `ss` keeps its
#: rate: the last sample before the namespace goes is the run's total (within 0.3 s).
UNDO_COUNTERS = ("TcpExtTCPLossUndo TcpExtTCPFullUndo TcpExtTCPPartialUndo TcpExtTCPDSACKUndo "
                 "TcpExtTCPSpuriousRTOs TcpExtTCPDSACKRecv TcpExtTCPTimeouts TcpExtTCPLossProbes "
                 "TcpExtTCPSackRecovery TcpExtTCPDSACKOldSent")
WATCH_COUNTERS = f"while :; do echo @; nstat -asz {UNDO_COUNTERS} | tail -n +2; sleep 0.3; done"
FIELDS = {k: re.compile(rf"\b{k}:([\d./]+)") for k in
          ("rto", "backoff", "rtt", "cwnd", "unacked", "retrans", "lastsnd", "lastack", "bytes_acked", "lost")}


def watch(stop: threading.Event, out: Path) -> None:
    found = wait_for_namespaces("s", stop)
    if found is None:
        return
    p = subprocess.Popen(["ip", "netns", "exec", found["s"], "sh", "-c", WATCH],
                         stdout=open(out / "ss_s.log", "w"), stderr=subprocess.DEVNULL)
    c = subprocess.Popen(["ip", "netns", "exec", found["s"], "sh", "-c", WATCH_COUNTERS],
                         stdout=open(out / "nstat_s.log", "w"), stderr=subprocess.DEVNULL)
    stop.wait()
    for q in (p, c):
        q.terminate()
        q.wait()


def last_counters(log: Path) -> dict[str, int]:
    """The last complete `nstat` sample of the counters log (the run's totals)."""
    samples: list[dict[str, int]] = []
    for line in log.read_text().splitlines() if log.exists() else []:
        if line.startswith("@"):
            samples.append({})
        elif samples and len(parts := line.split()) >= 2:
            samples[-1][parts[0]] = int(parts[1])
    full = [x for x in samples if x]
    return full[-1] if full else {}


def subflow_rows(log: Path) -> dict[str, list[tuple[float, dict]]]:
    """Per peer address (one per path), (wall s, fields) of each `ss` sample of a data-carrying
    subflow (the largest bytes_acked per peer address and sample wins)."""
    rows: dict[str, list[tuple[float, dict]]] = {}
    t, head = 0.0, None
    for line in log.read_text().splitlines():
        if line.startswith("@ "):
            t = int(line[2:]) / 1e9
            continue
        if not line.startswith(("\t", " ")):
            parts = line.split()
            head = parts[-1].rsplit(":", 1)[0] if len(parts) >= 4 else None
            continue
        if head is None or "bytes_acked" not in line:
            continue
        f = {k: m.group(1) for k, rx in FIELDS.items() if (m := rx.search(line))}
        f["state"] = "loss" if "retrans:" in line and " lost:" in line else ""
        rows.setdefault(head, []).append((t, f))
    return rows


def analyse(out: Path) -> None:
    print("server counters:", last_counters(out / "nstat_s.log"))
    rows = subflow_rows(out / "ss_s.log")
    for peer, rs in rows.items():
        print(peer, len(rs), "samples, bytes_acked", rs[-1][1].get("bytes_acked"))
    # WLAN: the peer whose subflow has the lower min RTT.
    wlan = min(rows, key=lambda p: min(float(f.get("rtt", "1e9").split("/")[0]) for _, f in rows[p]))
    rs = rows[wlan]
    t0 = rs[0][0]  # about the transfer's start (the kernel engine's epoch is earlier by ~0.1 s)
    print(f"WLAN peer {wlan}; times from its first sample")
    last = None
    for t, f in rs:
        key = (f.get("backoff"), f.get("rto"), f.get("bytes_acked"), f.get("cwnd"))
        if key != last and 2.5 <= t - t0 <= 9.0:
            print(f"{t - t0:7.3f} s  rto {f.get('rto', '-'):>6} backoff {f.get('backoff', '0'):>2} rtt {f.get('rtt', '-'):>13}"
                  f" cwnd {f.get('cwnd', '-'):>4} unacked {f.get('unacked', '-'):>4} lost {f.get('lost', '-'):>4}"
                  f" lastsnd {f.get('lastsnd', '-'):>5} lastack {f.get('lastack', '-'):>5} acked {f.get('bytes_acked')}")
        last = key


def simulate(seed: int) -> None:
    import polars as pl

    import mpsched
    from mpsched import engines
    from mpsched.scenario.normalize import to_config
    import failover_kernel_vs_sim as f

    toml = f.TOML.format(kind="loss_ramp", extra=f.KINDS["loss_ramp"], seed=seed, at_ms=3000, wlan_gso="")
    t = engines.run_config(to_config(mpsched.loads_scenario(toml)), "sim")
    sub = pl.DataFrame(t["subflow_series"]).filter(pl.col("path") == 0).sort("time_ns")
    cols = [c for c in ("time_ns", "cwnd_bytes", "srtt_ns", "rto_ns", "in_flight_bytes", "bytes_acked", "rto_count")
            if c in sub.columns]
    sub = sub.select(cols).filter((pl.col("time_ns") >= 2_900_000_000) & (pl.col("time_ns") <= 8_000_000_000))
    keep = sub.filter(pl.any_horizontal([pl.col(c) != pl.col(c).shift(1) for c in cols[1:]]).fill_null(True))
    with pl.Config(tbl_rows=400):
        print(keep)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/probe_lr")
    ap.add_argument("--analyse", help="only analyse this directory of an earlier run")
    ap.add_argument("--sim", action="store_true", help="the simulator's run instead")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.sim:
        simulate(a.seed)
        return
    if a.analyse:
        analyse(Path(a.analyse))
        return
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    with watching(watch, out):
        print(json.dumps(one_run("loss_ramp", "kernel", a.seed)))
    analyse(out)


if __name__ == "__main__":
    main()
