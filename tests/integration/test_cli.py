"""The CLI end to end, in subprocesses: score (sync and local mode), show, exit statuses."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from support.pipeline_corpus import config, write_records

REPO = Path(__file__).parents[2]


def cli(*args, cwd=None):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.run([sys.executable, "-m", "pipeline", *args], capture_output=True, text=True,
                          cwd=cwd or REPO, env=env, timeout=300)


def _config_file(tmp_path, **kw) -> Path:
    glob = write_records(tmp_path / "in", 15)
    d = config({"layout": "records", "paths": glob}, tmp_path / "unused", **kw)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(d))
    return path


def test_score_sync_then_show_and_resume(tmp_path):
    cfg = _config_file(tmp_path)
    out = tmp_path / "run"
    r = cli("score", "--config", str(cfg), "--output", str(out), "--sync", "--set", "stats.n_boot=100",
            "--set", "scoring.rouge_types=[rouge1, rougeL]")
    assert r.returncode == 0, r.stderr
    assert "sysA" in r.stdout and "rougeL" in r.stdout and "signature: rouge:1,L|" in r.stdout
    assert "quarantined 3" in r.stdout and "bs:poisson-100" in r.stdout
    assert (out / "_SUCCESS").exists()
    s = cli("show", str(out))
    assert s.returncode == 0, s.stderr
    assert "F 95% CI" in s.stdout and "sysB" in s.stdout and "signature: rouge:1,L|" in s.stdout
    # same command again: resumed, same statistics
    before = (out / "stats" / "stats.json").read_bytes()
    again = cli("score", "--config", str(cfg), "--output", str(out), "--sync", "--set", "stats.n_boot=100",
                "--set", "scoring.rouge_types=[rouge1, rougeL]", "--json")
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout)
    assert summary["tasks_resumed"] == summary["tasks"]
    assert (out / "stats" / "stats.json").read_bytes() == before
    # other settings: refused (4), then --overwrite
    refused = cli("score", "--config", str(cfg), "--output", str(out), "--sync")
    assert refused.returncode == 4 and "other settings" in refused.stderr
    ok = cli("score", "--config", str(cfg), "--output", str(out), "--sync", "--overwrite", "--no-progress")
    assert ok.returncode == 0, ok.stderr


def test_strict_and_config_errors(tmp_path):
    cfg = _config_file(tmp_path, strict=True)
    r = cli("score", "--config", str(cfg), "--output", str(tmp_path / "s"), "--sync")
    assert r.returncode == 3 and "quarantined" in r.stderr
    assert not (tmp_path / "s" / "_SUCCESS").exists()
    assert cli("show", str(tmp_path / "s")).returncode == 1
    bad = cli("score", "--config", str(cfg), "--sync", "--set", "scoring.rouge_typo=[rouge1]")
    assert bad.returncode == 2 and "rouge_typo" in bad.stderr
    missing = cli("score", "--config", str(cfg), "--sync", "--output", str(tmp_path / "m"),
                  "--set", f"input.paths={tmp_path}/nothing-*.jsonl")
    assert missing.returncode == 2 and "matches no file" in missing.stderr


def test_readme_sample_in_local_mode(tmp_path):
    out = tmp_path / "sample"
    r = cli("score", "--config", "configs/sample.yaml", "--output", str(out), "--workers", "1", "--no-progress",
            "--local")
    assert r.returncode == 0, r.stderr
    assert "rows 200, quarantined 0, systems 2" in r.stdout
    assert "abstractive" in r.stdout and "lead" in r.stdout
    assert "workers warm" in r.stderr
    summary = json.loads((out / "_summary.json").read_text())
    assert summary["mode"] == "dask" and summary["workers"] == 1 and summary["execution"] == "local"
    # the sample's own setting (execution.mode: auto): in process, the same files
    auto = tmp_path / "auto"
    r = cli("score", "--config", "configs/sample.yaml", "--output", str(auto), "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "auto: in process" in r.stdout and "workers warm" not in r.stderr
    assert json.loads((auto / "_summary.json").read_text())["mode"] == "sync"
    for p in sorted(out.glob("scores/*/*.parquet")) + sorted(out.glob("stats/*")):
        assert (auto / p.relative_to(out)).read_bytes() == p.read_bytes(), p


def test_resumed_run_reports_what_it_did_and_huge_n_boot_is_refused_up_front(tmp_path):
    """A resume that found every task done says so instead of "0 pairs/s"; an n_boot the
    finalisation cannot hold is a configuration error before anything is scored."""
    cfg = _config_file(tmp_path)
    out = tmp_path / "run"
    first = cli("score", "--config", str(cfg), "--output", str(out), "--sync", "--set", "stats.n_boot=50")
    assert first.returncode == 0, first.stderr
    assert "pairs/s" in first.stdout and "nothing to score" not in first.stdout
    again = cli("score", "--config", str(cfg), "--output", str(out), "--sync", "--set", "stats.n_boot=50")
    assert again.returncode == 0, again.stderr
    assert "resumed, nothing to score" in again.stdout and "0 pairs/s" not in again.stdout
    huge = cli("score", "--config", str(cfg), "--output", str(tmp_path / "huge"), "--sync",
               "--set", "stats.n_boot=1000000000")
    assert huge.returncode == 2
    assert "stats.n_boot" in huge.stderr and "20,000" in huge.stderr and "Traceback" not in huge.stderr
    assert not (tmp_path / "huge").exists()
