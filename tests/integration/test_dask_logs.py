"""Issue 28: a failure on the local cluster ends with its one line and nothing above it but the
run's own progress lines -- the workers' tracebacks go to the run folder's Dask log -- and a
deterministic error (a storage package not installed) is a configuration error, not retried."""
from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.execution.driver import with_retries
from pipeline.runfolder import names

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "configs" / "sample" / "part-0.jsonl"


def _cli(*argv: str, prelude: str = "") -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    code = f"import sys\n{prelude}\nfrom pipeline.cli.main import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=300, env=env,
                          cwd=ROOT)


def test_worker_tracebacks_go_to_the_run_folder_not_the_terminal(tmp_path):
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(gzip.compress(SAMPLE.read_bytes())[:300])      # truncated: every read fails
    run = tmp_path / "run"
    out = _cli("score", str(bad), "-o", str(run), "--local", "--workers", "1", "--no-progress")
    assert out.returncode == 2, out.stderr
    lines = out.stderr.splitlines()
    assert lines[-1].startswith("rouge-pipeline: error: ") and "cannot read the file" in lines[-1]
    assert "Traceback" not in out.stderr and "Compute Failed" not in out.stderr, out.stderr
    assert len(lines) <= 10, out.stderr                             # the run's own lines, then the failure's
    # an error retrying cannot fix comes back once, as the task's value: no worker failed a task
    log = (run / names.DASK_LOG).read_text() if (run / names.DASK_LOG).exists() else ""
    assert "Compute Failed" not in log and "cannot read the file" not in log, log


def _attempt(path: str, error: str):
    with open(path, "a") as f:
        f.write("x")
    raise {"value": ValueError, "os": OSError}[error](f"{error} error")


def test_a_deterministic_error_runs_once_and_a_transient_one_is_retried(tmp_path, capfd):
    """On a real cluster (worker processes): the task raising an error retrying cannot fix runs
    once and its error is raised where the result is read; a transient one is retried by Dask, and
    its worker tracebacks go to the Dask log, not the terminal."""
    from distributed import Client

    from pipeline.execution import dasklogs
    from pipeline.execution.cluster import local_cluster
    from pipeline.execution.driver import PERMANENT_ERRORS
    from pipeline.execution.executors import DaskExecutor, value

    with dasklogs.captured() as log:
        cluster = local_cluster(1, dashboard_address=None)
        try:
            with Client(cluster) as client:
                client.register_plugin(log.plugin())
                ex = DaskExecutor(client, PERMANENT_ERRORS)
                for error, runs in (("value", 1), ("os", 3)):
                    counter = tmp_path / error
                    fut = ex.submit(_attempt, str(counter), error, key=f"attempt-{error}", retries=2)
                    with pytest.raises((ValueError, OSError), match=f"{error} error"):
                        value(fut)
                    assert counter.read_text() == "x" * runs, error
        finally:
            cluster.close()
        text = log.text()
    assert "os error" in text and "value error" not in text
    assert "Traceback" not in capfd.readouterr().err


def test_a_missing_storage_package_is_a_configuration_error_naming_the_extra(tmp_path):
    out = _cli("score", str(SAMPLE), "-o", "s3://bucket/run", "--sync", "--no-progress",
               prelude="sys.modules['s3fs'] = None   # as if s3fs were not installed")
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and "retrying" not in out.stderr
    assert "s3fs" in out.stderr and "rouge-pipeline[s3]" in out.stderr


def test_an_import_error_is_not_retried():
    calls = []

    def fail():
        calls.append(1)
        raise ImportError("Install s3fs to access S3")

    with pytest.raises(ImportError):
        with_retries(fail, 2, "writing", base_delay=0)
    assert calls == [1]
