"""Sentence splitters for rougeLsum.

* ``newline`` (default, rouge-score's ``split_summaries=False``): only ``"\\n"``
  separates sentences; empty lines are dropped.
* ``punkt``: ``nltk.sent_tokenize``, what rouge-score uses with
  ``split_summaries=True``.  It needs nltk's ``punkt_tab`` data, which rouge-score
  never downloads and we never download either; use it where that data is installed.
* ``sentencex``: Wikimedia's rule-based segmenter (PyPI ``sentencex``, maintained,
  ~300 languages, no model files).  Like Punkt it breaks after ``.``, ``?`` and ``!``
  and knows common abbreviations (``Dr.``, ``p.m.``); unlike Punkt it also breaks
  on paragraph breaks and needs no data download.  Its boundaries can differ from
  Punkt's on abbreviations Punkt learned from its training corpus, so the
  splitter is part of every run's signature.

``split_summaries=True`` picks ``punkt`` when its data is installed (identical to
rouge-score) and ``sentencex`` otherwise; the choice is recorded in the signature.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Callable

Splitter = Callable[[str], list[str]]


def split_newlines(text: str) -> list[str]:
    return [s for s in text.split("\n") if s]


def split_punkt(text: str) -> list[str]:
    import nltk  # optional splitters load only when chosen (cold start)

    return [s for s in nltk.sent_tokenize(text) if s]


@lru_cache(maxsize=1)
def punkt_available() -> bool:
    try:
        import nltk

        nltk.data.find("tokenizers/punkt_tab/english/")
        return True
    except (LookupError, ImportError):
        return False


def sentencex_splitter(language: str = "en") -> Splitter:
    from sentencex import segment

    def split(text: str) -> list[str]:
        return [s for s in segment(language, text) if s]

    return split


def get_splitter(name: str, language: str = "en") -> Splitter:
    if name == "newline":
        return split_newlines
    if name == "punkt":
        if not punkt_available():
            raise LookupError(
                "sentence splitter 'punkt' needs nltk's punkt_tab data, which is not installed; "
                "install it (python -m nltk.downloader punkt_tab) or use sentence_splitter='sentencex'"
            )
        return split_punkt
    if name == "sentencex":
        return sentencex_splitter(language)
    raise ValueError(f"unknown sentence splitter {name!r} (newline, punkt, sentencex)")


def resolve_splitter_name(split_summaries: bool, sentence_splitter: str | None) -> str:
    if sentence_splitter is not None:
        return sentence_splitter
    if not split_summaries:
        return "newline"
    return "punkt" if punkt_available() else "sentencex"
