"""Compile (or load from numba's cache) every kernel once: ``python -m pipeline.warmup``.

Docker images and CI run this at build time so workers do not compile at their
first task.
"""
from __future__ import annotations

import time


def warmup() -> float:
    t0 = time.perf_counter()
    from pipeline.scorer import RougeScorer

    refs = ["The cat sat on the mat.\nIt was happy.", "a b c \u2014 caf\u00e9"]  # non-ASCII: the UTF-8 kernel
    cands = ["The cat is sitting on the mat.\nIt is happy.", "b a"]
    for stem in (False, True):
        RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=stem).score_batch(refs, cands)
    RougeScorer(["rougeLsum"], tokenizer=str.split).score_batch(refs, cands)
    _warm_job()
    return time.perf_counter() - t0


def warmup_scorer(settings) -> None:
    """Build (and cache in this process) the scorer for ``settings`` (a
    :class:`pipeline.job.ScoringSettings`) and score one example with it."""
    from pipeline import job

    scorer = job.scorer_for(settings)
    scorer.score_arrays(["The cat sat on the mat.\nIt was happy."], ["A cat sat on a mat.\nIt is happy."])


def _warm_job() -> None:
    """The job's own compiled parts: diagnostics, statistics, the JSONL byte check, split scoring."""
    import pyarrow as pa

    from pipeline import job

    table = pa.table({
        "id": ["a", "b"], "system": ["s", "s"],
        "candidate": ["the cat sat on the mat\nit was happy", "b a"],
        "references": [["the cat is on the mat\nhappy it was", "a cat"], ["a b"]],
        "source": ["the cat sat on the mat . it was happy .", None],
    })
    scores = job.score_table(table, job.ScoringSettings())
    from pipeline.stats import StatsAccumulator

    types = job.ScoringSettings().rouge_types
    StatsAccumulator.from_scores(pa.array(["s\x1fa", "s\x1fb"]), scores.column("system"),
                                 job.score_matrix(scores, types), types, n_boot=10)
    import numpy as np

    from pipeline.io import readers

    readers._jsonl_shape(np.frombuffer(b'{"id": 1}\n', dtype=np.uint8))
    from pipeline.scoring.split import score_split

    score_split(job.scorer_for(job.ScoringSettings()), "a b\nc", ["c a\nb"], 2)


if __name__ == "__main__":
    print(f"kernels ready in {warmup():.2f}s")
