"""Generated hard cases: ties, multi-word bit vectors, odd characters, long texts.

Every generator is deterministic (``random.Random(seed)``, hypothesis with
``derandomize=True``).  Expected values come from rouge-score 0.1.2, run in this
process, or -- where rouge-score is too slow (thousands of tokens) -- from our
pure-Python specification, which is itself held to rouge-score below and in
``test_parity_data.py``.  Comparisons are exact (``==``).
"""
from __future__ import annotations

import itertools
import random
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer, tokenize as rs_tokenize

from pipeline import RougeScorer
from pipeline.scoring import spec
from pipeline.text.tokenizers import DefaultTokenizer, WhitespaceTokenizer

TYPES = ["rouge1", "rouge2", "rouge3", "rougeL", "rougeLsum"]
STEM = pytest.mark.parametrize("use_stemmer", [False, True], ids=["nostem", "stem"])
HYPOTHESIS = settings(derandomize=True, database=None, deadline=None, max_examples=250,
                      suppress_health_check=[HealthCheck.too_slow])


def as_tuples(scores: dict) -> dict:
    return {k: tuple(v) for k, v in scores.items()}


def assert_same_as_rouge_score(refs, cands, types=TYPES, use_stemmer=False, **kw):
    """Our score_batch (one batch) against rouge-score's score, pair by pair."""
    ours = RougeScorer(types, use_stemmer=use_stemmer, **kw).score_batch(refs, cands)
    theirs_scorer = rouge_scorer.RougeScorer(types, use_stemmer=use_stemmer, **kw)
    bad = []
    for i, (ref, cand) in enumerate(zip(refs, cands, strict=True)):
        theirs = theirs_scorer.score(ref, cand)
        assert list(ours[i]) == list(types)
        for k in types:
            if tuple(ours[i][k]) != tuple(theirs[k]):
                bad.append((i, k, ref, cand, tuple(ours[i][k]), tuple(theirs[k])))
    assert not bad, f"{len(bad)} differences, first: " + "\n".join(
        f"#{i} {k} ref={ref!r:.200} cand={cand!r:.200} ours={o} rouge-score={t}" for i, k, ref, cand, o, t in bad[:5])


def spec_scores(types, ref, cand, use_stemmer=False):
    tok = DefaultTokenizer(use_stemmer)
    return spec.score_tokens(types, tok.tokenize(ref), tok.tokenize(cand),
                             [tok.tokenize(s) for s in ref.split("\n") if s],
                             [tok.tokenize(s) for s in cand.split("\n") if s])


# --- heavy LCS ties, sentences around 64 and 128 tokens ----------------------------------------

SENT_LENGTHS = [1, 2, 3, 7, 31, 63, 64, 65, 100, 127, 128, 129, 130, 191, 192, 193]


def tie_heavy_doc(rng: random.Random, vocab: list[str], max_sents: int = 3) -> str:
    sents = []
    for _ in range(rng.randint(1, max_sents)):
        n = rng.choice(SENT_LENGTHS)
        if rng.random() < 0.3:  # long runs of one token
            tok = rng.choice(vocab)
            sents.append(" ".join([tok] * n))
        else:
            sents.append(" ".join(rng.choice(vocab) for _ in range(n)))
    return "\n".join(sents)


def tie_heavy_pairs(seed: int, n_pairs: int):
    rng = random.Random(seed)
    refs, cands = [], []
    for _ in range(n_pairs):
        vocab = ["a", "b", "c", "d"][: rng.randint(1, 4)]
        refs.append(tie_heavy_doc(rng, vocab))
        cands.append(tie_heavy_doc(rng, vocab))
    return refs, cands


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tie_heavy_long_sentences(seed):
    refs, cands = tie_heavy_pairs(seed, 40)
    # the generator really exercises one, two and three 64-bit words per sentence
    lengths = {len(s.split()) for doc in refs + cands for s in doc.split("\n")}
    assert {64, 65, 128, 129, 192, 193} & lengths
    assert_same_as_rouge_score(refs, cands)


