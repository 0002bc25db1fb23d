"""The study benchmark of benches/RESULTS.md ("Studies"): one study, timed from the planned
scenario to the returned results, on local processes or a Dask LocalCluster.

    PYTHONPATH=python python benches/study/bench_study.py benches/study/short_400.toml --jobs 2
    PYTHONPATH=python python benches/study/bench_study.py benches/study/short_400.toml --cluster --jobs 2

Prints one line of JSON: runs, wall seconds and runs per second of the study (planning included,
interpreter start-up and imports not: they are reported apart), CPU seconds of this process and
of the worker processes (reaped at the end, so counted), the CPU per run in and outside the
simulator, and this process's peak memory. Not a test: the numbers depend on the machine's load
(its load average is printed too). `task_overhead_ms_per_run`: CPU inside the tasks (wherever
they ran) but outside the runs: building and writing the batches, per run; the rest of
`outside_simulator_ms_per_run` is the processes' start-up (imports) and the client's planning,
feeding and summary.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time

t_start = time.perf_counter()
import mpsched  # noqa: E402
from mpsched.study import plan_stream  # noqa: E402

IMPORT_S = time.perf_counter() - t_start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cluster", action="store_true", help="a Dask LocalCluster of --jobs processes")
    ap.add_argument("--out", default=None, help="study directory (default: a fresh temporary one)")
    ap.add_argument("--force", action="store_true", help="above the run-count limit (the 40 000-run study)")
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="mpsched-bench-")
    shutil.rmtree(out, ignore_errors=True)
    load = os.getloadavg()
    cpu0 = time.process_time()
    client = cluster = None
    cluster_s = 0.0
    if a.cluster:
        from distributed import Client, LocalCluster

        t = time.perf_counter()
        cluster = LocalCluster(n_workers=a.jobs, threads_per_worker=1, processes=True, dashboard_address=None,
                               preload=["mpsched.study.execute"])
        client = Client(cluster)
        cluster_s = time.perf_counter() - t
    s = mpsched.load_scenario(a.scenario)
    t = time.perf_counter()
    tasks = plan_stream(s, force=a.force)  # every run checked, only their ids kept
    res = mpsched.run(s, out, jobs=a.jobs, client=client, tasks=tasks, force=a.force)
    wall = time.perf_counter() - t
    client_cpu = time.process_time() - cpu0
    t = time.perf_counter()
    summary = res.summary()  # the closing summary, read from the store (only the columns it needs)
    summary_s = time.perf_counter() - t
    if client is not None:
        client.close()
        cluster.close()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    workers_cpu = children.ru_utime + children.ru_stime
    stats = res.study_stats
    n = stats["ran"]
    total_cpu = client_cpu + workers_cpu
    print(json.dumps({
        "scenario": a.scenario, "backend": f"dask LocalCluster x{a.jobs}" if a.cluster else f"local processes x{a.jobs}",
        "runs": n, "tasks": stats["tasks"], "load_before": [round(x, 1) for x in load],
        "import_s": round(IMPORT_S, 2), "cluster_start_s": round(cluster_s, 2),
        "study_wall_s": round(wall, 2), "runs_per_s": round(n / wall, 1),
        "client_cpu_s": round(client_cpu, 2), "workers_cpu_s": round(workers_cpu, 2),
        "cpu_ms_per_run": round(1000 * total_cpu / n, 2),
        "in_simulator_ms_per_run": round(1000 * stats["run_s"] / n, 2),
        "outside_simulator_ms_per_run": round(1000 * (total_cpu - stats["run_s"]) / n, 2),
        "task_overhead_ms_per_run": round(1000 * (stats["task_cpu_s"] - stats["run_s"]) / n, 2),
        "client_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "summary_rows": summary.height, "summary_s": round(summary_s, 2),
        "flows_rows": int(summary.get_column("flows").sum()) if summary.height else 0,
    }))
    if a.out is None:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
