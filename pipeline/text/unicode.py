"""The ``unicode`` profile's tokenizer: ROUGE for any script.

rouge-score and ROUGE-1.5.5 keep only ``[a-z0-9]``: identical Chinese or Russian texts
score 0 and accented words are cut.  :class:`UnicodeTokenizer` is the documented
alternative.  For one text it does exactly this:

1. **Normalize**: Unicode NFKC (``unicodedata.normalize("NFKC", text)``: full-width
   forms, ligatures, compatibility digits like ``①``/``²`` become their plain forms).
2. **Case fold**: ``str.casefold()`` (full case folding: ``ß`` -> ``ss``, ``Σ``/``ς`` -> ``σ``).
   Turkish and Azerbaijani (``language`` ``tr``/``az``) first map ``İ`` -> ``i`` and
   ``I`` -> ``ı`` (Unicode SpecialCasing for tr/az), and after folding drop a
   U+0307 COMBINING DOT ABOVE that follows ``i`` (``i̇`` -> ``i``; what a non-Turkish
   lowercasing of ``İ`` leaves behind).
3. **Split**, with one compiled ``regex`` (PyPI ``regex``) pattern; everything not
   matched is a separator and is dropped.  In order of precedence, a token is:

   * one **CJK character**: a code point whose Script_Extensions include Han,
     Hiragana or Katakana and whose general category is a letter (L*) or number (N*)
     (so ``中``, ``ひ``, ``カ``, ``ー``, ``々``, ``〇``; not ``。``, ``、``, ``「``);
     with ``cjk="segmenter"`` see below;
   * one **grapheme cluster** (``\\X``, Unicode extended grapheme clusters, UAX #29)
     that starts with a letter of the Thai, Lao, Khmer or Myanmar script, scripts
     written without spaces (``สวัสดี`` -> ``ส``, ``วั``, ``ส``, ``ดี``);
     with ``cjk="segmenter"`` Thai is segmented into words instead (below);
   * a **word**: a maximal run of letters (L*), combining marks (M*) and numbers
     (N*) that are neither of the above.  So letters and digits stay together
     (``covid19``), digits are tokens (``2024``; ``3.5`` -> ``3``, ``5``; digits of
     other scripts such as ``٣`` are kept as they are), and **every** punctuation
     mark (P*), symbol (S*: ``%``, ``$``, emoji), space, control and format
     character (C*: also ZWJ/ZWNJ) separates: apostrophes and hyphens split words
     (``l'homme`` -> ``l``, ``homme``; ``state-of-the-art`` -> four tokens), as in
     rouge-score's default tokenizer.

   On ASCII text (outside tr/az) the tokens are exactly rouge-score's unstemmed
   default tokens (``[a-z0-9]+`` runs of the lowercased text).
4. **Stem** (``stem=True``): the Snowball stemmer of ``language``
   (:mod:`pipeline.text.snowball`), cached per token.  Languages without a Snowball
   stemmer (zh, ja, th, ...) refuse ``stem=True``.

``cjk="segmenter"`` replaces characters by words from maintained packages that need
no model download: runs of Han characters go to ``jieba`` (its bundled dictionary;
``language="ja"`` keeps characters, as no such Japanese segmenter exists), runs of
Thai letters go to ``pythainlp``'s ``newmm`` (its bundled dictionary); kana and Lao,
Khmer and Myanmar stay characters / grapheme clusters.  The packages and their
versions are part of :attr:`UnicodeTokenizer.name`.

**Batches.**  This module's :meth:`UnicodeTokenizer.words` / :meth:`~UnicodeTokenizer.tokenize`
(``normalize`` then one ``regex`` pattern) are the specification.  ``RougeScorer`` (with
the newline sentence splitter, ``cjk="chars"``) tokenizes a batch through
:meth:`UnicodeTokenizer.encode_batch` instead: :mod:`pipeline.text.unicode_scan` does
normalization and splitting in one compiled scan over the joined texts, with
per-code-point tables derived once per process (about 0.3 s) from ``unicodedata``,
``str.casefold`` and this module's ``regex`` character sets, and only the rare spans where
NFKC must see several code points together (a letter and its combining marks) normalized
by ``unicodedata`` itself.  Texts with Thai, Lao, Khmer or Myanmar letters or marks
(grapheme clusters) go through the pattern of step 3.  Tests hold the compiled path to
the specification token for token (every assigned code point, the multilingual data,
generated mixes) and to identical scores.

The name (``unicode(de)-nfkc-casefold-words+cjkchars-ucd15.0.0-regex2026.11.19``)
records the language, the CJK method and the Unicode data versions (Python's
``unicodedata`` for NFKC/casefold, the ``regex`` package for scripts and categories),
so any change in tokenization changes the run's signature.
"""
from __future__ import annotations

