"""Dask's own log lines -- a worker's "Compute Failed" with the task's traceback, the scheduler's
errors, asyncio's "exception was never retrieved", distributed's warnings -- kept out of the
terminal: while a cluster runs they go to a local file, copied into the run folder
(``names.DASK_LOG``) when the run fails; ``--debug`` keeps them on stderr too.  The failure's one
line is the command's own (``pipeline.cli.main.failure``).

This process's loggers are redirected for the block; a local cluster's worker processes get a
``WorkerPlugin`` doing the same into the same file (they run on this machine).  An existing
cluster's workers log on their own machines, as always.
"""
from __future__ import annotations

import asyncio
import logging
import os
import sys
import tempfile
from contextlib import contextmanager

from distributed.diagnostics.plugin import WorkerPlugin

from pipeline.io import writers
from pipeline.redaction import mask
from pipeline.runfolder import names

LOGGERS = ("distributed", "asyncio", "tornado", "py.warnings")
PLUGIN_NAME = "rouge-pipeline-dask-logs"
_FORMAT = "%(asctime)s %(processName)s %(name)s %(levelname)s: %(message)s"


def _redirect(path: str, debug: bool) -> list:
    """Point :data:`LOGGERS` at ``path`` (and stderr with ``debug``); what to restore."""
    handlers = [logging.FileHandler(path, encoding="utf-8")]
    if debug:
        handlers.append(logging.StreamHandler(sys.stderr))
    for h in handlers:
        h.setFormatter(logging.Formatter(_FORMAT))
    saved = []
    for name in LOGGERS:
        lg = logging.getLogger(name)
        saved.append((lg, lg.handlers[:], lg.propagate))
        lg.handlers[:] = handlers
        lg.propagate = False
    return saved


def _restore(saved: list) -> None:
    for lg, handlers, propagate in saved:
        for h in lg.handlers:
            if h not in handlers:
                h.close()
        lg.handlers[:] = handlers
        lg.propagate = propagate


class DaskLogsPlugin(WorkerPlugin):
    """In each local worker process: its Dask log lines into the run's log file."""

    name = PLUGIN_NAME

    def __init__(self, path: str, debug: bool):
        self.path, self.debug, self._saved = path, debug, []

    def setup(self, worker) -> None:
        self._saved = _redirect(self.path, self.debug)

    def teardown(self, worker) -> None:
        # not restored: the local worker's process ends with the cluster, and its own client
        # (a task's Event) may still log the scheduler going away after this
        pass


class DaskLogs:
    """The log file of one run's cluster (:func:`captured`)."""

    def __init__(self, path: str, debug: bool):
        self.path, self.debug = path, debug

    def plugin(self) -> DaskLogsPlugin:
        return DaskLogsPlugin(self.path, self.debug)

    def text(self) -> str:
        try:
            with open(self.path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def save(self, run_url: str, storage_options: dict | None) -> str | None:
        """The log into the run folder when it holds anything; its URL (None: nothing to keep)."""
        text = mask(self.text())   # the command's redactor: the config's secrets, credential-shaped text
        if not text.strip():
            return None
        return writers.write_bytes_atomic(text.encode("utf-8"), names.url(run_url, names.DASK_LOG), storage_options)


def _not_a_cancelled_reconnect(record: logging.LogRecord) -> bool:
    """False for the client's reconnect that our own close cancelled (logged from Dask's loop
    thread after the block, with the cluster already gone): noise, not the run's failure."""
    exc = record.exc_info[1] if record.exc_info else None
    return not isinstance(exc, asyncio.CancelledError)


@contextmanager
def captured(debug: bool = False):
    """This process's Dask, asyncio and warnings log lines into a temporary file for the block."""
    fd, path = tempfile.mkstemp(prefix="rouge-pipeline-dask-", suffix=".log")
    os.close(fd)
    logging.captureWarnings(True)
    saved = _redirect(path, debug)
    client_log = logging.getLogger("distributed.client")
    if _not_a_cancelled_reconnect not in client_log.filters:
        client_log.addFilter(_not_a_cancelled_reconnect)
    try:
        yield DaskLogs(path, debug)
    finally:
        _restore(saved)
        logging.captureWarnings(False)
        try:
            os.unlink(path)
        except OSError:
            pass
