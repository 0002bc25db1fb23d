"""Tables from a study: flow completion time statistics and how traffic split over the paths;
for studies on a `[topology]`, link utilisation per tier, Jain's index and FCT per flow class."""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from mpsched.analysis.stats import mean_t_interval
from mpsched.study.results import Results

__all__ = ["group_keys", "table_columns", "fct_summary", "labelled_flows", "path_shares", "throughput_series", "is_datacenter",
           "link_utilisation", "datacenter_summary", "class_fct_summary", "has_resilience", "resilience_summary"]


def labelled_flows(res: Results, columns: list[str] | None = None) -> pl.DataFrame:
    """`flows` with a readable `scheduler`: single-path TCP flows (no scheduler) say "tcp", a
    connection with backup paths says so ("linux (backup lte)"). `columns`: only these (those
    the table has; the labels' own columns are read too), scanned from the store without
    reading the others."""
    if columns is None:
        flows = res.flows
    else:
        flows = res.columns("flows", [*columns, "scheduler", "protocol", "backup"])
    if {"scheduler", "protocol"} <= set(flows.columns):
        flows = flows.with_columns(
            pl.when(pl.col("scheduler").fill_null("") == "").then(pl.col("protocol")).otherwise(pl.col("scheduler")).alias("scheduler")
        )
    if "backup" in flows.columns:  # a connection with backup paths is a configuration of its own
        flows = flows.with_columns(
            pl.when(pl.col("backup").fill_null("") == "").then(pl.col("scheduler"))
            .otherwise(pl.format("{} (backup {})", pl.col("scheduler"), pl.col("backup"))).alias("scheduler"))
    return flows


def table_columns(res: Results, name: str) -> list[str]:
    """The columns of one of the study's tables, read from its schema (no rows read)."""
    return res.column_names(name)


def group_keys(res: Results, table: pl.DataFrame | list[str]) -> list[str]:
    """What a summary groups by: the scheduler, then every swept parameter except the seed
    (`table`: the frame, or its column names)."""
    cols = table if isinstance(table, list) else table.columns
    keys = ["scheduler"] if "scheduler" in cols else []
    keys += [p for p in res.group_params if p in cols and p not in keys]
    return keys


def fct_summary(res: Results) -> pl.DataFrame:
    """Per scheduler x swept setting (seeds pooled): flows, how many completed, FCT median /
    p95 / mean in seconds (completed flows only), the share of bytes sent redundantly, and the
    share of bytes each path carried. Rows keep the order of the sweep. Reads only the columns
    it needs from the store (a study's summary, not its whole flows table, in memory)."""
    keys = group_keys(res, table_columns(res, "flows"))
    flows = labelled_flows(res, [*keys, "fct_ns", "completed", "bytes_redundant", "bytes_sent"])
    if flows.is_empty():
        return pl.DataFrame()
    fct_s = pl.col("fct_ns").filter(pl.col("completed")).cast(pl.Float64) / 1e9
    aggs = [
        pl.len().alias("flows"),
        pl.col("completed").sum().alias("completed"),
        fct_s.median().alias("fct_median_s"),
        fct_s.quantile(0.95, interpolation="linear").alias("fct_p95_s"),
        fct_s.mean().alias("fct_mean_s"),
    ]
    if {"bytes_redundant", "bytes_sent"} <= set(flows.columns):
        aggs.append((pl.col("bytes_redundant").sum() / pl.col("bytes_sent").sum()).alias("redundant_share"))
    summary = flows.group_by(keys, maintain_order=True).agg(aggs) if keys else flows.select(aggs)
    shares = path_shares(res)
    if keys and not shares.is_empty():
        summary = summary.join(shares, on=keys, how="left", maintain_order="left")
    return summary


