"""Where the job's tasks run, behind one small interface: in this process (:class:`SyncExecutor`,
``--sync``) or on a Dask cluster (:class:`DaskExecutor`).  The driver submits the same graph to
either; only here is Dask called.

An executor's ``submit(fn, *args, key=..., retries=..., **hints)`` returns a future (``key``,
``status``, ``result()``, ``exception()``); futures among ``args`` are passed as their results;
``hints`` (``workers``, ``allow_other_workers``, ``priority``) are placement preferences the sync
executor ignores.  A task that still fails after its retries gives a future whose ``status`` is
``"error"`` and whose ``exception()`` is the task's own last exception; on a cluster, an error
retrying cannot fix is not retried: it is the task's value (:class:`Permanent`), which
:func:`value` raises.  ``as_completed`` yields
futures as they end (``add`` takes more); ``new_flag`` makes a stop flag the tasks check before
they write (a ``distributed.Event``; a ``threading.Event`` in process) and ``stop`` sets flags, waits for the
futures given and releases them.
"""
from __future__ import annotations

import collections
import threading
import time
from concurrent.futures import CancelledError

from pipeline.execution import warmup


class Lazy:
    """The sync executor's future: run in this process when its result (or status) is first
    asked for, after the futures it depends on; so tasks run in the order the driver consumes
    them, and nothing after the first failure runs."""

    __slots__ = ("key", "_call", "_value", "_error", "_ran")

    def __init__(self, key: str, call):
        self.key, self._call, self._value, self._error, self._ran = key, call, None, None, False

    def _run(self) -> None:
        if not self._ran:
            call, self._call, self._ran = self._call, None, True
            self._error = RuntimeError(f"{self.key} was interrupted")  # until call() returns
            self._value, self._error = call()

    @property
    def status(self) -> str:
        self._run()
        return "error" if self._error is not None else "finished"

    def exception(self):
        self._run()
        return self._error

    def result(self):
        self._run()
        if self._error is not None:
            raise self._error
        return self._value

    def cancel(self) -> None:
        if not self._ran:
            self._call, self._error, self._ran = None, CancelledError(self.key), True


class Completed:
    """The sync executor's ``as_completed``: in order, with ``add`` (as Dask's)."""

    def __init__(self, futures):
        self.queue = collections.deque(futures)

    def add(self, future) -> None:
        self.queue.append(future)

    def __iter__(self):
        while self.queue:
            yield self.queue.popleft()


class SyncExecutor:
    """Everything in this process, one task after another (:class:`Lazy`).  Transient errors are
    retried here with backoff (Dask retries the cluster's tasks); ``permanent``: the exception
    types retrying cannot fix."""

    distributed = False
    mode = "sync"

    def __init__(self, permanent: tuple, log=None, base_delay: float = 0.2):
        self.permanent, self.log, self.base_delay = permanent, log, base_delay

    @property
    def n_workers(self) -> int:
        return 1

    def submit(self, fn, *args, key: str, retries: int = 0, what: str | None = None, kwargs: dict | None = None,
               **_hints) -> Lazy:
        def call():
            for a in args:
                if isinstance(a, Lazy) and a.status == "error":
                    return None, a.exception()
            values = tuple(a.result() if isinstance(a, Lazy) else a for a in args)
            attempt = 0
            while True:
                try:
                    return fn(*values, **(kwargs or {})), None
                except self.permanent as e:
                    return None, e
                except Exception as e:  # noqa: BLE001 - transient storage/network errors
                    if attempt >= retries:
                        return None, e
                    if self.log is not None:
                        self.log(f"{what or key}: {type(e).__name__}: {e}; retrying ({attempt + 1}/{retries})")
                    time.sleep(self.base_delay * (2 ** attempt))
                    attempt += 1

        return Lazy(key, call)

    def as_completed(self, futures):
        return Completed(futures)

    def new_flag(self, name: str):
        return threading.Event()   # set from another thread (the lease's heartbeat)

    def stop(self, futures, flags=(), drain: bool = True) -> None:
        for flag in flags:
            if flag is not None:
                flag.set()
        for f in futures:
            f.cancel()

    def warm(self, settings, per_host: bool) -> None:
        pass  # this process compiles (or loads) what it needs as it scores


