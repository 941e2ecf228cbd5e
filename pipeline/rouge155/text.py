"""Reading, length limits and tokenisation exactly as ROUGE-1.5.5 does them.

Semantics (``shared/reference/rouge155-semantics.md`` §2-§3):

* A summary is a list of sentences: the non-empty lines of the text (SPL format; a
  whitespace-only line is an empty sentence).  Everything works on **bytes**: the text is
  UTF-8 encoded and each byte becomes one character (latin-1), so a non-ASCII character is
  several "characters", each of which tokenises to a space and counts in ``-b``.
* Lowercasing is ASCII-only (``A-Z``).
* ``-l N`` / ``-b N`` cut the raw sentences (of the candidate **and** every reference):
  whole sentences are kept while ``count + len < N``; the sentence that reaches N is cut to
  its first ``N - count`` raw words (``-l``, words = fields of a split on whitespace runs,
  with Perl's leading empty field) or bytes (``-b``) and reading stops.
* The ROUGE-L/W path of ``-b`` has a quirk: its running count is never incremented, so every
  sentence shorter than N bytes is kept whole and only the first sentence of at least N
  bytes is cut (to N bytes), which also ends reading.
* Tokenisation: ``-`` is padded to its own token, every byte outside ``[A-Za-z0-9-]``
  becomes a space, the text is split on whitespace.  Then per token: with ``-s`` drop
  stopwords; keep only tokens starting with ``[a-z0-9$]`` (this drops the ``-`` tokens);
  with ``-m`` stem tokens longer than 3 characters (:func:`~pipeline.rouge155.porter.morph_stem`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from pipeline.rouge155.porter import morph_stem
from pipeline.rouge155.resources import stopwords as _smart_stopwords

# Perl's \s on byte strings: ASCII whitespace only (never \x85 or \xa0).
_PERL_WS = "[ \t\n\r\f\x0b]"
_WS_RUN = re.compile(_PERL_WS + "+")
_NOT_TOKEN_CHAR = re.compile("[^A-Za-z0-9-]")
_KEEP_TOKEN = re.compile("^[a-z0-9$]")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def to_bytes_text(text: str | bytes) -> str:
    """The text as ROUGE-1.5.5 sees its file: one character per UTF-8 byte."""
    if isinstance(text, bytes):
        return text.decode("latin-1")
    return text.encode("utf-8").decode("latin-1")


def read_sentences(text: str | bytes) -> list[str]:
    """Split a summary into its sentences (SPL: one per non-empty line), ASCII-lowercased."""
    return [line.translate(_ASCII_LOWER) for line in to_bytes_text(text).split("\n") if line != ""]


def perl_split_words(sentence: str) -> list[str]:
    """``split(/\\s+/, $s)``: a leading empty field is kept, trailing empty fields removed."""
    fields = _WS_RUN.split(sentence)
    while fields and fields[-1] == "":
        fields.pop()
    return fields


def limit_words(sentences: list[str], limit: int) -> list[str]:
    """``-l``: keep whole sentences while ``count + len < limit``, cut the one that reaches it."""
    kept, count = [], 0
    for sentence in sentences:
        words = perl_split_words(sentence)
        if count + len(words) < limit:
            kept.append(sentence)
            count += len(words)
        else:
            kept.append(" ".join(words[: limit - count]))
            break
    return kept


def limit_bytes(sentences: list[str], limit: int, lcs_quirk: bool = False) -> list[str]:
    """``-b``: as :func:`limit_words` in bytes (separators between sentences not counted).

    ``lcs_quirk=True`` reproduces the ROUGE-L/W reader, whose count stays 0.
    """
    kept, count = [], 0
    for sentence in sentences:
        if count + len(sentence) < limit:
            kept.append(sentence)
            if not lcs_quirk:
                count += len(sentence)
        else:
            kept.append(sentence[: limit - count])
            break
    return kept


def tokenize(text: str, stem: bool = False, remove_stopwords: bool = False) -> list[str]:
    """Tokens of one (already lowercased) text or sentence, after ``-s`` and ``-m``."""
    text = _NOT_TOKEN_CHAR.sub(" ", text.replace("-", " - "))
    stop = _smart_stopwords() if remove_stopwords else ()
    tokens = []
    for token in _WS_RUN.split(text):
        if token == "" or token in stop:
            continue
        if not _KEEP_TOKEN.match(token):
            continue
        if stem and len(token) > 3:
            token = morph_stem(token)
        tokens.append(token)
    return tokens


@dataclass
class Summary:
    """One summary as the metrics need it.

    ``tokens``: the tokens of the whole (length-limited) summary, sentences joined -- used by
    ROUGE-N, ROUGE-S/SU and the unigram clipping counts of ROUGE-L/W.
    ``sentence_tokens``: the tokens of each sentence as the ROUGE-L/W reader produces them
    (differs from ``tokens`` only through the ``-b`` quirk).
    """

    tokens: list[str]
    sentence_tokens: list[list[str]]


def prepare(text: str | bytes, stem: bool = False, remove_stopwords: bool = False,
            length_limit_words: int | None = None, length_limit_bytes: int | None = None) -> Summary:
    """Read, limit and tokenise one summary (candidate or reference)."""
    if length_limit_words and length_limit_bytes:
        raise ValueError("-l and -b are mutually exclusive")
    sentences = read_sentences(text)
    lcs_sentences = sentences
    if length_limit_words:
        sentences = lcs_sentences = limit_words(sentences, length_limit_words)
    elif length_limit_bytes:
        lcs_sentences = limit_bytes(sentences, length_limit_bytes, lcs_quirk=True)
        sentences = limit_bytes(sentences, length_limit_bytes)
    tokens = tokenize(" ".join(sentences), stem, remove_stopwords)
    sentence_tokens = [tokenize(s, stem, remove_stopwords) for s in lcs_sentences]
    return Summary(tokens, sentence_tokens)
