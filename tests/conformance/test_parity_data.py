"""Differential tests on every pair of the real English datasets in ``shared/data``.

For each pair, P, R and F of ``pipeline.RougeScorer`` must be *identical* (``==``)
to ``rouge_score.rouge_scorer.RougeScorer`` 0.1.2 for rouge1, rouge2, rouge3,
rougeL and rougeLsum, with and without the stemmer:

* single reference: every (candidate, reference) pair, our side through
  ``score_batch`` (one batch per dataset), rouge-score's through ``score``;
* multiple references: ``score_batch`` with a list of references per candidate
  against rouge-score's ``score_multi`` (and ``best_ref`` against rouge-score's
  argmax of F), for the datasets with more than one reference per pair.

Nothing is subsampled: rouge-score is run on every pair (newsroom's source
documents are not scored, only candidate vs references).  rouge-score's results
live only in memory for the session; no expected value is stored anywhere.

The pure-Python specification (``pipeline.scoring.spec``) is also held to the fast
path on a deterministic subset (every 5th pair) of each dataset.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest
from rouge_score import rouge_scorer

from support.shared import DATA, ENGLISH_DATASETS, english_records, load_records
from pipeline import RougeScorer
from pipeline.scoring import spec
from pipeline.text.tokenizers import DefaultTokenizer

TYPES = ["rouge1", "rouge2", "rouge3", "rougeL", "rougeLsum"]
MULTI_REF_DATASETS = ["rouge155_sample_sl2003", "duc2004_pyrouge_tests", "sacrerouge_fixtures"]
STEM = pytest.mark.parametrize("use_stemmer", [False, True], ids=["nostem", "stem"])


def _single_pairs(name: str) -> list[tuple[str, str, str]]:
    """(label, reference, candidate) for every reference of every English pair."""
    out = []
    for rec in english_records(DATA, name):
        for k, ref in enumerate(rec["references"]):
            out.append((f"{rec['id']}#ref{k}", ref, rec["candidate"]))
    return out


@lru_cache(maxsize=None)
def _rouge_score_single(name: str, use_stemmer: bool) -> tuple[dict, ...]:
    """rouge-score's own numbers, computed in this process (never stored)."""
    scorer = rouge_scorer.RougeScorer(TYPES, use_stemmer=use_stemmer)
    return tuple(scorer.score(ref, cand) for _, ref, cand in _single_pairs(name))


def _mismatches(labels, ours, theirs, types=TYPES):
    bad = []
    for label, o, t in zip(labels, ours, theirs, strict=True):
        assert list(o) == list(types)
        for k in types:
            if tuple(o[k]) != tuple(t[k]):
                bad.append(f"{label} {k}: ours {tuple(o[k])!r} rouge-score {tuple(t[k])!r}")
    return bad


def test_datasets_present(shared_data):
    counts = {name: len(english_records(shared_data, name)) for name in ENGLISH_DATASETS}
    # sizes documented in shared/data/README.md
    assert counts == {"newsroom": 420, "dialsummeval": 1300, "multi_summeval": 270,
                      "rouge155_sample_sl2003": 200, "duc2004_pyrouge_tests": 100,
                      "sacrerouge_fixtures": 22, "google_rouge_synthetic": 3}


@STEM
@pytest.mark.parametrize("name", ENGLISH_DATASETS)
def test_single_reference_identical(shared_data, name, use_stemmer):
    pairs = _single_pairs(name)
    assert pairs
    ours = RougeScorer(TYPES, use_stemmer=use_stemmer).score_batch(
        [ref for _, ref, _ in pairs], [cand for _, _, cand in pairs])
    theirs = _rouge_score_single(name, use_stemmer)
    bad = _mismatches([label for label, _, _ in pairs], ours, theirs)
    assert not bad, f"{len(bad)} differences, first ones:\n" + "\n".join(bad[:10])


