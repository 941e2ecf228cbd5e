"""The Porter stemmer rouge-score uses, cached per unique token.

rouge-score 0.1.2 builds ``nltk.stem.porter.PorterStemmer()`` in its default
``NLTK_EXTENSIONS`` mode and stems every token longer than 3 characters, every
time it occurs.  We call the same nltk code (pinned in pyproject.toml, because
its output defines the numbers) once per unique token.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types
from functools import lru_cache


@lru_cache(maxsize=1)
def _porter():
    """nltk's ``PorterStemmer()`` (NLTK_EXTENSIONS mode, as rouge_score.tokenizers.DefaultTokenizer)."""
    if "nltk" in sys.modules:  # the package is loaded anyway: use it as it is
        from nltk.stem.porter import PorterStemmer  # nltk loads at first stem only (cold start)

        return PorterStemmer()
    return _isolated_porter()


def _isolated_porter():
    """nltk's own ``nltk/stem/porter.py``, loaded without running ``nltk/__init__.py``, which
    imports ~0.5 s of unrelated modules (a third of a fresh process's first call).

    ``nltk`` and ``nltk.stem`` are bare package shells over their real folders while the module
    and the three leaf modules it imports (``api``, ``redos``, ``termsec``) load; then every
    ``nltk`` entry is removed from ``sys.modules`` again, so a later ``import nltk`` is a normal,
    complete import.  The stemmer is the same code (tests compare it with the package's)."""
    spec = importlib.util.find_spec("nltk")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("nltk is required for use_stemmer=True")
    root = spec.submodule_search_locations[0]
    before = set(sys.modules)
    pkg = types.ModuleType("nltk")
    pkg.__path__ = [root]
    sub = types.ModuleType("nltk.stem")
    sub.__path__ = [os.path.join(root, "stem")]
    sys.modules["nltk"], sys.modules["nltk.stem"] = pkg, sub
    try:
        return importlib.import_module("nltk.stem.porter").PorterStemmer()
    finally:
        for name in set(sys.modules) - before:
            if name == "nltk" or name.startswith("nltk."):
                del sys.modules[name]


# Bounded so a long-lived worker scoring an open vocabulary cannot grow without limit.
STEM_CACHE_SIZE = 1 << 20


@lru_cache(maxsize=STEM_CACHE_SIZE)
def porter_stem(token: str) -> str:
    """rouge-score's rule: only tokens longer than 3 characters are stemmed."""
    return _porter().stem(token) if len(token) > 3 else token
