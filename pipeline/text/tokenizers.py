"""Tokenizers, as plain Python callables.

``DefaultTokenizer`` is the specification of rouge-score 0.1.2's tokenizer; the
compiled batch encoder (:mod:`pipeline.text.encoder`) must produce the same
tokens and is tested against it.  Any object with ``.tokenize(text)`` or any
callable ``text -> list[str]`` can be used as a custom tokenizer, as in
rouge-score (where passing one makes ``use_stemmer`` a no-op).
"""
from __future__ import annotations

import re
from typing import Callable, Protocol

from pipeline.text.porter import porter_stem

_NON_ALPHANUM = re.compile(r"[^a-z0-9]+")
_VALID_TOKEN = re.compile(r"^[a-z0-9]+$")


class Tokenizer(Protocol):
    def tokenize(self, text: str) -> list[str]: ...


class DefaultTokenizer:
    """``str.lower``; every run outside ASCII ``[a-z0-9]`` separates; optional Porter stem.

    Lowercasing comes before the ASCII filter, so the two code points that lowercase
    into ASCII count (U+212A KELVIN SIGN -> ``k``; U+0130 -> ``i`` + U+0307).
    """

    name = "default"

    def __init__(self, use_stemmer: bool = False):
        self.use_stemmer = use_stemmer

    def tokenize(self, text: str) -> list[str]:
        tokens = _NON_ALPHANUM.sub(" ", text.lower()).split()
        if self.use_stemmer:
            tokens = [porter_stem(t) for t in tokens]
        return [t for t in tokens if _VALID_TOKEN.match(t)]


class WhitespaceTokenizer:
    """Lowercase, split on whitespace, nothing removed (the seed chapter's protocol)."""

    name = "whitespace"
    tokens_never_span_newlines = True  # whitespace-separated: a token never contains "\n"

    def tokenize(self, text: str) -> list[str]:
        return text.lower().split()


class CallableTokenizer:
    """Adapts a bare callable (HF ``evaluate`` style) to the ``.tokenize`` protocol."""

    def __init__(self, fn: Callable[[str], list[str]]):
        self._fn = fn
        self.name = f"custom:{getattr(fn, '__qualname__', type(fn).__name__)}"

    def tokenize(self, text: str) -> list[str]:
        return list(self._fn(text))


def as_tokenizer(tok) -> Tokenizer:
    if hasattr(tok, "tokenize"):
        return tok
    if callable(tok):
        return CallableTokenizer(tok)
    raise TypeError(f"a tokenizer needs a .tokenize(text) method or must be callable, got {type(tok)!r}")
