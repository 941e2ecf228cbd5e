"""pipeline.config: safe YAML, unknown keys, overrides, validation, redaction, hash."""
from __future__ import annotations

import json
import os

import pytest
import yaml

from pipeline.config import ConfigError, RunConfig, load_config, parse_override
from pipeline.redaction import REDACTED

BASE = {
    "input": {"layout": "records", "paths": "s3://bucket/corpus/*.jsonl.gz",
              "columns": {"id": "doc_id"}, "storage_options": {"secret": "in-secret"}},
    "output": {"url": "s3://bucket/runs/x"},
    "storage_options": {"key": "AKIA-TOP", "secret": "top-secret", "client_kwargs": {
        "endpoint_url": "http://127.0.0.1:5555", "aws_session_token": "tok"}, "anon": False},
}


def write(tmp_path, d, name="run.yaml"):
    p = tmp_path / name
    p.write_text(yaml.safe_dump(d))
    return p


def test_defaults(tmp_path):
    cfg = load_config(write(tmp_path, BASE))
    assert cfg.scoring.rouge_types == ("rouge1", "rouge2", "rougeL", "rougeLsum")
    assert cfg.scoring.use_stemmer is False
    assert (cfg.scoring.tokenizer, cfg.scoring.sentence_splitter, cfg.scoring.multi_ref) == \
        ("default", "newline", "max_f")
    assert (cfg.stats.seed, cfg.stats.n_boot, cfg.stats.confidence) == (12345, 1000, 0.95)
    assert cfg.execution.mode == "auto" and cfg.execution.retries == 2
    assert cfg.execution.n_workers == (os.cpu_count() or 1)
    assert cfg.strict is False and cfg.output.overwrite is False
    spec = cfg.input_spec()
    assert spec.col("id") == "doc_id"
    # top-level storage options are the defaults, the input's own win
    assert spec.storage_options["key"] == "AKIA-TOP" and spec.storage_options["secret"] == "in-secret"


@pytest.mark.parametrize("d,match", [
    ({**BASE, "scorin": {}}, r"unknown key 'scorin'; did you mean 'scoring'"),
    ({**BASE, "scoring": {"use_stemer": True}}, r"unknown key 'scoring.use_stemer'; did you mean 'use_stemmer'"),
    ({**BASE, "stats": {"n_bot": 5}}, r"unknown key 'stats.n_bot'; did you mean 'n_boot'"),
    ({**BASE, "input": {**BASE["input"], "layuot": "records"}}, r"unknown key 'input.layuot'; did you mean 'layout'"),
    ({**BASE, "input": {**BASE["input"], "columns": {"idd": "x"}}}, r"input.columns.idd"),
])
def test_unknown_keys(tmp_path, d, match):
    with pytest.raises(ConfigError, match=match):
        load_config(write(tmp_path, d))


@pytest.mark.parametrize("override,match", [
    ("scoring.rouge_types=[rouge1, rougeX]", r"scoring.rouge_types: Invalid rouge type: rougeX"),
    ("scoring.rouge_types=[]", r"scoring.rouge_types"),
    ("scoring.rouge_types=[rouge1, rougeL, rouge1]", r"scoring.rouge_types: duplicate type"),
    ("scoring.use_stemmer=maybe", r"scoring.use_stemmer: expected true or false"),
    ("scoring.tokenizer=nltk", r"scoring.tokenizer"),
    ("stats.seed=-1", r"stats.seed: must be >= 0"),
    ("stats.n_boot=-5", r"stats.n_boot: must be >= 0"),
    ("stats.n_boot=1.5", r"stats.n_boot: expected an integer"),
    ("stats.confidence=95", r"stats.confidence"),
    ("execution.n_workers=0", r"execution.n_workers: must be >= 1"),
    ("execution.retries=-1", r"execution.retries"),
    ("execution.mode=cloud", r"execution.mode"),
    ("execution.mode=scheduler", r"execution.scheduler: an address is required"),
    ("execution.target_rows=0", r"execution.target_rows"),
    ("execution.memory_limit=-3", r"execution.memory_limit"),
    ("output.url=ftp://host/run", r"output.url: unsupported URL scheme 'ftp'"),
    ("input.paths=http://host/x.jsonl", r"input.paths: unsupported URL scheme 'http'"),
    ("output.overwrite=yes please", r"output.overwrite"),
    ("strict=1", r"strict: expected true or false"),
    ("scoring=5", r"scoring: expected a mapping"),
])
def test_validation_names_the_field(tmp_path, override, match):
    with pytest.raises(ConfigError, match=match):
        load_config(write(tmp_path, BASE), [override])


def test_one_rouge_type_as_a_text_is_that_type(tmp_path):
    """Never its characters ("r", "o", ...)."""
    assert load_config(write(tmp_path, BASE), ["scoring.rouge_types=rougeLsum"]).scoring.rouge_types == ("rougeLsum",)