class Permanent:
    """A task's error that retrying cannot fix (a truncated file, a bad record's type), carried as
    the task's value: Dask retries every exception, so this one returns instead of raising, and the
    tasks after it pass it on (:func:`value` raises it where the result is read)."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException):
        self.error = error


def _once(fn, permanent: tuple, *args, **kwargs):
    """``fn(*args, **kwargs)`` on a worker; a ``permanent`` error (or one passed on by a task this
    one depends on) is returned as a :class:`Permanent`, so Dask does not run the task again."""
    for a in args:
        if isinstance(a, Permanent):
            return a
    try:
        return fn(*args, **kwargs)
    except permanent as e:
        return Permanent(e)


def value(future):
    """A future's result; a :class:`Permanent` raises its error, as a failed task's result would."""
    v = future.result()
    if isinstance(v, Permanent):
        raise v.error
    return v


# How long a failed run waits for its tasks that were already running (DaskExecutor.stop).
DRAIN_TIMEOUT_S = 120.0


class DaskExecutor:
    """The tasks on a ``distributed`` cluster (``client``)."""

    distributed = True
    mode = "dask"

    def __init__(self, client, permanent: tuple = ()):
        self.client, self.permanent = client, permanent

    @property
    def n_workers(self) -> int:
        return len(self.client.scheduler_info()["workers"])

    def submit(self, fn, *args, key: str, retries: int = 0, what: str | None = None, kwargs: dict | None = None,
               **hints):
        # retries are for transient errors: a permanent one comes back as a value (_once)
        return self.client.submit(_once, fn, self.permanent, *args, **(kwargs or {}), key=key, retries=retries,
                                  pure=False, **hints)

    # distributed is imported by the Dask executor's methods only: a run in process never loads Dask
    def as_completed(self, futures):
        from distributed import as_completed

        return as_completed(futures)

    def new_flag(self, name: str):
        """A stop flag: a ``distributed.Event`` that tasks check at their start and before each write."""
        from distributed import Event

        return Event(name, client=self.client)

    def stop(self, futures, flags=(), drain: bool = True, timeout: float = DRAIN_TIMEOUT_S) -> None:
        """Stop ``futures``: set ``flags``, then (``drain``) wait for them to end -- those running
        stop at their next write, those not started at their start -- and release them.
        Cancelling alone does not stop a running task (Dask cannot): without the wait, a failed
        run's tasks could still write into the run folder after the run has returned, and a
        local cluster closed right after would kill them mid-write.  Best effort: a cluster that
        cannot answer ends the wait."""
        from distributed import wait

        futures = list(futures)
        try:
            for flag in flags:
                if flag is not None:
                    flag.set()
            if drain and futures:
                wait(futures, timeout=timeout)
        except Exception:  # noqa: BLE001 - a lost cluster or the timeout: nothing more to wait for here
            pass
        try:
            self.client.cancel(futures)
        except Exception:  # noqa: BLE001
            pass

    def warm(self, settings, per_host: bool) -> None:
        """Every worker, now and any that joins later, gets the thread variables, the version
        check and the kernels (and a profile's tables) of ``settings``: a ``WorkerPlugin``
        (:mod:`pipeline.execution.plugin`).  ``per_host`` (an existing cluster): one worker per
        host warms first, so a host's workers load its cache instead of all compiling at once."""
        from pipeline.execution import plugin  # imports distributed: not loaded with this module (sync runs)

        if per_host:
            by_host: dict[str, str] = {}
            for addr, info in sorted(self.client.scheduler_info()["workers"].items()):
                by_host.setdefault(info.get("host") or addr.rsplit(":", 1)[0], addr)
            self.client.run(warmup.warmup, settings, workers=sorted(by_host.values()))
        plugin.register(self.client, settings)
