"""The job splits an oversized example's rougeLsum into blocks of reference sentences (in process
and on a two-worker local cluster) with the unsplit numbers, bit for bit."""
import json
import sys
from pathlib import Path

from support.pipeline_corpus import config

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
from corpus import make_corpus  # noqa: E402


def _long_corpus(root: Path) -> str:
    refs, cands = make_corpus("long", 3, seed=11)
    short_refs, short_cands = make_corpus("short", 20, seed=11)
    root.mkdir(parents=True, exist_ok=True)
    path = root / "long.jsonl"
    with path.open("w") as f:
        for i, (r, c) in enumerate(zip(refs + short_refs, cands + short_cands)):
            refs_i = [r, short_refs[i % 20]] if i == 1 else [r]  # one multi-reference long example
            f.write(json.dumps({"id": f"ex{i:03d}", "system": "s", "candidate": c, "references": refs_i}) + "\n")
    return str(path)


def _run(path, out, target_cost, client=None):
    from pipeline.config import RunConfig
    from pipeline.execution.driver import run

    cfg = RunConfig.from_dict(config({"layout": "records", "paths": path}, out,
                                     scoring={"use_stemmer": True},
                                     execution={"target_cost": target_cost}))
    return run(cfg, client=client, progress=False, log=lambda _: None)


def _scores(run_dir: Path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = pa.concat_tables(pq.read_table(p) for p in sorted(run_dir.glob("scores/**/*.parquet")))
    return t.sort_by([("id", "ascending")]).replace_schema_metadata(None)


def test_job_splits_oversized_examples_with_identical_numbers(tmp_path):
    import distributed

    from pipeline.execution.cluster import local_cluster

    path = _long_corpus(tmp_path / "in")
    unsplit = _run(path, tmp_path / "unsplit", 10**12)
    sync_split = _run(path, tmp_path / "sync", 200_000)
    cluster = local_cluster(2, dashboard_address=None, memory_limit="1GB")
    try:
        with distributed.Client(cluster) as client:
            dask_split = _run(path, tmp_path / "dask", 200_000, client=client)
    finally:
        cluster.close()
    base = _scores(tmp_path / "unsplit")
    assert base.num_rows == 23
    for other in (tmp_path / "sync", tmp_path / "dask"):
        assert _scores(other).equals(base)
        assert (other / "stats" / "stats.json").read_bytes() == (tmp_path / "unsplit" / "stats" / "stats.json").read_bytes()
    assert unsplit.summary["rows"] == sync_split.summary["rows"] == dask_split.summary["rows"] == 23
    # the three long examples really were cut into blocks (separate tasks on the cluster)
    assert unsplit.summary["split_examples"] == 0
    assert sync_split.summary["split_examples"] == dask_split.summary["split_examples"] == 3
