"""The encoder's shortcuts give the same numbers as the plain paths."""
import json

import numpy as np
import pytest

from pipeline import RougeScorer
from pipeline.text.tokenizers import WhitespaceTokenizer
from pipeline.text.unicode import UnicodeTokenizer

TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]


class _Plain:
    """The same tokenizer without ``tokens_never_span_newlines``: every text tokenized whole and per line."""

    def __init__(self, inner):
        self.tokenize = inner.tokenize


def _same_as_rouge_score(enc, e, texts):
    """Each text's tokens, and its sentences' (its lines'), as rouge-score's tokenizer gives them."""
    from rouge_score import tokenize

    for d, t in enumerate(texts):
        assert [enc.vocab.token(x) for x in e.tokens[e.doc_tok[d]:e.doc_tok[d + 1]]] == \
            tokenize.tokenize(t, None), repr(t)
        sents = [s for s in (tokenize.tokenize(line, None) for line in t.split("\n")) if s]
        got = [[enc.vocab.token(x) for x in e.tokens[e.sent_tok[s]:e.sent_tok[s + 1]]]
               for s in range(e.doc_sent[d], e.doc_sent[d + 1])]
        assert got == sents, repr(t)


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


def test_str_and_arrow_utf8_scans_tokenize_as_rouge_score():
    """Both scans (a str's code points, and Arrow's UTF-8 bytes with U+0130 / U+212A as
    multi-byte sequences) on random texts over the characters that matter: letters of both
    cases, the two code points whose lowercase is ASCII, NUL, newlines, other non-ASCII."""
    import random

    import pyarrow as pa

    from pipeline.text.encoder import DefaultEncoder

    alphabet = ["a", "B", "1", "\u0130", "\u212a", " ", "\n", "\0", "\u00e9", "\u4e2d", "\u0307", "x",
                "\u00df", "\r", "Z9", "\u0130\u0130", "5\u212aK", "\U0001f600"]
    rng = random.Random(2)
    enc = DefaultEncoder(False)
    for _ in range(3000):
        texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(rng.randint(1, 4))]
        e = enc.encode(texts)
        _same_as_rouge_score(enc, e, texts)
        refs = [texts[1:] or ["x"], texts[::-1]]
        ea, n_refs = enc.encode_arrow(pa.array([texts[0]] * 2), pa.array(refs))
        eb = enc.encode([texts[0]] * 2 + refs[0] + refs[1])  # the block layout: candidates, then references
        assert n_refs.tolist() == [len(refs[0]), len(refs[1])]
        for name in ("tokens", "doc_tok", "sent_tok", "doc_sent"):
            assert np.array_equal(getattr(ea, name), getattr(eb, name)), (name, texts)


@pytest.mark.parametrize("seed", range(4))
def test_eight_byte_ascii_words_tokenize_as_rouge_score(seed):
    """The scan reads ASCII eight bytes at a time: long ASCII runs at every alignment, tokens
    and newlines across word edges, the few non-ASCII code points that break a run (and the
    two whose lowercase is ASCII), and documents of 7, 8, 9, 15, 16, 17 bytes."""
    import random

    import pyarrow as pa

    from pipeline.text.encoder import DefaultEncoder

    rng = random.Random(seed)
    ascii_chars = "abcxyzABCXYZ0189 ,.;'\"-_/@[`{~\n\t\x00\x7f"
    rare = ["\u0130", "\u212a", "\u00e9", "\U0001f600"]
    words = ["abcdefghi", "Zyxwvutsrqponmlkj", "a1B2c3D4e5F6g7H8i9J0"]  # tokens over one and two words
    enc = DefaultEncoder(False)

    def text():
        n = rng.choice((0, 1, 7, 8, 9, 15, 16, 17, rng.randint(0, 90)))
        r = rng.random
        chars = [rng.choice(ascii_chars) if r() > 0.05 else rng.choice(rare if r() < 0.6 else words)
                 for _ in range(n)]
        return "".join(chars)

    for _ in range(300):
        texts = [text() for _ in range(rng.randint(1, 12))]
        e = enc.encode(texts)
        _same_as_rouge_score(enc, e, texts)
        ea, _ = enc.encode_arrow(pa.array(texts), pa.array(texts))
        eb = enc.encode(texts + texts)
        for name in ("tokens", "doc_tok", "sent_tok", "doc_sent"):
            assert np.array_equal(getattr(ea, name), getattr(eb, name)), (name, texts)


