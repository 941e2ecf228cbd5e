"""The test vectors of ``shared/reference/rouge-score-semantics.md`` section 7.

Every expected number below is a literal copied from that document, which printed
them with ``repr`` from rouge-score 0.1.2 itself (not from our code).  They are
compared with ``==``: the project promises rouge-score's numbers bit for bit.
"""
from __future__ import annotations

import pytest

from pipeline import RougeScorer
from pipeline.scoring import cold
from pipeline.scoring.types import parse_rouge_types
from pipeline.text.tokenizers import DefaultTokenizer

T4 = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
ZERO = (0.0, 0.0, 0.0)


def run(target, prediction, types=T4, **kw):
    """The document's ``run`` helper: {type: (P, R, F)} via our scorer's rouge-score API."""
    return {k: tuple(s) for k, s in RougeScorer(types, **kw).score(target, prediction).items()}


def run_batch(target, prediction, types=T4, **kw):
    """The same numbers through the columnar batch path (padded with another pair,
    so that the vector is not alone in its batch)."""
    res = RougeScorer(types, **kw).score_batch(["x y z", target, "p q"], ["x z", prediction, "q"])
    return {k: tuple(s) for k, s in res[1].items()}


def run_cold(target, prediction, types=T4, use_stemmer=False):
    """The same numbers from the pure-Python tier that scores a fresh process's first small
    batches (:mod:`pipeline.scoring.cold`), called directly."""
    out = cold.try_score(parse_rouge_types(types), use_stemmer, [target], [prediction])
    assert out is not None, "the pair was sent to the compiled path"
    return {k: tuple(s) for k, s in out[0].items()}


def _cold_on(monkeypatch):
    """The cold tier on with no budget, although this test process has loaded numba."""
    monkeypatch.setenv("ROUGE_PIPELINE_COLD_START", "1")
    monkeypatch.setattr(cold, "_left", 1 << 62)
    monkeypatch.setattr(cold, "_off", False)  # an in-process warm-up (another test's) turns the tier off
    monkeypatch.setattr(cold, "_numba_loaded", lambda: False)


@pytest.fixture(params=["score", "score_batch", "cold"])
def runner(request, monkeypatch):
    if request.param == "cold":
        _cold_on(monkeypatch)
        return run_cold
    return run if request.param == "score" else run_batch


# --- (a)/(b): rouge-N and rougeL ---------------------------------------------------

def test_a(runner):
    got = runner("the cat sat on the mat", "the cat is sitting on the mat", ["rouge1", "rouge2", "rougeL"])
    assert got == {
        "rouge1": (0.7142857142857143, 0.8333333333333334, 0.7692307692307692),
        "rouge2": (0.5, 0.6, 0.5454545454545454),
        "rougeL": (0.7142857142857143, 0.8333333333333334, 0.7692307692307692),
    }


def test_a_with_stemmer_is_unchanged(runner):
    # Section 7 notes: "Stemming does not change the result" for (a).
    got = runner("the cat sat on the mat", "the cat is sitting on the mat", ["rouge1", "rouge2", "rougeL"],
                 use_stemmer=True)
    assert got["rouge1"] == (0.7142857142857143, 0.8333333333333334, 0.7692307692307692)
    assert got["rouge2"] == (0.5, 0.6, 0.5454545454545454)


R_B = "the fast fox jumped over the lazy dog near the river"


