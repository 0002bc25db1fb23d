"""Helpers of the kernel testbed's tests (tests/test_kernel*.py that run the real stack): why
they cannot run here, table A's two-path configuration, table rows, what a run left behind, and
runs the host kept on time. Importing it needs no root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mpsched.engines.kernel import TestbedUnavailable, preflight, run_once
from mpsched.engines.kernel.host import PREFIX, list_namespaces, run_processes

MS = 1_000_000


def skip_reason() -> str | None:
    """Why the kernel testbed cannot run here, or None."""
    if os.geteuid() != 0:
        return "the kernel testbed needs root"
    if not Path("/proc/sys/net/mptcp/enabled").exists():
        return "this kernel has no MPTCP (no /proc/sys/net/mptcp)"
    try:
        preflight()
    except TestbedUnavailable as e:
        return str(e)
    return None


def link_config(name, rate_bps, delay_ns, queue_bytes, **kw):
    return {"name": name, "rate_bps": rate_bps, "delay_ns": delay_ns, "queue_bytes": queue_bytes, **kw}


def two_path_config(flows, *, protocol="mptcp", wlan_up_loss=None, duration_ns=12_000 * MS):
    wlan_up = link_config("wlan.up", 50_000_000, 10 * MS, 250_000)
    if wlan_up_loss:
        wlan_up["loss"] = {"model": "bernoulli", "p": wlan_up_loss}
    return {
        "seed": 3, "duration_ns": duration_ns,
        "links": [link_config("wlan.down", 50_000_000, 10 * MS, 250_000), wlan_up,
                  link_config("lte.down", 15_000_000, 100 * MS, 500_000), link_config("lte.up", 15_000_000, 100 * MS, 500_000)],
        "paths": [{"name": "wlan", "down": [0], "up": [1]}, {"name": "lte", "down": [2], "up": [3]}],
        "transports": [{"protocol": protocol, "scheduler": "linux", "cc": "cubic",
                        "paths": [0, 1] if protocol == "mptcp" else [0],
                        "rcv_buf_bytes": 16 << 20, "snd_buf_bytes": 16 << 20}],
        "flows": flows,
    }


def table_rows(table):
    cols = list(table)
    return [dict(zip(cols, vals)) for vals in zip(*table.values())]


def run_leftovers(pid: int):
    """Namespaces and processes of the run made by process `pid` that still exist."""
    tag = f"{PREFIX}-{pid}"
    return [n for n in list_namespaces() if n.startswith(tag + "-")], run_processes(tag)


#: Runs of one configuration a timing test makes at most, to find one the host kept on time.
RUNS_FOR_AN_ON_TIME_ONE = 3


def on_time_run(cfg):
    """Runs `cfg` until the host keeps a run on time (engines/kernel/fidelity.py: the delayer's
    packets leave within 1 ms of their time at p99 and the hypervisor steals under 2 %), at most
    RUNS_FOR_AN_ON_TIME_ONE times; returns that run's (tables, diag), or the last run's when the
    host stalled every one (`timing_judgeable` then skips the timing checks, naming the stalls).
    The testbed keeps the CPUs out of halt during a run, which removes the VM's usual stalls;
    this is for a host busy with others' work."""
    stalls = []
    for _ in range(RUNS_FOR_AN_ON_TIME_ONE):
        tables, diag = run_once(cfg)
        stall = diag["host"]["stall"]
        if stall is None:
            return tables, diag
        stalls.append(stall)
    diag["stalls"] = stalls
    return tables, diag


def timing_judgeable(diag, checked="its structure"):
    """Skips the rest of a test whose kernel runs the host stalled every time (see on_time_run)."""
    if diag.get("stalls"):
        pytest.skip(f"the host stalled all {len(diag['stalls'])} runs, so the kernel's timing is not the "
                    f"configured network's and cannot be judged ({checked}: checked): {diag['stalls']}")
