"""Where each ACK's delay arises on the testbed, and how it compares with the simulator's endpoint
timing model (issue 11, tcp11z). Reads the three captures of
`benches/probe_hystart.py CELL --pcap --hops --out DIR` (plain TCP on path 0):

- `router_rp0.pcap`: data as the bottleneck (tbf/htb on the router's rp0) releases it, ACKs as
  they reach the router;
- `client_p0.pcap`: data as the client's softirq receives it, ACKs as they leave the client;
- `CELL.pcap` (the server's srv0): ACKs as the server receives them.

Per ACK that newly acknowledges data (the *trigger* is the last data skb the client received
before sending it), the time from the bottleneck's release of the trigger to the server's
reception, less the path's one-way delay and the ACK's serialisation, is the ACK's *excess*:
what the model draws as the client's delay for the data plus the server's for the ACK. It is
split into the veth hop to the client, the client's handling (data in -> ACK out), the veth hop
back and the router (the delayer and the uplink qdisc) plus the veth hop to the server. The
HyStart train (tcp11s) breaks when one ACK's excess exceeds the one before it by more than the
gap's margin (0.18 ms for 3-segment skbs at 20 Mbit/s), so the consecutive *increase* is printed
too, with the lag-1 correlation, against the model's (`--body`, `--stall`, `--run-packets`; the
defaults are the validation scenarios' log-normal). `--fit` fits the body + stall mixture to the
quantiles of the host excess (ACKs the client held for its application's read left out) and the
spells' length to its lag-1 correlation; `--save` keeps the per-ACK rows.

    .venv/bin/python benches/ack_delay.py DIR [DIR ...] [--cell tcp_single/tbf32k/1MiB] [--fit]
    .venv/bin/python benches/ack_delay.py DIR ... --save benches/data/ack_delay-DATE.csv.gz --note "kernel, date, load"
    .venv/bin/python benches/ack_delay.py benches/data/ack_delay-20261129.csv.gz --fit
"""

from __future__ import annotations

import argparse
import csv
import gzip
import re
import subprocess
from collections import defaultdict
from pathlib import Path

import numpy as np

LINE = re.compile(r"^(\d+\.\d+) IP (\S+)\.(\d+) > (\S+)\.(\d+): (.*)$")
Z99 = 2.326347874040841
#: A client's data-in -> ACK-out longer than this, with the window not grown, is an ACK held
#: for the application's read (tcp_input.c `__tcp_ack_snd_check`), not host timing.
HELD_US = 200
#: An ACK on the wire (Ethernet 14 + IP 20 + TCP 32 with timestamps): its serialisation.
ACK_WIRE_BYTES = 66


def packets(pcap: Path) -> list[tuple[float, str, str, str]]:
    """(time s, src port, dst port, the rest of tcpdump's line: flags, seq, ack, win, options)."""
    run = subprocess.run(["tcpdump", "-r", str(pcap), "-tt", "-n", "-S"], capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"pcap: tcpdump cannot read {pcap}: {run.stderr.strip()}")
    out = []
    for m in map(LINE.match, run.stdout.splitlines()):
        if m:
            out.append((float(m.group(1)), m.group(3), m.group(5), m.group(6)))
    return out


def keyed(pkts) -> dict[tuple[str, str, int], float]:
    """Each packet's time by (port pair and tcpdump text, occurrence): the same packet at two hops."""
    seen: dict[tuple[str, str], int] = defaultdict(int)
    out = {}
    for t, sp, dp, rest in pkts:
        k = (f"{sp}>{dp}", rest)
        out[(k[0], k[1], seen[k])] = t
        seen[k] += 1
    return out


def q(xs, f):
    return xs[min(len(xs) - 1, int(f * len(xs)))]


def describe(name: str, xs_us) -> str:
    xs = sorted(xs_us)
    if not xs:
        return f"{name}: none"
    return (f"{name} (n {len(xs)}, us): min {xs[0]:.0f} p10 {q(xs, .1):.0f} p50 {q(xs, .5):.0f} p75 {q(xs, .75):.0f} "
            f"p90 {q(xs, .9):.0f} p95 {q(xs, .95):.0f} p99 {q(xs, .99):.0f} max {xs[-1]:.0f}")


def corr(series) -> float:
    pairs = np.array([(a, b) for s in series for a, b in zip(s, s[1:])])
    return float(np.corrcoef(pairs[:, 0], pairs[:, 1])[0, 1])


