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

import pytest

from pipeline import RougeScorer
from pipeline.text.profiles import make_tokenizer, signature_parts
from pipeline.text.tokenizers import DefaultTokenizer
from pipeline.text.unicode import UnicodeTokenizer

DATA = Path(__file__).parents[1].parent / "shared" / "data"
LANGUAGES = ("en", "de", "es", "fr", "id", "ru", "tr", "zh")
TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]


def _records():
    import json

    with (DATA / "multi_summeval" / "multi_summeval.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="module")
def by_language():
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
    assert (s.tok, s.stem) == signature_parts("unicode", "de", "snowball")
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
    assert make_tokenizer() is None and make_tokenizer("unicode").name == UnicodeTokenizer().name


@pytest.mark.parametrize("language,stem", [("en", False), ("de", True), ("tr", True), ("th", False),
                                           ("zh", False), ("ru", True), ("es", True)])
def test_batch_tokenization_equals_text_by_text(by_language, language, stem):
    """The batch path (one normalization and one findall over the joined batch, marks between
    lines and texts) against the tokenizer applied line by line, text by text: the data of the
    language plus texts built to stress the joins (NUL, combining marks and the Turkish dot at
    text starts, CR/LF, empty lines)."""
    import random

    from pipeline.text.encoder import encode_with_tokenizer
    from pipeline.text.sentences import split_newlines

    rng = random.Random(5)
    data = [t for r in by_language.get(language, by_language["zh"])[:60]
            for t in (r["candidate"], r["references"][0])]
    pieces = ["\u0301a", "\u0307", "İ", "i\u0307", "I", "\x00", "\n", "\r\n", "\n\n", " ", "ß", "Ǆ", "ﬁ", "①",
              "中文", "สวัสดี", "١٢", "e\u0301", "\u200d", "😀", "x"]
    data += ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 10))) for _ in range(300)]
    tok = UnicodeTokenizer(language, stem=stem)
    got = RougeScorer(["rouge1", "rougeLsum"], tokenizer=tok).encode(data)  # batch path, sentences
    index: dict = {}
    want = encode_with_tokenizer(data, tok.tokenize, split_newlines, index, compose_lines=True)
    forms = {v: k for k, v in index.items()}
    scorer = RougeScorer(["rouge1"], tokenizer=tok)
    enc = scorer.encode(data)
    got_forms = {v: k for k, v in scorer._token_index.items()}

    def docs(e, names):
        return [[[names[t] for t in e.sent_tokens[e.sent_tok[s]:e.sent_tok[s + 1]]]
                 for s in range(e.doc_sent[d], e.doc_sent[d + 1])] for d in range(len(data))]

    assert docs(enc, got_forms) == docs(want, forms)
    assert [got.doc_tok[d + 1] - got.doc_tok[d] for d in range(len(data))] == \
        [want.doc_tok[d + 1] - want.doc_tok[d] for d in range(len(data))]
