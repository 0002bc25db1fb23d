"""An engine's refusal of a configuration, told in the scenario's words.

The engines check the normalized configuration (the core's `validate()`, the testbed's plan) and
name fields of that configuration (``transports[0].mss_bytes``, ``links[3].queue``). A user wrote
a scenario, not a configuration: `scenario_words` names the connection, link or flow the field
belongs to and the scenario field it came from, keeping the configuration's path in parentheses.
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["find_non_finite", "scenario_words"]

#: Configuration field -> the scenario field it is made from.
_FIELDS = {
    "mss_bytes": "mss", "init_cwnd_segments": "init_cwnd", "rcv_buf_bytes": "rcv_buf", "snd_buf_bytes": "snd_buf",
    "rate_bps": "rate", "delay_ns": "delay (rtt)", "queue": "queue", "queue_bytes": "queue", "queue_packets": "queue",
    "jitter.period_ns": "jitter_period", "scheduler": "scheduler", "scheduler_params": "scheduler_params",
    "cc": "cc", "app.size_bytes": "size", "app.rate_bps": "rate", "app.block_bytes": "block",
    "duration_ns": "duration", "seed": "seed", "packet_bytes": "packet",
}


def _field(rest: str) -> str:
    rest = rest.lstrip(".")
    for k, v in _FIELDS.items():
        if rest == k or rest.startswith(k + "."):
            return v
    return rest


def scenario_words(core_field: str, config: dict[str, Any]) -> str:
    """A configuration field path as the scenario's: ``transports[0].mss_bytes`` ->
    ``connection 'main'.mss (transports[0].mss_bytes)``."""
    m = re.match(r"^(links|transports|flows|paths|cross_traffic|path_events)\[(\d+)\](.*)$", core_field)
    if not m:
        return f"{_field(core_field)} ({core_field})" if core_field in _FIELDS else core_field
    table, i, rest = m.group(1), int(m.group(2)), m.group(3)
    items = config.get(table) or []
    item = items[i] if i < len(items) and isinstance(items[i], dict) else {}
    if table == "links":
        where = f"link {item.get('name', i)!r}"
    elif table == "transports":
        where = f"connection {item.get('name', i)!r}" if "name" in item else f"connection {i}"
    elif table == "flows":
        where = f"workload flow {item.get('id', i)}"
    elif table == "paths":
        where = f"path {item.get('name', i)!r}"
    else:
        where = f"{table}[{i}]"
    sub = _field(rest)
    return f"{where}.{sub} ({core_field})" if sub else f"{where} ({core_field})"


def find_non_finite(value: Any, path: str = "") -> str | None:
    """The path of the first NaN or infinite number in a configuration (None: all finite); JSON
    has no such numbers, so the core would see a syntax error instead of a field."""
    if isinstance(value, float) and not math.isfinite(value):
        return path or "(the configuration)"
    if isinstance(value, dict):
        for k, v in value.items():
            if (p := find_non_finite(v, f"{path}.{k}" if path else str(k))) is not None:
                return p
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            if (p := find_non_finite(v, f"{path}[{i}]")) is not None:
                return p
    return None