def increases(name: str, series: list[list[float]]) -> str:
    """P(one ACK's excess exceeds the previous one's by > 0.18 / 0.79 ms) and the lag-1 correlation."""
    d = [b - a for s in series for a, b in zip(s, s[1:])]
    pairs = np.array([(a, b) for s in series for a, b in zip(s, s[1:])])
    corr = float(np.corrcoef(pairs[:, 0], pairs[:, 1])[0, 1]) if len(pairs) > 2 else float("nan")
    n = max(1, len(d))
    return (f"{name}: consecutive increase > 180 us in {sum(x > 180 for x in d) / n:.3f}, > 790 us in "
            f"{sum(x > 790 for x in d) / n:.4f} of {len(d)} pairs; lag-1 correlation {corr:+.2f}")


def chain_draws(z: np.ndarray, u: np.ndarray, body: tuple[float, float], stall: tuple[float, float, float],
                run_packets: float) -> np.ndarray:
    """One host's per-packet delays (us) as run/host.rs draws them: a two-state chain stepped per
    packet spends `stall[0]` of the packets stalled in spells of `run_packets` on average."""
    p = stall[0]
    enter, leave = p / (1 - p) / run_packets, 1 / run_packets
    stalled = np.empty(len(u), dtype=bool)
    s = False
    for k, x in enumerate(u):
        s = x >= leave if s else x < enter
        stalled[k] = s
    return mixture_draws(z, np.where(stalled, 0.0, 1.0), body, stall)


def model_series(gaps_us: np.ndarray, body: tuple[float, float], stall: tuple[float, float, float],
                 run_packets: float | None = 1.0, seed: int = 1, draws: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """The model's excess for ACKs whose triggers leave the bottleneck `gaps_us` apart: the client's
    draw for the data and the server's for the ACK, each host handling in order (run/host.rs)."""
    n = len(gaps_us)
    if draws is None:
        rng = np.random.default_rng(seed)
        draws = rng.standard_normal(2 * n), rng.random(2 * n)
    if run_packets is None:  # the independent mixture (the fit's marginal)
        d = mixture_draws(draws[0], draws[1], body, stall)
        dc, ds = d[0::2], d[1::2]
    else:
        dc = chain_draws(draws[0][0::2], draws[1][0::2], body, stall, run_packets)
        ds = chain_draws(draws[0][1::2], draws[1][1::2], body, stall, run_packets)
    t, busy_c, busy_s = 0.0, 0.0, 0.0
    out = np.empty(n)
    for k in range(n):
        t += gaps_us[k]
        busy_c = max(busy_c, t + dc[k])
        busy_s = max(busy_s, busy_c + ds[k])
        out[k] = busy_s - t
    return out


QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.85, 0.9, 0.95, 0.98, 0.99, 0.995)


def mixture_draws(z: np.ndarray, u: np.ndarray, body: tuple[float, float], stall: tuple[float, float, float]):
    """Per-packet delays (us) of the model with stalls: w.p. `stall[0]` the stall log-normal
    (median, p99), else the body's; `z` standard normals, `u` uniforms (common random numbers)."""
    bm, bp = body
    p, sm, sp = stall
    b = np.exp(np.log(bm) + np.log(bp / bm) / Z99 * z)
    s = np.exp(np.log(sm) + np.log(max(sp, sm * 1.0001) / sm) / Z99 * z)
    return np.where(u < p, s, b)


