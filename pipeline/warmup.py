"""Compile (or load from numba's cache) every kernel once: ``python -m pipeline.warmup``.

Docker images and CI run this at build time so workers do not compile at their
first task.
"""
from __future__ import annotations

import time


def warmup() -> float:
    t0 = time.perf_counter()
    from pipeline.scorer import RougeScorer

    refs = ["The cat sat on the mat.\nIt was happy.", "a b c"]
    cands = ["The cat is sitting on the mat.\nIt is happy.", "b a"]
    for stem in (False, True):
        RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=stem).score_batch(refs, cands)
    RougeScorer(["rougeLsum"], tokenizer=str.split).score_batch(refs, cands)
    return time.perf_counter() - t0


if __name__ == "__main__":
    print(f"kernels ready in {warmup():.2f}s")