def test_b1(runner):
    got = runner(R_B, "the fox jumped over the dog", ["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    assert got["rouge1"] == (1.0, 0.5454545454545454, 0.7058823529411764)
    # "(b1) on other types: rouge2 P=0.6, R=0.3, F=0.4; rougeL P=1.0, R=0.5454545454545454, F=0.7058823529411764"
    assert got["rouge2"] == (0.6, 0.3, 0.4)
    assert got["rougeL"] == (1.0, 0.5454545454545454, 0.7058823529411764)


def test_b2(runner):
    got = runner(R_B, "the the the the the fox jumped over the dog the the the", ["rouge1"], use_stemmer=True)
    assert got == {"rouge1": (0.5384615384615384, 0.6363636363636364, 0.5833333333333334)}


def test_b_reference_stems():
    # "(b) with the stemmer the reference tokenizes to [...]"
    assert DefaultTokenizer(use_stemmer=True).tokenize(R_B) == [
        "the", "fast", "fox", "jump", "over", "the", "lazi", "dog", "near", "the", "river"]


def test_hf_evaluate_example_unstemmed(runner):
    # Section 6, HF evaluate with use_aggregator=False (rouge-score underneath, no stemmer):
    # rouge1 F = [0.7692307692307692, 0.7058823529411764, 0.0]
    assert runner("the cat sat on the mat", "the cat is sitting on the mat", ["rouge1"])["rouge1"][2] == 0.7692307692307692
    assert runner(R_B, "the fox jumped over the dog", ["rouge1"])["rouge1"][2] == 0.7058823529411764
    assert runner("我爱北京天安门", "我爱北京天安门", ["rouge1", "rougeL"]) == {"rouge1": ZERO, "rougeL": ZERO}


# --- (c): rougeLsum ------------------------------------------------------------------

def test_c1_newline_is_a_sentence_boundary_only_for_lsum(runner):
    got = runner("the cat sat on the mat.\nthe dog ate my homework.",
                 "the dog ate my homework.\nthe cat sat on the mat.", ["rougeL", "rougeLsum"])
    assert got == {
        "rougeL": (0.5454545454545454, 0.5454545454545454, 0.5454545454545454),
        "rougeLsum": (1.0, 1.0, 1.0),
    }


def test_c2_rouge_paper_union_lcs(runner):
    assert runner("w1 w2 w3 w4 w5", "w1 w2 w6 w7 w8\nw1 w3 w8 w9 w5", ["rougeLsum"]) == {
        "rougeLsum": (0.4, 0.8, 0.5333333333333333)}


def test_c3_hit_clipping(runner):
    assert runner("the cat\nthe cat", "the cat", ["rougeLsum"]) == {"rougeLsum": (1.0, 0.5, 0.6666666666666666)}


def test_c4_lcs_tie_break(runner):
    assert runner("a b", "b a\na", ["rougeLsum"]) == {"rougeLsum": (0.3333333333333333, 0.5, 0.4)}


def test_c5_lcs_tie_break(runner):
    assert runner("a b", "b a\nb", ["rougeLsum"]) == {"rougeLsum": (0.6666666666666666, 1.0, 0.8)}


# c4/c5 pin the up-versus-left tie; c6/c7 pin match-versus-up.  Expected values derived by hand
# from rouge-score's _lcs_table and _backtrack_norec (checked against rouge-score 0.1.2 itself):
# reference line r = [a, b, a].  LCS(r, [a]): column t[1..3][1] = 1, 1, 1; at (i=3, j=1) r[2] == "a"
# is a match, so rouge-score takes position 2 although going up keeps the length (t[2][1] == t[3][1])
# and would end on position 0.  LCS(r, [a, b]) = positions {0, 1}; LCS(r, [b, a]) = positions {1, 2}.

def test_c6_lcs_match_beats_up(runner):
    # union {2} | {0, 1} = a, b, a: 3 hits of 3 tokens (up on the tie: {0, 1}, 2 hits, 2/3)
    assert runner("a b a", "a\na b", ["rougeLsum"]) == {"rougeLsum": (1.0, 1.0, 1.0)}


def test_c7_lcs_match_beats_up(runner):
    # union {2} | {1, 2} = b, a: 2 hits of 3 tokens (up on the tie: {0, 1, 2}, 3 hits, 1.0)
    assert runner("a b a", "a\nb a", ["rougeLsum"]) == {
        "rougeLsum": (0.6666666666666666, 0.6666666666666666, 0.6666666666666666)}


def test_c1_without_newlines_lsum_equals_l(runner):
    # "Without newlines the whole text is one sentence, so rougeLsum == rougeL (vector c1)."
    got = runner("the cat sat on the mat. the dog ate my homework.",
                 "the dog ate my homework. the cat sat on the mat.", ["rougeL", "rougeLsum"])
    assert got["rougeL"] == got["rougeLsum"] == (0.5454545454545454, 0.5454545454545454, 0.5454545454545454)


def test_crlf_lines(runner):
    # '"a b\r\n\r\nc d\r\n" vs "a b\nc d", rougeLsum | 1.0'
    assert runner("a b\r\n\r\nc d\r\n", "a b\nc d", ["rougeLsum"]) == {"rougeLsum": (1.0, 1.0, 1.0)}


# --- (d): non-ASCII and the default tokenizer ------------------------------------------

TOKENIZATION = [
    # section 7 "d-tok" lines
    ("Le garçon a mangé une pomme à l'école.", ["le", "gar", "on", "a", "mang", "une", "pomme", "l", "cole"]),
    ("我爱北京天安门", []),
    ("GPT-4 是一个模型", ["gpt", "4"]),
    ("state-of-the-art models don't cost $3.14",
     ["state", "of", "the", "art", "models", "don", "t", "cost", "3", "14"]),
    # section 1 table and text
    ("Straße Ärger naïve café", ["stra", "e", "rger", "na", "ve", "caf"]),
    ("ＡＢＣ １２３", []),
    ("state-of-the-art", ["state", "of", "the", "art"]),
    ("don't", ["don", "t"]),
    ("$3.14", ["3", "14"]),
    ("1,000€", ["1", "000"]),
    ("under_score", ["under", "score"]),
    ("first sentence.<n>second sentence.", ["first", "sentence", "n", "second", "sentence"]),
    ("\u212a", ["k"]),  # KELVIN SIGN lowercases to ASCII 'k'
    ("İstanbul", ["i", "stanbul"]),  # U+0130 lowercases to 'i' + U+0307
]


@pytest.mark.parametrize("text,tokens", TOKENIZATION)
def test_default_tokenizer_spec(text, tokens):
    assert DefaultTokenizer().tokenize(text) == tokens


@pytest.mark.parametrize("text,tokens", TOKENIZATION)
def test_fast_encoder_tokens(text, tokens):
    """The compiled encoder sees the same tokens: same count, and the text scores
    1.0 on every type against the expected tokens written out in ASCII (rouge2/rougeL
    also check their order).  No tokens: every type is 0, as section 2 says."""
    types = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
    scorer = RougeScorer(types)
    res = scorer.score_arrays([" ".join(tokens)], [text])
    assert res.cand_len.tolist() == [len(tokens)]
    got = {k: tuple(s) for k, s in scorer.score(" ".join(tokens), text).items()}
    if not tokens:
        assert got == {k: ZERO for k in types}
    else:
        assert got["rouge1"] == (1.0, 1.0, 1.0)
        assert got["rougeL"] == (1.0, 1.0, 1.0)
        assert got["rougeLsum"] == (1.0, 1.0, 1.0)
        assert got["rouge2"] == ((1.0, 1.0, 1.0) if len(tokens) > 1 else ZERO)


def test_kelvin_sign_joins_the_following_letters():
    # str.lower() runs before the ASCII filter: "\u212am" is the token "km".
    assert DefaultTokenizer().tokenize("5 \u212am") == ["5", "km"]
    assert run("5 km", "5 \u212am", ["rouge1", "rouge2"]) == {"rouge1": (1.0, 1.0, 1.0), "rouge2": (1.0, 1.0, 1.0)}


def test_d1(runner):
    assert runner("Le garçon a mangé", "Le garcon a mange", ["rouge1"]) == {
        "rouge1": (0.5, 0.4, 0.4444444444444445)}


def test_d2_identical_cjk_scores_zero(runner):
    assert runner("我爱北京天安门", "我爱北京天安门") == {k: ZERO for k in T4}


# --- (e): empty inputs -----------------------------------------------------------------

@pytest.mark.parametrize("target,prediction", [("the cat sat", ""), ("", "the cat sat"), ("", "")],
                         ids=["e1", "e2", "e3"])
def test_e_empty(runner, target, prediction):
    assert runner(target, prediction) == {k: ZERO for k in T4}


# --- score_multi ------------------------------------------------------------------------

def test_score_multi_first_reference_wins(monkeypatch):
    # rouge-score's score_multi keeps np.argmax of the F values: the first maximum.  Against
    # "a b c d", "a x" (1 of 2 unigrams) and "a b y z w v u t" (2 of 8) tie on rouge1 and rougeL
    # F = 2 * overlap / (4 + len) = 1/3 with swapped P and R; "x y" scores 0.  rouge2 has no tie
    # (only the long reference shares a bigram).  Values from rouge-score 0.1.2's score_multi.
    tie_a, tie_b, zero = "a x", "a b y z w v u t", "x y"
    a = (0.25, 0.5, 0.3333333333333333)
    b = (0.5, 0.25, 0.3333333333333333)
    rouge2 = (0.3333333333333333, 0.14285714285714285, 0.2)
    types = ["rouge1", "rouge2", "rougeL"]
    for refs, first in (([tie_a, tie_b, zero], a), ([tie_b, tie_a, zero], b), ([zero, tie_a, tie_b], a)):
        want = {"rouge1": first, "rouge2": rouge2, "rougeL": first}
        got = {k: tuple(v) for k, v in RougeScorer(types).score_multi(refs, "a b c d").items()}
        assert got == want, refs
        with monkeypatch.context() as m:  # the pure-Python tier's own rule
            _cold_on(m)
            assert cold.try_score(parse_rouge_types(types), False, [refs], ["a b c d"]) == [want], refs


def test_m2_types_choose_references_independently():
    refs = ["mat the on sat cat the", "the cat sat on a rug"]
    scorer = RougeScorer(["rouge1", "rouge2"])
    got = scorer.score_multi(refs, "the cat sat on the mat")
    assert tuple(got["rouge1"]) == (1.0, 1.0, 1.0)  # from reference 1
    assert tuple(got["rouge2"]) == (0.6, 0.6, 0.6)  # from reference 2
    assert scorer.score_arrays([refs], ["the cat sat on the mat"]).best_ref.tolist() == [[0, 1]]
