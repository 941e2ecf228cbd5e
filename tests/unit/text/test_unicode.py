"""Issue #8: the ``unicode`` profile (NFKC, casefold, Unicode words, CJK characters,
Snowball stemmers), its wiring into config/signature/job, and that the default profile's
numbers do not move.

Expected token lists below were written by hand from the rules documented in
``pipeline/text/unicode.py`` (and README "Languages other than English").
"""
from __future__ import annotations

import pickle
import re
from pathlib import Path

import numpy as np
import pytest

from pipeline import RougeScorer
from pipeline import profiles
from pipeline.text.tokenizers import DefaultTokenizer
from pipeline.text.unicode import UnicodeTokenizer

from support.shared import DATA, DATA_REASON, needs_data
LANGUAGES = ("en", "de", "es", "fr", "id", "ru", "tr", "zh")
TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]


def _records():
    import json

    with (DATA / "multi_summeval" / "multi_summeval.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="module")
def by_language():
    if not DATA.is_dir():
        pytest.skip(DATA_REASON)
    out: dict[str, list[dict]] = {}
    for r in _records():
        out.setdefault(r["language"], []).append(r)
    assert set(out) == set(LANGUAGES)
    return out


# --------------------------------------------------------------------------- hand-checked tokens
HAND = [
    # (language, text, expected tokens)
    ("en", "The U.S. economy grew 3.5% in 2024 \u2014 state-of-the-art!",
     ["the", "u", "s", "economy", "grew", "3", "5", "in", "2024", "state", "of", "the", "art"]),
    ("en", "Don't  panic: COVID19 cases_fell",
     ["don", "t", "panic", "covid19", "cases", "fell"]),
    ("de", "Die Stra\u00dfe in K\u00f6ln hei\u00dft \u201eHohe Stra\u00dfe\u201c.",
     ["die", "strasse", "in", "k\u00f6ln", "heisst", "hohe", "strasse"]),
    ("de", "K\u006f\u0308ln \u00dcBER Gr\u00f6\u00dfe",  # decomposed o + U+0308 is composed by NFKC
     ["k\u00f6ln", "\u00fcber", "gr\u00f6sse"]),
    ("es", "\u00bfD\u00f3nde est\u00e1 el ni\u00f1o? \u00a1Aqu\u00ed!",
     ["d\u00f3nde", "est\u00e1", "el", "ni\u00f1o", "aqu\u00ed"]),
    ("fr", "L\u2019homme d'\u00c9tat a dit : \u00ab C'est d\u00e9j\u00e0 fini \u00bb.",
     ["l", "homme", "d", "\u00e9tat", "a", "dit", "c", "est", "d\u00e9j\u00e0", "fini"]),
    ("fr", "\ufb01n de l'\u0153uvre",  # U+FB01 LATIN SMALL LIGATURE FI -> "fi" (NFKC); \u0153 is a letter
     ["fin", "de", "l", "\u0153uvre"]),
    ("id", "Presiden Joko Widodo meresmikan jalan tol sepanjang 12,5 km.",
     ["presiden", "joko", "widodo", "meresmikan", "jalan", "tol", "sepanjang", "12", "5", "km"]),
    ("ru", "\u041f\u0440\u0438\u0432\u0435\u0442, \u041c\u0418\u0420! \u0401\u043b\u043a\u0430 \u0441\u0442\u043e\u0438\u0442 100 \u0440\u0443\u0431\u043b\u0435\u0439.",
     ["\u043f\u0440\u0438\u0432\u0435\u0442", "\u043c\u0438\u0440", "\u0451\u043b\u043a\u0430",
      "\u0441\u0442\u043e\u0438\u0442", "100", "\u0440\u0443\u0431\u043b\u0435\u0439"]),
    ("tr", "\u0130stanbul'da IRMAK \u0131l\u0131k; i\u0307spanya",  # tr casing: \u0130->i, I->\u0131, i+U+0307->i
     ["istanbul", "da", "\u0131rmak", "\u0131l\u0131k", "ispanya"]),
    ("zh", "\u96c5\u864e\u62df\u5265\u79bb\u963f\u91cc\u5df4\u5df415%\u80a1\u6743\u3002",
     ["\u96c5", "\u864e", "\u62df", "\u5265", "\u79bb", "\u963f", "\u91cc", "\u5df4", "\u5df4", "15",
      "\u80a1", "\u6743"]),
    ("zh", "\uff21\uff29\u6280\u672f\uff12\uff10\uff12\uff14\u5e74\uff01",  # full-width forms -> ASCII (NFKC)
     ["ai", "\u6280", "\u672f", "2024", "\u5e74"]),
    ("ja", "\u6771\u4eac\u30b9\u30ab\u30a4\u30c4\u30ea\u30fc\u306f2012\u5e74\u306b\u958b\u696d\u3002",
     ["\u6771", "\u4eac", "\u30b9", "\u30ab", "\u30a4", "\u30c4", "\u30ea", "\u30fc", "\u306f", "2012",
      "\u5e74", "\u306b", "\u958b", "\u696d"]),
    ("ja", "\uff76\uff80\uff76\uff85\u3068\u3072\u3089\u304c\u306a\u3001\u3005",  # half-width katakana -> full
     ["\u30ab", "\u30bf", "\u30ab", "\u30ca", "\u3068", "\u3072", "\u3089", "\u304c", "\u306a", "\u3005"]),
    # Thai, characters mode: grapheme clusters (a letter with its combining vowel/tone marks)
    ("th", "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a",  # sawasdee khrap
     ["\u0e2a", "\u0e27\u0e31", "\u0e2a", "\u0e14\u0e35", "\u0e04", "\u0e23\u0e31", "\u0e1a"]),
    # symbols, emoji and other scripts' digits
    ("en", "caf\u00e9 \U0001f600 \u0663\u0664 x\u00b2 \u2460",
     ["caf\u00e9", "\u0663\u0664", "x2", "1"]),
]


@pytest.mark.parametrize("language,text,expected", HAND, ids=[f"{h[0]}-{i}" for i, h in enumerate(HAND)])
def test_hand_checked_tokens(language, text, expected):
    assert UnicodeTokenizer(language=language).tokenize(text) == expected


def test_segmenters_chinese_and_thai():
    pytest.importorskip("jieba")
    pytest.importorskip("pythainlp")
    zh = UnicodeTokenizer(language="zh", cjk="segmenter")
    # jieba's own README example; punctuation dropped, Latin words untouched
    assert zh.tokenize("\u6211\u7231\u5317\u4eac\u5929\u5b89\u95e8\u3002OK") == [
        "\u6211", "\u7231", "\u5317\u4eac", "\u5929\u5b89\u95e8", "ok"]
    th = UnicodeTokenizer(language="th", cjk="segmenter")
    # "cat eats fish": three dictionary words
    assert th.tokenize("\u0e41\u0e21\u0e27\u0e01\u0e34\u0e19\u0e1b\u0e25\u0e32") == [
        "\u0e41\u0e21\u0e27", "\u0e01\u0e34\u0e19", "\u0e1b\u0e25\u0e32"]
    # Japanese keeps characters even in segmenter mode (no model-free segmenter)
    ja = UnicodeTokenizer(language="ja", cjk="segmenter")
    assert ja.tokenize("\u6771\u4eac\u90fd") == ["\u6771", "\u4eac", "\u90fd"]
    assert "cjkseg(jieba" in zh.name and "pythainlp" in zh.name


def test_ascii_text_tokenizes_like_rouge_score(by_language):
    """On ASCII (English) text the unicode profile's tokens are rouge-score's (unstemmed)."""
    uni, default = UnicodeTokenizer(), DefaultTokenizer()
    n = 0
    for r in by_language["en"]:
        for text in (r["candidate"], *r["references"]):
            if text.isascii():
                assert uni.tokenize(text) == default.tokenize(text)
                n += 1
    assert n > 400


def test_snowball_stemmers():
    # Stems from the Snowball algorithms' published vocabularies / descriptions.
    assert UnicodeTokenizer("en", stem=True).tokenize("running generously") == ["run", "generous"]
    assert UnicodeTokenizer("de", stem=True).tokenize("H\u00e4user") == ["haus"]
    assert UnicodeTokenizer("ru", stem=True).tokenize(
        "\u043a\u0440\u0430\u0441\u0438\u0432\u044b\u0435") == ["\u043a\u0440\u0430\u0441\u0438\u0432"]
    with pytest.raises(ValueError, match="no Snowball stemmer for language 'zh'"):
        UnicodeTokenizer("zh", stem=True)
    tok = UnicodeTokenizer("fr", stem=True)
    assert tok.tokenize("continuation continuations") == tok.tokenize("continuation continuation")
    clone = pickle.loads(pickle.dumps(tok))  # Dask ships tokenizers to workers
    assert clone.tokenize("continuations") == tok.tokenize("continuations") and clone.name == tok.name


# --------------------------------------------------------------------------- scores on real data
@pytest.mark.parametrize("language", LANGUAGES)
def test_identical_texts_score_one(by_language, language):
    texts = [r["references"][0] for r in by_language[language][::2]]  # 135 distinct documents
    tok = UnicodeTokenizer(language=language, stem=language != "zh")
    scorer = RougeScorer(TYPES, tokenizer=tok)
    for row in scorer.score_batch(texts, texts):
        for name in TYPES:
            assert tuple(row[name]) == (1.0, 1.0, 1.0), (language, name)


@pytest.mark.parametrize("language", ["zh", "ru"])
def test_nonzero_where_default_profile_gives_zero(by_language, language):
    recs = by_language[language]
    refs = [r["references"][0] for r in recs]
    cands = [r["candidate"] for r in recs]
    default = RougeScorer(["rouge1", "rougeL"]).score_arrays(refs, cands).scores
    uni = RougeScorer(["rouge1", "rougeL"], tokenizer=UnicodeTokenizer(language)).score_arrays(refs, cands).scores
    # identical texts without ASCII letters or digits: default gives 0 (every token dropped)
    pure = [t for t in refs if not re.search("[A-Za-z0-9]", t)]
    assert len(pure) > 50
    assert (RougeScorer(["rouge1"]).score_arrays(pure, pure).scores[:, 0, 2] == 0).all()
    # real pairs: the default profile sees only digits and Latin words: most pairs score 0;
    # the unicode profile finds the overlap of most of those
    zero = default[:, 0, 2] == 0
    assert zero.mean() > 0.75
    assert (uni[zero, 0, 2] > 0).mean() > 0.7 and (uni[zero, 1, 2] > 0).mean() > 0.7
    assert uni[:, 0, 2].mean() > 2 * default[:, 0, 2].mean()
    assert (uni[:, :, 2] >= 0).all() and (uni[:, :, 2] <= 1).all()


def test_default_profile_still_equals_rouge_score(by_language):
    from rouge_score import rouge_scorer

    recs = by_language["en"][::9]
    refs = [r["references"][0] for r in recs]
    cands = [r["candidate"] for r in recs]
    for stem in (False, True):
        ours = RougeScorer(TYPES, use_stemmer=stem).score_batch(refs, cands)
        theirs = rouge_scorer.RougeScorer(TYPES, use_stemmer=stem)
        for ref, cand, row in zip(refs, cands, ours):
            want = theirs.score(ref, cand)
            for name in TYPES:
                assert tuple(row[name]) == tuple(want[name]), name


def test_rougelsum_sentencex_on_cjk_full_stops():
    from pipeline.text.sentences import get_splitter

    split = get_splitter("sentencex", "zh")
    assert split("\u6211\u7231\u5317\u4eac\u3002\u4eca\u5929\u5f88\u597d\uff01\u4f60\u5462\uff1f\u597d") == [
        "\u6211\u7231\u5317\u4eac\u3002", "\u4eca\u5929\u5f88\u597d\uff01", "\u4f60\u5462\uff1f", "\u597d"]
    scorer = RougeScorer(["rougeL", "rougeLsum"], tokenizer=UnicodeTokenizer("zh"),
                         sentence_splitter="sentencex", language="zh")
    ref = "\u6211\u7231\u5317\u4eac\u3002\u4eca\u5929\u5f88\u597d\uff01"
    cand = "\u4eca\u5929\u5f88\u597d\uff01\u6211\u7231\u5317\u4eac\u3002"
    s = scorer.score(ref, cand)
    # rougeL: one LCS of 4 of 8 characters; rougeLsum: each sentence matches in full
    assert s["rougeL"].fmeasure == 0.5 and s["rougeLsum"].fmeasure == 1.0


# --------------------------------------------------------------------------- config / signature / job
def _cfg(**scoring):
    from pipeline.config import RunConfig

    return RunConfig.from_dict({"input": {"paths": "data/*.jsonl"}, "output": {"url": "/tmp/run"},
                                "scoring": scoring})


def test_config_signature_and_job_wiring():
    from pipeline import job
    from pipeline.config import ConfigError
    from pipeline.signature import Signature

    base = _cfg()
    assert "language" not in base.hashed_settings()["scoring"]  # old runs keep their config hash
    sig = str(Signature.from_config(base))
    assert "|tok:default|stem:no|split:newline|" in sig and "profile:rouge-score-0.1.2" in sig
    assert job.scorer_for(job.ScoringSettings.from_config(base.scoring))._tokenizer is None

    cfg = _cfg(profile="unicode", language="de", stemming="snowball")
    s = Signature.from_config(cfg)
    assert s.profile == "unicode" and s.tok.startswith("unicode(de)-nfkc-casefold-words+cjkchars-ucd")
    assert s.stem.startswith("snowball-german-snowballstemmer")
    assert profiles.get("unicode").signature_parts(cfg.scoring) == {"tok": s.tok, "stem": s.stem, "profile": "unicode"}
    assert Signature.from_string(str(s)) == s
    assert cfg.config_hash() != base.config_hash()
    scorer = job.scorer_for(job.ScoringSettings.from_config(cfg.scoring))
    assert isinstance(scorer._tokenizer, UnicodeTokenizer) and scorer.tokenizer_name == s.tok
    assert scorer._tokenizer.stem and scorer._tokenizer.language == "de"

    seen = set()
    for variant in ({}, {"profile": "unicode"}, {"profile": "unicode", "language": "zh"},
                    {"profile": "unicode", "language": "zh", "cjk": "segmenter"},
                    {"profile": "unicode", "stemming": "snowball"},
                    {"sentence_splitter": "sentencex"}, {"sentence_splitter": "sentencex", "language": "de"}):
        seen.add(str(Signature.from_config(_cfg(**variant))))
    assert len(seen) == 7

    for bad, msg in [({"stemming": "snowball"}, "scoring.stemming: 'snowball' needs profile 'unicode'"),
                     ({"cjk": "segmenter"}, "scoring.cjk"),
                     ({"profile": "unicode", "language": "zh", "stemming": "snowball"},
                      "no Snowball stemmer for language 'zh'"),
                     ({"profile": "unicode", "use_stemmer": True}, "scoring.use_stemmer"),
                     ({"profile": "unicode", "tokenizer": "whitespace"}, "scoring.tokenizer"),
                     ({"profile": "unicode", "language": "german"}, "scoring.language"),
                     ({"profile": "unicode", "stemming": "porter"}, "scoring.stemming")]:
        with pytest.raises(ConfigError, match=msg):
            _cfg(**bad)
    assert job.scorer_for(job.ScoringSettings(profile="unicode"))._tokenizer.name == UnicodeTokenizer().name


# --------------------------------------------------------------------------- batch paths = specification
class _MarkedRoute:
    """The tokenizer without ``encode_batch``: RougeScorer takes the ``tokenize_batch`` route."""

    tokens_never_span_newlines = True

    def __init__(self, tok):
        self.tokenize, self.tokenize_batch, self.stem_token = tok.tokenize, tok.tokenize_batch, tok.stem_token


class _PerText:
    """Only ``tokenize``: every text tokenized whole and line by line, in Python."""

    def __init__(self, tok):
        self.tokenize = tok.tokenize


def _spec(tok, texts):
    """The specification: per text, its lines' tokens (lines without tokens left out), and the
    whole text's tokens."""
    from pipeline.text.sentences import split_newlines

    sents = [[s for s in map(tok.tokenize, split_newlines(t)) if s] for t in texts]
    return sents, [tok.tokenize(t) for t in texts]


def _decode(enc, forms, n_docs):
    """EncodedDocs -> (per document its sentences as token strings, per document its tokens)."""
    forms = list(forms)
    sents = [[[forms[t] for t in enc.sent_tokens[enc.sent_tok[s]:enc.sent_tok[s + 1]]]
              for s in range(enc.doc_sent[d], enc.doc_sent[d + 1])] for d in range(n_docs)]
    whole = [[forms[t] for t in enc.tokens[enc.doc_tok[d]:enc.doc_tok[d + 1]]] for d in range(n_docs)]
    return sents, whole


def _compiled(tok, texts):
    enc = tok.encode_batch(texts)
    assert enc is not None and enc.sent_tokens is enc.tokens and enc.tokens.dtype.name == "int32"
    return _decode(enc, tok._batch_encoder.forms(), len(texts))


def _assert_same(got, want, texts):
    for d, text in enumerate(texts):
        assert got[0][d] == want[0][d], ("sentences", d, text)
        assert got[1][d] == want[1][d], ("tokens", d, text)
    assert len(got[0]) == len(got[1]) == len(texts)


@pytest.mark.parametrize("language,stem", [("en", False), ("de", True), ("tr", True), ("th", False),
                                           ("zh", False), ("ru", True), ("es", True)])
def test_batch_tokenization_equals_text_by_text(by_language, language, stem):
    """Both batch routes (the compiled scan, and tokenize_batch: one normalization and one findall
    over the joined batch) against the tokenizer applied line by line, text by text: the data
    of the language plus texts built to stress the joins (NUL, combining marks and the Turkish
    dot at text starts, CR/LF, empty lines)."""
    import random

    rng = random.Random(5)
    data = [t for r in by_language.get(language, [])[:60] for t in (r["candidate"], r["references"][0])]
    if language == "th":  # not in the multilingual data
        data += ["สวัสดีครับ วันนี้อากาศดีมาก\nฉันชอบกินข้าวผัด", "ภาษาไทยเขียนติดกันโดยไม่เว้นวรรค 2567",
                 "กรุงเทพมหานคร\n\nเชียงใหม่ ภูเก็ต"]
    pieces = ["\u0301a", "\u0307", "İ", "i\u0307", "I", "\x00", "\n", "\r\n", "\n\n", " ", "ß", "Ǆ", "ﬁ", "①",
              "中文", "สวัสดี", "١٢", "e\u0301", "\u200d", "😀", "x"]
    data += ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 10))) for _ in range(300)]
    tok = UnicodeTokenizer(language, stem=stem)
    want = _spec(tok, data)
    _assert_same(_compiled(tok, data), want, data)
    scorer = RougeScorer(["rouge1", "rougeLsum"], tokenizer=_MarkedRoute(tok))
    enc = scorer.encode(data)
    _assert_same(_decode(enc, sorted(scorer._token_index, key=scorer._token_index.get), len(data)), want, data)


