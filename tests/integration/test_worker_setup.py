"""Every worker of a run is set up by one WorkerPlugin (thread variables, version check, warm-up):
the workers there when the run starts and those that join later."""
from __future__ import annotations

import time

from distributed import Client

from pipeline import job
from pipeline.execution.cluster import local_cluster
from pipeline.execution.executors import DaskExecutor


def _scorers_built() -> int:
    """How many scoring settings this worker process has built a scorer for (0 in a fresh
    worker; the warm-up builds the default settings' and the run's)."""
    from pipeline.job import scores

    return scores.scorer_for.cache_info().currsize


def test_a_worker_that_joins_later_is_warmed_by_the_plugin():
    settings = job.ScoringSettings(rouge_types=("rouge1", "rougeL"), use_stemmer=True, diagnostics=False)
    cluster = local_cluster(1, dashboard_address=None)
    try:
        with Client(cluster) as client:
            DaskExecutor(client).warm(settings, per_host=False)
            first = set(client.scheduler_info()["workers"])
            (built,) = client.run(_scorers_built).values()
            assert built >= 2     # the default settings' scorer and the run's
            cluster.scale(2)
            client.wait_for_workers(2, timeout=120)
            late = [a for a in client.scheduler_info()["workers"] if a not in first]
            assert len(late) == 1
            deadline = time.monotonic() + 120   # its setup may still be running when it registers
            while (got := client.run(_scorers_built, workers=late)[late[0]]) < built and time.monotonic() < deadline:
                time.sleep(0.2)
            assert got == built, "the worker that joined later was not warmed"
    finally:
        cluster.close()


def test_a_worker_of_another_version_that_joins_later_closes_itself():
    """A worker that joins later has its plugin's setup error only logged by Dask, and would
    take tasks: one running another rouge-pipeline closes itself, nanny included.  A worker
    there at registration is left alone (its error reaches the client, and the run stops)."""
    import pytest

    from pipeline.execution import plugin

    calls = []

    class Loop:
        def add_callback(self, fn, *args, **kwargs):
            calls.append((fn, kwargs))

    class Worker:
        address = "tcp://127.0.0.1:1"
        loop = Loop()

        async def close(self, **kwargs):
            pass

    worker = Worker()
    with pytest.raises(plugin.WorkerVersionError, match="runs rouge-pipeline .* this client 0.0.0-other; it closes"):
        plugin.WorkerSetup(job.ScoringSettings(), "0.0.0-other", frozenset({"tcp://127.0.0.1:2"})).setup(worker)
    assert [(fn.__name__, kw) for fn, kw in calls] == [("close", {"nanny": True,
                                                                 "reason": "rouge-pipeline version mismatch"})]
    calls.clear()
    with pytest.raises(plugin.WorkerVersionError):
        plugin.WorkerSetup(job.ScoringSettings(), "0.0.0-other", frozenset({worker.address})).setup(worker)
    assert calls == [], "a worker there at registration is not closed"
    plugin.WorkerSetup(job.ScoringSettings(rouge_types=("rouge1",)), __import__("pipeline").__version__).setup(worker)
    assert calls == []
