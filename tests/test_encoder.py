"""The encoder's shortcuts give the same numbers as the plain paths."""
import json

import numpy as np

from pipeline import RougeScorer
from pipeline.text.tokenizers import WhitespaceTokenizer
from pipeline.text.unicode import UnicodeTokenizer

TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]


class _Plain:
    """The same tokenizer without ``tokens_never_span_newlines``: every text tokenized whole and per line."""

    def __init__(self, inner):
        self.tokenize = inner.tokenize


def test_line_composition_matches_whole_text_tokenization(shared_data):
    rows = [json.loads(line) for line in (shared_data / "multi_summeval" / "multi_summeval.jsonl").open()]
    by_lang = {}
    for r in rows:
        by_lang.setdefault(r["language"], []).append(r)
    for lang, rs in sorted(by_lang.items()):
        rs = rs[:40]
        refs = [r["references"] for r in rs]
        cands = [r["candidate"] for r in rs]
        for tok in (UnicodeTokenizer(language=lang), WhitespaceTokenizer()):
            fast = RougeScorer(TYPES, tokenizer=tok).score_arrays(refs, cands)
            plain = RougeScorer(TYPES, tokenizer=_Plain(tok)).score_arrays(refs, cands)
            np.testing.assert_array_equal(fast.scores, plain.scores, err_msg=lang)
            assert fast.cand_len.tolist() == plain.cand_len.tolist()