def path_shares(res: Results) -> pl.DataFrame:
    """Per scheduler x swept setting: the fraction of subflow bytes sent on each path, one
    column `share_<path>` per path."""
    have = table_columns(res, "subflows")
    if not {"path", "bytes_sent"} <= set(have):
        return pl.DataFrame()
    keys = group_keys(res, table_columns(res, "flows"))
    sub = res.columns("subflows", [*keys, "path", "bytes_sent", "run_id", "flow_id"])
    if sub.is_empty():
        return pl.DataFrame()
    flows = labelled_flows(res, ["run_id", "flow_id", *keys])
    # the scheduler that ran is the flow's (a swept `scheduler` column of subflows says what was
    # asked for, which differs for plain TCP)
    if "scheduler" in keys:
        sub = sub.drop("scheduler", strict=False).join(
            flows.select("run_id", "flow_id", "scheduler"), on=["run_id", "flow_id"], how="left")
    keys = [k for k in keys if k in sub.columns]
    if not keys:
        return pl.DataFrame()
    per_path = sub.group_by([*keys, "path"], maintain_order=True).agg(pl.col("bytes_sent").sum())
    per_path = per_path.with_columns(
        (pl.col("bytes_sent") / pl.col("bytes_sent").sum().over(keys)).alias("share"),
        pl.format("share_{}", pl.col("path").cast(pl.String)).alias("column"),
    )
    return per_path.pivot(on="column", index=keys, values="share", maintain_order=True)


def throughput_series(res: Results, run_ids: list[str] | None = None) -> pl.DataFrame:
    """`subflow_series` with a `throughput_bps` column: the bytes acknowledged between samples
    over the time between them, per run, flow and subflow, never above the rate of the path's
    slowest link in the data's direction (when the run's configuration is stored: `Results.config`).

    A cumulative ACK after loss recovery acknowledges in one interval bytes that crossed the
    link over several (they waited, SACKed, for the hole to fill); counted where the ACK lands
    they give a spike above the link's rate (118 Mbit/s on a 10 Mbit/s link). Such excess is
    moved back to the intervals before it, each filled up to the rate: the latest delivery
    schedule the link allows, with every byte counted once. `run_ids`: only those runs."""
    s = res.subflow_series
    if run_ids is not None and not s.is_empty():
        s = s.filter(pl.col("run_id").is_in(run_ids))
    if s.is_empty():
        return s
    part = ["run_id", "flow_id", "subflow"]
    s = s.sort([*part, "time_ns"])
    d_bytes = pl.col("bytes_acked").diff().over(part)
    d_t = pl.col("time_ns").diff().over(part)
    s = s.with_columns(d_bytes.cast(pl.Float64).alias("_bytes"), d_t.cast(pl.Float64).alias("_dt"))
    caps = _path_caps_bps(res, s.get_column("run_id").unique().to_list())
    upload = _uploads(res)
    out = []
    for (run_id, flow_id, _sub), g in s.group_by(part, maintain_order=True):
        b = g.get_column("_bytes").fill_null(0.0).to_numpy().copy()
        dt = g.get_column("_dt").fill_null(0.0).to_numpy()
        path = g.get_column("path")[0] if "path" in g.columns else None
        cap = caps.get((run_id, "up" if (run_id, flow_id) in upload else "down", path))
        if cap:
            b = _fill_back(b, dt * cap / 8e9)
        thr = np.where(dt > 0, b * 8e9 / np.where(dt > 0, dt, 1.0), np.nan)
        thr[0] = np.nan  # a subflow's first sample has no interval
        out.append(g.with_columns(pl.Series("throughput_bps", thr).fill_nan(None)))
    return pl.concat(out).drop("_bytes", "_dt")


def _fill_back(b: np.ndarray, room: np.ndarray) -> np.ndarray:
    """Bytes per interval, none above `room`: excess moves to earlier intervals (from the last
    interval back), what cannot fit anywhere stays where it was."""
    out = b.copy()
    carry = 0.0
    for i in range(len(out) - 1, -1, -1):
        want = out[i] + carry
        out[i] = min(want, room[i]) if i > 0 else want
        carry = want - out[i]
    return out


