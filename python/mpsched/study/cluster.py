"""Dask (dask.distributed) for a study: a client for `mpsched run --cluster`.

``--cluster local`` starts a `LocalCluster` of worker processes (one thread each, as many as
`jobs`, or the machine's cores); ``--cluster tcp://host:8786`` connects to a running scheduler
(`dask scheduler`, `dask worker`, dask-jobqueue, SSHCluster: docs/cluster.md). The study then
sends its batches of runs as Dask tasks (`mpsched.study.batching`); a worker lost mid-task costs
that task only (the scheduler runs it again elsewhere), and the store (`mpsched.study.store`) is
the source of truth, so a study whose client was killed resumes where it stopped.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Any, Iterator

__all__ = ["ClusterUnavailable", "connect"]


class ClusterUnavailable(RuntimeError):
    """Dask is not installed, or the scheduler cannot be reached."""


@contextmanager
def connect(address: str, jobs: int = 0) -> Iterator[Any]:
    """A `distributed.Client` for `address` ("local", or a scheduler's address), closed (with
    its LocalCluster) on exit."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ClusterUnavailable("--cluster needs Dask: pip install 'dask[distributed]'") from None
    if address == "local":
        n = jobs if jobs > 0 else (os.cpu_count() or 1)
        # each worker imports the package as it starts (not on its first task)
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0",
                               preload=["mpsched.study.execute"])
        try:
            client = Client(cluster)
            try:
                yield client
            finally:
                client.close()
        finally:
            cluster.close()
        return
    try:
        client = Client(address, timeout="10s")
    except (OSError, TimeoutError) as e:
        raise ClusterUnavailable(f"no Dask scheduler at {address!r} ({e}); start one with `dask scheduler`") from None
    try:
        yield client
    finally:
        client.close()


def dashboard(client: Any) -> str | None:
    """The cluster's dashboard link, when it has one."""
    try:
        return client.dashboard_link or None
    except Exception:  # noqa: BLE001 - no dashboard (bokeh missing, or disabled)
        return None