@pytest.mark.parametrize("language", LANGUAGES)
def test_compiled_path_equals_specification_on_real_data(by_language, language):
    """Every text of the language's data (candidates and references), unstemmed and stemmed."""
    texts = [t for r in by_language[language] for t in (r["candidate"], *r["references"])]
    assert len(texts) >= 540
    for stem in (False, True) if language != "zh" else (False,):
        tok = UnicodeTokenizer(language, stem=stem)
        got = _compiled(tok, texts)
        _assert_same(got, _spec(tok, texts), texts)
        assert sum(map(len, got[1])) > 5 * len(texts)  # real tokens were compared, not empty lists


# Pieces for generated texts: every class the scan distinguishes and every normalization case.
_HARD_PIECES = [
    # ASCII, separators, lines, documents
    "a", "Z", "7", "abc", "Hello", " ", "  ", ".", "-", "'", "_", "\t", "\r", "\n", "\n\n", "\r\n", "\x00", "",
    # Latin: precomposed and decomposed accents, marks in non-canonical order, ß/ẞ, ligatures, title case
    "é", "e\u0301", "E\u0301", "\u0301", "e\u0323\u0302", "e\u0302\u0323", "ü", "Ü", "u\u0308", "ß", "ẞ", "ﬁ",
    "ﬀ", "ﬅ", "Ǆ", "ǅ", "ǰ", "ŉ", "Å", "Å", "K", "ÿ",
    # Greek and Cyrillic: final sigma, iota with dialytika and tonos (folds to three code points)
    "Σ", "ς", "σ", "ΐ", "ΰ", "ά", "Ё", "и\u0306", "й", "Ѐ",
    # Turkish casing: dotted capital I, dotless i, i + U+0307 (alone, doubled, at a text start)
    "İ", "I", "ı", "i", "i\u0307", "\u0307", "i\u0307\u0307", "İ\u0307", "I\u0307", "Ⅰ", "Ｉ",
    # compatibility forms: full-width, circled, super/subscripts, math alphanumerics, squares, ﷺ (18 code points)
    "ＡＢＣ１２", "①", "²", "x²", "₃", "𝟙", "𝐀", "ℌ", "㎏", "㍿", "ﷺ", "\u00a0", "…", "™", "½",
    # other scripts' digits and letters, Hebrew and Arabic points (reordering), Devanagari nukta (excluded composite)
    "٣", "३", "१२", "ש\u05bc\u05c1", "ש\u05c1\u05bc", "بَّ", "ب\u0651\u064e", "क़", "क\u093c", "ক\u09be", "ো",
    # Hangul: syllables and conjoining jamo that NFKC composes
    "가", "\u1100\u1161", "\u1100\u1161\u11a8", "\u1161", "\u11a8", "각\u11a8",
    # CJK: Han, kana, prolonged sound mark, iteration mark, ideographic zero, extension B, compatibility
    # ideographs, half-width kana and voiced marks that compose, CJK punctuation, marks after CJK
    "中", "文", "ひ", "カ", "ー", "々", "〇", "𠀀", "\uf900", "ｶ", "ｶﾞ", "か\u3099", "\u3099", "。", "、", "「",
    "中\u0301", "中\u0307",
    # Thai, Lao, Khmer, Myanmar (pattern path), a lone Thai vowel sign
    "สวัสดี", "ລາວ", "ខ្មែរ", "မြန်မာ", "\u0e31", "ก\u0301",
    # format, symbols, emoji, variation selectors (marks), private use, noncharacters, surrogates, unassigned
    "\u200d", "\u200c", "\ufeff", "😀", "👍🏽", "\ufe0f", "\U000e0100", "\ue000", "\uffff", "\U0010ffff",
    "\ud800", "\udfff", "\u0378", "\U000e0001", "\u2028", "\x85", "%", "$",
    # long tokens: past 8, 16 and 64 UTF-8 bytes
    "a" * 17, "é" * 9, "ü" * 40, "x" * 70, "ж" * 33, "e\u0301" * 20,
]


