"""The declared tokenizer protocol (pipeline.text.tokenizers): rouge-score's ``tokenize`` is all a
custom tokenizer needs; the batch routes a tokenizer offers are found once and taken."""
from __future__ import annotations

import re

from rouge_score import rouge_scorer

from pipeline import RougeScorer
from pipeline.text.tokenizers import WhitespaceTokenizer, routes
from pipeline.text.unicode import UnicodeTokenizer

TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
REFS = ["The cat sat on the mat.\nIt purred, loudly.", "Stocks fell 3%; bonds rose.\n\nThen calm."]
CANDS = ["the cat is on the mat!\npurring loudly", "bonds fell, stocks rose\nthen calm"]


class OnlyTokenize:
    """rouge-score's interface and nothing else."""

    def tokenize(self, text):
        return re.findall(r"\w+|[^\w\s]", text.lower())


class Marks(OnlyTokenize):
    """Offers tokenize_batch (and stem_token), declines nothing; counts its batch calls."""

    tokens_never_span_newlines = True

    def __init__(self):
        self.batches = 0

    def tokenize_batch(self, texts):
        self.batches += 1
        out = []
        for t in texts:
            for line in t.split("\n"):
                out += super().tokenize(line) + ["\n"]
            out.append("\x00")
        return out

    def stem_token(self, token):
        return token


class HalfMarks(OnlyTokenize):
    def tokenize_batch(self, texts):  # without stem_token: not the marked route
        raise AssertionError("not offered, so never called")


def _oracle(tok):
    sc = rouge_scorer.RougeScorer(TYPES, tokenizer=tok)
    return [{t: tuple(s) for t, s in sc.score(r, c).items()} for r, c in zip(REFS, CANDS)]


def _ours(tok, **kw):
    return [{t: tuple(s) for t, s in d.items()} for d in RougeScorer(TYPES, tokenizer=tok, **kw).score_batch(REFS, CANDS)]


def test_routes_are_the_declared_members_a_tokenizer_has():
    uni = UnicodeTokenizer("de", stem=True)
    r = routes(uni)
    assert (r.name, r.tokens_never_span_newlines) == (uni.name, True)
    assert (r.encode_batch, r.tokenize_batch, r.stem_token) == (uni.encode_batch, uni.tokenize_batch, uni.stem_token)
    plain = routes(OnlyTokenize())
    assert (plain.name, plain.tokens_never_span_newlines, plain.encode_batch, plain.tokenize_batch,
            plain.stem_token) == ("OnlyTokenize", False, None, None, None)
    m = Marks()
    assert routes(m).tokenize_batch == m.tokenize_batch and routes(m).encode_batch is None
    assert routes(HalfMarks()).tokenize_batch is None
    assert routes(WhitespaceTokenizer()).name == "whitespace"


def test_custom_tokenizers_score_as_rouge_score_on_every_route():
    for tok in (OnlyTokenize(), HalfMarks(), WhitespaceTokenizer()):
        assert _ours(tok) == _oracle(tok), type(tok).__name__
    m = Marks()
    assert _ours(m, sentence_splitter="newline") == _oracle(OnlyTokenize()) and m.batches > 0  # the marked route ran
    # a bare callable, as evaluate passes one; and the family scorer on a custom tokenizer
    assert _ours(OnlyTokenize().tokenize) == _oracle(OnlyTokenize())
    pooled_one_ref = RougeScorer(TYPES, tokenizer=OnlyTokenize(), multi_ref="pooled").score_batch(REFS, CANDS)
    assert [{t: tuple(s) for t, s in d.items()} for d in pooled_one_ref] == _oracle(OnlyTokenize())
