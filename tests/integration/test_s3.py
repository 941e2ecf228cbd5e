"""`s3://` end to end against a real S3 server process on 127.0.0.1 (moto's ThreadedMotoServer).

Sharded inputs (JSONL, gzip JSONL, Parquet) are written into a bucket; the CLI runs in local mode
with two worker processes, reading from and writing to the bucket, with the endpoint and
credentials taken from the standard AWS environment variables only; the results are read back.
"""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from support.pipeline_corpus import config, write_records
from support.storage_servers import (AWS_VARS, S3_SECRET, cli, download_tree, moto_endpoint, s3_bucket,  # noqa: F401
                              s3_env, s3_fs, upload_tree)
from pipeline.cli.main import main
from pipeline.config import RunConfig
from pipeline.execution.driver import run


def _scores(files: dict[str, bytes]) -> pa.Table:
    t = pa.concat_tables(pq.read_table(pa.BufferReader(b)) for k, b in sorted(files.items())
                         if k.startswith("scores/"))
    return t.sort_by([("system", "ascending"), ("id", "ascending")]).replace_schema_metadata(None)


def test_s3_end_to_end_with_worker_processes(moto_endpoint, s3_bucket, tmp_path, monkeypatch, capsys):
    local = tmp_path / "corpus"
    write_records(local, 40)
    fs = s3_fs(moto_endpoint)
    keys = upload_tree(fs, local, f"{s3_bucket}/corpus")
    assert len(keys) == 3
    out = f"s3://{s3_bucket}/runs/r1"
    d = config({"layout": "records", "paths": f"s3://{s3_bucket}/corpus/shard-*"}, "unused",
               execution={"mode": "local", "target_cost": 4000})
    cfg = tmp_path / "s3.yaml"
    cfg.write_text(yaml.safe_dump(d))
    env = s3_env(moto_endpoint)

    r = cli("score", "--config", str(cfg), "--output", out, "--workers", "2", "--no-progress",
            env=env, drop_env=AWS_VARS)
    assert r.returncode == 0, r.stderr
    assert "workers warm (2 workers)" in r.stderr and f"output: {out}" in r.stdout

    files = download_tree(fs, out)
    assert "_SUCCESS" in files and "_run.json" in files and "stats/stats.parquet" in files
    assert any(k.startswith("scores/system-sysA/part-") for k in files)
    assert any(k.startswith("quarantine/part-") for k in files)
    summary = json.loads(files["_summary.json"])
    assert summary["status"] == "ok" and summary["workers"] == 2 and summary["mode"] == "dask"
    assert summary["rows"] == 80 and summary["quarantined"] == 3 and summary["tasks"] > 3
    for k, b in files.items():
        if k.endswith(".parquet"):
            assert pq.read_schema(pa.BufferReader(b)).metadata[b"rouge_pipeline.signature"].decode() \
                == summary["signature"]

    # the same corpus from the local disk, synchronously in this process: the same numbers
    local_cfg = config({"layout": "records", "paths": str(local / "shard-*")}, tmp_path / "local",
                       execution={"mode": "sync", "target_cost": 4000})
    res = run(RunConfig.from_dict(local_cfg), None, progress=False, log=lambda _: None)
    assert json.loads(files["stats/stats.json"])["rows"] == res.rows
    local_files = {str(p.relative_to(tmp_path / "local")): p.read_bytes()
                   for p in (tmp_path / "local").rglob("*.parquet")}
    assert _scores(files).equals(_scores(local_files))
    assert res.signature == summary["signature"]

    # the secret from the environment is nowhere in the bucket's run folder or the CLI's output
    secret = S3_SECRET.encode()
    assert not [k for k, b in files.items() if secret in b]
    assert S3_SECRET not in r.stdout + r.stderr

    # in this process, with the same environment only: `show` reads the run back from the bucket,
    # and the same command again resumes every task from the bucket's _done markers
    for k in AWS_VARS:
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert main(["show", out]) == 0
    shown = capsys.readouterr().out
    assert "sysA" in shown and summary["signature"] in shown
    assert main(["score", "--config", str(cfg), "--output", out, "--sync", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tasks_resumed"] == summary["tasks"]
    assert download_tree(fs, out)["stats/stats.json"] == files["stats/stats.json"]


def test_s3_missing_bucket_is_a_clear_error(moto_endpoint, tmp_path, monkeypatch, capsys):
    for k, v in s3_env(moto_endpoint).items():
        monkeypatch.setenv(k, v)
    d = config({"layout": "records", "paths": "s3://no-such-bucket-rouge/corpus/*.jsonl"}, "s3://x-rouge/out")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(d))
    assert main(["score", "--config", str(cfg), "--sync"]) == 2
    err = capsys.readouterr().err
    assert "bucket does not exist" in err and "Traceback" not in err, err
