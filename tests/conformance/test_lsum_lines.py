"""rougeLsum on texts of one line and of several (issue 30): a pair whose texts have at most one
line with tokens each is scored as rougeL (the union of one LCS is that LCS), every other pair
through the union LCS.  Both must give rouge-score's numbers, whatever the newlines: ``\\r``,
blank and whitespace-only lines, lines of punctuation only, leading and trailing newlines."""
from __future__ import annotations

import random

import numpy as np
import pytest

from pipeline import RougeScorer
from pipeline.scoring.batch import STATUS_OK, STATUS_TOO_LONG, example_offsets, score_encoded

rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")

TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
WORDS = "the cat sat on mat a dog ran runs running ran. cats dogs".split()
JUNK = ["", " ", "\t", "!!", "--", "\u2014", "...", " , "]
BREAKS = ["\n", "\n\n", "\r\n", "\r", " \n ", "\n \t\n", "\n\r\n"]


def _line(rng: random.Random) -> str:
    if rng.random() < 0.2:
        return rng.choice(JUNK)
    words = [rng.choice(WORDS) for _ in range(rng.choice((1, 2, 3, 5, 8, 13)))]
    return " ".join(w.capitalize() if rng.random() < 0.2 else w for w in words)


def _text(rng: random.Random) -> str:
    """One line (half the time) or several, with every kind of line break and blank line."""
    lines = [_line(rng) for _ in range(1 if rng.random() < 0.5 else rng.randint(2, 4))]
    text = lines[0]
    for line in lines[1:]:
        text += rng.choice(BREAKS) + line
    if rng.random() < 0.15:
        text = rng.choice(BREAKS) + text
    if rng.random() < 0.15:
        text += rng.choice(BREAKS)
    return text


def _pairs(n: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    return [(_text(rng), _text(rng)) for _ in range(n)]


def _prf(scores: dict) -> list[tuple[float, float, float]]:
    return [tuple(float(x) for x in scores[t]) for t in TYPES]


@pytest.mark.parametrize("stem", [False, True])
def test_single_and_multi_line_pairs_equal_rouge_score(stem):
    pairs = _pairs(400, seed=30 + stem)
    ours = RougeScorer(TYPES, use_stemmer=stem)
    ref = rouge_scorer.RougeScorer(TYPES, use_stemmer=stem)
    batch = ours.score_batch([r for r, _ in pairs], [c for _, c in pairs])
    one_line = 0
    for (r, c), got in zip(pairs, batch):
        want = ref.score(r, c)
        assert _prf(got) == _prf(want), (r, c)
        assert _prf(ours.score(r, c)) == _prf(want), (r, c)
        one_line += "\n" not in r and "\n" not in c
    assert 50 < one_line < 350  # both kinds of pair are in the batch


def test_multi_reference_max_by_f_equals_rouge_score():
    rng = random.Random(7)
    ours = RougeScorer(TYPES, use_stemmer=True)
    ref = rouge_scorer.RougeScorer(TYPES, use_stemmer=True)
    examples = [([_text(rng) for _ in range(rng.randint(1, 4))], _text(rng)) for _ in range(200)]
    batch = ours.score_batch([refs for refs, _ in examples], [c for _, c in examples])
    for (refs, c), got in zip(examples, batch):
        want = ref.score_multi(refs, c)
        assert _prf(got) == _prf(want), (refs, c)
        assert _prf(ours.score_multi(refs, c)) == _prf(want), (refs, c)


def test_one_line_longer_than_a_word_of_bits():
    """Both texts one line of more than 64 tokens (the LCS's multi-word path), and empty texts."""
    rng = random.Random(3)
    ours = RougeScorer(TYPES)
    ref = rouge_scorer.RougeScorer(TYPES)
    pairs = [(" ".join(rng.choice(WORDS) for _ in range(rng.randint(60, 200))),
              " ".join(rng.choice(WORDS) for _ in range(rng.randint(60, 200)))) for _ in range(30)]
    pairs += [("", "a b"), ("a b", ""), ("", ""), ("!!\n", "a"), ("\n\n", "\n"), ("a\n", "\na")]
    for (r, c), got in zip(pairs, ours.score_batch([r for r, _ in pairs], [c for _, c in pairs])):
        assert _prf(got) == _prf(ref.score(r, c)), (r, c)


def test_one_line_pair_too_long_to_backtrack_is_still_reported():
    """rougeLsum of one line each is not backtracked, but a pair past the backtracking limit is
    reported as any other (the job quarantines it), at the same limit: (n + 1) words."""
    ours = RougeScorer(TYPES)
    cand, refs = "a b c d e f g h i j", "a c e g i k m o q s"  # 10 tokens each: 11 words needed
    enc = ours.encode([cand, refs])
    offs = example_offsets([1])
    over = score_encoded(enc, offs, ours.types, max_backtrack_words=10)
    at = score_encoded(enc, offs, ours.types, max_backtrack_words=11)
    assert over.status.tolist() == [STATUS_TOO_LONG] and np.isnan(over.scores).all()
    assert at.status.tolist() == [STATUS_OK]
    assert at.scores[0, 3].tolist() == at.scores[0, 2].tolist() == [0.5, 0.5, 0.5]


class _SpaceTokenizer:
    """Splits on spaces only: a newline stays inside a whole-text token, so a text's one line
    with tokens is tokenized differently from the whole text."""

    def tokenize(self, text):
        return [t for t in text.split(" ") if t]


def test_one_line_of_other_tokens_than_the_whole_text():
    """A custom tokenizer's tokens of a text's one line need not be its whole-text tokens:
    rougeLsum is then not rougeL (here 1.0 against 2/3)."""
    pairs = [("x a b\n", "x a b"), ("\nx a b", "x a b"), ("x a b", "x a b\n\n")]
    ours = RougeScorer(TYPES, tokenizer=_SpaceTokenizer())
    ref = rouge_scorer.RougeScorer(TYPES, tokenizer=_SpaceTokenizer())
    for (r, c), got in zip(pairs, ours.score_batch([r for r, _ in pairs], [c for _, c in pairs])):
        want = ref.score(r, c)
        assert want["rougeLsum"].fmeasure == 1.0 and want["rougeL"] != want["rougeLsum"]
        assert _prf(got) == _prf(want), (r, c)
