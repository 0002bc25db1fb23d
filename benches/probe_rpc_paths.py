"""Which path carries each RPC request and response on the kernel (issue 15, rpc15b): one run of
`rpc_kernel_vs_sim.py`'s scenario (steady by default) on the testbed while `tcpdump` records the
client's interfaces (p0 = WLAN, p1 = LTE). Prints, per path, the requests and responses it
carried (a response is counted on the path of its first data byte), how many responses were
split over both paths, and the server's ACK delay for requests that no response answered on the
same path (a pure ACK: the delayed-ACK timer or the next data).

    flock /tmp/mpsched-testbed-queue.lock .venv/bin/python benches/probe_rpc_paths.py \\
        [--case steady] [--out /tmp/probe_rpc]

Root; one kernel run (about 25 s). `--summarize-only` re-reads the captures of --out.
docs/testbed.md ("Session 6: RPC latency, simulator vs kernel") has the numbers.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_failover_buffers import _ns  # noqa: E402  (this process's testbed namespace)
from rpc_kernel_vs_sim import one_run  # noqa: E402

# "1764400000.123456 IP 10.0.1.1.40000 > 10.9.0.1.5201: Flags [P.], [cksum ..., ]seq 1:301, ack 1, ... length 300"
LINE = re.compile(r"^(\d+\.\d+) IP (\S+)\.(\d+) > (\S+)\.(\d+): Flags \[([^\]]*)\]")
SEQ = re.compile(r", seq (\d+)(?::(\d+))?")
ACK = re.compile(r", ack (\d+)")
LEN = re.compile(r"length (\d+)$")
DSS = re.compile(r"dss .*?seq (\d+) subseq (\d+) len (\d+)")


def watch(stop: threading.Event, out: Path) -> None:
    ns = None
    while ns is None and not stop.is_set():
        ns = _ns("c")
        time.sleep(0.005)
    if ns is None:
        return
    # The namespace is made before its interfaces: wait for both to be up.
    while not stop.is_set():
        links = subprocess.run(["ip", "netns", "exec", ns, "ip", "-o", "link"], capture_output=True, text=True).stdout
        up = [x for x in links.splitlines() if "UP," in x or ",UP" in x]
        if any(" p0" in x for x in up) and any(" p1" in x for x in up):
            break
        time.sleep(0.005)
    procs = [subprocess.Popen(["ip", "netns", "exec", ns, "tcpdump", "-Z", "root", "-i", dev, "-s", "200", "-U",
                               "-w", str(out / f"{dev}.pcap")], stdout=subprocess.DEVNULL,
                              stderr=open(out / f"{dev}.tcpdump.log", "w"))
             for dev in ("p0", "p1")]
    stop.wait()
    for p in procs:
        p.terminate()
        p.wait()


def packets(pcap: Path) -> list[dict]:
    """Every TCP packet of a capture: time, direction (up = client to server), payload, TCP seq
    and ack, and the DSS mapping's data sequence number when the packet carries one."""
    text = subprocess.run(["tcpdump", "-nn", "-tt", "-S", "-v", "-r", str(pcap)], capture_output=True,
                          text=True).stdout
    # -v puts the TCP header on the line after the IP header; join them.
    joined = re.sub(r"\)\n\s+", ") ", text)
    rows = []
    for line in joined.splitlines():
        body = re.sub(r"^(\d+\.\d+) IP \(.*?\) ", r"\1 IP ", line)
        m = LINE.match(body)
        if not m:
            continue
        dss, seq, ack, ln = DSS.search(body), SEQ.search(body), ACK.search(body), LEN.search(body)
        rows.append({"t": float(m.group(1)), "src": m.group(2), "dport": int(m.group(5)), "sport": int(m.group(3)),
                     "len": int(ln.group(1)) if ln else 0, "seq": int(seq.group(1)) if seq else 0,
                     "ack": int(ack.group(1)) if ack else 0, "flags": m.group(6),
                     "dsn": int(dss.group(1)) if dss else None, "subseq": int(dss.group(2)) if dss else None,
                     "maplen": int(dss.group(3)) if dss else None, "capable": "capable" in body})
    return rows


def summarize(out: Path) -> dict:
    per_dev = {dev: packets(out / f"{dev}.pcap") for dev in ("p0", "p1")}
    # The server is the side whose port is the lower one on the data connection (mpxfer listens
    # on a fixed port; the client's is ephemeral).
    res: dict = {}
    for dev, rows in per_dev.items():
        server_port = min(min(r["sport"], r["dport"]) for r in rows) if rows else 0
        for r in rows:
            r["up"] = r["dport"] == server_port
        data = [r for r in rows if r["len"] > 0]
        up = [r for r in data if r["up"]]
        down = [r for r in data if not r["up"]]
        # Response bursts: down data separated by more than 3 ms of silence on this path.
        bursts, last = [], None
        for r in down:
            if last is None or r["t"] - last > 0.003:
                bursts.append([r])
            else:
                bursts[-1].append(r)
            last = r["t"]
        # For each request, when the server's first packet acknowledging it arrived on this path,
        # and whether it carried data (a piggybacked ACK) or not (pure ACK).
        ack_delays, piggy = [], 0
        downs = [r for r in rows if not r["up"]]
        j = 0
        for q in up:
            end = q["seq"] + q["len"] if q["seq"] else None
            while j < len(downs) and downs[j]["t"] < q["t"]:
                j += 1
            k = j
            while end is not None and k < len(downs) and downs[k]["ack"] < end:
                k += 1
            if end is not None and k < len(downs):
                ack_delays.append((downs[k]["t"] - q["t"]) * 1e3)
                piggy += downs[k]["len"] > 0
        res[dev] = {"requests": len(up), "request_bytes": sum(r["len"] for r in up),
                    "response_bursts": len(bursts), "response_bytes": sum(r["len"] for r in down),
                    "burst_bytes_median": statistics.median([sum(r["len"] for r in b) for b in bursts]) if bursts else 0,
                    "request_ack_ms_p50": statistics.median(ack_delays) if ack_delays else None,
                    "request_ack_ms_p90": (statistics.quantiles(ack_delays, n=10)[-1] if len(ack_delays) > 9 else None),
                    "request_acks_with_data": piggy, "request_acks": len(ack_delays)}
    return res


