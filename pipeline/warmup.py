"""Compile (or load from numba's cache) every kernel once: ``python -m pipeline.warmup``.

Docker images and CI run this at build time so workers do not compile at their
first task.
"""
from __future__ import annotations

import time


def warmup(settings=None) -> float:
    """Load every kernel; with ``settings`` (a :class:`pipeline.job.ScoringSettings`) also
    build that run's scorer (a unicode or rouge155 profile's tables) through a task's path."""
    t0 = time.perf_counter()
    from pipeline.scorer import RougeScorer, _compiled

    _compiled()  # imports numba, which ends the cold-start tier (that tier would load no kernel)

    refs = ["The cat sat on the mat.\nIt was happy.", "a b c \u2014 caf\u00e9"]  # non-ASCII: the UTF-8 kernel
    cands = ["The cat is sitting on the mat.\nIt is happy.", "b a"]
    for stem in (False, True):
        RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=stem).score_batch(refs, cands)
    RougeScorer(["rougeLsum"], tokenizer=str.split).score_batch(refs, cands)
    _warm_job(settings)
    return time.perf_counter() - t0


def _warm_job(settings=None) -> None:
    """The job's own compiled parts (a task's scoring, diagnostics and statistics, the JSONL
    byte check, split scoring), with the run's settings when given."""
    import numpy as np
    import pyarrow as pa

    from pipeline import job
    from pipeline.io import readers
    from pipeline.scoring.split import score_split

    table = pa.table({
        "id": ["a", "b"], "system": ["s", "s"],
        "candidate": ["the cat sat on the mat\nit was happy", "b a"],
        "references": [["the cat is on the mat\nhappy it was", "a cat"], ["a b"]],
        "source": ["the cat sat on the mat . it was happy .", None],
    })
    for s in dict.fromkeys([job.ScoringSettings(), settings or job.ScoringSettings()]):
        scores = job.score_table(table, s)
        job.unit_stats(scores, job.UnitContext(run_url="", scoring=s, seed=0, n_boot=10))
    readers._jsonl_shape(np.frombuffer(b'{"id": 1}\n', dtype=np.uint8))
    score_split(job.scorer_for(job.ScoringSettings()), "a b\nc", ["c a\nb"], 2)


if __name__ == "__main__":
    print(f"kernels ready in {warmup():.2f}s")