def _uploads(res: Results) -> set[tuple[str, int]]:
    """(run id, flow id) of the flows whose data goes up (client to server)."""
    f = res.flows
    if "direction" not in f.columns:
        return set()
    return set(f.filter(pl.col("direction").is_in(["upload", "up"])).select("run_id", "flow_id").iter_rows())


def _path_caps_bps(res: Results, run_ids: list[str]) -> dict[tuple[str, str, str], float]:
    """(run id, "up"/"down", path name) -> the largest rate the slowest link of that direction
    ever has, from each run's stored configuration (a trace-driven link has none)."""
    caps: dict[tuple[str, str, str], float] = {}
    for run_id in run_ids:
        config = res.config(run_id)
        if not config:
            continue
        links = config.get("links", [])
        for p in config.get("paths", []):
            for direction in ("up", "down"):
                rates = []
                for i in p.get(direction, []):
                    link = links[i]
                    cap = link.get("capacity", {})
                    if cap.get("kind") == "trace":
                        break
                    steps = [st["rate_bps"] for st in cap.get("steps", [])]
                    rates.append(max([link["rate_bps"], *steps]))
                else:
                    if rates:
                        caps[(run_id, direction, p["name"])] = float(min(rates))
    return caps


# --- studies on a [topology] (mpsched.scenario.datacenter) -------------------------------------------------


def is_datacenter(res: Results) -> bool:
    """Whether the study ran on a `[topology]`: its flows carry hosts and a class."""
    return {"sender", "receiver", "class"} <= set(table_columns(res, "flows"))


def _dc_keys(res: Results) -> list[str]:
    """A data-center summary groups by the swept settings except the seed."""
    return [p for p in res.group_params if p in res.flows.columns]


def link_utilisation(res: Results) -> pl.DataFrame:
    """`links` with `utilisation`: bytes forwarded x 8 / (rate x run duration), per link and
    run (rate, tier and duration come from `mpsched.scenario.datacenter.link_columns`, stored by the study)."""
    links = res.links
    if links.is_empty() or not {"rate_bps", "duration_ns", "tier"} <= set(links.columns):
        return pl.DataFrame()
    cap_bits = pl.col("rate_bps").cast(pl.Float64) * pl.col("duration_ns").cast(pl.Float64) / 1e9
    return links.with_columns((pl.col("bytes_forwarded").cast(pl.Float64) * 8 / cap_bits).alias("utilisation"))


def datacenter_summary(res: Results) -> pl.DataFrame:
    """Per swept setting (seeds pooled; each value a mean over the runs): the mean utilisation of
    the links of each tier (`util_<tier>`: the core links are `util_agg_core`; the shared link
    of a dumbbell `util_bottleneck`), and Jain's index over the goodput of the flows sending
    without end (`jain_bulk`, over the bytes each delivered)."""
    from mpsched.analysis.metrics import jain_index

    keys = _dc_keys(res)
    util = link_utilisation(res)
    if util.is_empty():
        return pl.DataFrame()
    per_run = util.group_by(["run_id", *keys, "tier"], maintain_order=True).agg(pl.col("utilisation").mean())
    wide = per_run.pivot(on="tier", index=["run_id", *keys], values="utilisation", maintain_order=True)
    wide = wide.rename({c: f"util_{c}" for c in wide.columns if c not in ("run_id", *keys)})
    # bytes delivered rather than goodput: an endless flow still draining at the end has no
    # goodput yet, and the flows of one run send over the same period
    bulk = res.flows.filter(pl.col("app") == "bulk")
    jain = [(r, jain_index(g.get_column("bytes_delivered").cast(pl.Float64).to_list()))
            for (r,), g in bulk.group_by(["run_id"], maintain_order=True)]
    if jain:
        wide = wide.join(pl.DataFrame(jain, schema=["run_id", "jain_bulk"], orient="row"), on="run_id", how="left")
    aggs = [pl.len().alias("runs"), *(pl.col(c).mean() for c in wide.columns if c not in ("run_id", *keys))]
    return wide.group_by(keys, maintain_order=True).agg(aggs) if keys else wide.select(aggs)


