"""The `path_events` record table: which path events a configuration plays and when (a module of
its own so that both engines build it: the simulator's from the configuration, the kernel's
with the times its event player made each change)."""

from __future__ import annotations

from typing import Any

__all__ = ["path_event_table"]


def path_event_table(config: dict[str, Any]) -> dict[str, list]:
    """The `path_events` record table of a configuration: one row per event in force over an
    interval, what every engine played (the metrics of failover and failback measure from
    these times). Columns: `event` (its index), `kind` ("down", "blackhole", "loss_ramp",
    "rtt_spike", "rate_collapse"), `path` (name), `path_index`, `direction` ("both", "down",
    "up"), `at_ns` and `end_ns` (when it is undone; None: it lasts to the end of the run). A
    path going down and coming back in the original shape (``up`` false then true) is one
    "down" row."""
    names = [p.get("name", str(i)) for i, p in enumerate(config.get("paths") or [])]
    rows: list[tuple] = []
    open_down: dict[int, int] = {}
    for e in sorted(config.get("path_events") or [], key=lambda e: e["at_ns"]):
        path = int(e["path"])
        if "kind" in e:
            dur = e.get("duration_ns")
            rows.append((e["kind"], path, e.get("direction", "both"), e["at_ns"], None if dur is None else e["at_ns"] + dur))
        elif not e["up"]:
            if path not in open_down:
                open_down[path] = len(rows)
                rows.append(("down", path, "both", e["at_ns"], None))
        elif path in open_down:
            i = open_down.pop(path)
            rows[i] = (*rows[i][:4], e["at_ns"])
    return {"event": list(range(len(rows))), "kind": [r[0] for r in rows],
            "path": [names[r[1]] if r[1] < len(names) else str(r[1]) for r in rows],
            "path_index": [r[1] for r in rows], "direction": [r[2] for r in rows],
            "at_ns": [r[3] for r in rows], "end_ns": [r[4] for r in rows]}