def _hard_texts(seed: int, n: int) -> list[str]:
    import random

    rng = random.Random(seed)
    singles = [chr(cp) for cp in (0x0, 0xA, 0x41, 0xE9, 0x300, 0x307, 0x345, 0x1161, 0x3099, 0x4E00, 0xAC00,
                                  0xD800, 0xFB01, 0xFDFA, 0x1F600, 0x20000, 0xE0100, 0x10FFFF)]
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(0, 12)):
            r = rng.random()
            if r < 0.7:
                parts.append(rng.choice(_HARD_PIECES))
            elif r < 0.85:
                parts.append(rng.choice(singles))
            else:  # any code point at all: unassigned, surrogates, private use included
                parts.append(chr(rng.randrange(0x110000)))
        out.append("".join(parts))
    return out


@pytest.mark.parametrize("language,stem", [("en", False), ("en", True), ("tr", False), ("tr", True), ("az", False),
                                           ("ja", False), ("de", True), ("el", True), ("ru", True)])
def test_compiled_path_equals_specification_on_generated_hard_cases(language, stem):
    texts = _hard_texts(11, 1500)
    # the densest layouts: empty texts, newline-only texts, one-code-point texts side by side
    texts += ["", "\n", "\n\n", "a", "中", "", "ﷺ", "\u0301", "İ", "\x00", "สวัสดี", "e\u0301"] * 3
    texts += ["".join(_HARD_PIECES)]
    tok = UnicodeTokenizer(language, stem=stem)
    got = _compiled(tok, texts)
    _assert_same(got, _spec(tok, texts), texts)
    assert sum(map(len, got[1])) > 3 * len(texts)
    # the route through the scorer is the compiled one
    enc = RougeScorer(["rouge1", "rougeLsum"], tokenizer=tok).encode(texts)
    assert _decode(enc, tok._batch_encoder.forms(), len(texts)) == got


