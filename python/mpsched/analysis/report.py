"""A comparison (`mpsched.analysis.compare`) as text for a terminal of 80 columns: one table of
answers (statistics, difference from the baseline with its interval, verdict), one of
diagnostics (retransmissions, RTOs, paths), numbered notes and a legend of the columns."""

from __future__ import annotations

import math

import polars as pl
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from mpsched.analysis.compare import Comparison

__all__ = ["print_comparison", "print_datacenter", "print_frame", "cell"]


def _ms(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 1 else f"{v:.3f}"


def _pct(v, digits: int = 1) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{100 * v:.{digits}f}"


def _diff(row: dict) -> str:
    if row["diff"] is None:
        return "–"
    if math.isnan(row["diff"]):
        return "n/a"
    return f"{100 * row['diff']:+.1f}[{100 * row['low']:+.1f},{100 * row['high']:+.1f}]"


def _setting(row: dict, by: list[str]) -> str:
    return " ".join(str(row[k]) for k in by) if by else "all"


def _scheduler_label(row: dict, n_schedulers: int) -> str:
    """A group of identical schedulers by its first name and how many more (the note lists
    them), so the column stays narrow."""
    names = row["scheduler"].split(" = ")
    if len(names) > 1 and len(names) == n_schedulers:
        return f"all {len(names)}"
    if len(names) > 1:
        return f"{names[0]} +{len(names) - 1}"
    return names[0]


def print_comparison(cmp: Comparison, console: Console, *, title: str = "") -> None:
    """Print the answer table, the diagnostics table, the notes and the legend."""
    t = cmp.table
    if t.is_empty():
        console.print("nothing to compare: no flow completed")
        return
    rows = t.to_dicts()
    n_sched = len({s for r in rows for s in r["scheduler"].split(" = ")})
    notes: list[str] = []
    marks: list[str] = []
    for r in rows:
        m = []
        names = r["scheduler"].split(" = ")
        parts = [p if not p.startswith("identical: ") else
                 f"{'all' if len(names) == n_sched else ', '.join(names)} identical: {p[len('identical: '):]}"
                 for p in filter(None, (r.get("note") or "").split("; "))]
        for part in parts:
            if part not in notes:
                notes.append(part)
            m.append(str(notes.index(part) + 1))
        marks.append(f" [{','.join(m)}]" if m else "")
    setting_head = " ".join(cmp.by) if cmp.by else "setting"
    unit = cmp.label
    answers = Table(title=title or f"{unit}: each scheduler against {cmp.baseline}", box=box.SIMPLE_HEAD,
                    pad_edge=False, title_justify="left", collapse_padding=True)
    answers.add_column(setting_head, overflow="fold")
    answers.add_column("scheduler", overflow="fold")
    for head in ("p50", "mean", "p95"):
        answers.add_column(head, justify="right", no_wrap=True)
    answers.add_column(f"vs {cmp.baseline} %", justify="right", no_wrap=True)
    answers.add_column("verdict", no_wrap=True)
    previous = None
    for r, mark in zip(rows, marks):
        setting = _setting(r, cmp.by)
        answers.add_row(escape(setting if setting != previous else ""), escape(_scheduler_label(r, n_sched)) + mark,
                        _ms(r["median"]), _ms(r["mean"]), _ms(r["p95"]), _diff(r), r["verdict"])
        previous = setting
    console.print(answers)
    _print_diagnostics(cmp, rows, n_sched, console)
    for i, note in enumerate(notes, 1):
        console.print(f"[{i}] {escape(note)}", highlight=False, markup=False)
    n = rows[0]["n"]
    console.print(
        f"{unit}: p50 median, p95 95th percentile, over {n} value(s) per row (flows x seeds"
        f"{', pooled over ' + ', '.join(p for p in _pooled(cmp, t)) if _pooled(cmp, t) else ''}). "
        f"vs {cmp.baseline} %: difference of the median [95 % bootstrap interval], paired by seed and "
        "flow; verdict: faster/slower when the interval excludes 0, else tie. "
        "'x +2': x and 2 others, identical on every flow (see the note).", highlight=False, markup=False, soft_wrap=False)


def _pooled(cmp: Comparison, t: pl.DataFrame) -> list[str]:
    return [c for c in getattr(cmp, "pooled", [])]


def _print_diagnostics(cmp: Comparison, rows: list[dict], n_sched: int, console: Console) -> None:
    cols = [("retx", "retx%", "bytes retransmitted on subflows, % of bytes delivered"),
            ("reinj", "reinj%", "bytes sent again at the MPTCP level (reinjected or redundant copies), % of delivered"),
            ("rto_per_flow", "RTO", "retransmission timeouts per flow"),
            ("multi", "2sf%", "% of flows that sent data on more than one subflow"),
            ("join_ms", "join", "median ms from a flow's start to its second subflow's first RTT sample, "
                                   "over the flows that lasted that long")]
    cols = [c for c in cols if c[0] in rows[0]]
    paths = [p for p in cmp.paths if f"on_{p}" in rows[0]]
    if not cols and not paths:
        return
    diag = Table(title="Why: what the schedulers did", box=box.SIMPLE_HEAD, pad_edge=False, title_justify="left",
                 collapse_padding=True)
    diag.add_column(" ".join(cmp.by) if cmp.by else "setting", overflow="fold", no_wrap=True)
    diag.add_column("scheduler", overflow="fold", no_wrap=True)
    for _key, head, _ in cols:
        diag.add_column(head, justify="right")
    for p in paths:
        diag.add_column(f"{p}%", justify="right")
    previous = None
    for r in rows:
        setting = _setting(r, cmp.by)
        cells = [_pct(r[k], 2 if k == "reinj" else 1) if k not in ("rto_per_flow", "join_ms") else
                 ("–" if r[k] is None else f"{r[k]:.2f}" if k == "rto_per_flow" else f"{r[k]:.0f}") for k, _h, _ in cols]
        cells += [_pct(r[f"on_{p}"], 1) for p in paths]
        diag.add_row(escape(setting if setting != previous else ""), escape(_scheduler_label(r, n_sched)), *cells)
        previous = setting
    console.print(diag)
    legend = "; ".join(f"{h}: {d}" for _k, h, d in cols)
    if paths:
        legend += f"; {' / '.join(p + '%' for p in paths)}: share of the bytes sent on each path"
    console.print(legend + ".", highlight=False, markup=False)


def print_frame(df: pl.DataFrame, title: str, console: Console) -> None:
    """A polars frame as a table (text left, numbers right), with readable headers."""
    table = Table(title=title, show_lines=False)
    for c in df.columns:
        table.add_column(Text(HEADERS.get(c, c)), justify="left" if df.schema[c] == pl.String else "right")
    for row in df.iter_rows():
        table.add_row(*(Text(cell(v)) for v in row))  # a value like "[/x]" is text, not markup
    console.print(table)


HEADERS = {"completed": "done", "fct_median_s": "FCT p50 (s)", "fct_p95_s": "FCT p95 (s)",
            "fct_mean_s": "FCT mean (s)", "redundant_share": "redundant",
            "fct_median_ms": "FCT p50 (ms)", "fct_p99_ms": "FCT p99 (ms)", "fct_mean_ms": "FCT mean (ms)",
            "goodput_mbps": "goodput (Mbit/s)", "util_host": "util host", "util_edge_agg": "util edge-agg",
            "util_agg_core": "util core", "util_access": "util access", "util_bottleneck": "util bottleneck",
            "jain_bulk": "Jain (bulk)", "failover_ms": "failover", "failover90_ms": "to 90 %",
            "failback_ms": "failback", "failback90_ms": "back to 90 %", "longest_stall_ms": "longest stall",
            "delay_p50_ms": "delay p50", "delay_p99_ms": "delay p99", "delay_p999_ms": "delay p99.9", "deadline_miss_rate": "missed",
            "latency_p50_ms": "latency p50", "latency_p99_ms": "latency p99", "latency_p999_ms": "latency p99.9",
            "sent_per_delivered": "sent/delivered"}


def cell(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):  # null or NaN: undefined
        return "–"
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 1000 else f"{v:.0f}"
    return str(v)




def print_datacenter(res, console: Console) -> None:
    """A study on a [topology]: link utilisation per tier and fairness, then FCT per class."""
    from mpsched.analysis.summary import class_fct_summary, datacenter_summary

    links = datacenter_summary(res)
    if not links.is_empty():
        print_frame(links, f"Links and fairness ({res.runs.height} runs, seeds pooled)", console)
    classes = class_fct_summary(res)
    if classes.is_empty():
        console.print("no flows recorded")
        return
    print_frame(classes, "Flows per class (FCT of completed sized flows)", console)
