"""Credentials never leak: a secret given in the config's ``storage_options`` or in the environment
appears in no byte of the run folder (every object, Parquet metadata included) and in none of the
CLI's output (stdout and stderr, which carry the driver's and the workers' logs)."""
from __future__ import annotations

import yaml

from _pipeline_corpus import config, write_records
from _storage_servers import AWS_VARS, cli, download_tree, moto_endpoint, s3_bucket, s3_fs, upload_tree  # noqa: F401

CONFIG_SECRET = "cfg-secret-7d1c0ffee5ca1ab1e"
CONFIG_KEY_ID = "AKIACONFIGKEYROUGE01"
ENV_SECRET = "env-secret-42deadbeef42cafe"


def _leaks(blobs: dict[str, bytes], secrets) -> list[str]:
    return [f"{name}: {s}" for name, b in blobs.items() for s in secrets if s.encode() in b]


def test_secrets_from_config_and_environment_appear_nowhere(moto_endpoint, s3_bucket, tmp_path):
    local = tmp_path / "corpus"
    write_records(local, 12)
    fs = s3_fs(moto_endpoint)
    upload_tree(fs, local, f"{s3_bucket}/corpus")
    out = f"s3://{s3_bucket}/runs/secret"
    so = {"key": CONFIG_KEY_ID, "secret": CONFIG_SECRET, "client_kwargs": {"endpoint_url": moto_endpoint}}
    d = config({"layout": "records", "paths": f"s3://{s3_bucket}/corpus/shard-*"}, out,
               execution={"mode": "local"}, storage_options=so)
    cfg = tmp_path / "secret.yaml"
    cfg.write_text(yaml.safe_dump(d))
    assert CONFIG_SECRET in cfg.read_text()          # the secret really is in the config
    # The config's storage_options carry endpoint and credentials; the environment holds another
    # secret (a decoy that every process inherits) and no endpoint.
    env = {"AWS_ACCESS_KEY_ID": "AKIAENVKEYROUGE00001", "AWS_SECRET_ACCESS_KEY": ENV_SECRET,
           "AWS_DEFAULT_REGION": "us-east-1"}
    r = cli("score", "--config", str(cfg), "--workers", "1", env=env, drop_env=AWS_VARS)
    assert r.returncode == 0, r.stderr
    files = download_tree(fs, out)
    assert "_SUCCESS" in files and "_run.json" in files and any(k.endswith(".parquet") for k in files)
    secrets = (CONFIG_SECRET, ENV_SECRET, CONFIG_KEY_ID)
    assert _leaks(files, secrets) == []
    assert _leaks({"stdout": r.stdout.encode(), "stderr": r.stderr.encode()}, secrets) == []
    assert b'"secret": "***"' in files["_run.json"] and b'"key": "***"' in files["_run.json"]
    # the check itself would see a leak
    assert _leaks({"x": b"..." + CONFIG_SECRET.encode() + b"..."}, secrets)

    # a failing run (another config, same folder: refused) does not print them either
    bad = cli("score", "--config", str(cfg), "--workers", "1", "--sync", "--set", "stats.seed=4",
              env=env, drop_env=AWS_VARS)
    assert bad.returncode == 4
    assert _leaks({"stdout": bad.stdout.encode(), "stderr": bad.stderr.encode()}, secrets) == []