def test_compiled_path_equals_specification_for_every_code_point():
    """Every assigned code point (every 61st in planes 4-13 and the private-use planes 15-16,
    which hold no other), at a text start, between letters and before a combining mark,
    against the specification's normalization and pattern (as one findall over the joined
    texts, marks between texts; the tests above tie that to per-text tokenization).
    tr/az (other case tables) over the Basic Multilingual Plane."""
    from pipeline.text.unicode_rules import MARKED_PATTERN

    sampled = [c for c in range(0x110000) if c < 0x40000 or 0xE0000 <= c < 0xF0000 or c % 61 == 0]
    for language, cps in (("en", sampled), ("tr", range(0x10000))):
        tok = UnicodeTokenizer(language)
        for lo in range(0, len(cps), 0x20000):
            texts = [t for c in map(chr, cps[lo:lo + 0x20000]) for t in (c + "b", "a" + c + "b" + c + "\u0301")]
            enc = tok.encode_batch(texts)
            got = np.array(tok._batch_encoder.forms(), dtype=object)[enc.tokens]
            joined = "\x00".join(t.replace("\x00", " ") for t in texts) + "\x00"
            marked = MARKED_PATTERN.findall(tok.normalize(joined))
            # (numpy drops a str scalar's trailing NULs: the marks are compared in Python)
            ends = np.array([t == "\x00" for t in marked])
            is_token = ~ends & np.array([t != "\n" for t in marked])
            assert np.array_equal(enc.doc_tok[1:], np.cumsum(is_token)[ends]), (language, lo)
            want = np.array(marked, dtype=object)[is_token]
            assert got.shape == want.shape and (got == want).all(), (language, lo)


