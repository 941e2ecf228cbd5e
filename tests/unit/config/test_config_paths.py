"""Relative paths in a config file resolve from the file's folder; ``--set`` and ``--output`` from
the current directory. ``score --print-config`` prints the effective configuration."""
from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

from pipeline.cli import main as cli
from pipeline.config import load_config

REPO = Path(__file__).parents[3]


def _write_corpus(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"id": f"d{i}", "candidate": f"the cat sat on mat {i}", "references": [f"a cat sat on the mat {i}"]}
            for i in range(5)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_config_in_another_folder_run_from_another_cwd(tmp_path, monkeypatch, capsys):
    conf = tmp_path / "project" / "conf"
    _write_corpus(conf / "data" / "part-0.jsonl")
    (conf / "run.yaml").write_text(yaml.safe_dump({"input": {"paths": "data/*.jsonl"}, "output": {"url": "out"},
                                                   "stats": {"n_boot": 50}}))
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    assert cli.main(["score", "--config", "../project/conf/run.yaml", "--sync", "--no-progress"]) == 0, \
        capsys.readouterr().err
    assert (conf / "out" / "_SUCCESS").exists()
    assert _tree(cwd) == []                                   # nothing written in the current directory


def test_set_and_output_are_relative_to_the_current_directory(tmp_path, monkeypatch, capsys):
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "run.yaml").write_text(yaml.safe_dump({"input": {"paths": "nowhere/*.jsonl"}, "output": {"url": "out"},
                                                   "stats": {"n_boot": 50}}))
    _write_corpus(tmp_path / "cwd" / "mine.jsonl")
    monkeypatch.chdir(tmp_path / "cwd")
    assert cli.main(["score", "--config", str(conf / "run.yaml"), "--set", "input.paths=mine.jsonl",
                     "--output", "runs/x", "--sync", "--no-progress"]) == 0, capsys.readouterr().err
    assert (tmp_path / "cwd" / "runs" / "x" / "_SUCCESS").exists()
    assert not (conf / "out").exists()


def test_urls_and_absolute_paths_are_left_as_they_are(tmp_path):
    absolute = str(tmp_path / "abs" / "*.jsonl")
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({
        "input": {"layout": "paired", "candidates": [absolute, "~/c.jsonl"], "references": "s3://bucket/refs/*.jsonl"},
        "output": {"url": "gs://bucket/runs/x"}}))
    cfg = load_config(tmp_path / "c.yaml")
    assert cfg.input["candidates"] == [absolute, "~/c.jsonl"]
    assert cfg.input["references"] == "s3://bucket/refs/*.jsonl" and cfg.output.url == "gs://bucket/runs/x"


def test_the_sample_config_from_the_repository_root_and_from_elsewhere(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    cfg = load_config("configs/sample.yaml")
    assert cfg.input["paths"] == "configs/sample/part-*.jsonl*" and cfg.output.url == "runs/sample"
    monkeypatch.chdir(tmp_path)
    cfg = load_config(REPO / "configs" / "sample.yaml")
    assert cfg.input["paths"] == str(REPO / "configs" / "sample" / "part-*.jsonl*")
    assert cfg.output.url == str(REPO / "runs" / "sample")
    out = tmp_path / "run"
    assert cli.main(["score", "--config", str(REPO / "configs" / "sample.yaml"), "--sync", "--no-progress",
                     "--output", str(out), "--set", "stats.n_boot=50"]) == 0
    assert json.loads((out / "_summary.json").read_text())["rows"] == 200


def test_print_config_prints_every_default_redacted_and_loads_back(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text(yaml.safe_dump({"input": {"paths": "data/*.jsonl"}, "output": {"url": "out"},
                                        "storage_options": {"secret": "s3cr3t-value", "anon": False}}))
    assert cli.main(["score", "--config", str(cfg_file), "--print-config"]) == 0
    printed = capsys.readouterr().out
    assert "s3cr3t-value" not in printed
    d = yaml.safe_load(printed)
    assert d["storage_options"]["anon"] is False and d["storage_options"]["secret"] != "s3cr3t-value"
    assert d["scoring"]["multi_ref"] == "max_f" and d["execution"]["n_workers"] == (os.cpu_count() or 1)
    assert d["stats"] == {"seed": 12345, "n_boot": 1000, "confidence": 0.95, "bootstrap": "poisson"}
    assert d["input"]["paths"] == [str(tmp_path / "data" / "*.jsonl")] and d["input"]["format"] == "auto"
    assert d["output"]["url"] == str(tmp_path / "out")
    assert _tree(tmp_path) == ["c.yaml"]                      # nothing run, nothing created
    again = tmp_path / "again.yaml"
    again.write_text(printed)
    assert load_config(again).config_hash() == load_config(cfg_file).config_hash()