def fit_mixture(excess_us: list[float], gaps_us: np.ndarray, reps: int = 4,
                seed: int = 7) -> tuple[tuple[float, float], tuple[float, float, float]]:
    """The per-packet body + stall mixture whose model excess (`model_series` over the measured
    triggers' gaps, `reps` times) has the measured excess's quantiles (`QUANTILES`, squared log
    error; scipy Nelder-Mead on common random numbers)."""
    from scipy.optimize import minimize

    target = np.log(np.maximum(np.quantile(np.asarray(excess_us), QUANTILES), 1.0))
    rng = np.random.default_rng(seed)
    gaps = np.tile(gaps_us, reps)
    draws = rng.standard_normal(2 * len(gaps)), rng.random(2 * len(gaps))

    def unpack(v):
        bm, bspread, p, sm, sspread = np.exp(v)
        return (bm, bm * (1 + bspread)), (min(p, 0.5), sm, sm * (1 + sspread))

    def loss(v):
        body, stall = unpack(v)
        e = model_series(gaps, body, stall, None, draws=draws)
        return float(np.sum((np.log(np.maximum(np.quantile(e, QUANTILES), 1.0)) - target) ** 2))

    # Two starts, stalls at the measured p90 and at its p99 (the loss has a local optimum near
    # each), each Nelder-Mead restarted from where it stopped until it gains < 1e-3 (a simplex
    # can stall on this loss: rounding the data by 0.05 us moved one start to a worse optimum);
    # the better one wins.
    med = float(np.median(excess_us))
    fits = []
    for p, tail in ((0.1, 0.9), (0.01, 0.99)):
        x = np.log([med / 2, 2.0, p, float(np.quantile(excess_us, tail)), 1.0])
        best = None
        for _ in range(4):
            f = minimize(loss, x, method="Nelder-Mead", options={"maxiter": 1500, "xatol": 1e-3, "fatol": 1e-6})
            if best is not None and best.fun - f.fun < 1e-3:
                best = f if f.fun < best.fun else best
                break
            best, x = f, f.x
        fits.append(best)
        body, stall = unpack(fits[-1].x)
        print(f"  start at p{round(tail * 100)}: loss {fits[-1].fun:.4f}, body {body[0]:.1f}/{body[1]:.1f} us, "
              f"stall {stall[0]:.4f} {stall[1]:.1f}/{stall[2]:.1f} us")
    return unpack(min(fits, key=lambda f: f.fun).x)


