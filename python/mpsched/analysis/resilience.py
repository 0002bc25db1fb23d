"""Failover, failback and real-time traffic, from the record tables (`mpsched.metrics`).

* `message_delay`: per flow, the delay of its messages (p50 / p99 / p99.9, ms) and the share
  that missed their deadline.
* `delivery_stalls`: per flow, every interval in which the application waited for data it
  was owed, and `longest_stall`: the longest of them.
* `failover`: per flow and path event, the failover time (from the event to the first byte
  delivered again; for transfers also to 90 % of the goodput the connection settles at with
  the event in force) and the failback time (from the event's end to the first bytes the
  recovered path carries again; and, as a rate, to its pre-event rate again).
* `sent_per_delivered`: bytes sent over bytes delivered (redundancy overhead; 1 is none).
* `request_latency`: per RPC flow, the latency of its requests (issue to the last byte of the
  response: p50 / p99 / p99.9, ms) and the share that missed their deadline.

A stall of a flow of units (messages, CBR blocks: the `blocks` table) is exact: unit `k`,
sent at `s_k` and delivered in order at `d_k`, kept the application waiting from
`max(d_{k-1}, s_k)` to `d_k` (a message on time waits its one-way delay). A stall of a
transfer comes from `conn_series`: the time between two samples at which delivery grew, less
one sample interval (its resolution). Where nothing failed the failure metrics are 0 (an event
that cost nothing) or null (no event, no recovery to measure), shown as "-".
"""

from __future__ import annotations

import bisect
import math

import polars as pl

__all__ = ["message_delay", "request_latency", "delivery_stalls", "longest_stall", "failover", "sent_per_delivered"]

#: Applications whose units are timed one by one in `blocks`.
UNIT_APPS = ("messages", "cbr")


def _keys(df: pl.DataFrame, *extra: str) -> list[str]:
    return [k for k in ("run_id", *extra) if k in df.columns]


def message_delay(blocks: pl.DataFrame) -> pl.DataFrame:
    """Per flow: `messages` (units sent), `delivered`, delay p50 / p99 / p99.9 in ms over the
    delivered ones (linear interpolation), and `deadline_miss_rate`: the share of the units
    with a deadline that missed it (late or never delivered; null without deadlines)."""
    keys = _keys(blocks, "flow_id")
    d = pl.col("delay_ns").cast(pl.Float64) / 1e6
    has_deadline = pl.col("deadline_ns").is_not_null() if "deadline_ns" in blocks.columns else pl.lit(False)
    missed = pl.col("deadline_missed") if "deadline_missed" in blocks.columns else pl.lit(False)
    return blocks.group_by(keys, maintain_order=True).agg(
        pl.len().alias("messages"),
        pl.col("delay_ns").is_not_null().sum().alias("delivered"),
        d.quantile(0.5, interpolation="linear").alias("delay_p50_ms"),
        d.quantile(0.99, interpolation="linear").alias("delay_p99_ms"),
        d.quantile(0.999, interpolation="linear").alias("delay_p999_ms"),
        pl.when(has_deadline.sum() > 0).then((missed & has_deadline).sum() / has_deadline.sum())
        .otherwise(None).alias("deadline_miss_rate"),
    )


def request_latency(flows: pl.DataFrame, blocks: pl.DataFrame) -> pl.DataFrame:
    """Per RPC flow (`app` "rpc"): `requests` (issued), `answered`, latency p50 / p99 / p99.9 in
    ms over the answered ones (from the request's issue to its response's last byte delivered
    in order; linear interpolation) and `deadline_miss_rate` (null without deadlines)."""
    keys = _keys(flows, "flow_id")
    rpc = flows.filter(pl.col("app") == "rpc").select(keys)
    cols = {"messages": "requests", "delivered": "answered", "delay_p50_ms": "latency_p50_ms",
            "delay_p99_ms": "latency_p99_ms", "delay_p999_ms": "latency_p999_ms"}
    if rpc.is_empty() or blocks.is_empty():
        return pl.DataFrame(schema={**{k: flows.schema[k] for k in keys}, "requests": pl.UInt32, "answered": pl.UInt32,
                                    **{c: pl.Float64 for c in list(cols.values())[2:]}, "deadline_miss_rate": pl.Float64})
    return message_delay(blocks.join(rpc, on=keys)).rename(cols)


