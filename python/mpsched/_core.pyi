"""Typed stubs of the compiled core (`crates/mpsched-py`). The public API lives in `mpsched`."""

from typing import Callable

def core_version() -> str:
    """Version of the compiled core (the workspace version)."""

def run_json(config_json: str, schedulers: dict[str, type] | None = None,
             progress: Callable[[int, int], None] | None = None) -> dict[str, dict[str, list]]:
    """Run one normalized configuration (JSON text, the serde schema of
    crates/mpsched-sim/src/config.rs) and return its record tables, table name -> column name ->
    values, plus a `_stats` entry of run counters. Raises ValueError("field: message") for a
    configuration the core refuses. `schedulers`: Python scheduler classes by name.
    `progress(now_ns, duration_ns)` is called as the run goes with the simulated time reached
    (every few ten thousand events, and at the end)."""

def topology_json(request_json: str) -> str:
    """Build a topology (crates/mpsched-sim/src/topology.rs, `TopologyRequest` as JSON: a
    FatTree with the flows to route, or a dumbbell) and return {hosts, links, paths,
    flow_paths} as JSON. Raises ValueError("topology: message") for a request it refuses."""

def schedulers_json() -> str:
    """The scheduler registry as JSON: {"schedulers": [{name, summary, source, is_extension,
    default_params}], "max_param_int": int, "max_param_ns": int} (the bounds of numeric
    parameters)."""
