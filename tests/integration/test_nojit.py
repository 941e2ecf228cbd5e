"""``NUMBA_DISABLE_JIT=1`` (numba's debugging switch: every kernel runs as Python): a run works
and writes the compiled path's files byte for byte."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from support.pipeline_corpus import config, run_outputs, write_records
from pipeline.config import RunConfig
from pipeline.execution import driver

REPO = Path(__file__).parents[2]


def test_a_run_with_numba_jit_disabled_writes_the_compiled_runs_files(tmp_path, monkeypatch):
    glob = write_records(tmp_path / "in", 12, bad=True)   # JSONL, gzip and Parquet shards, bad records
    settings = {"layout": "records", "paths": glob}
    scoring = {"use_stemmer": True}
    monkeypatch.setenv("ROUGE_PIPELINE_COLD_START", "0")   # the compiled path
    driver.run(RunConfig.from_dict(config(settings, tmp_path / "compiled", scoring=scoring)), None,
               progress=False, log=lambda m: None)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config(settings, tmp_path / "python", scoring=scoring)))
    env = dict(os.environ, NUMBA_DISABLE_JIT="1", NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONUNBUFFERED="1")
    env.pop("ROUGE_PIPELINE_COLD_START", None)
    p = subprocess.run([sys.executable, "-m", "pipeline", "score", "--config", str(path), "--no-progress"],
                       capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr and "Warning" not in p.stderr and "compiling" not in p.stderr, p.stderr
    a, b = run_outputs(tmp_path / "compiled", markers=True), run_outputs(tmp_path / "python", markers=True)
    assert a.keys() == b.keys() and any(k.startswith("quarantine/") for k in a) and a == b
    assert not (tmp_path / "cache").exists() or not os.listdir(tmp_path / "cache")   # no stamp: nothing compiled