@pytest.mark.parametrize("language,stem", [("en", True), ("de", True), ("fr", False), ("ru", True), ("tr", True),
                                           ("zh", False), ("id", True), ("es", False)])
def test_scores_equal_the_per_text_path(by_language, language, stem):
    """Final ROUGE numbers: the compiled batch path against the same tokenizer applied text by text
    (whole texts for rouge1/2/L, each line on its own for rougeLsum), as identical floats."""
    recs = by_language[language]
    refs = [r["references"][0] for r in recs] + _hard_texts(3, 100)
    cands = [r["candidate"] for r in recs] + _hard_texts(4, 100)
    tok = UnicodeTokenizer(language, stem=stem)
    fast = RougeScorer(TYPES, tokenizer=tok).score_arrays(refs, cands)
    plain = RougeScorer(TYPES, tokenizer=_PerText(tok)).score_arrays(refs, cands)
    assert np.array_equal(fast.scores, plain.scores)
    assert (fast.scores[: len(recs), 0, 2] > 0).mean() > 0.5  # real overlaps were scored


def test_compiled_path_expansion_retry_vocabulary_reset_and_threads(monkeypatch):
    """Texts that normalize to many times their length (the scan's capacity is retried), a
    vocabulary rebuilt between batches, and one tokenizer shared by threads."""
    from concurrent.futures import ThreadPoolExecutor

    from pipeline.text.vocabulary import Vocabulary

    tok = UnicodeTokenizer("de", stem=True)
    texts = ["\ufdfa" * 300, "ａ" * 500 + "\u3300" * 200, "ß" * 1000, "x"]  # 18, 1 and 2 code points each
    _assert_same(_compiled(tok, texts), _spec(tok, texts), texts)

    monkeypatch.setattr(Vocabulary, "MAX_IDS", 50)
    batches = [_hard_texts(seed, 40) for seed in range(6)]
    for texts in batches:
        _assert_same(_compiled(tok, texts), _spec(tok, texts), texts)
    assert tok._batch_encoder.vocab.generation >= 1  # the vocabulary was rebuilt between batches

    monkeypatch.setattr(Vocabulary, "MAX_IDS", 10**9)
    shared = UnicodeTokenizer("tr", stem=True)
    with ThreadPoolExecutor(4) as pool:
        encoded = list(pool.map(shared.encode_batch, batches * 3))
    forms = shared._batch_encoder.forms()
    for texts, enc in zip(batches * 3, encoded):
        _assert_same(_decode(enc, forms, len(texts)), _spec(shared, texts), texts)