def test_texts_scanned_in_groups_encode_as_in_one(monkeypatch):
    """A batch larger than a group is joined and scanned group by group (a text longer than a
    group alone), the parts' offsets shifted: the same ids, documents and sentences as one group,
    on both paths (``encode``: the str's own buffer; references some of which repeat: UTF-8)."""
    import random

    from pipeline.text.encoder import DefaultEncoder

    rng = random.Random(7)
    words = ["a", "Bc", "d\u00e9f", "\u0130x", "\u212a", "12", "\n", "\u2019", "\U0001f600"]
    texts = ["".join(rng.choice(words) + rng.choice(" \n,") for _ in range(rng.randint(0, 30))) for _ in range(400)]
    refs = texts[1::2]
    enc = DefaultEncoder(True)
    assert len(set(refs)) < len(refs)  # a reference repeats: encode_examples takes the cache's path
    one = enc.encode_examples(texts[0::2], refs, np.ones(len(refs), dtype=np.int64))
    one_str = enc.encode(texts)
    monkeypatch.setattr(DefaultEncoder, "GROUP_UNITS", 97)
    enc.cache.clear()
    grouped = enc.encode_examples(texts[0::2], refs, np.ones(len(refs), dtype=np.int64))
    grouped_str = enc.encode(texts)
    for a, b in ((one, grouped), (one_str, grouped_str)):
        for name in ("tokens", "doc_tok", "sent_tok", "doc_sent"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert len(one.doc_tok) == 401 and one.sent_tok.shape[0] > 401


@pytest.mark.parametrize("widest", ["", "\u00e9", "\u2019", "\U0001f600"])
def test_str_scan_reads_1_2_4_byte_buffers_as_rouge_score(widest):
    """Lists of str are scanned in the joined str's own 1-, 2- or 4-byte buffer, eight code units
    packed into one word while they are ASCII: code points whose low byte is ASCII (U+0141 is
    0x41 'A' in its low byte, U+0130 '0', U+212A '*', U+10041 'A' in its low 16 bits) must
    separate (or map to "i" / "k") at every lane of the word and every alignment, as
    rouge-score's tokenizer and the UTF-8 scan of the same texts (Arrow) say."""
    import random

    import pyarrow as pa

    from pipeline.text.encoder import DefaultEncoder

    rng = random.Random(len(widest) and ord(widest))
    width_max = 0x7F if not widest else (0xFF if ord(widest) < 0x100 else (0xFFFF if ord(widest) < 0x10000 else 0x10FFFF))
    aliasing = ["\u00c1", "\u0141", "\u0130", "\u212a", "\u2041", "\u0a30", "\ud841", "\U00010041", "\U00020130"]
    aliasing = [c for c in aliasing if ord(c) <= width_max]
    ascii_chars = "abcXYZ019 ,.\n\x00"
    enc = DefaultEncoder(False)
    for _ in range(300):
        texts = []
        for _ in range(rng.randint(1, 6)):
            n = rng.choice((0, 7, 8, 9, 16, 17, rng.randint(0, 40)))
            chars = [rng.choice(ascii_chars) for _ in range(n)]
            for _ in range(rng.randint(0, 2) if aliasing and n else 0):  # a code point in any lane
                chars[rng.randrange(n)] = rng.choice(aliasing)
            texts.append("".join(chars))
        texts[0] += widest  # the joined str has this buffer width
        e = enc.encode(texts)
        _same_as_rouge_score(enc, e, texts)
        utf8 = [t.encode("utf-8", "surrogatepass") for t in texts]
        if all(b"\xed" not in b for b in utf8):  # Arrow holds valid UTF-8 only (no lone surrogate)
            ea, _ = enc.encode_arrow(pa.array(texts), pa.array(texts))
            eb = enc.encode(texts + texts)
            for name in ("tokens", "doc_tok", "sent_tok", "doc_sent"):
                assert np.array_equal(getattr(ea, name), getattr(eb, name)), (name, texts)


@pytest.mark.parametrize("widest", ["\u00e9", "\u2019", "\U0001f600"])
def test_str_buffers_to_utf8_as_str_encode(widest):
    """Every str is scanned as UTF-8, converted in place from its 1-, 2- or 4-byte buffer
    (eight ASCII code units at a time): byte for byte ``str.encode("utf-8", "surrogatepass")``,
    with document offsets in bytes."""
    import random

    from pipeline.text.intrinsics import str_to_utf8

    rng = random.Random(ord(widest))
    width_max = 0xFF if ord(widest) < 0x100 else (0xFFFF if ord(widest) < 0x10000 else 0x10FFFF)
    rare = [widest, "\u00ff", "\x80", "\u07ff", "\u0800", "\ud800", "\udfff", "\uffff"]
    rare = [c for c in rare if ord(c) <= width_max]  # surrogates in 2- and 4-byte buffers too
    for _ in range(400):
        texts = ["".join(rng.choice("ab \n\x7f") if rng.random() > 0.05 else rng.choice(rare)
                         for _ in range(rng.choice((0, 7, 8, 9, 16, rng.randint(0, 40)))))
                 for _ in range(rng.randint(1, 6))]
        texts[0] += widest  # the joined str has this buffer width
        ends = np.concatenate([[0], np.cumsum([len(t) for t in texts])]).astype(np.int64)
        buf, offs = str_to_utf8("".join(texts), ends)
        want = [t.encode("utf-8", "surrogatepass") for t in texts]
        assert buf.tobytes() == b"".join(want)
        assert offs.tolist() == np.concatenate([[0], np.cumsum([len(w) for w in want])]).tolist()


_BOUNDS_PROBE = r"""
from pipeline.text.encoder import DefaultEncoder
import pyarrow as pa
enc = DefaultEncoder(True)
# the densest token layouts: one-unit documents, one-unit tokens, every unit a sentence
for texts in (["a"] * 5000, ["a b"] * 3000, ["a\nb"] * 3000, ["\u0130"] * 2000, ["5\u212a"] * 2000,
              ["a" * 9] * 100, ["x " * 5000], [""] * 10 + ["a"], ["a b c d e f g h i"] * 500,
              ["ab\ncd\nef\ngh\n"] * 500, ["abcdefgh"] * 500, ["a\u0130b c d e f g h"] * 300):
    e = enc.encode(texts)
    assert e.doc_tok.shape[0] == len(texts) + 1
    a, _ = enc.encode_arrow(pa.array(texts), pa.array(texts))
# U+0130 is one str unit and a whole token: a token a unit (fresh encoders: working arrays sized for these alone)
for texts in (["\u0130" * 2000], ["\u0130" * k + " " * 8 for k in range(1, 20)] * 20):
    assert DefaultEncoder(True).encode(texts).doc_tok.shape[0] == len(texts) + 1
# and the kernels on the shapes they branch on: 1-word and multi-word sentences, ties, multi-reference
import random
from pipeline import RougeScorer
rng = random.Random(3)
doc = lambda: "\n".join(" ".join(rng.choice("abcd") for _ in range(rng.choice((1, 5, 63, 64, 65, 130))))
                        for _ in range(rng.randint(0, 4)))
scorer = RougeScorer(["rouge1", "rouge2", "rouge3", "rougeL", "rougeLsum"], use_stemmer=True)
scorer.score_batch([[doc(), doc()] for _ in range(60)], [doc() for _ in range(60)])
# repeated references, tokenized once and gathered (lists and Arrow), empty texts among them
reps = [["a b\nc", ""], ["a b\nc"], [""], ["x " * 70]] * 40
scorer.score_batch(reps, ["a\nb"] * 160)
scorer.score_arrow(pa.array(reps), pa.array(["a\nb"] * 160))
# rouge2 as the longest n-gram: the direct bigram count array (few distinct tokens) and its fallback
words = lambda k: " ".join("w%d" % rng.randrange(k) for _ in range(rng.randint(0, 300)))
RougeScorer(["rouge2", "rougeL"]).score_batch([words(5) for _ in range(30)] + [words(400) for _ in range(30)],
                                              [words(5) for _ in range(30)] + [words(400) for _ in range(30)])
# each pair's local ids by the direct map (a batch's ids below 8x its tokens), then by the hash
# table (a small batch of late ids), single-line pairs among them (rougeLsum copied from rougeL)
many = " ".join("v%d" % i for i in range(6000))
four = RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"])
four.score_batch([many, many + "\nv1"], [many, "v7"])
four.score_batch(["v5999 v5998\nv1", "v5999 v5998 v5997"], ["v5998 v5999", "v5997 v5999"])
print("ok")
"""


def test_compiled_code_stays_in_bounds_on_dense_inputs(tmp_path):
    """numba does not check indices: the encoder's and kernels' working arrays are sized from
    the input.  Compiled here with bounds checking on, the densest layouts must not index past them."""
    from support.shared import run_bounds_checked

    run_bounds_checked(_BOUNDS_PROBE, tmp_path, timeout=600)


_ISOLATED_PORTER_PROBE = r"""
import json, sys
from pipeline.text.porter import porter_stem
words = json.loads(sys.stdin.read())
ours = [porter_stem(w) for w in words]
assert not any(m == "nltk" or m.startswith("nltk.") for m in sys.modules), "nltk left in sys.modules"
import nltk                                  # a later import is the normal, complete one
from nltk.stem.porter import PorterStemmer
assert hasattr(nltk, "word_tokenize") and hasattr(nltk, "__version__")
real = PorterStemmer()
print(json.dumps([ours, [w if len(w) <= 3 else real.stem(w) for w in words]]))
"""


def test_porter_loaded_without_the_nltk_package_stems_like_it(shared_data):
    """A fresh process loads nltk's porter.py without ``nltk/__init__`` (0.5 s of imports);
    its stems must equal the package's on every token of the English data, and ``import nltk``
    afterwards must be a normal import."""
    import subprocess
    import sys

    import regex

    from support.shared import ENGLISH_DATASETS, english_records

    words = set()
    for name in ENGLISH_DATASETS:
        for r in english_records(shared_data, name):
            for text in [r["candidate"], *r["references"]]:
                words.update(regex.findall(r"[a-z0-9]+", text.lower()))
    words = sorted(words)
    assert len(words) > 5000
    out = subprocess.run([sys.executable, "-c", _ISOLATED_PORTER_PROBE], input=json.dumps(words),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    ours, real = json.loads(out.stdout)
    assert ours == real


_FILLER = " ".join(f"filler{i}" for i in range(300))
_CANDS = ["The cats sat on the mat. They ran far away.", "Dogs were running. A dog ran.", "x"]
_REFS = [["The cat sat on a mat. Then it ran."], ["The dogs ran fast. Running dogs."], ["y z"]]
_SOURCES = ["The cats sat on the mat, and then they ran far away from it.", None, "x y z"]


def _related_encodings(case):
    """(run, prime, vocabularies) for numbers that need two encodings to share ids: a rougeLsum
    sentence stream beside the whole-text stream, diagnostics' sources beside the scored
    candidates, ROUGE-1.5.5's -b quirk stream beside its limited texts."""
    import pyarrow as pa

    from pipeline import job
    from pipeline.scoring import diagnostics
    from pipeline.scoring import engine as scorer_mod  # the encoders per process
    from pipeline.rouge155.fast import Rouge155Scorer
    from pipeline.rouge155.options import Rouge155Options

    def default_vocabs():
        return [e.vocab for e in scorer_mod._ENCODERS.values()]

    if case == "sentences":
        scorer = RougeScorer(["rouge1", "rougeLsum"], use_stemmer=True, sentence_splitter="sentencex")
        return (lambda: scorer.score_arrays(_REFS, _CANDS).scores.tolist(),
                lambda: scorer.encode([_FILLER]), default_vocabs)
    if case == "diagnostics":
        settings = job.ScoringSettings(("rouge1", "rougeL"), diagnostics=True)
        table = pa.table({"id": list("abc"), "system": ["s"] * 3, "candidate": _CANDS, "references": _REFS,
                          "source": _SOURCES})

        def run():
            res = job.scorer_for(settings).score_arrow(table.column("references"), table.column("candidate"))
            return {k: v.to_pylist() for k, v in diagnostics.for_table(table, res, settings, job.scorer_for).items()}
        return run, lambda: job.scorer_for(settings).encode([_FILLER]), default_vocabs
    scorer = Rouge155Scorer(Rouge155Options(length_limit_bytes=30, stem=True))
    return (lambda: scorer.score_arrays(_REFS, _CANDS).scores.tolist(),
            lambda: scorer.encoder.encode([_FILLER]), lambda: [scorer.encoder._enc.vocab])


@pytest.mark.parametrize("case", ["sentences", "diagnostics", "rouge155-b"])
def test_a_vocabulary_rebuilt_between_related_encodings_changes_no_number(case, monkeypatch):
    """The vocabulary is rebuilt at the start of an encoding once it holds over MAX_IDS ids.
    With the first of two related encodings taking it past the limit, the second starts a new
    generation of ids; the numbers must be those of a run without any rebuild."""
    from pipeline import job
    from pipeline.scoring import engine as scorer_mod  # the encoders per process
    from pipeline.text.vocabulary import Vocabulary

    monkeypatch.setattr(scorer_mod, "_ENCODERS", {})
    job.scorer_for.cache_clear()
    want = _related_encodings(case)[0]()

    monkeypatch.setattr(scorer_mod, "_ENCODERS", {})
    job.scorer_for.cache_clear()
    run, prime, vocabs = _related_encodings(case)
    prime()
    limit = max(v.n_ids for v in vocabs())         # the vocabulary holds just the limit...
    monkeypatch.setattr(Vocabulary, "MAX_IDS", limit)
    got = run()                                    # ...so the batch's first encoding passes it
    job.scorer_for.cache_clear()
    assert max(v.generation for v in vocabs()) >= 1   # a rebuild did happen mid-batch
    assert got == want


def test_after_the_warm_up_the_encoders_paths_compile_nothing_more():
    """The warm-up compiles every signature a list's or an Arrow column's references take (new,
    repeated, held; ASCII and not), so a new user's first calls after it compile nothing."""
    import pyarrow as pa
    from numba.core.registry import CPUDispatcher

    from pipeline.execution import warmup
    from pipeline.text import csr, intrinsics, scan, textcache, vocabulary
    from pipeline.text.encoder import DefaultEncoder

    def signatures():
        return {(m.__name__, k): len(v.signatures) for m in (csr, intrinsics, scan, textcache, vocabulary)
                for k, v in vars(m).items() if isinstance(v, CPUDispatcher)}

    warmup.warm_encoder()
    before = signatures()
    one = np.ones(2, dtype=np.int64)
    for stem in (False, True):
        enc = DefaultEncoder(stem)
        for refs in (["a cat sat", "a dog"], ["caf\u00e9 sat", "a d\u00f6g"], ["x y", "x y"], ["\u00e9 q", "\u00e9 q"]):
            for _ in range(3):  # new, seen once (kept), held
                enc.encode_examples(["the cat", "a dog"], [r.encode().decode() for r in refs], one)
                enc.encode_arrow(pa.array(["the cat", "a dog"]), pa.array(refs))
    grown = {k: (n, signatures()[k]) for k, n in before.items() if signatures()[k] != n}
    assert not grown


def test_a_lists_references_in_several_groups_are_read_only_bytes():
    """The UTF-8 bytes of a list's references are read-only whether converted in one group or
    several, as Arrow's are: the probe and cache kernels then have one signature (a writable
    buffer would compile them a second time in a user's first large call)."""
    from pipeline.text.csr import text_groups
    from pipeline.text.encoder import _utf8_groups

    texts = ["caf\u00e9 au lait " * 20, "plain words " * 30, "\u0130stanbul \u212a " * 10]
    for units in (1 << 22, 64):
        ends, groups = text_groups(texts, units)
        buf, offs = _utf8_groups(texts, ends, groups)
        assert (len(groups) > 1) == (units == 64)
        assert not buf.flags.writeable
        assert bytes(buf[offs[0]:offs[-1]]) == "".join(texts).encode()


def test_arrow_reference_lists_sliced_or_null():
    """An Arrow list column's references are read from its own offsets and values: a sliced column
    encodes as its rows do; a null list (even one whose slots hold values) is an example without
    a reference, a ValueError naming it, never other rows' references moved up."""
    import pyarrow as pa

    from pipeline.text.encoder import DefaultEncoder

    enc = DefaultEncoder(False)
    refs = pa.array([["a b", "c"], ["d"], ["e f g", "h"], ["i"]])
    cands = pa.array(["a", "b", "c", "d"])
    for a, n in ((0, 4), (1, 3), (1, 2), (3, 1)):
        got, n_refs = enc.encode_arrow(cands.slice(a, n), refs.slice(a, n))
        rows = refs.slice(a, n).to_pylist()
        assert n_refs.tolist() == [len(r) for r in rows]
        alone = enc.encode(cands.slice(a, n).to_pylist() + [t for r in rows for t in r])
        assert got.tokens.tolist() == alone.tokens.tolist() and got.doc_tok.tolist() == alone.doc_tok.tolist()
    backed = pa.ListArray.from_arrays(pa.array([0, 1, 3, 4], type=pa.int32()), pa.array(["a", "b", "c", "d"]),
                                      mask=pa.array([False, True, False]))
    for column in (pa.array([["x"], None, ["y"]]), backed):
        with pytest.raises(ValueError, match="^example 1 has no reference$"):
            enc.encode_arrow(pa.array(["p", "q", "r"]), column)


def test_encode_examples_refuses_counts_that_do_not_match_the_references():
    """A direct call whose counts disagree with its references is refused: the kernel would read past
    the batch (numba checks no bounds)."""
    from pipeline.text.encoder import DefaultEncoder

    enc = DefaultEncoder(False)
    with pytest.raises(ValueError, match="^the reference counts add up to 3, not 2 references$"):
        enc.encode_examples(["a", "b"], ["x", "y"], np.array([1, 2]))
    with pytest.raises(ValueError, match="^example 1 has no reference$"):  # a negative count is none
        enc.encode_examples(["a", "b"], ["x"], np.array([2, -1]))
    got = enc.encode_examples(["a", "b"], ["x", "y", "z"], np.array([1, 2]))
    assert got.doc_tok.shape[0] == 6


def test_a_call_of_few_short_references_skips_the_cache_with_the_same_numbers(monkeypatch):
    """score() one pair at a time (rouge-score's idiom) and small batches scan their few short
    references rather than pay the cache's lookups and bookkeeping; past either bound the cache is used."""
    from rouge_score import rouge_scorer

    from pipeline import RougeScorer
    from pipeline.scoring import engine
    from pipeline.text.encoder import DefaultEncoder

    monkeypatch.setattr(engine, "_ENCODERS", {})
    types = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
    ours, oracle = RougeScorer(types, use_stemmer=True), rouge_scorer.RougeScorer(types, use_stemmer=True)
    pairs = [("The cats ran home.\nThey slept.", "the cat runs home"), ("Caf\u00e9 \u0130stanbul \u212a", "cafe k"),
             ("", "nothing here"), ("running runs", "")]
    for ref, cand in pairs * 2:
        assert ours.score(ref, cand) == oracle.score(ref, cand)
    assert engine.default_encoder(True).cache.n_entries == 0
    enc = DefaultEncoder(False)
    enc.encode_examples(["x"] * 16, ["r %d" % i for i in range(16)], np.ones(16, dtype=np.int64))
    assert enc.cache.n_entries == 0
    enc.encode_examples(["x"] * 17, ["r %d" % i for i in range(17)], np.ones(17, dtype=np.int64))
    assert enc.cache.n_entries == 17
    long_ref = "word " * (DefaultEncoder.FEW_UNITS // 5 + 1)
    enc.encode_examples(["x"], [long_ref], np.ones(1, dtype=np.int64))
    assert enc.cache.n_entries == 18
