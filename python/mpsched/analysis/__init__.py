"""What a study's records mean: `metrics` (per-table reductions of polars frames), `summary`
(FCT statistics, path shares, link utilisation, per-class FCT over a `Results`), `stats`
(bootstrap intervals and verdicts), `compare` (each scheduler against a baseline, with intervals
and diagnostics), `report` (that as text on 80 columns) and `figures` / `figures_compare`
(matplotlib, imported on demand). Reads `Results` only; runs nothing."""

from mpsched.analysis import metrics
from mpsched.analysis.compare import Comparison, compare
from mpsched.analysis.summary import (
    class_fct_summary,
    datacenter_summary,
    fct_summary,
    group_keys,
    has_resilience,
    has_rpc,
    resilience_summary,
    rpc_summary,
    is_datacenter,
    labelled_flows,
    link_utilisation,
    path_shares,
    throughput_series,
)

__all__ = ["metrics", "group_keys", "fct_summary", "labelled_flows", "path_shares", "throughput_series", "is_datacenter",
           "link_utilisation", "datacenter_summary", "class_fct_summary", "Comparison", "compare",
           "has_rpc", "rpc_summary", "has_resilience", "resilience_summary"]
