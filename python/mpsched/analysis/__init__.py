"""What a study's records mean: `metrics` (per-table reductions of polars frames), `summary`
(FCT statistics, path shares, link utilisation, per-class FCT over a `Results`) and `figures`
(matplotlib, imported on demand). Reads `Results` only; runs nothing."""

from mpsched.analysis import metrics
from mpsched.analysis.summary import (
    class_fct_summary,
    datacenter_summary,
    fct_summary,
    group_keys,
    has_resilience,
    resilience_summary,
    is_datacenter,
    labelled_flows,
    link_utilisation,
    path_shares,
    throughput_series,
)

__all__ = ["metrics", "group_keys", "fct_summary", "labelled_flows", "path_shares", "throughput_series", "is_datacenter",
           "link_utilisation", "datacenter_summary", "class_fct_summary", "has_resilience", "resilience_summary"]
