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
    # diagnostics reuse the candidate's tokens: the split result points at the candidate too
    (tok, start, end, gen), (w_tok, w_start, w_end, w_gen) = split.candidate_tokens(), whole.candidate_tokens()
    if gen == w_gen:  # ids of one vocabulary generation
        assert tok[start[0]:end[0]].tolist() == w_tok[w_start[0]:w_end[0]].tolist()


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
