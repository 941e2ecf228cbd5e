"""Open a Dask client for ``local`` | ``scheduler`` mode, or none for ``sync``."""
from __future__ import annotations

import builtins
import os
from contextlib import contextmanager

from pipeline.errors import WorkerEnvironmentError

# Workers are single-threaded processes: native thread pools would only oversubscribe the cores.
WORKER_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "NUMBA_NUM_THREADS": "1"}
LOOPBACK = "127.0.0.1"
# Dask's nannies start workers with MALLOC_TRIM_THRESHOLD_=65536 (distributed.nanny.pre-spawn-environ)
# and write it into this process's environment first.  Setting it turns off glibc's dynamic mmap
# threshold, so every array over 128 KiB is mmapped, unmapped when freed and faulted in again:
# the one-process job had 4.6x the page faults and twice the system time with it, and local
# workers spent ~20% of their CPU in the kernel.  Local workers get glibc's defaults (or the
# value this process started with).
_MALLOC_TRIM = "MALLOC_TRIM_THRESHOLD_"
_MALLOC_TRIM_AT_START = os.environ.get(_MALLOC_TRIM)
# The local cluster's scheduler, nannies and workers share the cores with the job, and Dask's
# periodic housekeeping was ~12% of one core on this 2-core machine with nothing to do (0.62 s
# of CPU in 5 idle seconds across the client process and two workers; 0.13 s with these).  The
# intervals stay short next to a job's minutes: the event-loop tick that detects a blocked loop
# (20 ms), the memory monitor of nannies and workers (100 ms: a worker over its memory limit is
# restarted within a second instead), the system monitor behind the dashboard's plots (500 ms)
# and the work-stealing balance (100 ms; the job's tasks mostly prefer one worker anyway).
LOCAL_HOUSEKEEPING = {
    "distributed.admin.tick.interval": "500ms",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.scheduler.work-stealing-interval": "500ms",
}


def set_worker_env() -> None:
    """Set the thread variables in this process, so spawned LocalCluster workers inherit them."""
    for k, v in WORKER_ENV.items():
        os.environ[k] = v


def _set_env_on_worker():
    for k, v in WORKER_ENV.items():
        os.environ[k] = v
    return True


# The probe is compiled into a module-less function, so cloudpickle sends it *by value*: it runs
# even on a worker where ``pipeline`` cannot be imported (a function defined in this module would be
# pickled by reference and fail to unpickle there, with a traceback instead of a diagnosis).
_PROBE_SOURCE = """
def probe():
    import importlib, sys
    out = {"python": "%d.%d" % sys.version_info[:2], "executable": sys.executable}
    for name in ("dask", "distributed", "cloudpickle", "pipeline"):
        try:
            out[name] = getattr(importlib.import_module(name), "__version__", "unknown")
        except Exception as e:
            out[name] = None
            out[name + "_error"] = "%s: %s" % (type(e).__name__, e)
    return out
"""


def _probe_function():
    ns = {"__name__": "__rouge_pipeline_probe__", "__builtins__": builtins}
    exec(compile(_PROBE_SOURCE, "<rouge-pipeline worker probe>", "exec"), ns)  # noqa: S102 - constant source
    return ns["probe"]


def local_versions() -> dict:
    return _probe_function()()


CHECKED = ("python", "dask", "distributed", "cloudpickle", "pipeline")


