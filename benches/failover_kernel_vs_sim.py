"""Failover and failback of one bulk download, simulator beside the kernel testbed, per path
event kind, repeated.

Run (root; the kernel engine needs the testbed; keep each kernel command short and wrap it in
the testbed lock):

    flock /tmp/mpsched-testbed-queue.lock .venv/bin/python benches/failover_kernel_vs_sim.py \\
        --engine kernel --kind down --reps 5 --out /tmp/failover.jsonl
    .venv/bin/python benches/failover_kernel_vs_sim.py --engine sim --reps 5 --out /tmp/failover.jsonl
    .venv/bin/python benches/failover_kernel_vs_sim.py --table /tmp/failover.jsonl

WLAN 20 Mbit/s 20 ms + LTE 10 Mbit/s 60 ms, one BDP of queue each, shaped as the testbed's htb
classes shape them (`transmitter = "htb"`: a packet leaves while the class owes no tokens, one
packet time before a wire's; docs/testbed.md "Session 12: rate_collapse's recovery"), `linux`
with the kernel's autotuning and join timing, the paths carrying the sender's TSO skbs whole (`gso = true`) as the
testbed's veths do, except WLAN under `loss_ramp`, whose delayer segments them (`--per-segment`:
every segment a packet on both paths, the simulator's default), a bulk download for 9 s; at
3 s WLAN goes down (the client's interface), is blackholed, collapses to 500 kbit/s, loses 0 to
30 % of its packets on a 1 s ramp, or takes 150 ms more each way; lifted at 6 s. Each run
appends one JSON
line (kind, engine, repetition, failover / to 90 % / failback / back to 90 % / longest stall in ms from
`mpsched.metrics`, RTOs, MB delivered, the event's time and the WLAN srtt just before it);
`--spread-ms S` spreads the event's time over [3 s, 3 s + S) across repetitions; `--table` prints per kind and engine the median and
range of each, whether the medians agree within 20 %, and a Mann-Whitney test of the two engines' runs. The simulator's repetitions use
seeds 1..reps with the endpoint timing model (`[host_delay]`, as the validation scenarios);
the kernel's are repeated runs. For `down` and `blackhole` each line also has `silent_ms`: when
the path last had data acknowledged, from the event's time. The kernel engine times each event
from when its change took effect (each row's `played_at_ms`, `played_end_ms`; `at_ms` is the due
time). benches/data/failover_kernel_6.18_quiet.jsonl: 20 kernel runs per kind on a quiet host,
so timed (2026-11-29: seeds 1-10 at 21:20Z, 11-20 at 23:52Z with the build in `kernel`); failover_kernel_6.18.jsonl: the earlier runs, on a loaded host, timed from
the due times. docs/testbed.md ("Failover", "Session 11: the failover bench on a quiet machine")
has the numbers.
"""

import argparse
import platform
import statistics
import time
from pathlib import Path

import polars as pl
from scipy.stats import binom, mannwhitneyu

from benchio import emit, read_rows, spread
import mpsched
from mpsched import engines, metrics
from mpsched.scenario.normalize import to_config

TOML = """
duration = "10s"
seed = {seed}
[[paths]]
name = "wlan"
rate = "20Mbit"
rtt = "20ms"
queue = "1BDP"
transmitter = "htb"
{impairments}{wlan_gso}
[[paths]]
name = "lte"
rate = "10Mbit"
rtt = "60ms"
queue = "1BDP"
transmitter = "htb"
{impairments}gso = true
[connection]
scheduler = "linux"
rcv_buf_autotuning = true
join_timing = "fully_established"
[[workload]]
kind = "bulk"
stop = "9s"
[[path_events]]
kind = "{kind}"
path = "wlan"
at = "{at_ms}ms"
duration = "3s"
{extra}
[host_delay]
median = "68us"
p99 = "417us"
[record]
interval = "10ms"
"""

KINDS = {"down": "", "blackhole": "", "rate_collapse": 'rate = "500kbit"',
         "loss_ramp": 'to_loss = "30%"\nramp = "1s"', "rtt_spike": 'extra_delay = "150ms"'}
MEASURES = ("failover_ms", "failover90_ms", "failback_ms", "failback90_ms", "longest_stall_ms")
#: The measures the "within 20 %" lines compare.
COMPARED = ("failover_ms", "failback_ms", "failback90_ms")
SILENT = ("down", "blackhole")  # the path acknowledges nothing while the event lasts
#: Kinds whose WLAN link drops single packets: the testbed's delayer segments the sender's TSO
#: skbs there (a lossy link; `gso = true` is refused), so the simulator sends per segment too.
PER_SEGMENT = ("loss_ramp",)