def per_request(out: Path, request_bytes: int = 300, response_bytes: int = 16_000, header_bytes: int = 48) -> list[dict]:
    """Request k and response k matched by data sequence number (the DSS mapping's DSN plus the
    packet's offset in it): the path and client-side time of each, one dict per request."""
    pk = []
    for i, dev in enumerate(("p0", "p1")):
        rows = packets(out / f"{dev}.pcap")
        server_port = min(min(r["sport"], r["dport"]) for r in rows)
        for r in rows:
            up = r["dport"] == server_port
            port = r["sport"] if up else r["dport"]
            if r["len"] == 0 or (r["dsn"] is None and not r["capable"]):
                continue
            pk.append({"path": i, "up": up, "t": r["t"], "len": r["len"], "dsn": r["dsn"], "seq": r["seq"],
                       "port": port, "capable": r["capable"]})
    out_rows: dict[int, dict] = {}
    for up in (True, False):
        ps = [p for p in pk if p["up"] == up]
        if not ps:
            continue
        # The subflow seq of a mapping's first byte is known from the first packet that starts it.
        # Data on the MP_CAPABLE ACK (the client's first write) carries no DSS: it starts the
        # stream, DSN 0 here.
        lead = sum(p["len"] for p in ps if p["dsn"] is None)
        d0 = min(p["dsn"] for p in ps if p["dsn"] is not None) - lead
        start: dict[tuple[int, int], int] = {}
        for p in sorted(ps, key=lambda p: p["t"]):
            if p["dsn"] is None:
                p["dsn"] = d0
            start.setdefault((p["port"], p["dsn"]), p["seq"])
        for p in sorted(ps, key=lambda p: p["t"]):
            off = (p["seq"] - start[(p["port"], p["dsn"])]) & 0xFFFFFFFF
            first = p["dsn"] + off - d0
            if up:
                # A request is issued when its last byte leaves.
                last = first + p["len"] - 1 - header_bytes
                for k in range(max(first - header_bytes, 0) // request_bytes, (last + 1) // request_bytes):
                    q = out_rows.setdefault(k, {"k": k})
                    q.setdefault("req_t", p["t"])
                    q.setdefault("req_path", p["path"])
            else:
                last = first + p["len"] - 1
                for k in range(first // response_bytes, last // response_bytes + 1):
                    q = out_rows.setdefault(k, {"k": k})
                    q["resp_paths"] = q.get("resp_paths", 0) | (1 << p["path"])
                    q["resp_first_t"] = min(q.get("resp_first_t", p["t"]), p["t"])
                    q["resp_last_t"] = max(q.get("resp_last_t", p["t"]), p["t"])
    return [out_rows[k] for k in sorted(out_rows)]


def combos(reqs: list[dict]) -> None:
    """Latency at the client's interfaces (request out to last response byte in) by the paths of
    request and response."""
    names = {1: "wlan", 2: "lte", 3: "both"}
    groups: dict[tuple[str, str], list[float]] = {}
    for q in reqs:
        if "req_t" not in q or "resp_last_t" not in q:
            continue
        key = (names[1 << q["req_path"]], names[q["resp_paths"]])
        groups.setdefault(key, []).append((q["resp_last_t"] - q["req_t"]) * 1e3)
    print("| request path | response path | requests | latency p50 (ms) | p90 (ms) |")
    print("|---|---|---|---|---|")
    for key, lat in sorted(groups.items()):
        p90 = statistics.quantiles(lat, n=10)[-1] if len(lat) > 9 else max(lat)
        print(f"| {key[0]} | {key[1]} | {len(lat)} | {statistics.median(lat):.1f} | {p90:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", choices=("steady", "down"), default="steady")
    ap.add_argument("--out", default="/tmp/probe_rpc")
    ap.add_argument("--summarize-only", action="store_true")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if not a.summarize_only:
        stop = threading.Event()
        t = threading.Thread(target=watch, args=(stop, out), daemon=True)
        t.start()
        try:
            for row in one_run(a.case, "kernel", "linux", 1):
                print(json.dumps(row))
        finally:
            stop.set()
            t.join()
    print(json.dumps(summarize(out), indent=1))
    combos(per_request(out))


if __name__ == "__main__":
    main()