def delivery_stalls(flows: pl.DataFrame, blocks: pl.DataFrame, conn_series: pl.DataFrame) -> pl.DataFrame:
    """Every wait of every flow: `start_ns`, `end_ns` (the first byte delivered again; null if
    never), `stall_ns` (the wait; for transfers less one sample interval, at least 0) and
    `unit` (true when timed from `blocks`). Flows of units (`UNIT_APPS`) are read from
    `blocks`, the others from `conn_series` (empty without time series)."""
    keys = _keys(flows, "flow_id")
    rows: list[dict] = []
    apps = {tuple(r[k] for k in keys): r["app"] for r in flows.select(*keys, "app").iter_rows(named=True)}
    unit_flows = {k for k, a in apps.items() if a in UNIT_APPS}
    if not blocks.is_empty():
        for key, b in blocks.sort([*keys, "block"]).group_by(keys, maintain_order=True):
            if tuple(key) in unit_flows:
                rows += [{**dict(zip(keys, key)), **r, "unit": True} for r in _unit_waits(b)]
    if not conn_series.is_empty():
        done = {tuple(r[k] for k in keys): r["completed"] for r in flows.select(*keys, "completed").iter_rows(named=True)}
        for key, c in conn_series.sort([*keys, "time_ns"]).group_by(keys, maintain_order=True):
            if tuple(key) not in unit_flows and tuple(key) in apps:
                waits = _series_waits(c["time_ns"].to_list(), c["delivered_bytes"].to_list(), done[tuple(key)])
                rows += [{**dict(zip(keys, key)), **r, "unit": False} for r in waits]
    schema = {**{k: flows.schema[k] for k in keys}, "start_ns": pl.Int64, "end_ns": pl.Int64, "stall_ns": pl.Int64,
              "deadline_ns": pl.Int64, "unit": pl.Boolean}
    return pl.DataFrame(rows, schema=schema)


def _unit_waits(b: pl.DataFrame) -> list[dict]:
    """Waits of one flow of units, in block order; an undelivered unit opens a wait that never
    ends (end and stall null)."""
    out, last = [], None
    deadlines = b["deadline_ns"].to_list() if "deadline_ns" in b.columns else [None] * b.height
    for s, d, dl in zip(b["sent_ns"].to_list(), b["delivered_ns"].to_list(), deadlines):
        start = s if last is None else max(last, s)
        if d is None:
            out.append({"start_ns": start, "end_ns": None, "stall_ns": None, "deadline_ns": dl})
            break
        out.append({"start_ns": start, "end_ns": d, "stall_ns": d - start, "deadline_ns": dl})
        last = d
    return out


def _series_waits(t: list[int], delivered: list[int], completed: bool) -> list[dict]:
    """Waits of one transfer from its samples: between consecutive samples at which delivery
    grew. An unfinished flow's last wait (after its last growth) never ends."""
    if len(t) < 2:
        return []
    step = min(b - a for a, b in zip(t, t[1:]))
    grew = [t[0]] + [t[i] for i in range(1, len(t)) if delivered[i] > delivered[i - 1]]
    out = [{"start_ns": a, "end_ns": b, "stall_ns": max(b - a - step, 0), "deadline_ns": None}
           for a, b in zip(grew, grew[1:])]
    if not completed and grew[-1] < t[-1] - step:
        out.append({"start_ns": grew[-1], "end_ns": None, "stall_ns": None, "deadline_ns": None})
    return out


def longest_stall(stalls: pl.DataFrame) -> pl.DataFrame:
    """Per flow: the longest wait that ended (`longest_stall_ms`) and whether one never ended
    (`stalled_at_end`), from `delivery_stalls`."""
    keys = [k for k in stalls.columns if k in ("run_id", "flow_id")]
    return stalls.group_by(keys, maintain_order=True).agg(
        (pl.col("stall_ns").max().cast(pl.Float64) / 1e6).alias("longest_stall_ms"),
        pl.col("end_ns").is_null().any().alias("stalled_at_end"),
    )


