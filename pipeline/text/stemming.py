"""The Porter stemmer rouge-score uses, cached per unique token.

rouge-score 0.1.2 builds ``nltk.stem.porter.PorterStemmer()`` in its default
``NLTK_EXTENSIONS`` mode and stems every token longer than 3 characters, every
time it occurs.  We call the same nltk code (pinned in pyproject.toml, because
its output defines the numbers) once per unique token.
"""
from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def _porter():
    # Imported on first use: importing nltk costs ~0.6 s, and unstemmed runs never need it.
    from nltk.stem.porter import PorterStemmer

    return PorterStemmer()  # NLTK_EXTENSIONS, as rouge_score.tokenizers.DefaultTokenizer

# Bounded so a long-lived worker scoring an open vocabulary cannot grow without limit.
STEM_CACHE_SIZE = 1 << 20


@lru_cache(maxsize=STEM_CACHE_SIZE)
def porter_stem(token: str) -> str:
    """rouge-score's rule: only tokens longer than 3 characters are stemmed."""
    return _porter().stem(token) if len(token) > 3 else token
