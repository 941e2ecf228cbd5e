"""What every worker of a run gets before its first task, workers that join later included: the
thread variables, the version check and the warm-up, as one Dask ``WorkerPlugin``."""
from __future__ import annotations

import os

from distributed.diagnostics.plugin import WorkerPlugin

import pipeline
from pipeline.execution import warmup
from pipeline.execution.cluster import WORKER_ENV

NAME = "rouge-pipeline-worker-setup"


class WorkerVersionError(RuntimeError):
    """A worker runs another rouge-pipeline than the client."""


class WorkerSetup(WorkerPlugin):
    """``settings``: the run's scoring settings (its scorer is built, its kernels loaded);
    ``version``: the client's ``pipeline.__version__`` (a worker with another is refused);
    ``initial``: the workers there at registration (their errors reach the client, which stops)."""

    name = NAME

    def __init__(self, settings, version: str, initial: frozenset = frozenset()):
        self.settings, self.version, self.initial = settings, version, frozenset(initial)

    def setup(self, worker) -> None:
        for k, v in WORKER_ENV.items():  # before the kernels' thread pools start
            os.environ[k] = v
        if pipeline.__version__ != self.version:
            late = worker.address not in self.initial
            if late:
                # Dask only logs a later worker's setup error, and the worker would then take
                # tasks: it closes itself, its nanny too (a restart would run the same code)
                worker.loop.add_callback(worker.close, nanny=True, reason="rouge-pipeline version mismatch")
            raise WorkerVersionError(f"worker {worker.address} runs rouge-pipeline {pipeline.__version__}, "
                                     f"this client {self.version}" + ("; it closes itself" if late else ""))
        warmup.warmup(self.settings)


def register(client, settings) -> None:
    """Set up every worker now and every worker that joins later (re-registering replaces the
    previous run's plugin)."""
    initial = frozenset(client.scheduler_info()["workers"])
    client.register_plugin(WorkerSetup(settings, pipeline.__version__, initial), name=NAME)
