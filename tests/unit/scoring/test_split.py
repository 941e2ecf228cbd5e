"""Scoring a long document as blocks of reference sentences gives the unsplit numbers, bit for bit."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from pipeline import RougeScorer
from pipeline.scoring.split import block_bounds, score_split, union_block
from pipeline.text.tokenizers import WhitespaceTokenizer

sys.path.insert(0, str(Path(__file__).parents[3] / "benchmarks"))
from corpus import make_corpus  # noqa: E402

TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]


def _same(scorer, candidate, references, n_blocks):
    whole = scorer.score_arrays([references], [candidate])
    split = score_split(scorer, candidate, references, n_blocks)
    np.testing.assert_array_equal(split.scores, whole.scores)
    np.testing.assert_array_equal(split.best_ref, whole.best_ref)
    assert split.cand_len.tolist() == whole.cand_len.tolist()
    assert split.ref_len.tolist() == whole.ref_len.tolist()


@pytest.mark.parametrize("stem", [False, True])
@pytest.mark.parametrize("n_blocks", [1, 2, 7, 500])
def test_long_documents(stem, n_blocks):
    refs, cands = make_corpus("long", 3, seed=5)
    scorer = RougeScorer(TYPES, use_stemmer=stem)
    for ref, cand in zip(refs, cands):
        _same(scorer, cand, [ref], n_blocks)


def test_multi_reference_real_data(shared_data):
    rows = [json.loads(line) for line in (shared_data / "duc2004_pyrouge_tests" / "duc2004_pyrouge_tests.jsonl").open()]
    scorer = RougeScorer(TYPES, use_stemmer=True)
    for row in rows[:25]:
        _same(scorer, row["candidate"], row["references"], 3)


def test_custom_tokenizer_and_ties():
    scorer = RougeScorer(TYPES, tokenizer=WhitespaceTokenizer())
    rng = np.random.default_rng(3)
    for _ in range(30):
        ref = "\n".join(" ".join(rng.choice(list("abc"), rng.integers(1, 90))) for _ in range(rng.integers(1, 9)))
        cand = "\n".join(" ".join(rng.choice(list("abc"), rng.integers(1, 90))) for _ in range(rng.integers(1, 9)))
        other = " ".join(rng.choice(list("abcd"), 20))
        _same(scorer, cand, [ref, other], int(rng.integers(1, 6)))


def test_empty_sides():
    scorer = RougeScorer(TYPES)
    for cand, refs in [("", ["a b\nc"]), ("a b", [""]), ("...", ["!!\n??"]), ("a", ["", "a"])]:
        _same(scorer, cand, refs, 2)


def test_blocks_partition_the_sentences():
    for n in range(0, 30):
        for b in range(1, 12):
            covered = []
            for k in range(b):
                lo, hi = block_bounds(n, b, k)
                covered += list(range(lo, hi))
            assert covered == list(range(n))


def test_too_long_block_is_reported():
    scorer = RougeScorer(["rougeLsum"])
    assert union_block(scorer, "a " * 300, "a " * 300, 0, 1, max_backtrack_words=100) is None
    split = score_split(scorer, "a " * 300, ["a " * 300], 1)  # default budget: fine
    assert split.status.tolist() == [0] and split.scores[0, 0, 2] == 1.0


# --- the job: an oversized example's rougeLsum runs as blocks on several workers ---------------
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
    sys.path.insert(0, str(Path(__file__).parents[2]))
    from support.pipeline_corpus import config

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