def test_overrides(tmp_path):
    cfg = load_config(write(tmp_path, BASE), [
        "scoring.use_stemmer=true", "scoring.rouge_types=[rouge1, rougeLsum]", "stats.n_boot=10",
        "execution.mode=scheduler", "execution.scheduler=tcp://127.0.0.1:8786", "strict=true",
        "input.columns.candidate=summary", "output.url=file:///tmp/run", "stats.confidence=0.9",
        "execution.memory_limit=4GB"])
    assert cfg.scoring.use_stemmer is True and cfg.scoring.rouge_types == ("rouge1", "rougeLsum")
    assert cfg.stats.n_boot == 10 and cfg.stats.confidence == 0.9 and cfg.strict is True
    assert cfg.execution.scheduler == "tcp://127.0.0.1:8786" and cfg.execution.memory_limit == "4GB"
    assert cfg.input_spec().col("candidate") == "summary" and cfg.input_spec().col("id") == "doc_id"
    assert parse_override("a.b.c= 3") == (["a", "b", "c"], 3)
    with pytest.raises(ConfigError, match="dotted.key=value"):
        load_config(write(tmp_path, BASE), ["scoring.use_stemmer"])
    with pytest.raises(ConfigError, match="unknown key 'scoring.stemmer'"):
        load_config(write(tmp_path, BASE), ["scoring.stemmer=true"])
    with pytest.raises(ConfigError, match="output.url is not a section"):
        load_config(write(tmp_path, BASE), ["output.url.x=1"])
    # overrides only, no file
    cfg = load_config(None, ["input.paths=/data/*.jsonl", "output.url=/tmp/out"])
    assert cfg.input_spec().paths == ("/data/*.jsonl",)


def test_safe_yaml_only(tmp_path):
    p = tmp_path / "evil.yaml"
    p.write_text("input: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(p)
    p.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        load_config(p)


def test_missing_input_and_output(tmp_path):
    with pytest.raises(ConfigError, match="input"):
        load_config(write(tmp_path, {"output": {"url": "/tmp/x"}}))
    with pytest.raises(ConfigError, match="output.url"):
        load_config(write(tmp_path, {"input": BASE["input"]}))


def test_to_dict_redacts_secrets(tmp_path):
    cfg = load_config(write(tmp_path, BASE))
    d = cfg.to_dict()
    text = json.dumps(d)
    for secret in ("AKIA-TOP", "top-secret", "in-secret", "\"tok\""):
        assert secret not in text
    assert d["storage_options"]["key"] == REDACTED and d["storage_options"]["anon"] is False
    assert d["storage_options"]["client_kwargs"]["endpoint_url"] == "http://127.0.0.1:5555"
    assert d["storage_options"]["client_kwargs"]["aws_session_token"] == REDACTED
    assert d["input"]["storage_options"]["secret"] == REDACTED
    raw = cfg.to_dict(redact=False)
    assert raw["storage_options"]["secret"] == "top-secret"
    # to_dict(redact=False) round-trips
    again = RunConfig.from_dict(raw)
    assert again.to_dict(redact=False) == raw
    yaml.safe_dump(d)    # serialisable


def test_config_hash(tmp_path):
    cfg = load_config(write(tmp_path, BASE))
    h = cfg.config_hash()
    assert len(h) == 16 and h == load_config(write(tmp_path, BASE)).config_hash()
    # output, execution, strictness and credentials do not change the hash
    same = load_config(write(tmp_path, BASE), ["output.url=/tmp/elsewhere", "execution.n_workers=7",
                                               "strict=true", "storage_options.secret=other",
                                               "input.storage_options.secret=x"])
    assert same.config_hash() == h
    # settings that change numbers or inputs do
    for o in ("scoring.use_stemmer=true", "stats.seed=1", "stats.n_boot=10", "input.paths=s3://b/other/*",
              "input.columns.candidate=summary", "scoring.rouge_types=[rouge1]"):
        assert load_config(write(tmp_path, BASE), [o]).config_hash() != h, o
    assert "secret" not in json.dumps(cfg.hashed_settings())


def test_config_hash_changes_with_the_statistics_format(tmp_path, monkeypatch):
    """Statistics in another format (or with another bucket count) are other numbers, and
    markers in another format cannot be read: a run folder made so is one made with other
    settings, not one to resume."""
    from pipeline.stats import accumulator

    cfg = load_config(write(tmp_path, BASE))
    h = cfg.config_hash()
    assert cfg.hashed_settings()["stats_format"] == [accumulator.FORMAT_VERSION, accumulator.BOOT_BUCKETS]
    for name, value in (("FORMAT_VERSION", accumulator.FORMAT_VERSION - 1), ("BOOT_BUCKETS", 1024)):
        with monkeypatch.context() as m:
            m.setattr(accumulator, name, value)
            assert cfg.config_hash() != h, name
    # and the task markers' format (1 held the statistics; 2 is read by job.load_done)
    from pipeline.runfolder import names

    assert cfg.hashed_settings()["marker_format"] == names.MARKER_FORMAT
    with monkeypatch.context() as m:
        m.setattr(names, "MARKER_FORMAT", names.MARKER_FORMAT - 1)
        assert cfg.config_hash() != h


@pytest.mark.parametrize("stats, field", [
    ({"n_boot": 20_001}, "stats.n_boot"), ({"n_boot": 10**12}, "stats.n_boot"),
    ({"seed": 2**63}, "stats.seed"), ({"seed": 2**32, "bootstrap": "exact"}, "stats.seed"),
    ({"seed": -1}, "stats.seed"), ({"confidence": 1.0}, "stats.confidence"), ({"confidence": 0}, "stats.confidence"),
])
def test_stats_bounds_are_checked_at_config_time(stats, field):
    """Values the statistics cannot hold (int64 seed, RandomState's 32-bit seed for exact, the
    finalisation's n_boot block) fail when the config is read, not after the scoring."""
    d = {**BASE, "stats": stats}
    with pytest.raises(ConfigError, match=field):
        RunConfig.from_dict(d)


def test_stats_bounds_accept_their_limits():
    from pipeline.config import MAX_N_BOOT, MAX_SEED, MAX_SEED_EXACT

    assert RunConfig.from_dict({**BASE, "stats": {"n_boot": MAX_N_BOOT, "seed": MAX_SEED}}).stats.n_boot == 20_000
    assert RunConfig.from_dict({**BASE, "stats": {"seed": MAX_SEED_EXACT, "bootstrap": "exact"}}).stats.seed == 2**32 - 1