def test_tokenizer_pickles_after_batches():
    tok = UnicodeTokenizer("fr", stem=True)
    tok.encode_batch(["Les états-unis"])
    clone = pickle.loads(pickle.dumps(tok))
    assert "_batch_encoder" not in clone.__dict__
    texts = ["Les États-Unis d'Amérique", "ﬁn"]
    _assert_same(_compiled(clone, texts), _spec(tok, texts), texts)
    assert UnicodeTokenizer("th", cjk="segmenter").encode_batch(texts) is None


_SCAN_BOUNDS_PROBE = r"""
from pipeline.text.unicode import UnicodeTokenizer
from pipeline.text.sentences import split_newlines
for language in ("en", "tr"):
    tok = UnicodeTokenizer(language, stem=language == "en")
    # the densest layouts: one-code-point documents side by side, every code point a 3- or 4-byte
    # token, texts that expand 18-fold, marks NFKC must see whole, grapheme texts merged back
    for texts in (["a"] * 3000, ["\u4e2d"] * 3000, ["", "\n", "a", "\x00", "\u4e2d", "\U00020000", "\u0301"] * 500,
                  ["\u4e2d" * 5000], ["\U00020000" * 3000 + "\n" + "\u3042\n" * 2000], ["\ufdfa" * 2000, "x"],
                  ["e\u0301" * 3000, "\u0301" * 3000], ["\u0e2a\u0e27\u0e31", "a", "\u0e2a"] * 500,
                  ["\u00fc" * 40 + " " + "x" * 70] * 200, [""] * 20, ["\u0130\u0307" * 1000, "I\u0131" * 1000]):
        enc = tok.encode_batch(texts)
        forms = tok._batch_encoder.forms()
        got = [[forms[t] for t in enc.tokens[enc.doc_tok[d]:enc.doc_tok[d + 1]]] for d in range(len(texts))]
        assert got == [tok.tokenize(t) for t in texts], texts[:3]
        assert enc.doc_sent[-1] == enc.sent_tok.shape[0] - 1
print("ok")
"""


def test_compiled_scan_stays_in_bounds_on_dense_inputs(tmp_path):
    """numba does not check indices: the scan's arrays are sized from the input (one token per
    normalized code point, four bytes each, a retry when normalization expands).  Compiled here
    with bounds checking on, the densest layouts must not index past them."""
    from support.shared import run_bounds_checked

    run_bounds_checked(_SCAN_BOUNDS_PROBE, tmp_path, timeout=900)
