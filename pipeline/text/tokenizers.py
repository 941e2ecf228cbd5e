"""Tokenizers, as plain Python callables.

``DefaultTokenizer`` is the specification of rouge-score 0.1.2's tokenizer; the
compiled batch encoder (:mod:`pipeline.text.encoder`) must produce the same
tokens and is tested against it.  Any object with ``.tokenize(text)`` or any
callable ``text -> list[str]`` can be used as a custom tokenizer, as in
rouge-score (where passing one makes ``use_stemmer`` a no-op).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Protocol, runtime_checkable

from pipeline.text.porter import porter_stem

if TYPE_CHECKING:
    from pipeline.text.csr import EncodedDocs

_NON_ALPHANUM = re.compile(r"[^a-z0-9]+")
_VALID_TOKEN = re.compile(r"^[a-z0-9]+$")


@runtime_checkable
class Tokenizer(Protocol):
    """What rouge-score takes as a tokenizer (and ``RougeScorer(tokenizer=...)``): ``tokenize``.

    A tokenizer may also offer any of the members of the protocols below; the scorer takes the
    fastest route it offers (:func:`routes`), and each route gives the tokens of ``tokenize``."""

    def tokenize(self, text: str) -> list[str]: ...


@runtime_checkable
class Named(Protocol):
    name: str  # the signature's ``tok`` (default: the class name)


@runtime_checkable
class LineLocal(Protocol):
    tokens_never_span_newlines: bool  # True: a text's tokens are its lines' tokens


@runtime_checkable
class EncodesBatches(Protocol):
    def encode_batch(self, texts: list[str]) -> "EncodedDocs | None":
        """A batch's token ids (sentences: its lines), or None to decline."""


@runtime_checkable
class MarksBatches(Protocol):
    def tokenize_batch(self, texts: list[str]) -> list[str] | None:
        """Unstemmed tokens, ``"\\n"`` after each line and ``"\\x00"`` after each text
        (:func:`pipeline.text.encoder.encode_marked`), or None to decline."""

    def stem_token(self, token: str) -> str:
        """The form ``tokenize`` gives a token of ``tokenize_batch``."""


@dataclass(frozen=True)
class Routes:
    """The routes a tokenizer offers, found once (None: not offered)."""

    tokenize: Callable[[str], list[str]]
    name: str
    tokens_never_span_newlines: bool = False
    encode_batch: Callable | None = None
    tokenize_batch: Callable | None = None
    stem_token: Callable | None = None


def routes(tok: Tokenizer) -> Routes:
    marks = isinstance(tok, MarksBatches)
    return Routes(tok.tokenize, tok.name if isinstance(tok, Named) else type(tok).__name__,
                  isinstance(tok, LineLocal) and bool(tok.tokens_never_span_newlines),
                  tok.encode_batch if isinstance(tok, EncodesBatches) else None,
                  tok.tokenize_batch if marks else None, tok.stem_token if marks else None)


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
    if isinstance(tok, Tokenizer):
        return tok
    if callable(tok):
        return CallableTokenizer(tok)
    raise TypeError(f"a tokenizer needs a .tokenize(text) method or must be callable, got {type(tok)!r}")