@STEM
@pytest.mark.parametrize("name", MULTI_REF_DATASETS)
def test_multi_reference_identical(shared_data, name, use_stemmer):
    records = english_records(shared_data, name)
    assert any(len(r["references"]) > 1 for r in records)
    scorer = RougeScorer(TYPES, use_stemmer=use_stemmer)
    res = scorer.score_arrays([r["references"] for r in records], [r["candidate"] for r in records])
    ours = scorer.score_batch([r["references"] for r in records], [r["candidate"] for r in records])
    # rouge-score's score_multi runs unchanged; only its per-reference ``self.score``
    # calls are answered from rouge-score's own single-reference results computed
    # above in this process (the same calls, not recomputed, to halve the run time).
    single_results = {(ref, cand): s for (_, ref, cand), s in
                      zip(_single_pairs(name), _rouge_score_single(name, use_stemmer), strict=True)}
    theirs_scorer = rouge_scorer.RougeScorer(TYPES, use_stemmer=use_stemmer)
    theirs_scorer.score = lambda target, prediction: single_results[(target, prediction)]
    theirs = [theirs_scorer.score_multi(r["references"], r["candidate"]) for r in records]
    bad = _mismatches([r["id"] for r in records], ours, theirs)
    assert not bad, f"{len(bad)} differences, first ones:\n" + "\n".join(bad[:10])

    # best_ref: the index rouge-score's score_multi picks, np.argmax over the
    # per-reference F values (first maximum wins), from rouge-score's single scores.
    single = iter(_rouge_score_single(name, use_stemmer))
    expected_best = []
    for r in records:
        per_ref = [next(single) for _ in r["references"]]
        expected_best.append([int(np.argmax([s[k].fmeasure for s in per_ref])) for k in TYPES])
    assert res.best_ref.tolist() == expected_best
    assert res.n_refs.tolist() == [len(r["references"]) for r in records]


@pytest.mark.parametrize("use_stemmer", [False, True], ids=["nostem", "stem"])
def test_score_multi_api_on_real_pairs(shared_data, use_stemmer):
    """The one-example API (``score_multi``/``score``) on a few real multi-reference pairs."""
    ours = RougeScorer(TYPES, use_stemmer=use_stemmer)
    theirs = rouge_scorer.RougeScorer(TYPES, use_stemmer=use_stemmer)
    for name in MULTI_REF_DATASETS:
        for rec in english_records(shared_data, name)[::25]:
            assert ours.score_multi(rec["references"], rec["candidate"]) == \
                theirs.score_multi(rec["references"], rec["candidate"])
            assert ours.score(rec["references"][-1], rec["candidate"]) == \
                theirs.score(rec["references"][-1], rec["candidate"])


@pytest.mark.parametrize("use_stemmer", [False], ids=["nostem"])
def test_non_english_multi_summeval(shared_data, use_stemmer):
    """Not required for parity claims on English, but cheap and full of accents,
    Cyrillic and CJK: the other 7 languages of multi_summeval, default tokenizer."""
    records = [r for r in load_records(shared_data, "multi_summeval") if r["language"] != "en"]
    assert len(records) == 7 * 270
    refs = [r["references"][0] for r in records]
    cands = [r["candidate"] for r in records]
    ours = RougeScorer(TYPES, use_stemmer=use_stemmer).score_batch(refs, cands)
    theirs_scorer = rouge_scorer.RougeScorer(TYPES, use_stemmer=use_stemmer)
    theirs = [theirs_scorer.score(ref, cand) for ref, cand in zip(refs, cands)]
    bad = _mismatches([r["id"] for r in records], ours, theirs)
    assert not bad, f"{len(bad)} differences, first ones:\n" + "\n".join(bad[:10])


# --- the pure-Python specification against the fast path -----------------------------------

def _spec_scores(tokenizer, refs, cand):
    def toks(text):
        return tokenizer.tokenize(text), [tokenizer.tokenize(s) for s in text.split("\n") if s]

    c, c_sents = toks(cand)
    per_ref = []
    for ref in refs:
        r, r_sents = toks(ref)
        per_ref.append(spec.score_tokens(TYPES, r, c, r_sents, c_sents))
    return spec.best_by_fmeasure(per_ref)


@STEM
@pytest.mark.parametrize("name", ENGLISH_DATASETS)
def test_spec_matches_fast_path(shared_data, name, use_stemmer):
    records = english_records(shared_data, name)[::5]
    tokenizer = DefaultTokenizer(use_stemmer=use_stemmer)
    ours = RougeScorer(TYPES, use_stemmer=use_stemmer).score_batch(
        [r["references"] for r in records], [r["candidate"] for r in records])
    expected = [_spec_scores(tokenizer, r["references"], r["candidate"]) for r in records]
    bad = _mismatches([r["id"] for r in records], ours, expected)
    assert not bad, f"{len(bad)} differences, first ones:\n" + "\n".join(bad[:10])