import re
import threading
import unicodedata
from functools import lru_cache
from importlib.metadata import version

import regex

from pipeline.text.snowball import SnowballStemmer
from pipeline.text.unicode_rules import CJK, HAN, MARKED_PATTERN, SEA_LETTER, WORD, fold

CJK_MODES = ("chars", "segmenter")

# chars mode: a single findall per text.
_CHARS_PATTERN = regex.compile(rf"(?V1)[{CJK}]|(?=[{SEA_LETTER}])\X|{WORD}")
# segmenter mode: Han runs and Thai runs are captured whole and handed to the segmenters.
_SEG_PATTERN = regex.compile(
    rf"(?V1)(?P<han>[{HAN}]+)|(?P<thai>(?=[\p{{sc=Thai}}&&\p{{L}}])[\p{{sc=Thai}}&&[\p{{L}}\p{{M}}]]+)"
    rf"|(?P<tok>[{CJK}]|(?=[{SEA_LETTER}])\X|{WORD})")
_ASCII_WORD = re.compile(r"[a-z0-9]+")  # stdlib re: faster on the ASCII fast path
_ASCII_MARKED = re.compile(r"[\n\x00]|[a-z0-9]+")

_TURKIC = ("tr", "az")
_ENCODER_LOCK = threading.Lock()  # one batch encoder per tokenizer, even when threads race


@lru_cache(maxsize=None)
def _jieba():
    import logging

    import jieba  # optional segmenters load only in segmenter mode (cold start)

    jieba.setLogLevel(logging.WARNING)
    return jieba


@lru_cache(maxsize=None)
def _thai_words():
    from pythainlp.tokenize import word_tokenize

    return word_tokenize


def _versions(*packages: str) -> str:
    return ",".join(f"{p}{version(p)}" for p in packages)


def tokenizer_name(language: str = "en", cjk: str = "chars") -> str:
    """The tokenizer's signature name, computed without loading any segmenter."""
    if cjk not in CJK_MODES:
        raise ValueError(f"cjk must be one of {', '.join(CJK_MODES)}, got {cjk!r}")
    method = "cjkchars" if cjk == "chars" else f"cjkseg({_versions('jieba', 'pythainlp')})"
    return (f"unicode({language})-nfkc-casefold-words+{method}"
            f"-ucd{unicodedata.unidata_version}-regex{version('regex')}")