def failover(path_events: pl.DataFrame, stalls: pl.DataFrame, conn_series: pl.DataFrame,
             subflow_series: pl.DataFrame, *, window_s: float = 0.2) -> pl.DataFrame:
    """Per flow and path event of its run (`event`, `kind`, `path`):

    * `failover_ms`: from the event to the first byte delivered again: the end of the first
      stall overlapping the event's span (from its start to its end, or to the end of the run)
      minus the event's time. A stall is a wait longer than the units' deadline (messages with
      one: a wait within it cost the application nothing it asked for), else than every wait of
      the flow before the event (its usual hiccups; for a transfer, at least one sample). 0
      when no wait was a stall: the event cost nothing. Null when delivery never resumed.
    * `failover90_ms` (transfers): from the event to the start of the first `window_s` window,
      from the first byte delivered again on, whose delivery rate reaches 90 % of the rate the connection
      settles at with the event in force (the second half of the event's span, up to the last
      growth of delivery): 0 when the rate never fell. Null for units or without samples.
    * `failback_ms` (events with an end): from the end to the first sample at which the
      event's path (its subflows summed) has more bytes acknowledged; null if it never carries again
      (e.g. the flow ended). On a path the event slowed but never stopped (`rate_collapse`,
      `rtt_spike`) this is the wait for its next ACK, the phase of its ACK cycle, not a recovery.
    * `failback90_ms` (events with an end): from the end to the start of the first `window_s`
      window, from the path's first bytes again (`failback_ms`) on, in which the event's path
      (its subflows' `bytes_acked`, summed) carries at least 90 % of its pre-event rate: the
      rate over the second half of the span from its first acknowledged byte to the event. A
      recovery as a rate, so defined alike for a path that stopped and one that only slowed,
      and at least `failback_ms`. Null without an end, when the path carried nothing before
      the event (nothing to recover), or when no window before the last sample reaches it
      (e.g. the flow ended first).
    """
    keys = [k for k in stalls.columns if k in ("run_id", "flow_id")]
    run_key = ["run_id"] if "run_id" in keys else []
    rows = []
    ev_rows = list(path_events.iter_rows(named=True)) if not path_events.is_empty() else []
    flow_keys = stalls.select(keys).unique(maintain_order=True).iter_rows(named=True)
    by_flow = {tuple(k.values()): g for k, g in _groups(stalls, keys)}
    series = {tuple(k.values()): g for k, g in _groups(conn_series, keys)} if not conn_series.is_empty() else {}
    subs = {tuple(k.values()): g for k, g in _groups(subflow_series, keys)} if not subflow_series.is_empty() else {}
    for fk in flow_keys:
        key = tuple(fk.values())
        for e in ev_rows:
            if run_key and e["run_id"] != fk["run_id"]:
                continue
            w = by_flow[key]
            row = {**fk, "event": e["event"], "kind": e["kind"], "path": e["path"],
                   "failover_ms": _failover_ns(w, e["at_ns"], e["end_ns"]),
                   "failover90_ms": None, "failback_ms": None, "failback90_ms": None}
            if not bool(w["unit"].any()) and key in series and row["failover_ms"] is not None:
                resume = e["at_ns"] + row["failover_ms"]  # no window before the first byte again
                row["failover90_ms"] = _failover90_ns(series[key], e["at_ns"], resume, e["end_ns"], window_s)
            if e["end_ns"] is not None and key in subs:
                row["failback_ms"] = _failback_ns(subs[key], e["path_index"], e["end_ns"])
                if row["failback_ms"] is not None:  # no window before the first bytes again
                    back = e["end_ns"] + row["failback_ms"]
                    at90 = _failback90_ns(subs[key], e["path_index"], e["at_ns"], back, window_s)
                    row["failback90_ms"] = None if at90 is None else at90 - e["end_ns"]
            for c in ("failover_ms", "failover90_ms", "failback_ms", "failback90_ms"):
                row[c] = None if row[c] is None else row[c] / 1e6
            rows.append(row)
    schema = {**{k: stalls.schema[k] for k in keys}, "event": pl.Int64, "kind": pl.String, "path": pl.String,
              "failover_ms": pl.Float64, "failover90_ms": pl.Float64, "failback_ms": pl.Float64,
              "failback90_ms": pl.Float64}
    return pl.DataFrame(rows, schema=schema)


def _groups(df: pl.DataFrame, keys: list[str]):
    for key, g in df.group_by(keys, maintain_order=True):
        yield dict(zip(keys, key)), g


def _failover_ns(w: pl.DataFrame, at_ns: int, end_ns: int | None) -> int | None:
    deadline = w["deadline_ns"].drop_nulls()
    if len(deadline):  # units with a deadline: a wait within it cost the application nothing
        floor = int(deadline.min())
    else:  # no longer than any wait before the event: not a failure
        floor = w.filter(pl.col("end_ns").is_not_null() & (pl.col("end_ns") <= at_ns))["stall_ns"].max() or 0
    if not bool(w["unit"].any()) and w.height:  # transfers: at least one sample interval
        gaps = (w["end_ns"] - w["start_ns"]).drop_nulls()
        floor = max(floor, int(gaps.min()) if len(gaps) else 0)
    horizon = end_ns if end_ns is not None else math.inf
    over = [r for r in w.iter_rows(named=True)
            if (r["end_ns"] is None or r["end_ns"] > at_ns) and r["start_ns"] < horizon]
    if any(r["end_ns"] is None for r in over):
        return None
    stalls = sorted((r for r in over if r["stall_ns"] > floor), key=lambda r: r["start_ns"])
    return max(stalls[0]["end_ns"] - at_ns, 0) if stalls else 0