def class_fct_summary(res: Results) -> pl.DataFrame:
    """Per swept setting, flow class and protocol (seeds pooled): flows, completed, FCT median /
    p99 / mean in milliseconds (completed flows; endless flows have none) and the mean goodput of
    the flows in Mbit/s."""
    from mpsched.analysis.metrics import goodput

    flows = res.flows
    if flows.is_empty():
        return pl.DataFrame()
    keys = [*_dc_keys(res), "class"] + (["protocol"] if "protocol" not in _dc_keys(res) else [])
    fct_ms = pl.col("fct_ns").filter(pl.col("completed") & (pl.col("app") != "bulk")).cast(pl.Float64) / 1e6
    return goodput(flows).group_by(keys, maintain_order=True).agg(
        pl.len().alias("flows"),
        pl.col("completed").sum().alias("completed"),
        fct_ms.median().alias("fct_median_ms"),
        fct_ms.quantile(0.99, interpolation="linear").alias("fct_p99_ms"),
        fct_ms.mean().alias("fct_mean_ms"),
        (pl.col("goodput_bps").mean() / 1e6).alias("goodput_mbps"),
    )


# --- failover, failback and real-time traffic (mpsched.analysis.resilience) ------------------------


#: The per-event times of `failover`, in the order `mpsched show` prints them.
FAILURE_MS = ("failover_ms", "failover90_ms", "failback_ms", "failback90_ms")


def has_resilience(res: Results) -> bool:
    """Whether the study has path events or messages to summarise."""
    ev = res.tables.get("path_events")
    return (ev is not None and not ev.is_empty()) or ("app" in res.flows.columns and
                                                      bool((res.flows["app"] == "messages").any()))


def resilience_summary(res: Results) -> pl.DataFrame:
    """Per scheduler x swept setting x application (seeds pooled): failover time (to the first
    byte again, and for transfers to 90 % of the goodput with the event in force), failback
    time (to the path's first bytes again, and to 90 % of its pre-event rate) and the longest
    delivery stall (ms, means over flows and events; null where no event or no recovery),
    message delay p50 / p99 / p99.9 (ms, pooled over the messages), deadline-miss rate and
    bytes sent per byte delivered (pooled). Empty for a study without path events or messages.

    The seeds are the repetitions: `seeds` counts the runs, and `failover_ms_low` / `_high` and
    `deadline_miss_rate_low` / `_high` bound the 95 % Student t interval of the mean over seeds
    (`mpsched.analysis.stats.mean_t_interval`) of the per-seed values (a run's failover time,
    its flows' mean; its share of missed deadlines), clipped to the metrics' range (>= 0; a
    share <= 1); null with fewer than two seeds. With every seed sending the same units the
    pooled miss rate is the mean of the per-seed rates, the interval's centre."""
    from mpsched.analysis.resilience import delivery_stalls, failover, longest_stall

    if res.flows.is_empty() or not has_resilience(res):
        return pl.DataFrame()
    flows = labelled_flows(res)
    keys = [*group_keys(res, flows), "app"]
    fk = ["run_id", "flow_id"]
    per_flow = flows.select(*fk, *keys, "bytes_sent", "bytes_delivered")
    stalls = delivery_stalls(flows, res.blocks, res.conn_series)
    per_flow = per_flow.join(longest_stall(stalls), on=fk, how="left")
    events = res.tables.get("path_events", pl.DataFrame())
    if not events.is_empty():
        fo = failover(events, stalls, res.conn_series, res.subflow_series)
        fo = fo.group_by(fk).agg(pl.col(*FAILURE_MS).mean())
        per_flow = per_flow.join(fo, on=fk, how="left")
    aggs = [pl.len().alias("flows")]
    aggs += [pl.col(c).mean() for c in FAILURE_MS if c in per_flow.columns]
    aggs += [pl.col("longest_stall_ms").mean()]
    out = per_flow.group_by(keys, maintain_order=True).agg(
        *aggs, (pl.col("bytes_sent").sum() / pl.col("bytes_delivered").sum()).alias("sent_per_delivered"))
    blocks = res.blocks
    if not blocks.is_empty() and "deadline_missed" in blocks.columns:
        b = blocks.select(*fk, "delay_ns", "deadline_ns", "deadline_missed").join(
            flows.filter(pl.col("app") == "messages").select(*fk, *keys), on=fk)
        msg = b.group_by(keys, maintain_order=True).agg(*_unit_delay_aggs("delay"))
        out = out.join(msg, on=keys, how="left", maintain_order="left")
        per_run = b.group_by([*keys, "run_id"], maintain_order=True).agg(_unit_delay_aggs("delay")[-1])
        per_flow = per_flow.join(per_run, on=[*keys, "run_id"], how="left")
    return out.join(_seed_intervals(per_flow, keys), on=keys, how="left", maintain_order="left")


