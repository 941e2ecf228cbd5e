"""What every worker of a run gets before its first task, workers that join later included: the
thread variables, the version check and the warm-up, as one Dask ``WorkerPlugin``."""
from __future__ import annotations

import os

from distributed.diagnostics.plugin import WorkerPlugin

from pipeline.execution.cluster import WORKER_ENV

NAME = "rouge-pipeline-worker-setup"


class WorkerVersionError(RuntimeError):
    """A worker runs another rouge-pipeline than the client."""


class WorkerSetup(WorkerPlugin):
    """``settings``: the run's scoring settings (its scorer is built, its kernels loaded);
    ``version``: the client's ``pipeline.__version__`` (a worker with another is refused)."""

    name = NAME

    def __init__(self, settings, version: str):
        self.settings, self.version = settings, version

    def setup(self, worker) -> None:
        for k, v in WORKER_ENV.items():  # before the kernels' thread pools start
            os.environ[k] = v
        import pipeline

        if pipeline.__version__ != self.version:
            raise WorkerVersionError(f"worker {worker.address} runs rouge-pipeline {pipeline.__version__}, "
                                     f"this client {self.version}")
        from pipeline.warmup import warmup

        warmup(self.settings)


def register(client, settings) -> None:
    """Set up every worker now and every worker that joins later (re-registering replaces the
    previous run's plugin)."""
    import pipeline

    client.register_plugin(WorkerSetup(settings, pipeline.__version__), name=NAME)