def _failover90_ns(c: pl.DataFrame, at_ns: int, resume_ns: int, end_ns: int | None, window_s: float) -> int | None:
    t, d = c["time_ns"].to_list(), c["delivered_bytes"].to_list()
    last = max((t[i] for i in range(1, len(t)) if d[i] > d[i - 1]), default=None)
    stop = min(end_ns, last) if end_ns is not None and last is not None else last
    if stop is None or stop <= at_ns:
        return None

    def at(x: float) -> int:  # delivered bytes at the first sample at or after x
        return next((b for a, b in zip(t, d) if a >= x), d[-1])

    mid = at_ns + (stop - at_ns) / 2
    ref = (at(stop) - at(mid)) / max(stop - mid, 1)
    if ref <= 0:
        return None
    w = int(window_s * 1e9)
    for a in t:
        if a < resume_ns or a + w > stop:
            continue
        if (at(a + w) - at(a)) / w >= 0.9 * ref:
            return a - at_ns
    return None


def _on_path(s: pl.DataFrame, path_index: int) -> pl.DataFrame:
    col = "path_index" if "path_index" in s.columns else "path"  # the store names paths, keeping the index
    return s.filter(pl.col(col).cast(pl.String) == str(path_index)).sort("time_ns")


def _failback_ns(s: pl.DataFrame, path_index: int, end_ns: int) -> int | None:
    t, acked = _path_acked(s, path_index)  # the path's subflows summed, as one subflow's alone
    i = bisect.bisect_left(t, end_ns)
    if i >= len(t):
        return None
    return next((t[j] - end_ns for j in range(i + 1, len(t)) if acked[j] > acked[i]), None)


def _path_acked(s: pl.DataFrame, path_index: int) -> tuple[list[int], list[int]]:
    """Sample times and the bytes acknowledged on the path up to each, summed over its
    subflows from their growth only (a subflow that leaves the series takes nothing away)."""
    p = _on_path(s, path_index)
    part = [k for k in ("subflow",) if k in p.columns]
    grow = pl.col("bytes_acked").cast(pl.Int64).diff()
    grow = (grow.over(part) if part else grow).fill_null(0).clip(lower_bound=0)
    g = p.select("time_ns", grow.alias("grow")).group_by("time_ns").agg(pl.col("grow").sum()).sort("time_ns")
    return g["time_ns"].to_list(), g["grow"].cum_sum().to_list()


def _failback90_ns(s: pl.DataFrame, path_index: int, at_ns: int, back_ns: int, window_s: float) -> int | None:
    """The start of the first window from `back_ns` on that carries 90 % of the pre-event rate."""
    t, acked = _path_acked(s, path_index)
    first = next((t[i] for i in range(1, len(t)) if acked[i] > acked[i - 1] and t[i] <= at_ns), None)
    if first is None:
        return None
    lo = bisect.bisect_left(t, first + (at_ns - first) / 2)  # first sample of the reference's half
    hi = bisect.bisect_right(t, at_ns) - 1  # last sample before the event
    if hi <= lo or acked[hi] <= acked[lo]:
        return None
    ref = (acked[hi] - acked[lo]) / (t[hi] - t[lo])
    w = int(window_s * 1e9)
    for i in range(bisect.bisect_left(t, back_ns), len(t)):
        j = bisect.bisect_left(t, t[i] + w)  # the window's end: the first sample at or after
        if j >= len(t):
            return None
        if (acked[j] - acked[i]) / (t[j] - t[i]) >= 0.9 * ref:
            return t[i]
    return None


def sent_per_delivered(flows: pl.DataFrame) -> pl.DataFrame:
    """Per flow: payload bytes sent on all subflows over bytes delivered to the application
    (1 = no overhead; redundant copies, reinjections and retransmissions raise it; null when
    nothing was delivered)."""
    return flows.select(
        *_keys(flows, "flow_id"),
        pl.when(pl.col("bytes_delivered") > 0)
        .then(pl.col("bytes_sent").cast(pl.Float64) / pl.col("bytes_delivered").cast(pl.Float64))
        .alias("sent_per_delivered"),
    )