def _seed_intervals(per_flow: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Per group of `keys`: the number of seeds (runs) and the 95 % t interval over seeds of
    the failover time and the deadline-miss rate (each run's value first: its flows' mean)."""
    cols = [c for c in ("failover_ms", "deadline_miss_rate") if c in per_flow.columns]
    per_seed = per_flow.group_by([*keys, "run_id"], maintain_order=True).agg(pl.col(*cols).mean()) if cols else \
        per_flow.select(*keys, "run_id").unique(maintain_order=True)
    grouped = per_seed.group_by(keys, maintain_order=True).agg(pl.len().alias("seeds"), *(pl.col(c) for c in cols))
    bounds: dict[str, list[float | None]] = {f"{c}_{side}": [] for c in cols for side in ("low", "high")}
    for row in grouped.iter_rows(named=True):
        for c in cols:
            _, low, high = mean_t_interval([v for v in row[c] if v is not None])
            # both are non-negative (a miss share at most 1): the interval is clipped to that range
            top = 1.0 if c == "deadline_miss_rate" else math.inf
            bounds[f"{c}_low"].append(None if math.isnan(low) else max(low, 0.0))
            bounds[f"{c}_high"].append(None if math.isnan(high) else min(high, top))
    return grouped.drop(cols).with_columns(pl.Series(k, v, dtype=pl.Float64) for k, v in bounds.items())


def _unit_delay_aggs(name: str) -> list[pl.Expr]:
    """`{name}_p50_ms`, `_p99_ms`, `_p999_ms` of the units' `delay_ns` (pooled, linear
    interpolation) and `deadline_miss_rate` over the units with a deadline."""
    d = pl.col("delay_ns").cast(pl.Float64) / 1e6
    with_deadline = pl.col("deadline_ns").is_not_null()
    return [d.quantile(q, interpolation="linear").alias(f"{name}_{tag}_ms")
            for q, tag in ((0.5, "p50"), (0.99, "p99"), (0.999, "p999"))] + [
        pl.when(with_deadline.sum() > 0).then((pl.col("deadline_missed") & with_deadline).sum() / with_deadline.sum())
        .alias("deadline_miss_rate")]


def has_rpc(res: Results) -> bool:
    """Whether the study has request / response (RPC) flows."""
    return "app" in res.flows.columns and bool((res.flows["app"] == "rpc").any())


def rpc_summary(res: Results) -> pl.DataFrame:
    """Per scheduler x swept setting (seeds pooled) for the RPC flows: requests, answered,
    request latency p50 / p99 / p99.9 (ms, pooled over the requests) and the deadline-miss
    rate. Empty without RPC flows."""
    if res.flows.is_empty() or not has_rpc(res) or res.blocks.is_empty():
        return pl.DataFrame()
    flows = labelled_flows(res).filter(pl.col("app") == "rpc")
    keys = group_keys(res, flows)
    fk = ["run_id", "flow_id"]
    b = res.blocks.select(*fk, "delay_ns", "deadline_ns", "deadline_missed").join(flows.select(*fk, *keys), on=fk)
    return b.group_by(keys, maintain_order=True).agg(
        pl.len().alias("requests"), pl.col("delay_ns").is_not_null().sum().alias("answered"), *_unit_delay_aggs("latency"))
