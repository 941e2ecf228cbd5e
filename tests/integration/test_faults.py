"""Issue #5, faults on a real LocalCluster (worker processes, 127.0.0.1, no dashboard):
a worker SIGKILLed mid-run, the driver SIGKILLed mid-run and rerun, transient storage errors
(retried) and a permanent one (a clear failure, nothing final written).

Tasks are made slow with the documented test hook ``ROUGE_PIPELINE_TEST_TASK_SLEEP`` (read by
``pipeline.job.score_unit`` in the worker processes; unset in real runs), so kills land while
tasks are in flight.  Storage faults come from tests/support/flaky_fs.py (fsspec's ``file``
implementation replaced in this process and, through a worker plugin, on every worker)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
import yaml

import support.flaky_fs as _flaky_fs
from support.pipeline_corpus import config, run_outputs, write_records
from pipeline import job
from pipeline.config import RunConfig
from pipeline.execution.driver import RunFailedError, run
from pipeline.io.input_spec import UnreadableFileError

distributed = pytest.importorskip("distributed")

REPO = Path(__file__).parents[2]
SLEEP = "0.15"          # seconds per task, while the module's cluster is up
TARGET = {"target_cost": 3000, "retries": 3}


def _log(_):
    pass


def _outputs(run_dir: Path) -> dict[str, bytes]:
    return run_outputs(run_dir, markers=True)


def _executing_keys(dask_worker) -> list[str]:
    """The tasks running in a worker (its internals: cancelled tasks leave the scheduler's books
    at once but go on running; the test looks, the driver does not)."""
    return [str(ts.key) for ts in (*dask_worker.state.executing, *dask_worker.state.long_running)]


def _wait_idle(client, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while any(client.run(_executing_keys).values()):
        assert time.monotonic() < deadline, "tasks still running"
        time.sleep(0.05)


def _markers(run_dir: Path) -> int:
    return len(list((run_dir / "_done").glob("unit-*.json")))


@pytest.fixture(scope="module")
def flaky_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("flaky")
    (d / "transient").mkdir()
    return d


@pytest.fixture(scope="module")
def fault_client(flaky_dir):
    """Two single-threaded worker processes that sleep SLEEP s per task and use the flaky ``file``
    file system.  The environment is set before the cluster starts (the nannies live in this
    process, so workers they restart get it too) and restored afterwards."""
    from pipeline.execution.cluster import local_cluster

    saved = {k: os.environ.get(k) for k in (job.TEST_TASK_SLEEP_ENV, _flaky_fs.ENV)}
    os.environ[job.TEST_TASK_SLEEP_ENV] = SLEEP
    os.environ[_flaky_fs.ENV] = str(flaky_dir)
    _flaky_fs.install()
    cluster = local_cluster(2, dashboard_address=None, memory_limit="1GB")
    client = distributed.Client(cluster)
    client.register_plugin(_flaky_fs.FlakyPlugin())
    try:
        yield client
    finally:
        client.close()
        cluster.close()
        _flaky_fs.uninstall()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_records(tmp_path_factory.mktemp("corpus") / "records", 60)


def _cfg(corpus, out: Path, **execution) -> RunConfig:
    return RunConfig.from_dict(config({"layout": "records", "paths": corpus}, out,
                                      execution={**TARGET, **execution}))


@pytest.fixture(scope="module")
def clean(corpus, tmp_path_factory):
    """A clean run (sync mode, no sleep, no faults): the reference outputs."""
    out = tmp_path_factory.mktemp("clean") / "run"
    sleep = os.environ.pop(job.TEST_TASK_SLEEP_ENV, None)
    try:
        res = run(_cfg(corpus, out), None, progress=False, log=_log)
    finally:
        if sleep is not None:
            os.environ[job.TEST_TASK_SLEEP_ENV] = sleep
    assert res.summary["tasks"] >= 12, "the fault tests need many small tasks"
    return out, res


def test_worker_sigkilled_mid_run_outputs_byte_identical(fault_client, corpus, clean, tmp_path):
    clean_dir, clean_res = clean
    n_tasks = clean_res.summary["tasks"]
    pids = fault_client.run(os.getpid)
    victim = sorted(pids.values())[0]
    run_dir = tmp_path / "run"
    at_kill = []

    def killer():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            n = _markers(run_dir) if (run_dir / "_done").is_dir() else 0
            if n >= 3:
                os.kill(victim, signal.SIGKILL)
                at_kill.append(n)
                return
            time.sleep(0.01)

    th = threading.Thread(target=killer, daemon=True)
    th.start()
    res = run(_cfg(corpus, run_dir), fault_client, progress=False, log=_log)
    th.join(5)
    assert at_kill and at_kill[0] < n_tasks, "the worker was killed while tasks were left"
    assert not psutil.pid_exists(victim) or psutil.Process(victim).status() == psutil.STATUS_ZOMBIE
    assert res.summary["tasks"] == n_tasks and res.summary["rows"] == clean_res.summary["rows"]
    assert (run_dir / "_SUCCESS").exists()
    assert _outputs(run_dir) == _outputs(clean_dir)
    # the nanny restarted the worker: two workers again, the victim gone
    fault_client.wait_for_workers(2, timeout=60)
    assert victim not in fault_client.run(os.getpid).values()


def test_worker_sigkilled_in_wave_1_its_units_are_scored_elsewhere(fault_client, corpus, tmp_path):
    """Many small units, each read, scored and written by one wave-1 task.  A worker killed
    mid-wave has its units rerun on the other worker: the outputs are a clean run's, every unit
    was a wave-1 task, and nothing else read the input (no plan pass, no wave 2)."""
    from distributed import get_task_stream

    ex = {"target_cost": None, "target_rows": 10}   # many small units, one slice each
    sleep = os.environ.pop(job.TEST_TASK_SLEEP_ENV, None)
    try:
        clean = run(_cfg(corpus, tmp_path / "clean", **ex), None, progress=False, log=_log)
    finally:
        if sleep is not None:
            os.environ[job.TEST_TASK_SLEEP_ENV] = sleep
    n_units = len(json.loads((tmp_path / "clean" / "_plan.json").read_text())["units"])
    assert clean.summary["tasks"] == n_units >= 8, "one slice per unit, enough of them to kill a worker among"
    victim = sorted(fault_client.run(os.getpid).values())[0]
    run_dir = tmp_path / "run"
    at_kill = []

    def killer():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if (run_dir / "_done").is_dir() and _markers(run_dir) >= 3:
                os.kill(victim, signal.SIGKILL)
                at_kill.append(_markers(run_dir))
                return
            time.sleep(0.01)

    th = threading.Thread(target=killer, daemon=True)
    th.start()
    with get_task_stream(fault_client) as ts:
        res = run(_cfg(corpus, run_dir, **ex), fault_client, progress=False, log=_log)
    th.join(5)
    assert at_kill and at_kill[0] < n_units, "the worker was killed while units were left"
    assert res.summary["rows"] == clean.summary["rows"] and res.summary["tasks"] == n_units
    assert _outputs(run_dir) == _outputs(tmp_path / "clean")
    keys = {str(t["key"]) for t in ts.data if t.get("status") == "OK"}
    finished_units = {k.rsplit("-", 1)[1] for k in keys if k.startswith("rouge-unit-")}
    assert len(finished_units) == n_units, "every unit was scored by a wave-1 task"
    assert not [k for k in keys if k.startswith(("rouge-slice-", "rouge-split-", "rouge-plan"))]
    # the only wave-2 tasks: units holding an id an earlier unit holds (this corpus has some)
    again = {k.rsplit("-", 1)[1] for k in keys if k.startswith("rouge-again-")}
    assert len(again) == res.summary["duplicate_units"] == clean.summary["duplicate_units"]
    fault_client.wait_for_workers(2, timeout=60)


def test_transient_storage_errors_are_retried(fault_client, corpus, clean, flaky_dir, tmp_path):
    clean_dir, _ = clean
    tokens = [flaky_dir / "transient" / f"t{i}" for i in range(3)]
    for t in tokens:
        t.write_text("")
    run_dir = tmp_path / "run"
    logs = []
    res = run(_cfg(corpus, run_dir), fault_client, progress=False, log=logs.append)
    assert not any(t.exists() for t in tokens), "every injected failure happened"
    assert res.summary["status"] == "ok" and (run_dir / "_SUCCESS").exists()
    assert _outputs(run_dir) == _outputs(clean_dir)


def test_permanent_storage_error_fails_cleanly(fault_client, corpus, flaky_dir, tmp_path):
    perm = flaky_dir / "permanent"
    perm.write_text("/scores/system-sysB/")
    run_dir = tmp_path / "run"
    try:
        with pytest.raises(RunFailedError, match=r"unit .*shard-.* failed after 1 retries: OSError: .*"
                                                 r"injected permanent storage error writing .*scores/system-sysB/"):
            run(_cfg(corpus, run_dir, retries=1), fault_client, progress=False, log=_log)
        # Dask cannot stop a running task: the failed run waited for its tasks that were
        # running, so none can write here after it returned (once the error below is lifted)
        assert not any(fault_client.run(_executing_keys).values())
    finally:
        _wait_idle(fault_client)  # whatever happened above, leave an idle cluster to the next test
        perm.unlink()
    assert not (run_dir / "_SUCCESS").exists()
    assert not (run_dir / "stats").exists()
    assert not list((run_dir / "scores").glob("system-sysB/*")), "no file, not even a temp file, under sysB"
    assert not list(run_dir.rglob(".tmp-*")), "failed writes leave no temp file"
    summary = json.loads((run_dir / "_summary.json").read_text())
    assert summary["status"].startswith("failed: RunFailedError: unit")
    # the same command after the storage recovers: resumes and completes
    res = run(_cfg(corpus, run_dir, retries=1), fault_client, progress=False, log=_log)
    assert res.summary["status"] == "ok" and (run_dir / "_SUCCESS").exists()


def _cli(*args, env=None, **kw):
    return subprocess.Popen([sys.executable, "-m", "pipeline", *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def test_driver_sigkilled_mid_run_resumes_byte_identical(corpus, clean, tmp_path):
    clean_dir, clean_res = clean
    n_tasks = clean_res.summary["tasks"]
    cfg_file = tmp_path / "c.yaml"
    d = config({"layout": "records", "paths": corpus}, tmp_path / "unused", execution=dict(TARGET))
    d["execution"]["mode"] = "local"
    cfg_file.write_text(yaml.safe_dump(d))
    run_dir = tmp_path / "run"
    args = ["score", "--config", str(cfg_file), "--output", str(run_dir), "--workers", "1", "--no-progress", "--json"]
    env = {k: v for k, v in os.environ.items() if k != _flaky_fs.ENV}
    env[job.TEST_TASK_SLEEP_ENV] = "0.3"
    proc = _cli(*args, env=env)
    family: dict[int, psutil.Process] = {}
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                for c in psutil.Process(proc.pid).children(recursive=True):
                    family[c.pid] = c
            except psutil.NoSuchProcess:
                break
            if (run_dir / "_done").is_dir() and _markers(run_dir) >= 3:
                break
            time.sleep(0.02)
        assert proc.poll() is None, f"the driver ended before it could be killed: {proc.communicate()[1][-2000:]}"
        n_at_kill = _markers(run_dir)
        proc.send_signal(signal.SIGKILL)          # the driver (scheduler and nannies live in it) ...
        proc.wait(30)
    finally:
        for c in family.values():                 # ... and the worker processes it started
            try:
                if c.is_running():
                    c.kill()
            except psutil.NoSuchProcess:
                pass
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    assert 3 <= n_at_kill < n_tasks
    assert not (run_dir / "_SUCCESS").exists() and not (run_dir / "stats").exists()
    # no partial final file is visible: every part and marker there is complete
    import pyarrow.parquet as pq

    parts = sorted(run_dir.glob("scores/**/part-*.parquet")) + sorted(run_dir.glob("quarantine/part-*.parquet"))
    assert parts
    for p in parts:
        pq.read_table(p)
    for m in (run_dir / "_done").glob("*.json"):
        json.loads(m.read_text())
    env.pop(job.TEST_TASK_SLEEP_ENV)
    again = _cli(*args, env=env)
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    summary = json.loads(out)
    assert summary["tasks"] == n_tasks and summary["tasks_resumed"] >= n_at_kill
    assert "resume:" in err and "(from _plan.json)" in err
    assert (run_dir / "_SUCCESS").exists()
    assert _outputs(run_dir) == _outputs(clean_dir)


def test_a_unit_that_cannot_be_read_ends_the_run_at_once_and_nothing_is_written_after(fault_client, tmp_path,
                                                                                       monkeypatch):
    """The first wave-1 failure stops the run: the rest is not read first, the stop flag ends
    the tasks still running before their next write, and run() returns only after them, so
    the run folder does not change once it has returned."""
    from distributed import get_task_stream

    from pipeline.io import records

    monkeypatch.setattr(records, "PACK_BYTES", 0)   # one unit a file (the client plans the units)
    root = tmp_path / "in"
    root.mkdir()
    (root / "a-broken.jsonl.gz").write_bytes(b"this is not gzip data")
    for k in range(10):
        (root / f"shard-{k:02d}.jsonl").write_text(
            json.dumps({"id": str(k), "candidate": "the cat sat", "references": ["the cat"]}) + "\n")
    var = job.TEST_TASK_SLEEP_ENV
    run_dir = tmp_path / "run"
    # a lambda: a bound method of os.environ would be pickled with a copy of the mapping
    fault_client.run(lambda: os.environ.__setitem__(var, "0.5"))
    try:
        with get_task_stream(fault_client) as ts:
            with pytest.raises(UnreadableFileError, match=r"a-broken\.jsonl\.gz: cannot read the file"):
                run(_cfg(str(root / "*.jsonl*"), run_dir, retries=0), fault_client, progress=False, log=_log)
            running = [k for keys in fault_client.run(_executing_keys).values() for k in keys]
            assert not [k for k in running if k.startswith("rouge-")], "the run waited for its tasks"
            before = {p: p.stat().st_mtime_ns for p in run_dir.rglob("*")}
            time.sleep(1.5)   # three tasks' sleep: a task left running would write meanwhile
            assert {p: p.stat().st_mtime_ns for p in run_dir.rglob("*")} == before
    finally:
        fault_client.run(lambda: os.environ.pop(var, None))
    started = {str(t["key"]) for t in ts.data if str(t["key"]).startswith("rouge-unit-") and "-brief-" not in str(t["key"])}
    written = list((run_dir / "_done").glob("unit-*.json")) if (run_dir / "_done").exists() else []
    # 2 workers, 0.5 s per unit, the broken unit first: 10 more units would take 2.5 s; a run
    # that waited for all of them would have written every one (those it started later stopped)
    assert len(written) < 10 and len(started) >= len(written), (written, started)
    assert not (run_dir / "_SUCCESS").exists()