def test_tie_heavy_reversed_batch_order():
    refs, cands = tie_heavy_pairs(7, 30)
    scorer = RougeScorer(TYPES)
    forward = scorer.score_batch(refs, cands)
    backward = scorer.score_batch(refs[::-1], cands[::-1])[::-1]
    alone = [scorer.score(r, c) for r, c in zip(refs, cands)]
    assert forward == backward == alone
    assert_same_as_rouge_score(refs, cands)


def test_tie_heavy_spec_lcs_positions_equal_rouge_score():
    """The specification's backtracking picks the same LCS as rouge-score's ``lcs_ind``."""
    rng = random.Random(11)
    for _ in range(300):
        vocab = "ab"[: rng.randint(1, 2)] if rng.random() < 0.5 else "abc"
        r = [rng.choice(vocab) for _ in range(rng.randint(0, 12))]
        c = [rng.choice(vocab) for _ in range(rng.randint(0, 12))]
        assert spec.lcs_positions(r, c) == rouge_scorer.lcs_ind(r, c), (r, c)


def test_tie_heavy_small_lsum_exhaustive():
    """Every reference 'a'/'b' string up to length 4 against a few multi-sentence candidates."""
    refs, cands = [], []
    words = ["".join(p) for n in range(1, 5) for p in itertools.product("ab", repeat=n)]
    cand_docs = ["b a\na", "b a\nb", "a b\nb a", "b\na\nb a b", "a a\nb b\na b a"]
    for w in words:
        for ref_split in (" ".join(w), "\n".join(w), " ".join(w[:2]) + "\n" + " ".join(w[2:])):
            for c in cand_docs:
                refs.append(ref_split)
                cands.append(c)
    assert_same_as_rouge_score(refs, cands, ["rougeLsum", "rougeL", "rouge2"])


def test_lsum_runs_of_tokens_absent_from_the_reference_sentence():
    """rougeLsum's column pass keeps one step per run of candidate tokens absent from the reference
    sentence: runs of every length, at a sentence's start, middle and end, next to matches."""
    rng = random.Random(30)
    refs, cands = [], []
    for _ in range(400):
        ref_words, other = rng.sample("abcdefgh", 3), "xyzw"
        refs.append("\n".join(" ".join(rng.choice(ref_words) for _ in range(rng.randint(1, 9)))
                              for _ in range(rng.randint(1, 3))))
        cands.append("\n".join(" ".join(rng.choice(ref_words if rng.random() < 0.35 else other)
                                        for _ in range(rng.randint(1, 14)))
                               for _ in range(rng.randint(1, 4))))
    assert_same_as_rouge_score(refs, cands, ["rougeLsum"])


def test_lsum_reference_sentences_sharing_one_word():
    """A reference of at most 64 tokens has all its sentences scored in one word (a lane each, no
    carry across lanes): totals of 63, 64 and 65 tokens, one-token lanes, lanes that fill up."""
    rng = random.Random(31)
    refs, cands = [], []
    for total in (2, 5, 17, 63, 64, 64, 65, 100):
        for _ in range(40):
            cuts = sorted(rng.sample(range(1, total), min(rng.randint(1, 7), total - 1)))
            sizes = [b - a for a, b in zip([0] + cuts, cuts + [total])]
            refs.append("\n".join(" ".join(rng.choice("abc") for _ in range(k)) for k in sizes))
            cands.append("\n".join(" ".join(rng.choice("abcz") for _ in range(rng.randint(1, 30)))
                                   for _ in range(rng.randint(1, 5))))
    assert_same_as_rouge_score(refs, cands, ["rougeLsum"])


