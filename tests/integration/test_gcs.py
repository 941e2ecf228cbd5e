"""`gs://` end to end against a local GCS emulator (gcp-storage-emulator, 127.0.0.1).

gcsfs finds the emulator through ``STORAGE_EMULATOR_HOST``; ``GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=false``
stops gcsfs probing bucket types over gRPC; credentials are ``storage_options: {token: anon}``
in the config.  The run folder URL has no trailing slash (gcsfs + emulator would read
``b/out//part``).
"""
from __future__ import annotations

import os

# gcsfs reads this once, when it is imported: it must be set before anything imports gcsfs.
os.environ["GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT"] = "false"

import json  # noqa: E402
import uuid  # noqa: E402

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from support.pipeline_corpus import config, write_records
from support.storage_servers import GCS_OPTIONS, cli, download_tree, gcs_endpoint, gcs_env, upload_tree  # noqa: F401

gcsfs = pytest.importorskip("gcsfs")
if "Extended" in gcsfs.GCSFileSystem.__name__:
    pytest.skip("gcsfs was imported before GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=false was set", allow_module_level=True)


@pytest.fixture()
def gcs(gcs_endpoint, monkeypatch):
    for k, v in gcs_env(gcs_endpoint).items():
        monkeypatch.setenv(k, v)
    fs = gcsfs.GCSFileSystem(**GCS_OPTIONS, skip_instance_cache=True)
    bucket = f"rouge-{uuid.uuid4().hex[:12]}"
    fs.mkdir(bucket)
    return fs, bucket


def test_gcs_end_to_end_with_a_worker_process(gcs, gcs_endpoint, tmp_path):
    fs, bucket = gcs
    local = tmp_path / "corpus"
    write_records(local, 20)
    upload_tree(fs, local, f"{bucket}/corpus")
    out = f"gs://{bucket}/runs/r1"
    d = config({"layout": "records", "paths": f"gs://{bucket}/corpus/shard-*"}, "unused",
               execution={"mode": "local"}, storage_options=dict(GCS_OPTIONS))
    cfg = tmp_path / "gcs.yaml"
    cfg.write_text(yaml.safe_dump(d))
    r = cli("score", "--config", str(cfg), "--output", out, "--workers", "1", "--no-progress",
            env=gcs_env(gcs_endpoint))
    assert r.returncode == 0, r.stderr
    files = download_tree(fs, out)
    assert "_SUCCESS" in files and "stats/stats.json" in files
    assert not [k for k in files if "//" in k]
    summary = json.loads(files["_summary.json"])
    assert summary["rows"] == 40 and summary["quarantined"] == 3 and summary["mode"] == "dask"
    parts = [b for k, b in files.items() if k.startswith("scores/")]
    assert sum(pq.read_table(pa.BufferReader(b)).num_rows for b in parts) == 40
