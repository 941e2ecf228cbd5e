"""`rouge-pipeline score --scheduler tcp://...` against a real, separately started Dask cluster.

A `dask scheduler` and two `dask worker --nthreads 1` processes on 127.0.0.1, started here and
stopped by PID at teardown.  A second cluster has workers that cannot run our tasks (one with
``pipeline`` hidden, one with another ``pipeline.__version__``): the CLI refuses it with a clear
message before submitting anything.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from support.pipeline_corpus import config, write_records
from support.processes import DaskCluster

import pipeline
from pipeline.cli.main import main
from pipeline.config import load_config
from pipeline.execution.driver import run

REPO = Path(__file__).parents[2]


def cli(*args, env=None):
    e = dict(os.environ, PYTHONUNBUFFERED="1", ROUGE_PIPELINE_WAIT_FOR_WORKERS="60")
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "pipeline", *args], capture_output=True, text=True, cwd=REPO,
                          env=e, timeout=300)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = DaskCluster(tmp_path_factory.mktemp("dask-cluster"), n_workers=2)
    try:
        c.wait_workers()
        yield c
    finally:
        c.stop()
    for p in c.procs:
        assert p.popen.poll() is not None, f"process {p.pid} still running"


def _config(tmp_path: Path) -> Path:
    glob = write_records(tmp_path / "in", 30, bad=False)
    d = config({"layout": "records", "paths": glob}, tmp_path / "unused", execution={"target_cost": 3000})
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(d))
    return path


def test_score_on_existing_cluster_matches_sync(cluster, tmp_path):
    cfg = _config(tmp_path)
    out = tmp_path / "run"
    r = cli("score", "--config", str(cfg), "--output", str(out), "--scheduler", cluster.address, "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "workers warm (2 workers)" in r.stderr
    summary = json.loads((out / "_summary.json").read_text())
    assert summary["mode"] == "dask" and summary["workers"] == 2 and summary["tasks"] > 2
    assert (out / "_SUCCESS").exists()
    # the same files as a synchronous run in this process
    sync = tmp_path / "sync"
    run(load_config(cfg, [f"output.url={json.dumps(str(sync))}", "execution.mode=sync"]), None, progress=False,
        log=lambda _: None)
    assert (out / "stats/stats.json").read_bytes() == (sync / "stats/stats.json").read_bytes()
    parts = sorted(p.relative_to(out) for p in out.glob("scores/**/*.parquet"))
    assert parts == sorted(p.relative_to(sync) for p in sync.glob("scores/**/*.parquet"))
    assert all((out / p).read_bytes() == (sync / p).read_bytes() for p in parts)


HIDE = "import sys\nsys.modules['pipeline'] = None   # this worker's environment lacks rouge-pipeline\n"
OTHER = "import pipeline\npipeline.__version__ = '0.0.0+other'   # another release on this worker\n"


def test_workers_without_the_package_or_with_another_version_are_refused(tmp_path, capsys):
    (tmp_path / "hide_pipeline.py").write_text(HIDE)
    (tmp_path / "other_version.py").write_text(OTHER)
    bad = DaskCluster(tmp_path / "bad-cluster", n_workers=2,
                      worker_args=[["--preload", str(tmp_path / "hide_pipeline.py")],
                                   ["--preload", str(tmp_path / "other_version.py")]])
    try:
        bad.wait_workers()
        cfg = _config(tmp_path)
        out = tmp_path / "run"
        rc = main(["score", "--config", str(cfg), "--output", str(out), "--scheduler", bad.address, "--no-progress"])
    finally:
        bad.stop()
    err = capsys.readouterr().err
    assert rc == 2, (rc, err)
    assert "Traceback" not in err and "pickle" not in err.lower(), err
    assert "the Dask cluster cannot run this job" in err
    assert "the rouge-pipeline package is not importable there" in err
    assert f"pipeline 0.0.0+other (this client: {pipeline.__version__})" in err
    assert f"Install rouge-pipeline=={pipeline.__version__}" in err
    assert not (out / "_plan.json").exists()      # refused before anything was planned or submitted


def test_unreachable_scheduler_is_a_clear_error(tmp_path, capsys, monkeypatch):
    import socket

    with socket.socket() as s:                     # a free port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = _config(tmp_path)
    monkeypatch.setenv("ROUGE_PIPELINE_CONNECT_TIMEOUT", "2s")
    rc = main(["score", "--config", str(cfg), "--output", str(tmp_path / "r"), "--scheduler",
               f"tcp://127.0.0.1:{port}"])
    err = capsys.readouterr().err
    assert rc == 2 and "cannot connect to the Dask scheduler" in err, err
    assert not (tmp_path / "r").exists()
