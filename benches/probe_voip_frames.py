"""Where each frame of the VoIP call beside the bulk download waits, on the kernel (issue 15):
one run of `voip_kernel_vs_sim.py`'s steady case (no event; `--no-bulk`: the call alone) while
`tcpdump` records the server's interface (srv0: a segment leaving the server, before the
router's delayer and queues) and the client's (p0 = WLAN, p1 = LTE: its arrival). Each frame of
the call is found in both captures by its MPTCP data sequence number (the DSS mapping: frame k
holds the call's bytes [160 k, 160 k + 160)), and its one-way delay (read - due, the bench's
delay) is split into
  send:    due -> the server's first transmission of its last byte (the application's wake-up,
           the MPTCP scheduler, the subflow's cwnd / pacing / TSQ),
  network: that transmission -> the first arrival of its last byte at the client (the
           router's delay, jitter and queue, a retransmission's wait),
  read:    arrival -> the application's read (mpxfer's block line; a frame that overtook an
           earlier frame still crossing the other path waits in the MPTCP out-of-order queue).
The write is taken at the frame's due time (mpxfer writes on that clock, 68 us late at the
median: docs/testbed.md "Host timing"). Captures are CLOCK_REALTIME, stamps CLOCK_MONOTONIC
from the run's epoch (the client's `--epoch-ns`): the watcher records the two clocks' offset.

    flock /tmp/mpsched-testbed-queue.lock .venv/bin/python benches/probe_voip_frames.py --out /tmp/vf_bulk
    .venv/bin/python benches/probe_voip_frames.py --analyze /tmp/vf_bulk     # again, no root
    .venv/bin/python benches/probe_voip_frames.py --sim --seed 1             # the simulator's split

Root; one kernel run (about 25 s). docs/testbed.md ("Session 9: where the call's frames wait")
has the numbers. `--sim` needs a core built with the per-segment debug trace, kept out of the
build: `git apply benches/probe_voip_frames_sim_trace.patch && make setup` (then `git apply -R`).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchio import wait_for_namespaces, watching  # noqa: E402
import voip_kernel_vs_sim as v  # noqa: E402

import mpsched  # noqa: E402
from mpsched import engines  # noqa: E402
from mpsched.engines.kernel.run import SERVER_PORT  # noqa: E402
from mpsched.scenario.normalize import to_config  # noqa: E402

FRAME_BYTES = 160
#: The server's TCP sockets every 5 ms (`--ss`): each subflow's sk_wmem_queued (skmem `w`),
#: unacked segments and pacing rate, what `mptcp_subflow_get_send`'s linger time divides.
SS_WATCH = "while :; do echo \"@ $(date +%s%N)\"; ss -tmiH state established; sleep 0.005; done"
SS_ON = False
UNIT = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}
SS_SOCK = re.compile(r"10\.9\.0\.1:5201\s+(10\.0\.\d)\.1:(\d+)")
SS_FIELDS = {k: re.compile(p) for k, p in (("w", r"skmem:\(r\d+,rb\d+,t\d+,tb\d+,f-?\d+,w(\d+)"),
                                           ("unacked", r" unacked:(\d+)"), ("pacing", r"pacing_rate ([\d.]+)([KMG]?)bps"),
                                           ("rtt", r" rtt:([\d.]+)/"))}
LINE = re.compile(r"^(\d+\.\d+) IP (\S+)\.(\d+) > (\S+)\.(\d+): .*length (\d+)")
DSS = re.compile(r"dss[^\]]*? seq (\d+)")


def watch(stop: threading.Event, out: Path) -> None:
    found = wait_for_namespaces("cs", stop)
    if found is None:
        return
    caps = [(found["s"], "srv0"), (found["c"], "p0"), (found["c"], "p1")]
    # tcpdump refuses an interface that is not up yet (the testbed builds slowly under load).
    while not stop.is_set() and not all(
            ",UP" in subprocess.run(["ip", "-n", ns, "link", "show", "dev", dev], capture_output=True, text=True).stdout
            for ns, dev in caps):
        time.sleep(0.01)
    procs = [subprocess.Popen(["ip", "netns", "exec", found["s"], "sh", "-c", SS_WATCH], stdout=open(out / "ss_s.log", "w"),
                              stderr=subprocess.DEVNULL)] if SS_ON else []
    procs += [subprocess.Popen(["ip", "netns", "exec", ns, "tcpdump", "-Z", "root", "-i", dev, "-s", "200", "-U",
                               "-w", str(out / f"{dev}.pcap")], stdout=subprocess.DEVNULL,
                               stderr=open(out / f"tcpdump_{dev}.log", "w"))
             for ns, dev in caps]
    # Realtime - monotonic, the pair read closest together (the captures' clock against the stamps').
    pairs = []
    for _ in range(50):
        a = time.monotonic_ns()
        r = time.time_ns()
        b = time.monotonic_ns()
        pairs.append((b - a, r - (a + b) // 2))
    (out / "clock_offset_ns").write_text(f"{min(pairs)[1]}\n")
    while not stop.is_set():
        epoch = client_epoch_ns()
        if epoch is not None:
            (out / "epoch_ns").write_text(f"{epoch}\n")
            break
        time.sleep(0.01)
    stop.wait()
    for p in procs:
        p.terminate()
        p.wait()


def _ancestors(pid: int) -> set[int]:
    out = set()
    while pid > 1 and pid not in out:
        out.add(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
    return out


def client_epoch_ns() -> int | None:
    """The run's epoch from the command line of this process's `mpxfer client` (`--epoch-ns`):
    the harness writes its `epoch` file only for timed paths."""
    me = os.getpid()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            args = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        # The run's client (its flows file run.flows), not the warm-up's (warmup.flows, its own epoch).
        if any(a.endswith(b"mpxfer") for a in args) and any(a.endswith(b"/run.flows") for a in args) \
                and me in _ancestors(int(d.name)):
            return int(args[args.index(b"--epoch-ns") + 1])
    return None


def run(engine: str, seed: int, bulk: bool) -> dict:
    cfg = to_config(mpsched.loads_scenario(v.scenario_text("none", seed, bulk)))
    return engines.run_config(cfg, engine)


def call_blocks(t: dict) -> pl.DataFrame:
    flows = pl.DataFrame(t["flows"])
    call = flows.filter(pl.col("app") == "messages")["flow_id"][0]
    return pl.DataFrame(t["blocks"]).filter(pl.col("flow_id") == call).select("block", "sent_ns", "delivered_ns")


def packets(pcap: Path) -> list[dict]:
    out = subprocess.run(["tcpdump", "-r", str(pcap), "-tt", "-n", "-S"], capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        m, d = LINE.match(line), DSS.search(line)
        if m and d:
            t, src, sport, dst, dport, length = m.groups()
            dsn = d.group(1)
            rows.append({"t": float(t), "src": src, "sport": int(sport), "dst": dst, "dport": int(dport),
                         "dsn": int(dsn), "len": int(length)})
    return rows


def call_segments(rows: list[dict]) -> list[dict]:
    """The call's data segments: those of the client ports that carry 160-byte segments."""
    ports: dict[int, int] = {}
    for r in rows:
        if r["len"] == FRAME_BYTES:
            ports[r["dport"]] = ports.get(r["dport"], 0) + 1
    call = {p for p, n in ports.items() if n >= 20}
    return [r for r in rows if r["dport"] in call and r["len"] > 0]