@STEM
def test_tie_heavy_multi_reference(use_stemmer):
    refs, cands = tie_heavy_pairs(3, 45)
    groups = [refs[i:i + 3] for i in range(0, 45, 3)]
    cands = cands[::3]
    scorer = RougeScorer(TYPES, use_stemmer=use_stemmer)
    res = scorer.score_arrays(groups, cands)
    ours = scorer.score_batch(groups, cands)
    theirs_scorer = rouge_scorer.RougeScorer(TYPES, use_stemmer=use_stemmer)
    for g, c, o, best in zip(groups, cands, ours, res.best_ref.tolist()):
        assert o == theirs_scorer.score_multi(g, c)
        per_ref = [theirs_scorer.score(r, c) for r in g]
        assert best == [int(np.argmax([s[k].fmeasure for s in per_ref])) for k in TYPES]


# --- hypothesis: texts from a vocabulary of awkward pieces ----------------------------------------

PIECES = [
    "a", "b", "the", "cat", "sat", "runs", "running", "ran", "jumped", "dying", "skies", "news", "says",
    "was", "lazy", "generously", "A", "THE", "Cat", "0", "42", "3.14", "x1",
    " ", "  ", "\t", "\n", "\n\n", "\r\n", "\r", " \n ", "\x00", ".", ",", "-", "'", "_", "<n>",
    "é", "garçon", "Straße", "İ", "İstanbul", "\u212a", "\u212am", "ｆｕｌｌ", "１２", "日本語", "我爱",
    "😀", "e\u0301", "\u00a0", "\u2028", "\x85", "\u3000", "Σ", "ﬁ", "\ud800",
]
texts = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


@STEM
@HYPOTHESIS
@given(ref=texts, cand=texts)
def test_hypothesis_pairs(use_stemmer, ref, cand):
    ours = RougeScorer(TYPES, use_stemmer=use_stemmer).score(ref, cand)
    theirs = rouge_scorer.RougeScorer(TYPES, use_stemmer=use_stemmer).score(ref, cand)
    assert as_tuples(ours) == as_tuples(theirs)


@HYPOTHESIS
@given(refs=st.lists(texts, min_size=1, max_size=4), cand=texts)
def test_hypothesis_multi_reference(refs, cand):
    ours = RougeScorer(TYPES).score_multi(refs, cand)
    theirs = rouge_scorer.RougeScorer(TYPES).score_multi(refs, cand)
    assert as_tuples(ours) == as_tuples(theirs)


@HYPOTHESIS
@given(text=texts)
def test_hypothesis_tokenizer_spec(text):
    assert DefaultTokenizer().tokenize(text) == rs_tokenize.tokenize(text, None)


# --- curated odd texts, every combination -------------------------------------------------------

ODD_TEXTS = [
    "", " ", "\n", "\n\n\n", "   \n \t \n", "\r\n", "\r\n\r\n", "...", "!?;:--", "'\"()[]{}", "\x00", "a\x00b",
    "the cat\x00sat", "\x00\x00the\x00\n\x00cat", "a b\r\n\r\nc d\r\n", "a b\nc d", "the cat sat on the mat",
    "The CAT. Sat!\nOn the mat?", " \n the \n\n cat \n ", "é è ê", "naïve café", "我爱北京天安门",
    "GPT-4 是一个模型", "ＡＢＣ １２３", "\u212a \u212aelvin", "İstanbul İ", "😀 the 😀cat😀", "e\u0301t\u00e9",
    "ΣΊΣΥΦΟΣ", "x" * 70, " ".join(["a"] * 70), "\n".join(["a b"] * 40),
]


@STEM
def test_odd_texts_all_combinations(use_stemmer):
    refs, cands = zip(*itertools.product(ODD_TEXTS, repeat=2))
    assert_same_as_rouge_score(list(refs), list(cands), use_stemmer=use_stemmer)


