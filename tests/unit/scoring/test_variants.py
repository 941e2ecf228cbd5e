"""pipeline.scoring.variants on the seeds' own numbers, and against the spec where they meet."""
from __future__ import annotations

import random

import pytest

from pipeline.rouge155 import Rouge155Options
from pipeline.rouge155.fast import Rouge155Scorer
from pipeline.scoring.variants import (
    VARIANTS, f1, fbeta, lcs_length, overlap, rouge_lsum_best_sentence, rouge_n_recall_summed,
)


def r4(x):
    return round(x, 4)


def test_reval_rouge_lsum_seed_002_example():
    cand = [["the", "cat", "is", "on", "the", "mat"], ["it", "is", "cute"]]
    refs = [["the", "dog", "is", "on", "the", "mat"], ["the", "animal", "is", "cute"],
            ["the", "pet", "sleeps", "well"]]
    p, r, f = rouge_lsum_best_sentence(cand, refs)
    assert (r4(p), r4(r), r4(f)) == (0.7778, 0.5000, 0.6087)
    assert (p, r) == (7 / 9, 7 / 14)
    assert VARIANTS["reval-rougeLsum"] is rouge_lsum_best_sentence


def test_reval_helpers_seed_002_examples():
    c = ["the", "cat", "is", "sitting", "on", "the", "mat"]
    r = ["the", "cat", "sat", "on", "the", "mat"]
    p, rec = overlap(r, c) / len(c), overlap(c, r) / len(r)
    assert (r4(p), r4(rec), r4(f1(p, rec))) == (0.7143, 0.8333, 0.7692)      # ROUGE1
    lcs = lcs_length(c, r)
    assert (r4(lcs / len(c)), r4(lcs / len(r))) == (0.7143, 0.8333)           # ROUGEL
    assert lcs_length(["a", "b", "c"], ["c", "b", "a"]) == 1
    assert fbeta(0.5, 0.5, 2.0) == 0.5 and f1(0, 0) == 0.0
    assert r4(fbeta(0.7778, 0.5, 2.0)) == r4(5 * 0.7778 * 0.5 / (4 * 0.7778 + 0.5))


def test_reval_lsum_edge_cases():
    assert rouge_lsum_best_sentence([], [["a"]]) == (0.0, 0.0, 0.0)
    assert rouge_lsum_best_sentence([["a"]], []) == (0.0, 0.0, 0.0)
    # two candidate sentences may reuse the same reference sentence (no union, no clipping)
    p, r, _ = rouge_lsum_best_sentence([["a", "b"], ["a", "b"]], [["a", "b"], ["x", "y"]])
    assert (p, r) == (1.0, 1.0)


def test_summed_recall_seed_001_rule():
    ref = "the cat sat on the mat".split()
    others = ["a dog lay by a rug".split(), "birds fly south in cold winter".split(),
              "rain fell all day so long".split()]
    assert rouge_n_recall_summed(ref, [ref] + others, 1) == 0.25   # matches only the first of four
    assert rouge_n_recall_summed(ref, [ref], 1) == 1.0
    # clipping: a repeated reference n-gram counts only as often as the candidate has it
    assert rouge_n_recall_summed(["the"], [["the", "the"]], 1) == 0.5
    assert rouge_n_recall_summed(["x"], [[]], 2) == 0.0
    with pytest.raises(ValueError):
        rouge_n_recall_summed(ref, [ref], 0)


def test_summed_recall_is_rouge155_pooled_recall():
    """The seed's rule is ROUGE-1.5.5's -f A recall (before its 5-decimal rounding)."""
    rng = random.Random(5)
    words = ["a", "b", "c", "d", "e", "f"]
    scorer = Rouge155Scorer(Rouge155Options(n=2, w_weight=None, skip_gap=None, rouge_l=False))
    for _ in range(200):
        cand = [rng.choice(words) for _ in range(rng.randint(0, 12))]
        refs = [[rng.choice(words) for _ in range(rng.randint(1, 12))] for _ in range(rng.randint(1, 4))]
        res = scorer.score_arrays([[" ".join(r) for r in refs]], [" ".join(cand)])
        for n in (1, 2):
            model, _, hit = res.counts[0, n - 1]
            assert rouge_n_recall_summed(cand, refs, n) == (hit / model if model else 0.0)