class UnicodeTokenizer:
    """NFKC + casefold + Unicode words / CJK characters (+ Snowball stems); see the module doc."""

    # tokens are runs of letters/marks/numbers, CJK characters or Thai-script graphemes:
    # never a newline, and NFKC/casefold act within a line, so lines can be tokenized alone
    tokens_never_span_newlines = True

    def __init__(self, language: str = "en", stem: bool = False, cjk: str = "chars"):
        if not isinstance(language, str) or not language:
            raise ValueError(f"language must be a language code such as 'de', got {language!r}")
        self.language = language.lower()
        self.cjk = cjk
        self.name = tokenizer_name(self.language, cjk)
        self.stemmer = SnowballStemmer(self.language) if stem else None
        self._turkic = self.language in _TURKIC
        self._han_seg = cjk == "segmenter" and self.language != "ja"

    @property
    def stem(self) -> bool:
        return self.stemmer is not None

    def normalize(self, text: str) -> str:
        """Steps 1 and 2: NFKC, case folding (tr/az tailored)."""
        if self._turkic:
            return fold(text, True).replace("i\u0307", "i")
        return fold(text, False)

    def words(self, text: str) -> list[str]:
        """Steps 1-3 (no stemming)."""
        if text.isascii() and not self._turkic:
            return _ASCII_WORD.findall(text.lower())
        text = self.normalize(text)
        if self.cjk == "chars":
            return _CHARS_PATTERN.findall(text)
        out: list[str] = []
        for m in _SEG_PATTERN.finditer(text):
            kind = m.lastgroup
            if kind == "tok":
                out.append(m.group())
            elif kind == "han":
                run = m.group()
                if self._han_seg and len(run) > 1:
                    out.extend(w for w in _jieba().lcut(run) if w)
                else:
                    out.extend(run)
            else:  # thai
                out.extend(w for w in _thai_words()(m.group(), engine="newmm", keep_whitespace=False)
                           if w and not w.isspace())
        return out

    def tokenize_batch(self, texts: list[str]) -> list[str] | None:
        """Unstemmed tokens of every text, with ``"\\n"`` after each line and ``"\\x00"`` after
        each text (:func:`pipeline.text.encoder.encode_marked`), from one normalization and
        one ``findall`` over the whole batch; None in segmenter mode (per-text segmenters).
        The Python batch form: RougeScorer takes :meth:`encode_batch` when it can.

        Per text this equals :meth:`words` line by line: NFKC and case folding never act
        across a newline or a NUL (both are starters that compose with nothing), and no
        token contains either."""
        if self.cjk != "chars":
            return None
        texts = [t.replace("\x00", " ") if "\x00" in t else t for t in texts]
        if self._turkic:
            return MARKED_PATTERN.findall(self.normalize("\x00".join(texts) + "\x00"))
        # ASCII texts (outside tr/az) through the stdlib pattern (~10x the regex engine's speed,
        # the same tokens: see words()), runs of other texts through one regex findall each
        out: list[str] = []
        i, n = 0, len(texts)
        while i < n:
            j = i
            if texts[i].isascii():
                while j < n and texts[j].isascii():
                    j += 1
                out += _ASCII_MARKED.findall("\x00".join(texts[i:j]).lower() + "\x00")
            else:
                while j < n and not texts[j].isascii():
                    j += 1
                out += MARKED_PATTERN.findall(self.normalize("\x00".join(texts[i:j]) + "\x00"))
            i = j
        return out

    def encode_batch(self, texts: list[str]):
        """:class:`pipeline.text.csr.EncodedDocs` of ``texts`` (sentences: the lines with
        tokens) by the compiled scan of :mod:`pipeline.text.unicode_scan`: the tokens of
        :meth:`tokenize`, as ids consistent within the batch.  None in segmenter mode."""
        if self.cjk != "chars":
            return None
        enc = self.__dict__.get("_batch_encoder")
        if enc is None:
            from pipeline.text import unicode_scan  # at first batch: it loads numba (cold start)

            if not unicode_scan.AVAILABLE:  # pragma: no cover - numba without str buffer access
                return None
            with _ENCODER_LOCK:
                enc = self.__dict__.get("_batch_encoder")
                if enc is None:
                    enc = self._batch_encoder = unicode_scan.UnicodeBatchEncoder(self)
        return enc.encode(texts)

    def __getstate__(self):
        # the batch encoder (vocabulary, lock) is per process: a copy sent to a worker builds its own
        state = dict(self.__dict__)
        state.pop("_batch_encoder", None)
        return state

    def stem_token(self, token: str) -> str:
        """The form :meth:`tokenize` gives a word: its stem with ``stem=True``, else itself."""
        return self.stemmer.stem(token) if self.stemmer is not None else token

    def tokenize(self, text: str) -> list[str]:
        toks = self.words(text)
        if self.stemmer is not None:
            toks = self.stemmer.stem_all(toks)
        return toks

    __call__ = tokenize

    def __repr__(self) -> str:
        return f"UnicodeTokenizer(language={self.language!r}, stem={self.stem}, cjk={self.cjk!r})"