def frame_times(segs: list[dict], base: int, to_epoch) -> dict[int, tuple[int, str]]:
    """Per frame: (first time, in ns from the epoch, a segment carried its last byte; its path)."""
    out: dict[int, tuple[int, str]] = {}
    for r in segs:
        first, end = r["dsn"] - base, r["dsn"] - base + r["len"]
        for k in range(max(first, 0) // FRAME_BYTES, end // FRAME_BYTES):
            if (k + 1) * FRAME_BYTES > first and k not in out:
                out[k] = (to_epoch(r["t"]), "wlan" if r["dst"].startswith("10.0.1.") else "lte")
    return out


def call_ports(out: Path) -> set[int]:
    """The client ports of the call's subflows (the server's 160-byte segments go to them)."""
    return {r["dport"] for r in call_segments(packets(out / "srv0.pcap")) if r["sport"] == SERVER_PORT}


def kernel_frames(out: Path) -> pl.DataFrame:
    offset, epoch = int((out / "clock_offset_ns").read_text()), int((out / "epoch_ns").read_text())
    to_epoch = lambda t: int(round(t * 1e9)) - offset - epoch  # noqa: E731
    # Server -> client only (from the listening port): the call's data, not the client's ACKs.
    srv = [r for r in call_segments(packets(out / "srv0.pcap")) if r["sport"] == SERVER_PORT]
    cli = sorted((r for dev in ("p0", "p1") for r in call_segments(packets(out / f"{dev}.pcap"))
                  if r["sport"] == SERVER_PORT), key=lambda r: r["t"])
    base = min(r["dsn"] for r in srv)
    sent, arrived = frame_times(srv, base, to_epoch), frame_times(cli, base, to_epoch)
    blocks = pl.read_json(out / "blocks.json")
    rows = [{"block": k, "tx_ns": sent.get(k, (None, None))[0], "tx_path": sent.get(k, (None, None))[1],
             "arrive_ns": arrived.get(k, (None, None))[0], "arrive_path": arrived.get(k, (None, None))[1]}
            for k in blocks["block"]]
    return blocks.join(pl.DataFrame(rows), on="block", how="left")


def sim_frames(seed: int, bulk: bool, out: Path) -> pl.DataFrame:
    """The same split from the simulator's per-segment debug trace (`MPSCHED_DBG_FRAMES`: a
    line per data segment of a download leaving the server, "SEGTX now flow subflow dsn len", and
    per one reaching the client's TCP, "SEGRX ..."; subflow 0 is WLAN)."""
    trace = out / f"sim_trace_{seed}.txt"
    os.environ["MPSCHED_DBG_FRAMES"] = "1"
    saved = os.dup(2)
    with open(trace, "w") as f:
        os.dup2(f.fileno(), 2)
        try:
            t = run("sim", seed, bulk)
        finally:
            os.dup2(saved, 2)
    flows = pl.DataFrame(t["flows"])
    call = flows.filter(pl.col("app") == "messages")["flow_id"][0]
    segs: dict[str, list[dict]] = {"SEGTX": [], "SEGRX": []}
    for line in trace.read_text().splitlines():
        kind, *f = line.split()
        if kind in segs and int(f[1]) == call:
            segs[kind].append({"t": int(f[0]), "dst": "10.0.1." if f[2] == "0" else "10.0.2.", "dsn": int(f[3]),
                               "len": int(f[4])})
    if not segs["SEGTX"]:
        raise SystemExit("no SEGTX lines: the core was built without the debug trace (docs/testbed.md)")
    base = min(r["dsn"] for r in segs["SEGTX"])
    sent, arrived = frame_times(segs["SEGTX"], base, int), frame_times(segs["SEGRX"], base, int)
    blocks = call_blocks(t)
    rows = [{"block": k, "tx_ns": sent.get(k, (None, None))[0], "tx_path": sent.get(k, (None, None))[1],
             "arrive_ns": arrived.get(k, (None, None))[0], "arrive_path": arrived.get(k, (None, None))[1]}
            for k in blocks["block"]]
    return blocks.join(pl.DataFrame(rows), on="block", how="left")


def ss_linger(out: Path, ports: set[int]) -> None:
    """From the server's `ss` samples: per call subflow and unacked-segment count, the median
    sk_wmem_queued (bytes) and pacing rate, and the linger time wmem / pacing rate (ms)."""
    rows, t = [], 0
    lines = (out / "ss_s.log").read_text().splitlines()
    for i, line in enumerate(lines):
        if line.startswith("@ "):
            t = int(line[2:])
            continue
        m = SS_SOCK.search(line)
        if not m or int(m.group(2)) not in ports:
            continue
        info = line + " " + (lines[i + 1] if i + 1 < len(lines) else "")
        vals = {k: r.search(info) for k, r in SS_FIELDS.items()}
        if vals["w"] and vals["pacing"]:
            rows.append({"t": t, "path": "wlan" if m.group(1) == "10.0.1" else "lte", "w": int(vals["w"].group(1)),
                         "unacked": int(vals["unacked"].group(1)) if vals["unacked"] else 0,
                         "pacing_bps": float(vals["pacing"].group(1)) * UNIT[vals["pacing"].group(2)],
                         "rtt_ms": float(vals["rtt"].group(1)) if vals["rtt"] else None})
    df = pl.DataFrame(rows)
    print(df.with_columns((pl.col("w") * 8 / pl.col("pacing_bps") * 1e3).alias("linger_ms"))
          .group_by("path", "unacked").agg(pl.len().alias("samples"), pl.col("w").median(), pl.col("pacing_bps").median(),
                                           pl.col("rtt_ms").median(), pl.col("linger_ms").median())
          .sort("path", "unacked"))


def split(df: pl.DataFrame, after_ns: int = 2_000_000_000) -> None:
    """Per path, the median and mean of each component (ms), frames due after `after_ns`."""
    df = df.filter((pl.col("sent_ns") >= after_ns) & pl.col("delivered_ns").is_not_null() & pl.col("tx_ns").is_not_null())
    df = df.with_columns(((pl.col("tx_ns") - pl.col("sent_ns")) / 1e6).alias("send_ms"),
                         ((pl.col("arrive_ns") - pl.col("tx_ns")) / 1e6).alias("network_ms"),
                         ((pl.col("delivered_ns") - pl.col("arrive_ns")) / 1e6).alias("read_ms"),
                         ((pl.col("delivered_ns") - pl.col("sent_ns")) / 1e6).alias("delay_ms"))
    comps = ("delay_ms", "send_ms", "network_ms", "read_ms")
    print(f"frames due after {after_ns / 1e9:.0f} s: {df.height}; on LTE {df.filter(pl.col('tx_path') == 'lte').height}")
    print("| path | frames | " + " | ".join(f"{c[:-3]} p50 / mean / p90 (ms)" for c in comps) + " | read > 1 ms |")
    print("|---|---|" + "---|" * (len(comps) + 1))
    for name, part in [("all", df)] + [(p, df.filter(pl.col("tx_path") == p)) for p in ("wlan", "lte")]:
        if part.is_empty():
            continue
        cells = [f"{part[c].median():.1f} / {part[c].mean():.1f} / {part[c].quantile(0.9):.1f}" for c in comps]
        print(f"| {name} | {part.height} | " + " | ".join(cells) + f" | {(part['read_ms'] > 1).sum()} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/probe_voip_frames")
    ap.add_argument("--analyze", help="only analyze the captures in this directory")
    ap.add_argument("--no-bulk", action="store_true", help="the call alone")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ss", action="store_true", help="also sample the server's sockets (wmem, pacing rate)")
    ap.add_argument("--sim", action="store_true", help="the simulator's split (a core with the debug trace)")
    a = ap.parse_args()
    if a.sim:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        df = sim_frames(a.seed, not a.no_bulk, out)
        df.write_csv(out / f"sim_frames_{a.seed}.csv")
        split(df)
        return
    global SS_ON
    SS_ON = a.ss
    if not a.analyze:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        with watching(watch, out):
            t = run("kernel", a.seed, not a.no_bulk)
        call_blocks(t).write_json(out / "blocks.json")
    df = kernel_frames(Path(a.analyze or a.out))
    df.write_csv(Path(a.analyze or a.out) / "frames.csv")
    split(df)
    d = Path(a.analyze or a.out)
    if (d / "ss_s.log").exists():
        ss_linger(d, call_ports(d))


if __name__ == "__main__":
    main()
