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


def test_following_the_hint_of_a_two_model_file_ends_at_the_system_field(tmp_path):
    """The issue's file (doc_id, model, prediction, target; two models over the same documents):
    the first run's hint names every mapping, system=model included; a run that maps all but the
    system says so on stderr, in the printed summary and in _summary.json; with it, both models."""
    rows = [{"doc_id": f"d{i}", "model": m, "prediction": f"the cat {i} sat", "target": f"the cat {i} sat down"}
            for m in ("a", "b") for i in range(20)]
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    first = cli("score", str(path), "-o", str(tmp_path / "r0"), "--sync", "--no-progress")
    assert first.returncode == 5
    assert first.stderr.rstrip().endswith("all together: --set input.columns.id=doc_id --set input.columns."
                                          "candidate=prediction --set input.columns.references=target "
                                          "--set input.columns.system=model")
    mapped = ["--set", "input.columns.id=doc_id", "--set", "input.columns.candidate=prediction",
              "--set", "input.columns.references=target"]
    half = cli("score", str(path), "-o", str(tmp_path / "r1"), "--sync", "--no-progress", *mapped)
    assert half.returncode == 0, half.stderr
    words = ("20 of 40 records were quarantined as a repeated (system, id): their scores are in no statistic; "
             "a system field is probably unmapped: did you mean --set input.columns.system=model?")
    assert f"warning: {words}" in half.stderr and f"warning: {words}" in half.stdout
    assert json.loads((tmp_path / "r1" / "_summary.json").read_text())["warnings"] == [words]
    whole = cli("score", str(path), "-o", str(tmp_path / "r2"), "--sync", "--no-progress", *mapped,
                "--set", "input.columns.system=model")
    assert whole.returncode == 0, whole.stderr
    assert "warning" not in whole.stderr + whole.stdout
    summary = json.loads((tmp_path / "r2" / "_summary.json").read_text())
    assert summary["rows"] == 40 and summary["systems"] == ["a", "b"] and "warnings" not in summary
