"""Open a Dask client for ``local`` | ``scheduler`` mode, or none for ``sync``."""
from __future__ import annotations

import os
from contextlib import contextmanager

# Workers are single-threaded processes: native thread pools would only oversubscribe the cores.
WORKER_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "NUMBA_NUM_THREADS": "1"}
LOOPBACK = "127.0.0.1"


def set_worker_env() -> None:
    """Set the thread variables in this process, so spawned LocalCluster workers inherit them."""
    for k, v in WORKER_ENV.items():
        os.environ[k] = v


def _set_env_on_worker():
    for k, v in WORKER_ENV.items():
        os.environ[k] = v
    return True


def local_cluster(n_workers: int | None = None, memory_limit=None, dashboard_address: str | None = "127.0.0.1:8787",
                  **kwargs):
    """A LocalCluster of single-threaded worker *processes*, bound to 127.0.0.1."""
    from distributed import LocalCluster

    set_worker_env()
    kw = dict(n_workers=n_workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
              host=LOOPBACK, dashboard_address=dashboard_address)
    if memory_limit is not None:
        kw["memory_limit"] = memory_limit
    kw.update(kwargs)
    return LocalCluster(**kw)


@contextmanager
def open_client(mode: str = "local", scheduler: str | None = None, n_workers: int | None = None,
                memory_limit=None, dashboard_address: str | None = "127.0.0.1:8787"):
    """Yield a ``distributed.Client`` (``local``, ``scheduler``) or ``None`` (``sync``: no Dask)."""
    if mode == "sync":
        yield None
        return
    from distributed import Client

    if mode == "scheduler":
        if not scheduler:
            raise ValueError("mode 'scheduler' needs a scheduler address (tcp://HOST:PORT)")
        client = Client(scheduler)
        try:
            client.run(_set_env_on_worker)
            yield client
        finally:
            client.close()
        return
    if mode != "local":
        raise ValueError(f"unknown execution mode {mode!r} (local, scheduler, sync)")
    cluster = local_cluster(n_workers, memory_limit, dashboard_address)
    try:
        client = Client(cluster)
        try:
            yield client
        finally:
            client.close()
    finally:
        cluster.close()


def dashboard_link(client) -> str | None:
    if client is None:
        return None
    try:
        link = client.dashboard_link
    except Exception:  # noqa: BLE001 - no dashboard (bokeh missing or disabled)
        return None
    if not link or "None" in str(link):
        return None
    return link
