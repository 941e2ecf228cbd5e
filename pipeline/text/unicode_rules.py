"""The ``unicode`` profile's rules shared by its specification (:mod:`pipeline.text.unicode`)
and its compiled scan (:mod:`pipeline.text.unicode_scan`): the character sets of step 3
(``regex`` syntax), the batch pattern with line and text marks, and steps 1-2 (:func:`fold`).

Both modules read them from here, so the scan's tables cannot drift from the pattern.
"""
from __future__ import annotations

import unicodedata

import regex

CJK = r"[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}]&&[\p{L}\p{N}]"
HAN = r"\p{scx=Han}&&[\p{L}\p{N}]"
SEA_LETTER = r"[\p{sc=Thai}\p{sc=Lao}\p{sc=Khmer}\p{sc=Myanmar}]&&\p{L}"
SEA = r"[\p{sc=Thai}\p{sc=Lao}\p{sc=Khmer}\p{sc=Myanmar}]&&[\p{L}\p{M}]"
WORD = rf"[[\p{{L}}\p{{M}}\p{{N}}]--[{CJK}]--[{SEA}]]+"

# tokenize_batch: the tokens, plus every newline and NUL (the marks between lines and texts)
MARKED_PATTERN = regex.compile(rf"(?V1)[\n\x00]|[{CJK}]|(?=[{SEA_LETTER}])\X|{WORD}")

_TURKIC_UPPER = str.maketrans({"\u0130": "i", "I": "\u0131"})


def fold(text: str, turkic: bool) -> str:
    """NFKC, then case folding (``turkic``: after ``İ`` -> ``i``, ``I`` -> ``ı``); every step but
    the tr/az removal of U+0307 after ``i`` (:meth:`UnicodeTokenizer.normalize`)."""
    text = unicodedata.normalize("NFKC", text)
    return (text.translate(_TURKIC_UPPER) if turkic else text).casefold()