def silence_ms(sub: pl.DataFrame, path: int, at_ns: int, end_ns: int) -> float | None:
    """When the path went silent, from the event's time: the last sample before the event's
    end at which its subflow had more bytes acknowledged. The kernel engine's event player
    applies a change with `ip netns exec` commands, which a loaded machine delays by up to a
    few hundred ms; the simulator's is exact. `failover_ms` less this compares the two from the
    moment the path really stopped."""
    p = sub.filter(pl.col("path") == path).sort("time_ns")
    p = p.filter(pl.col("bytes_acked") > pl.col("bytes_acked").shift(1)).filter(pl.col("time_ns") < end_ns)
    return None if p.is_empty() else max(int(p["time_ns"][-1]) - at_ns, 0) / 1e6


def event_at_ms(rep: int, spread_ms: int) -> int:
    """The event's time for repetition `rep` (1-based): 3 s, plus with `spread_ms` an offset
    spread evenly over [0, spread_ms) (golden-ratio sequence, the same on both engines), so
    that the runs meet the WLAN subflow's cubic sawtooth at different phases. The simulator's
    seeds do not move that phase, and the failback scales with the RTO at the event (srtt at
    the event + 200 ms, doubled three times: docs/testbed.md "Failback")."""
    return 3000 + int(spread_ms * ((rep * 0.6180339887498949) % 1.0)) if spread_ms else 3000


def srtt_at_ms(sub: pl.DataFrame, path: int, at_ns: int) -> float | None:
    """The path's smoothed RTT at its last sample before `at_ns`, ms."""
    p = sub.filter((pl.col("path") == path) & (pl.col("time_ns") < at_ns)).drop_nulls("srtt_ns").sort("time_ns")
    return None if p.is_empty() else p["srtt_ns"][-1] / 1e6


def one_run(kind: str, engine: str, seed: int, spread_ms: int = 0, per_segment: bool = False,
            keep: str | None = None, impairments: str | None = None) -> dict:
    at_ms = event_at_ms(seed, spread_ms)
    toml = TOML.format(kind=kind, extra=KINDS[kind], seed=seed, at_ms=at_ms,
                       impairments=f'impairments = "{impairments}"\n' if impairments else "",
                       wlan_gso="" if kind in PER_SEGMENT else "gso = true")
    if per_segment:
        toml = toml.replace("gso = true\n", "")
    cfg = to_config(mpsched.loads_scenario(toml))
    t = engines.run_config(cfg, engine)
    flows, conn = pl.DataFrame(t["flows"]), pl.DataFrame(t["conn_series"])
    events = pl.DataFrame(t["path_events"], schema_overrides={"end_ns": pl.Int64})
    stalls = metrics.delivery_stalls(flows, pl.DataFrame(), conn)
    sub = pl.DataFrame(t["subflow_series"])
    if keep:  # the series the metrics read, to compute a new one later without the testbed
        stem = Path(keep) / f"{kind}-{engine}-{seed}-{time.time_ns()}"
        for name, df in (("conn", conn), ("sub", sub), ("events", events), ("flows", flows)):
            df.write_parquet(f"{stem}.{name}.parquet")
    fo = metrics.failover(events, stalls, conn, sub).row(0, named=True)
    ev = events.row(0, named=True)
    silent = silence_ms(sub, ev["path_index"], ev["at_ns"], ev["end_ns"]) if kind in SILENT else None
    played = {"played_at_ms": ev["at_ns"] / 1e6, "played_end_ms": None if ev["end_ns"] is None else ev["end_ns"] / 1e6}
    # The kernel build the row was measured on (host timing differs between builds of one release).
    host = {"kernel": platform.release()} if engine == "kernel" else {}
    return {"kind": kind, "engine": engine, "seed": seed, "at_ms": at_ms, **host, **played,
            **{m: fo.get(m) for m in MEASURES[:4]},
            "silent_ms": silent, "srtt_at_event_ms": srtt_at_ms(sub, ev["path_index"], ev["at_ns"]),
            "longest_stall_ms": metrics.longest_stall(stalls)["longest_stall_ms"][0],
            "rtos": sum(t["subflows"]["rto_count"]), "mb_delivered": flows["bytes_delivered"][0] / 1e6}


def _cell(values: list) -> str:
    """Median [range] of the values, "(N none)" counting the runs that measured nothing (null);
    a run stored before the measure existed (`ABSENT`) is left out."""
    values = [x for x in values if x is not ABSENT]
    missing = sum(x is None for x in values)
    return spread(values, 0) + (f" ({missing} none)" if missing and missing < len(values) else "")


#: A measure a stored run has no value for: it was recorded before the measure existed.
ABSENT = object()


