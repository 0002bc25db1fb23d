"""Metrics of the seed experiments, computed with polars from the record tables.

Every function takes the table(s) it needs as DataFrames (``Results.flows``, ``Results.blocks``,
... or the tables of a single run) and keeps ``run_id`` and any other key column it finds, so it
works on one run as well as on a whole study.

* `goodput`: delivered bytes over the flow's lifetime; `window_goodput`: over a time window
  (from `conn_series`), for bulk flows and steady states.
* `subflow_throughput`, `rtt_series`, `rtt_max`: per-subflow throughput and smoothed RTT over time.
* `path_bytes`: bytes sent and acknowledged per path.
* `receive_buffer_series`: out-of-order bytes held at the receiver over time, and their maximum.
* `overhead`: retransmitted and redundant bytes as shares of the delivered ones.
* `block_delay`, `block_delay_summary`: application delay per block and its variation (CBR
  workload; `004_` slides 23-24: the delay of a block is the time its last byte is delivered
  in order minus its send stamp; the variation is the difference between consecutive blocks).
* `aggregation_benefit`: Kaspar's normalisation (`004_` slide 19).
* `jain_index`: Jain's fairness index.
* Failover, failback and real-time traffic (`mpsched.analysis.resilience`): `message_delay`,
  `request_latency` (RPC), `delivery_stalls`, `longest_stall`, `failover`, `sent_per_delivered`.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from mpsched.analysis.resilience import (delivery_stalls, failover, longest_stall, message_delay, request_latency,
                                        sent_per_delivered)

__all__ = [
    "goodput",
    "window_goodput",
    "subflow_throughput",
    "rtt_series",
    "rtt_max",
    "path_bytes",
    "receive_buffer_series",
    "overhead",
    "block_delay",
    "block_delay_summary",
    "aggregation_benefit",
    "jain_index",
    "message_delay",
    "request_latency",
    "delivery_stalls",
    "longest_stall",
    "failover",
    "sent_per_delivered",
]


def _keys(df: pl.DataFrame, *extra: str) -> list[str]:
    """`run_id` when present, then `extra`."""
    return [k for k in ("run_id", *extra) if k in df.columns]


def goodput(flows: pl.DataFrame) -> pl.DataFrame:
    """`flows` with `duration_s` (connect() to the last delivered byte, or to the end of a bulk
    flow) and `goodput_bps` (bytes delivered in order x 8 / duration). Unfinished flows have
    null goodput: their duration is unknown."""
    dur = (pl.col("end_ns") - pl.col("start_ns")).cast(pl.Float64) / 1e9
    return flows.with_columns(dur.alias("duration_s")).with_columns(
        pl.when(pl.col("duration_s") > 0)
        .then(pl.col("bytes_delivered").cast(pl.Float64) * 8 / pl.col("duration_s"))
        .otherwise(None)
        .alias("goodput_bps")
    )


def window_goodput(conn_series: pl.DataFrame, start_s: float, end_s: float) -> pl.DataFrame:
    """Per flow: bytes delivered in order between the samples at `start_s` and `end_s` (the
    nearest samples at or after each), x 8 / the time between them, as `goodput_bps`. A bulk
    flow's lifetime goodput counts its start-up and the drain of its send buffer after it stops
    writing; a window in its steady state does not."""
    keys = _keys(conn_series, "flow_id")
    t0, t1 = int(start_s * 1e9), int(end_s * 1e9)

    def at(t: int, name: str) -> pl.DataFrame:
        return (
            conn_series.filter(pl.col("time_ns") >= t)
            .sort("time_ns")
            .group_by(keys, maintain_order=True)
            .first()
            .select(*keys, pl.col("time_ns").alias(f"{name}_ns"), pl.col("delivered_bytes").alias(f"{name}_bytes"))
        )

    w = at(t0, "from").join(at(t1, "to"), on=keys)
    span_s = (pl.col("to_ns") - pl.col("from_ns")).cast(pl.Float64) / 1e9
    return w.select(
        *keys,
        ((pl.col("to_bytes") - pl.col("from_bytes")).cast(pl.Float64) * 8 / span_s).alias("goodput_bps"),
    )


def subflow_throughput(subflow_series: pl.DataFrame) -> pl.DataFrame:
    """`subflow_series` with `throughput_bps`: growth of `bytes_acked` between consecutive
    samples of the same subflow over the time between them (null on a subflow's first sample)."""
    if subflow_series.is_empty():
        return subflow_series
    part = _keys(subflow_series, "flow_id", "subflow")
    s = subflow_series.sort([*part, "time_ns"])
    d_bytes = pl.col("bytes_acked").cast(pl.Float64).diff().over(part)
    d_t = pl.col("time_ns").cast(pl.Float64).diff().over(part)
    return s.with_columns((d_bytes * 8e9 / d_t).alias("throughput_bps"))


def rtt_series(subflow_series: pl.DataFrame) -> pl.DataFrame:
    """Smoothed RTT over time per subflow, in ms (samples where the subflow had no estimate
    yet, sRTT 0, are dropped)."""
    keys = _keys(subflow_series, "flow_id", "subflow", "path")
    return (
        subflow_series.filter(pl.col("srtt_ns") > 0)
        .select(*keys, "time_ns", (pl.col("srtt_ns").cast(pl.Float64) / 1e6).alias("srtt_ms"))
        .sort([*keys, "time_ns"])
    )


def rtt_max(subflow_series: pl.DataFrame) -> pl.DataFrame:
    """Largest and median smoothed RTT of each subflow, ms."""
    s = rtt_series(subflow_series)
    keys = _keys(s, "flow_id", "subflow", "path")
    return s.group_by(keys, maintain_order=True).agg(
        pl.col("srtt_ms").max().alias("srtt_max_ms"), pl.col("srtt_ms").median().alias("srtt_median_ms")
    )


def path_bytes(subflows: pl.DataFrame) -> pl.DataFrame:
    """Bytes sent, acknowledged and retransmitted on each path (summed over flows), and the
    share of the sent bytes each path carried."""
    keys = _keys(subflows)
    out = subflows.group_by([*keys, "path"], maintain_order=True).agg(
        pl.col("bytes_sent").sum(), pl.col("bytes_acked").sum(), pl.col("bytes_retransmitted").sum()
    )
    total = pl.col("bytes_sent").sum().over(keys) if keys else pl.col("bytes_sent").sum()
    return out.with_columns((pl.col("bytes_sent") / total).alias("share"))


def receive_buffer_series(conn_series: pl.DataFrame) -> pl.DataFrame:
    """Per flow over time: out-of-order bytes at the connection level (`ofo_kib`), receive
    buffer in use (`rcv_buffer_kib`), and the running maximum of the out-of-order bytes
    (`ofo_max_kib`): head-of-line blocking at the receiver, the cost of a scheduler's
    reordering."""
    keys = _keys(conn_series, "flow_id")
    s = conn_series.sort([*keys, "time_ns"])
    return s.select(
        *keys,
        "time_ns",
        (pl.col("ofo_bytes").cast(pl.Float64) / 1024).alias("ofo_kib"),
        (pl.col("rcv_buffer_bytes").cast(pl.Float64) / 1024).alias("rcv_buffer_kib"),
        (pl.col("ofo_bytes").cum_max().over(keys).cast(pl.Float64) / 1024).alias("ofo_max_kib"),
    )


def overhead(flows: pl.DataFrame) -> pl.DataFrame:
    """Per flow: retransmitted bytes (subflow loss recovery) and redundant bytes (sent again at
    the connection level: reinjections, redundant copies) as shares of the bytes delivered,
    and the total overhead `(bytes_sent - bytes_delivered) / bytes_delivered`."""
    delivered = pl.col("bytes_delivered").cast(pl.Float64)
    ok = pl.col("bytes_delivered") > 0
    return flows.select(
        *_keys(flows, "flow_id"),
        "bytes_delivered",
        "bytes_sent",
        pl.when(ok).then(pl.col("bytes_retransmitted") / delivered).alias("retransmitted_share"),
        pl.when(ok).then(pl.col("bytes_redundant") / delivered).alias("redundant_share"),
        pl.when(ok).then((pl.col("bytes_sent").cast(pl.Float64) - delivered) / delivered).alias("overhead_share"),
    )


def block_delay(blocks: pl.DataFrame) -> pl.DataFrame:
    """Per delivered block: `delay_ms` (delivered in order minus sent) and `variation_ms`,
    the difference from the previous block of the same flow (`004_` slide 24: 60 ms after
    50 ms is a variation of 10 ms; signed, null on a flow's first block)."""
    keys = _keys(blocks, "flow_id")
    b = blocks.filter(pl.col("delay_ns").is_not_null()).sort([*keys, "block"])
    delay = pl.col("delay_ns").cast(pl.Float64) / 1e6
    return b.with_columns(delay.alias("delay_ms")).with_columns(
        pl.col("delay_ms").diff().over(keys).alias("variation_ms")
    )


def block_delay_summary(blocks: pl.DataFrame, *, skip_s: float = 0.0) -> pl.DataFrame:
    """Per flow: blocks delivered, delay mean / median / p95 / p99 / max (ms), the standard
    deviation of the delay and the mean absolute variation between consecutive blocks (ms).
    Blocks sent in the first `skip_s` seconds after the flow's first block are left out (the
    handshake and slow start delay the first ones)."""
    b = block_delay(blocks)
    keys = _keys(b, "flow_id")
    if skip_s > 0:
        first = pl.col("sent_ns").min().over(keys)
        b = b.filter(pl.col("sent_ns") >= first + int(skip_s * 1e9))
    d = pl.col("delay_ms")
    return b.group_by(keys, maintain_order=True).agg(
        pl.len().alias("blocks"),
        d.mean().alias("delay_mean_ms"),
        d.median().alias("delay_median_ms"),
        d.quantile(0.95, interpolation="linear").alias("delay_p95_ms"),
        d.quantile(0.99, interpolation="linear").alias("delay_p99_ms"),
        d.max().alias("delay_max_ms"),
        d.std().alias("delay_std_ms"),
        pl.col("variation_ms").abs().mean().alias("variation_mean_abs_ms"),
    )


def aggregation_benefit(goodput_bps: float, single_path_bps: Sequence[float]) -> float:
    """Kaspar's aggregation benefit ("Multipath Aggregation of Heterogeneous Access Networks",
    PhD thesis, University of Oslo, 2011; used by Paasch et al., CoNEXT 2013, and `004_` slide
    19): with `C_i` what each path gives alone and `C_max` the best of them,

        (g - C_max) / (sum C_i - C_max)   if g >= C_max   (0 = best path, 1 = perfect sum)
        (g - C_max) / C_max               if g <  C_max   (negative, -1 = nothing)

    Inputs: `goodput_bps` is the multipath connection's goodput; `single_path_bps` lists, per
    path, the goodput a single-path TCP connection reaches on that path alone under the same
    conditions (or, as an idealisation, the path's capacity). With one path, the benefit of
    matching it is 0."""
    caps = [float(c) for c in single_path_bps]
    if not caps or any(c < 0 for c in caps):
        raise ValueError("give one non-negative single-path goodput per path")
    c_max = max(caps)
    if c_max <= 0:
        raise ValueError("at least one path must carry something")
    g = float(goodput_bps)
    if g >= c_max:
        rest = sum(caps) - c_max
        return 0.0 if rest <= 0 else (g - c_max) / rest
    return (g - c_max) / c_max


def jain_index(values: Sequence[float] | pl.Series) -> float:
    """Jain's fairness index (Jain, Chiu, Hawe, DEC-TR-301, 1984): (sum x)^2 / (n sum x^2),
    1 when all equal, 1/n when one takes everything."""
    xs = [float(x) for x in values]
    if not xs:
        raise ValueError("no values")
    sq = sum(x * x for x in xs)
    return 1.0 if sq == 0 else sum(xs) ** 2 / (len(xs) * sq)