def test_nul_characters():
    # NUL is a plain separator for rouge-score; our batch encoder uses it internally
    # to separate documents, so it must not split or shift documents.
    refs = ["the\x00cat sat", "a\x00\x00b", "\x00", "x y", "\x00the\x00"]
    cands = ["the cat\x00sat", "a b", "a", "\x00x\x00y\x00", "the"]
    assert_same_as_rouge_score(refs, cands)
    scorer = RougeScorer(TYPES)
    assert scorer.score_batch(refs, cands)[3] == scorer.score("x y", "x y")
    assert scorer.score_arrays(refs, cands).cand_len.tolist() == [3, 2, 1, 2, 1]


def test_crlf_and_whitespace_only_lines():
    refs = ["a b\r\nc d", "a b\r\n\r\nc d\r\n", "a b\n   \n\t\nc d", "\r\n\r\n"]
    cands = ["c d\r\na b", "a b\nc d", "c d\na b", "a"]
    assert_same_as_rouge_score(refs, cands)


def _code_points():
    """Every code point of the BMP (surrogates excluded); above it, every code point
    whose lowercase differs from itself plus every 61st one (a deterministic sample:
    the astral planes hold no character that lowercases into ASCII, and scoring all
    of them takes too long on the shared machine)."""
    out = []
    for c in range(0x110000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        ch = chr(c)
        if c < 0x10000 or c % 61 == 0 or ch.lower() != ch:
            out.append(ch)
    return out


def test_every_code_point():
    """Each code point between two ASCII letters: the token counts and n-gram
    matches of the fast encoder equal rouge-score's tokenizer (str.lower() before
    the ASCII filter, so only U+0130 and U+212A survive as ASCII)."""
    chars = _code_points()
    docs = [" ".join(f"q{c}z" for c in chars[i:i + 8192]) for i in range(0, len(chars), 8192)]
    probe = "qz q z qkz qiz qi z qaz q0z"
    types = ["rouge1", "rouge2"]
    scorer = RougeScorer(types)
    ours = scorer.score_batch([probe] * len(docs), docs)
    lengths = scorer.score_arrays([probe] * len(docs), docs).cand_len.tolist()
    theirs = rouge_scorer.RougeScorer(types)
    tok = DefaultTokenizer()
    seen = {"qkz": 0, "qi": 0}
    for doc, o, n in zip(docs, ours, lengths):
        expected_tokens = rs_tokenize.tokenize(doc, None)
        assert n == len(expected_tokens)
        assert tok.tokenize(doc) == expected_tokens
        assert as_tuples(o) == as_tuples(theirs.score(probe, doc))
        for t in seen:
            seen[t] += expected_tokens.count(t)
    # 'k', 'K' and U+212A give 'qkz'; U+0130 gives 'qi' (+ U+0307, dropped) then 'z'
    assert seen == {"qkz": 3, "qi": 1}


# --- the stemmer ------------------------------------------------------------------------------

def test_stemmer_on_generated_words():
    """Suffix-heavy random words (Porter's corner cases: -ing, -ed, -ies, -sses, y->i,
    short stems) against rouge-score with use_stemmer=True."""
    rng = random.Random(5)
    stems = ["", "a", "s", "y", "ski", "dy", "ly", "sing", "hop", "agre", "generat", "happ", "fli", "ow"]
    suffixes = ["", "s", "es", "ies", "ss", "sses", "ed", "ing", "ly", "y", "ational", "ness", "ement",
                "izer", "ize", "ful", "eed", "bled", "ying"]
    words = sorted({rng.choice(stems) + rng.choice(suffixes) for _ in range(3000)} - {""})
    assert len(words) > 150
    refs, cands = [], []
    for _ in range(60):
        refs.append(" ".join(rng.choice(words) for _ in range(rng.randint(0, 40))))
        cands.append("\n".join(" ".join(rng.choice(words) for _ in range(rng.randint(0, 12)))
                               for _ in range(rng.randint(1, 3))))
    assert_same_as_rouge_score(refs, cands, use_stemmer=True)
    assert_same_as_rouge_score(refs, cands, use_stemmer=False)


# --- long documents ---------------------------------------------------------------------------

def _words(rng, n, vocab):
    return [rng.choice(vocab) for _ in range(n)]


def test_long_document_3000_tokens_against_spec():
    rng = random.Random(21)
    vocab = [f"w{i}" for i in range(40)]
    ref_words = _words(rng, 3000, vocab)
    cand_words = _words(rng, 700, vocab)
    ref = "\n".join(" ".join(ref_words[i:i + 25]) for i in range(0, 3000, 25))
    cand = "\n".join(" ".join(cand_words[i:i + 35]) for i in range(0, 700, 35))
    types = ["rouge1", "rouge2", "rouge3", "rougeL", "rougeLsum"]
    ours = RougeScorer(types).score(ref, cand)
    expected = spec_scores(types, ref, cand)
    assert as_tuples(ours) == expected
    assert ours["rouge1"].recall > 0.0 and ours["rougeL"].precision < 1.0


def test_single_2000_token_sentence_against_spec():
    rng = random.Random(22)
    ref = " ".join(_words(rng, 2000, ["a", "b", "c"]))
    cand = " ".join(_words(rng, 600, ["a", "b", "c"]))
    types = ["rougeL", "rougeLsum", "rouge2"]
    assert as_tuples(RougeScorer(types).score(ref, cand)) == spec_scores(types, ref, cand)


def test_long_sentence_against_many_short_ones_against_spec():
    # bit vectors run over reference sentences: one 900-token reference sentence
    # (15 words of 64 bits) against many short candidate sentences, and the reverse.
    rng = random.Random(23)
    long = " ".join(_words(rng, 900, ["a", "b", "c", "d"]))
    short = "\n".join(" ".join(_words(rng, rng.randint(1, 9), ["a", "b", "c", "d"])) for _ in range(80))
    types = ["rougeL", "rougeLsum"]
    scorer = RougeScorer(types)
    assert as_tuples(scorer.score(long, short)) == spec_scores(types, long, short)
    assert as_tuples(scorer.score(short, long)) == spec_scores(types, short, long)


def test_long_pair_against_rouge_score():
    # one long case is affordable with rouge-score itself (about 700 x 700 cells)
    rng = random.Random(24)
    vocab = ["the", "a", "cat", "dog", "sat", "ran"]
    ref = "\n".join(" ".join(_words(rng, 140, vocab)) for _ in range(5))
    cand = "\n".join(" ".join(_words(rng, 175, vocab)) for _ in range(4))
    assert_same_as_rouge_score([ref], [cand])


def test_many_distinct_tokens_and_a_huge_token():
    """Vocabulary growth inside one batch (about 180,000 new ids, more than the
    encoder's first allocation of 65,536) and a single token longer than its first
    byte arena (524,288 bytes)."""
    rng = random.Random(25)
    refs, cands = [], []
    for d in range(20):
        ids = [f"v{rng.getrandbits(64):x}d{d}" for _ in range(9_000)]
        refs.append(" ".join(ids[:4_500]))
        cands.append(" ".join(ids[3_000:7_500]))
    huge = "h" * 600_000
    refs += [huge, huge + " b", "x " + huge]
    cands += [huge, huge + "h b", huge + " x"]
    assert_same_as_rouge_score(refs, cands, ["rouge1", "rouge2", "rouge3"])
    assert RougeScorer(["rouge1"]).score_arrays(refs, cands).cand_len.tolist() == [4_500] * 20 + [1, 2, 2]


_MEMORY_PROBE = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
from rouge_score import rouge_scorer
from pipeline import RougeScorer
out = []
for n in (1_000, 200_000):
    ref = "a " * n
    expected = tuple(rouge_scorer.RougeScorer(["rouge1"]).score(ref, "a")["rouge1"])
    try:
        got = tuple(RougeScorer(["rouge1"]).score(ref, "a")["rouge1"])
    except MemoryError as exc:
        got = "MemoryError: %s" % exc
    out.append([n, expected, got])
print(json.dumps(out))
"""


def test_rouge1_on_a_long_reference_needs_no_quadratic_memory():
    """rouge-score scores rouge1 of a 200,000-token reference against a one-token
    candidate with a Counter, in well under 4 GB of address space; so must we: our kernel
    grows its LCS scratch (``peq``) only when it computes an LCS, by the pair's distinct
    tokens, never by the longest document for rouge1.  Run in a subprocess with RLIMIT_AS
    so the test can never exhaust the machine's memory."""
    import json
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", _MEMORY_PROBE], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (small_n, small_exp, small_got), (n, expected, got) = json.loads(proc.stdout)
    assert small_got == small_exp  # the limit itself does not break the scorer
    assert expected == [1.0, 1 / n, 2 * 1.0 * (1 / n) / (1.0 + 1 / n)]
    assert got == expected


# --- multi-reference ties ---------------------------------------------------------------------

def test_multi_reference_f_tie_first_wins():
    # candidate 'a b c d': ref 'a b' gives P 1/2, R 1; ref 'a b c d e f g h' gives P 1, R 1/2.
    # Both F are 2/3 (bit-identical), so the first reference's P and R are returned.
    short, long = "a b", "a b c d e f g h"
    cand = "a b c d"
    scorer = RougeScorer(["rouge1", "rougeL", "rougeLsum"])
    theirs = rouge_scorer.RougeScorer(["rouge1", "rougeL", "rougeLsum"])
    for refs, p, r in [([short, long], 0.5, 1.0), ([long, short], 1.0, 0.5)]:
        got = scorer.score_multi(refs, cand)
        assert got == theirs.score_multi(refs, cand)
        for k in ("rouge1", "rougeL", "rougeLsum"):
            assert (got[k].precision, got[k].recall) == (p, r)
        assert scorer.score_arrays([refs], [cand]).best_ref.tolist() == [[0, 0, 0]]


def test_multi_reference_all_zero_and_duplicates():
    scorer = RougeScorer(TYPES)
    res = scorer.score_arrays([["x y", "z", ""], ["the cat", "the cat", "cat the"], ["", "a b c"]],
                              ["a b", "the cat", "a b c"])
    # all F == 0: the first reference is kept; duplicates: the first copy
    assert res.best_ref.tolist() == [[0] * 5, [0] * 5, [1] * 5]
    assert res.scores[0].tolist() == [[0.0, 0.0, 0.0]] * 5
    assert res.n_refs.tolist() == [3, 3, 2]


def test_multi_reference_later_reference_wins_per_type():
    refs = ["mat the on sat cat the", "the cat sat on a rug", "the cat sat on the mat today"]
    cand = "the cat sat on the mat"
    scorer = RougeScorer(TYPES)
    res = scorer.score_arrays([refs], [cand])
    theirs = rouge_scorer.RougeScorer(TYPES)
    assert scorer.score_multi(refs, cand) == theirs.score_multi(refs, cand)
    per_ref = [theirs.score(r, cand) for r in refs]
    assert res.best_ref.tolist() == [[int(np.argmax([s[k].fmeasure for s in per_ref])) for k in TYPES]]
    assert res.best_ref[0, 0] == 0 and res.best_ref[0, 1] == 2


# --- custom tokenizers ---------------------------------------------------------------------------

class CharTokenizer:
    """Character level, keeps everything but whitespace (CJK works)."""

    def tokenize(self, text):
        return [c for c in text if not c.isspace()]


class WordTokenizer:
    def tokenize(self, text):
        return re.findall(r"\w+", text.lower())


class SpaceSplitTokenizer:
    """``str.split(" ")``: keeps empty-string tokens, which rouge-score does not filter."""

    def tokenize(self, text):
        return text.split(" ")


class CallableAsObject:
    def __init__(self, fn):
        self.fn = fn

    def tokenize(self, text):
        return self.fn(text)


TOKENIZER_TEXTS = [
    ("我爱北京天安门", "我爱北京"),
    ("Le garçon a mangé\nune pomme", "le garçon a mangé une pomme"),
    ("the cats were running\nthe dogs jumped", "the cat was run\nthe dog jump"),
    ("a  b   c", "a b  c"),
    ("İstanbul \u212a ﬁ", "istanbul k fi"),
    ("", "x"),
    ("\n\n", "\n"),
    ("b a\na", "a b"),
]


@pytest.mark.parametrize("tokenizer", [CharTokenizer(), WordTokenizer(), SpaceSplitTokenizer(),
                                       WhitespaceTokenizer()], ids=lambda t: type(t).__name__)
@STEM
def test_custom_tokenizer_object(tokenizer, use_stemmer):
    # rouge-score ignores use_stemmer when a tokenizer is given; so must we.
    refs, cands = zip(*TOKENIZER_TEXTS)
    assert_same_as_rouge_score(list(refs), list(cands), use_stemmer=use_stemmer, tokenizer=tokenizer)


def test_bare_callable_tokenizer():
    def fn(text):
        return re.findall(r"\w", text)

    refs, cands = zip(*TOKENIZER_TEXTS)
    ours = RougeScorer(TYPES, tokenizer=fn).score_batch(list(refs), list(cands))
    # rouge-score needs a .tokenize method: the same function wrapped in an object
    theirs = rouge_scorer.RougeScorer(TYPES, tokenizer=CallableAsObject(fn))
    for o, r, c in zip(ours, refs, cands):
        assert as_tuples(o) == as_tuples(theirs.score(r, c))
    # HF evaluate style: str.split as the tokenizer
    assert RougeScorer(["rouge1"], tokenizer=str.split).score("A b", "a b")["rouge1"] == (0.5, 0.5, 0.5)


def test_tokenizer_makes_use_stemmer_a_no_op():
    ref, cand = "the dogs jumped", "the dog jump"
    stemmed = RougeScorer(["rouge1"], use_stemmer=True).score(ref, cand)["rouge1"]
    assert tuple(stemmed) == (1.0, 1.0, 1.0)
    with_tok = RougeScorer(["rouge1"], use_stemmer=True, tokenizer=WhitespaceTokenizer()).score(ref, cand)["rouge1"]
    assert tuple(with_tok) == (1 / 3, 1 / 3, 2 * (1 / 3) * (1 / 3) / (1 / 3 + 1 / 3))
    assert with_tok == rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True,
                                                tokenizer=WhitespaceTokenizer()).score(ref, cand)["rouge1"]