def median_ci(values: list) -> str:
    """Distribution-free 95 % interval of the median: the order statistics k and n + 1 - k
    with P(Binomial(n, 1/2) < k) <= 2.5 % (a two-valued outcome, such as which MPTCP timer
    period a failover lands on, has no useful mean or normal interval)."""
    v = sorted(x for x in values if x is not None and x is not ABSENT)
    n = len(v)
    k = int(binom.ppf(0.025, n, 0.5))  # P(X <= k - 1) <= 2.5 %
    while k > 0 and binom.cdf(k - 1, n, 0.5) > 0.025:
        k -= 1
    if k < 1:
        return "–"
    return f"{v[k - 1]:.0f}–{v[n - k]:.0f}"


def same_distribution_p(sim: list, kernel: list) -> str:
    """Two-sided Mann-Whitney U p-value of the simulator's runs against the kernel's: a median
    can jump between the two modes of a bimodal measure (loss_ramp's failback on both engines),
    so this asks whether one engine's runs tend to be larger than the other's at all. Runs that
    measured nothing are left out; fewer than 3 on a side give no test."""
    if min(len(sim), len(kernel)) < 3:
        return "–"
    return f"{mannwhitneyu(sim, kernel, alternative='two-sided').pvalue:.2f}"


def table(path: str) -> None:
    rows = read_rows(path)
    print("| event | engine | runs | failover (ms) | to 90 % (ms) | failback (ms) | back to 90 % (ms) "
          "| longest stall (ms) | RTOs | silent after (ms) | WLAN srtt at the event (ms) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for kind in KINDS:
        for eng in ("sim", "kernel"):
            rs = [r for r in rows if r["kind"] == kind and r["engine"] == eng]
            if rs:
                cells = " | ".join(_cell([r.get(m, ABSENT) for r in rs]) for m in MEASURES)
                silent = _cell([r.get("silent_ms") for r in rs]) if kind in SILENT else "–"
                srtt = _cell([r.get("srtt_at_event_ms") for r in rs])
                print(f"| {kind} | {eng} | {len(rs)} | {cells} | {_cell([r['rtos'] for r in rs])} | {silent} | {srtt} |")
    print("\nmedian simulator / kernel, within 20 %?")
    for kind in KINDS:
        out = []
        for m in COMPARED:
            med, runs = {}, {}
            for eng in ("sim", "kernel"):
                runs[eng] = [r[m] for r in rows if r["kind"] == kind and r["engine"] == eng and r.get(m) is not None]
                med[eng] = statistics.median(runs[eng]) if runs[eng] else None
            if None in med.values():
                out.append(f"{m}: n/a")
                continue
            cis = " / ".join(median_ci([r.get(m, ABSENT) for r in rows if r["kind"] == kind and r["engine"] == e])
                             for e in ("sim", "kernel"))
            rel = (med["sim"] - med["kernel"]) / med["kernel"] if med["kernel"] else float("inf")
            out.append(f"{m}: {med['sim']:.0f} / {med['kernel']:.0f} ({rel:+.0%}, {'yes' if abs(rel) <= 0.2 else 'no'}; "
                       f"median 95 % CI {cis}; Mann-Whitney p {same_distribution_p(runs['sim'], runs['kernel'])})")
        print(f"- {kind}: " + "; ".join(out))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", choices=("sim", "kernel"))
    ap.add_argument("--kind", choices=tuple(KINDS), action="append")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--first-rep", type=int, default=1, help="number of the first repetition (seed, event offset)")
    ap.add_argument("--spread-ms", type=int, default=0,
                    help="spread the event's time over [3 s, 3 s + this) across repetitions (0: all at 3 s)")
    ap.add_argument("--out")
    ap.add_argument("--table")
    ap.add_argument("--per-segment", action="store_true",
                    help="simulator: every segment a packet of its own on both paths (the comparison before "
                         "2026-11-29 snd15), not the testbed's skbs")
    ap.add_argument("--keep", help="also write each run's flows, conn / subflow series and events as parquet "
                                   "files into this folder")
    ap.add_argument("--impairments", choices=("before_queue", "after_queue"),
                    help="simulator: where the paths' delay (and the events' delay and loss) act (default: the "
                         "core's, after the queue; the testbed's delayer is before the router's queue, but "
                         "before_queue takes rate_collapse's back to 90 %% from 60 to 790 ms: docs/testbed.md "
                         "\"Session 13: rtt_spike's back to 90 %%\")")
    a = ap.parse_args()
    if a.table:
        table(a.table)
        return
    for kind in a.kind or KINDS:
        for rep in range(a.first_rep, a.first_rep + a.reps):
            emit(one_run(kind, a.engine or "sim", rep, a.spread_ms, a.per_segment, a.keep, a.impairments), a.out)


if __name__ == "__main__":
    main()