def acks(d: Path, cell: str, port: str, oneway_ms: float, rate_bps: float) -> list[dict]:
    """Every ACK of `d`'s captures that newly acknowledges data, with its parts (us)."""
    files = {"rp0": d / "router_rp0.pcap", "p0": d / "client_p0.pcap", "srv": d / f"{cell.replace('/', '_')}.pcap"}
    for f in files.values():
        if not f.is_file():
            raise SystemExit(f"dir: no {f.name} in {d}; capture with benches/probe_hystart.py {cell} --pcap --hops")
    pk = {name: packets(f) for name, f in files.items()}
    at = {name: keyed(p) for name, p in pk.items() if name != "p0"}
    ack_ser_us = ACK_WIRE_BYTES * 8e6 / rate_bps
    seen: dict[tuple[str, str], int] = defaultdict(int)
    last_data: dict[str, tuple[float, str, int]] = {}  # client port -> trigger (p0 time, text, occurrence)
    acked: dict[str, int] = {}
    win: dict[str, int] = {}
    out = []
    for t, sp, dp, rest in pk["p0"]:
        k = (f"{sp}>{dp}", rest)
        occ = seen[k]
        seen[k] += 1
        if sp == port:
            if re.search(r"seq (\d+):(\d+)", rest):
                last_data[dp] = (t, rest, occ)
            continue
        ack = re.search(r"ack (\d+)", rest)
        if dp != port or sp not in last_data or not ack:
            continue
        flags = rest[rest.index("[") + 1:rest.index("]")]
        w = int(re.search(r"win (\d+)", rest).group(1))
        if "S" in flags or "F" in flags or int(ack.group(1)) <= acked.get(sp, 0):
            continue  # no new data acknowledged
        acked[sp] = int(ack.group(1))
        t_in, dtext, docc = last_data[sp]
        t_rel = at["rp0"].get((f"{port}>{sp}", dtext, docc))
        t_rtr, t_srv = at["rp0"].get((k[0], rest, occ)), at["srv"].get((k[0], rest, occ))
        if t_rel is None or t_rtr is None or t_srv is None:
            continue
        segs = -(-int(re.search(r"length (\d+)", dtext).group(1)) // 1448)
        out.append({"conn": sp, "release_us": t_rel * 1e6, "segs": segs,
                    "veth to client": (t_in - t_rel) * 1e6, "client: data in -> ACK out": (t - t_in) * 1e6,
                    "veth to router": (t_rtr - t) * 1e6,
                    "router + veth to server": (t_srv - t_rtr) * 1e6 - oneway_ms * 1e3 - ack_ser_us,
                    "excess": (t_srv - t_rel) * 1e6 - oneway_ms * 1e3 - ack_ser_us,
                    # The client held this ACK for its application's read (tcp_input.c
                    # __tcp_ack_snd_check: the window would shrink), not a host delay.
                    "held": (t - t_in) * 1e6 > HELD_US and w <= win.get(sp, 0)})
        win[sp] = w
    return out


FIELDS = ("conn", "release_us", "segs", "veth to client", "client: data in -> ACK out", "veth to router",
          "router + veth to server", "excess", "held")


def save(rows: list[dict], path: Path, header: str) -> None:
    """The per-ACK rows as gzipped CSV, `header` (kernel, date, load) as a leading # line."""
    with gzip.open(path, "wt", newline="") as fh:
        fh.write(f"# {header}\n")
        w = csv.DictWriter(fh, FIELDS)
        w.writeheader()
        w.writerows({k: (round(r[k], 1) if isinstance(r[k], float) else r[k]) for k in FIELDS} for r in rows)


def load(path: Path) -> list[dict]:
    with gzip.open(path, "rt", newline="") as fh:
        lines = [ln for ln in fh if not ln.startswith("#")]
    return [{**r, "segs": int(r["segs"]), "held": r["held"] == "True",
             **{k: float(r[k]) for k in FIELDS[1:] if k not in ("segs", "held")}} for r in csv.DictReader(lines)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", type=Path, nargs="+", help="capture directories (or --save's .csv.gz files), pooled")
    ap.add_argument("--save", type=Path, help="write the pooled per-ACK rows here (.csv.gz) and exit")
    ap.add_argument("--note", default="", help="with --save: the header line (kernel, date, load)")
    ap.add_argument("--cell", default="tcp_single/tbf32k/1MiB")
    ap.add_argument("--port", default="5201", help="the server's port")
    ap.add_argument("--oneway-ms", type=float, default=20.0, help="the path's one-way delay (rtt / 2)")
    ap.add_argument("--rate-bps", type=float, default=20e6)
    ap.add_argument("--body", type=float, nargs=2, default=(68.0, 417.0), metavar=("MEDIAN_US", "P99_US"),
                    help="the model's per-packet log-normal (default: the grid's)")
    ap.add_argument("--stall", type=float, nargs=3, default=(0.0, 1.0, 1.0), metavar=("PROB", "MEDIAN_US", "P99_US"),
                    help="the model's stalls: probability per packet and their log-normal")
    ap.add_argument("--run-packets", type=float, default=1.0, help="the stalls' mean spell, packets")
    ap.add_argument("--fit", action="store_true", help="fit the body + stall mixture to the host excess")
    a = ap.parse_args()
    rows = []
    for n, d in enumerate(a.dirs):
        mine = load(d) if d.suffix == ".gz" else acks(d, a.cell, a.port, a.oneway_ms, a.rate_bps)
        rows += [{**r, "conn": f"{n}:{r['conn']}"} for r in mine]  # a run's ports are its own
    if a.save:
        save(rows, a.save, a.note)
        return
    host = [r for r in rows if not r["held"]]
    for name in ("veth to client", "client: data in -> ACK out", "veth to router", "router + veth to server",
                 "excess"):
        print(describe(name, [r[name] for r in rows]))
    print(f"held by the client for a read (data in -> ACK out > {HELD_US} us, window not grown): "
          f"{len(rows) - len(host)} of {len(rows)}")
    print(describe("host excess (held ACKs left out)", [r["excess"] for r in host]))
    by_conn: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_conn[r["conn"]].append(r)
    print(increases("testbed excess", [[r["excess"] for r in c] for c in by_conn.values()]))
    print(increases("testbed host excess", [[r["excess"] for r in c if not r["held"]] for c in by_conn.values()]))
    gaps = np.array([b["release_us"] - a_["release_us"] for c in by_conn.values() for a_, b in zip(c, c[1:])])
    body, stall = tuple(a.body), tuple(a.stall)
    if a.fit:
        body, stall = fit_mixture([r["excess"] for r in host], gaps)
        print(f"fit: body median {body[0]:.1f} us p99 {body[1]:.1f} us; stall probability {stall[0]:.4f} "
              f"median {stall[1]:.1f} us p99 {stall[2]:.1f} us")
        # The spells' length leaves the marginal alone: chosen to give the measured lag-1
        # correlation of the host excess (consecutive ACKs in order).
        target = corr([[r["excess"] for r in c if not r["held"]] for c in by_conn.values()])
        runs = [(abs(corr([model_series(gaps, body, stall, L)]) - target), L) for L in range(1, 31)]
        a.run_packets = float(min(runs)[1])
        print(f"fit: spells of {a.run_packets:g} packets (lag-1 correlation {target:+.2f} measured)")
    m = model_series(gaps, body, stall, a.run_packets)
    print(describe("model excess", m))
    print(increases("model excess", [m]))


if __name__ == "__main__":
    main()