def test_whitespace_tokenizer_keeps_punctuation_and_case_folds():
    assert WhitespaceTokenizer().tokenize("The cat, THE cat.\n日本") == ["the", "cat,", "the", "cat.", "日本"]
    got = RougeScorer(["rouge1", "rougeLsum"], tokenizer=WhitespaceTokenizer()).score("the cat.\n日本", "The cat 日本")
    assert tuple(got["rouge1"]) == (2 / 3, 2 / 3, 2 * (2 / 3) * (2 / 3) / (2 / 3 + 2 / 3))


@pytest.mark.parametrize("vocab_size", [2, 8, 120, 128, 129, 400])
def test_rouge2_as_longest_ngram_around_the_direct_count_limit(vocab_size):
    """With rouge2 the longest n-gram, pairs with at most 128 distinct tokens count bigrams in
    a direct 128 x 128 array, others through the hash table: both against rouge-score, with
    repeated bigrams (clipping) on both sides and pairs right at the limit."""
    rng = random.Random(vocab_size)
    vocab = [f"t{i}" for i in range(vocab_size)]
    refs, cands = [], []
    for _ in range(40):
        refs.append(" ".join(_words(rng, rng.randint(0, 300), vocab)))
        cands.append(" ".join(_words(rng, rng.randint(0, 300), vocab)))
    assert_same_as_rouge_score(refs, cands, ["rouge1", "rouge2"])
    assert_same_as_rouge_score(refs, cands, ["rouge2", "rougeLsum"])