def check_cluster(client, wait_timeout: float | None = None) -> dict:
    """Refuse a cluster whose scheduler or workers cannot run our tasks, with one clear message.

    Every worker must import ``pipeline`` at this client's ``__version__`` and run the same
    Python (major.minor), dask, distributed and cloudpickle; the scheduler the same dask and
    distributed.  Returns ``{worker address: versions}``.  Workers that join later are not checked.
    """
    if wait_timeout is None:
        wait_timeout = float(os.environ.get("ROUGE_PIPELINE_WAIT_FOR_WORKERS", "60"))
    try:
        client.wait_for_workers(1, timeout=wait_timeout)
    except TimeoutError:
        raise WorkerEnvironmentError(
            f"the scheduler {client.scheduler.address} has no worker after {wait_timeout:.0f}s; start workers "
            "(dask worker tcp://HOST:8786 --nthreads 1) or set ROUGE_PIPELINE_WAIT_FOR_WORKERS") from None
    mine = local_versions()
    problems = []
    sched = client.get_versions(check=False).get("scheduler", {}).get("packages", {})
    for name in ("dask", "distributed"):
        if sched.get(name) != mine[name]:
            problems.append(f"  scheduler: {name} {sched.get(name)} (this client: {mine[name]})")
    workers = client.run(_probe_function(), on_error="return")
    for addr, got in sorted(workers.items()):
        if isinstance(got, BaseException):
            problems.append(f"  worker {addr}: the version probe failed ({type(got).__name__}: {got})")
            continue
        for name in CHECKED:
            if got.get(name) == mine[name]:
                continue
            if name == "pipeline" and got.get(name) is None:
                problems.append(f"  worker {addr}: the rouge-pipeline package is not importable there "
                                f"({got.get('pipeline_error')}; python {got.get('executable')})")
            else:
                problems.append(f"  worker {addr}: {name} {got.get(name)} (this client: {mine[name]})")
    if problems:
        raise WorkerEnvironmentError(
            "the Dask cluster cannot run this job:\n" + "\n".join(problems) + "\n"
            f"Install rouge-pipeline=={mine['pipeline']} with dask=={mine['dask']} and "
            f"distributed=={mine['distributed']} on the scheduler and every worker (or use the image "
            "built from docker/Dockerfile for all of them).")
    return workers


def local_cluster(n_workers: int | None = None, memory_limit=None, dashboard_address: str | None = "127.0.0.1:8787",
                  worker_profile: bool = False, **kwargs):
    """A LocalCluster of single-threaded worker *processes*, bound to 127.0.0.1.

    ``worker_profile``: Dask's statistical profiler in the workers.  Off by default: it
    samples the task thread's stack every 10 ms, holding the GIL, and the 200,000-pair job
    ran ~10% faster without it (two workers, alternating runs); the dashboard's Profile page
    stays empty then.

    The scheduler hands a worker its next task only when it is free (worker saturation 1.0;
    Dask's default 1.1 sends each one-thread worker a second task to queue): a wave-1 task reads
    and scores a whole unit, and a unit queued behind a slow one on one worker while another
    worker idles would be the run's tail."""
    # Dask is imported when a cluster opens: the driver imports this module for sync runs too
    import dask
    from distributed import LocalCluster

    set_worker_env()
    kw = dict(n_workers=n_workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
              host=LOOPBACK, dashboard_address=dashboard_address)
    if memory_limit is not None:
        kw["memory_limit"] = memory_limit
    kw.update(kwargs)
    environ = {k: v for k, v in dask.config.get("distributed.nanny.pre-spawn-environ", {}).items()
               if k != _MALLOC_TRIM}
    if _MALLOC_TRIM_AT_START is None:
        os.environ.pop(_MALLOC_TRIM, None)  # put there by an earlier cluster's nannies
    else:
        os.environ[_MALLOC_TRIM] = _MALLOC_TRIM_AT_START
    # the nannies hand this configuration to the worker processes they start
    with dask.config.set({**LOCAL_HOUSEKEEPING,
                          "distributed.worker.profile.enabled": bool(worker_profile),
                          "distributed.scheduler.worker-saturation": 1.0,  # read by the scheduler made here
                          "distributed.nanny.pre-spawn-environ": environ}):
        return LocalCluster(**kw)


@contextmanager
def open_client(mode: str = "local", scheduler: str | None = None, n_workers: int | None = None,
                memory_limit=None, dashboard_address: str | None = "127.0.0.1:8787", worker_profile: bool = False):
    """Yield a ``distributed.Client`` (``local``, ``scheduler``) or ``None`` (``sync``: no Dask;
    ``auto`` is resolved before, by :func:`pipeline.execution.driver.choose_mode`)."""
    if mode == "sync":
        yield None
        return
    from distributed import Client  # as above: not for a sync run

    if mode == "scheduler":
        if not scheduler:
            raise ValueError("mode 'scheduler' needs a scheduler address (tcp://HOST:PORT)")
        try:
            client = Client(scheduler, timeout=os.environ.get("ROUGE_PIPELINE_CONNECT_TIMEOUT", "30s"))
        except OSError as e:
            raise WorkerEnvironmentError(f"cannot connect to the Dask scheduler at {scheduler}: {e}") from None
        try:
            check_cluster(client)
            client.run(_set_env_on_worker)
            yield client
        finally:
            client.close()
        return
    if mode != "local":
        raise ValueError(f"unknown execution mode {mode!r} (local, scheduler, sync)")
    cluster = local_cluster(n_workers, memory_limit, dashboard_address, worker_profile)
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
