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
    log = (run / names.DASK_LOG).read_text()
    assert "Compute Failed" in log and "cannot read the file" in log
    assert str(run / names.DASK_LOG) in out.stderr                  # where to look


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
