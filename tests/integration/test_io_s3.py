"""pipeline.io against a real S3 server on 127.0.0.1 (moto's ThreadedMotoServer): gzip JSONL shards
read from a bucket, the atomic writers and the success marker written to it."""
from __future__ import annotations

import gzip
import json
import os

import fsspec
import pytest

from pipeline.errors import InputChangedError
from pipeline.io.readers import plan_units, read_unit
from pipeline.io.input_spec import InputSpec
from pipeline.io.writers import write_json_atomic, write_parquet_atomic
from pipeline.runfolder import is_complete, mark_success, part_name, partition_path
from support.records import read_all, recs


# --------------------------------------------------------------------------- s3 (moto, loopback only)
@pytest.fixture(scope="module")
def s3_options():
    moto_server = pytest.importorskip("moto.server")
    pytest.importorskip("s3fs")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    so = {"key": "testing", "secret": "testing", "client_kwargs": {"endpoint_url": f"http://{host}:{port}"},
          "skip_instance_cache": True}
    old = os.environ.get("AWS_DEFAULT_REGION")
    os.environ["AWS_DEFAULT_REGION"] = "us-east-1"   # no LocationConstraint (moto refuses us-east-1's)
    try:
        yield so
    finally:
        server.stop()
        if old is None:
            os.environ.pop("AWS_DEFAULT_REGION", None)
        else:
            os.environ["AWS_DEFAULT_REGION"] = old


def test_s3_records_paired_and_writers(tmp_path, s3_options):
    fs = fsspec.filesystem("s3", **s3_options)
    fs.mkdir("rouge-io-test")
    for k in range(2):
        with fs.open(f"rouge-io-test/in/shard-{k}.jsonl.gz", "wb") as f:
            f.write(gzip.compress(b"".join(json.dumps(r).encode() + b"\n" for r in recs(3, 3 * k, "S"))))
    spec = {"paths": "s3://rouge-io-test/in/*.jsonl.gz", "storage_options": s3_options}
    units, t, q = read_all(spec)
    assert units[0].file == "s3://rouge-io-test/in/shard-0.jsonl.gz"
    assert t.column("id").to_pylist() == [f"d{i}" for i in range(6)] and q.num_rows == 0
    run = "s3://rouge-io-test/runs/r1"
    write_parquet_atomic(t, partition_path(run, "scores", "S") + part_name(0), s3_options, {"a": "b"})
    write_json_atomic({"n": 6}, f"{run}/_summary.json", s3_options)
    assert not is_complete(run, s3_options)
    mark_success(run, s3_options)
    assert is_complete(run, s3_options)
    assert fs.cat(f"{run[5:]}/_summary.json") == b'{\n  "n": 6\n}\n'
    with pytest.raises(FileNotFoundError, match="nothing"):
        plan_units(InputSpec.from_config({"paths": "s3://rouge-io-test/nothing*.jsonl",
                                          "storage_options": s3_options}))


@pytest.mark.parametrize("name", ["cut.jsonl", "cut.jsonl.gz"])
def test_s3_object_rewritten_shorter_after_planning_fails(s3_options, name):
    fs = fsspec.filesystem("s3", **s3_options)
    if not fs.exists("rouge-io-changed"):
        fs.mkdir("rouge-io-changed")
    body = b"".join(json.dumps(r).encode() + b"\n" for r in recs(6, 0, "S"))
    pack = gzip.compress if name.endswith(".gz") else bytes
    fs.pipe(f"rouge-io-changed/{name}", pack(body))
    spec = InputSpec.from_config({"paths": f"s3://rouge-io-changed/{name}", "storage_options": s3_options})
    units = plan_units(spec, 2)
    assert len(units) == 3
    fs.pipe(f"rouge-io-changed/{name}", pack(body[:body.rindex(b"{")]))   # the last record gone
    with pytest.raises(InputChangedError, match=f"s3://rouge-io-changed/{name}: the file changed since planning"):
        for u in units:
            read_unit(spec, u)
