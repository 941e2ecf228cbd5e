"""Snowball stemmers by ISO 639-1 language code (PyPI ``snowballstemmer``, pure Python).

``snowballstemmer`` ships the Snowball project's generated stemmers (36 algorithms,
34 languages); nothing is downloaded at run time.  Its stems depend on its version,
so the version is part of :attr:`SnowballStemmer.name` (and so of the run's signature).

Stemmers expect lowercase input; :class:`pipeline.text.unicode.UnicodeTokenizer`
case-folds before stemming.  Each stemmer caches its stems per token (a dict,
cleared past ``MAX_CACHE`` entries), so a corpus pays for each distinct word once.
"""
from __future__ import annotations

import threading
from functools import lru_cache
from importlib.metadata import version

# ISO 639-1 (or 639-3 where there is no 639-1 code) -> snowballstemmer algorithm.
# English uses Snowball's "english" (Porter2), not nltk's Porter of rouge-score's profile.
SNOWBALL_LANGUAGES = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "cs": "czech",
    "da": "danish", "nl": "dutch", "en": "english", "eo": "esperanto", "et": "estonian",
    "fi": "finnish", "fr": "french", "de": "german", "el": "greek", "hi": "hindi",
    "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian", "lt": "lithuanian",
    "ne": "nepali", "no": "norwegian", "nb": "norwegian", "nn": "norwegian", "fa": "persian",
    "pl": "polish", "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian",
    "st": "sesotho", "es": "spanish", "sv": "swedish", "ta": "tamil", "tr": "turkish",
    "yi": "yiddish",
}


def _package_version() -> str:
    return version("snowballstemmer")


@lru_cache(maxsize=None)
def snowball_algorithm(language: str) -> str:
    """The snowballstemmer algorithm for ``language``; ``ValueError`` if there is none."""
    import snowballstemmer  # loads every algorithm: only when a stemmer is asked for (cold start)

    algo = SNOWBALL_LANGUAGES.get(language.lower())
    if algo is None or algo not in snowballstemmer.algorithms():
        known = ", ".join(sorted(k for k, v in SNOWBALL_LANGUAGES.items() if v in snowballstemmer.algorithms()))
        raise ValueError(f"no Snowball stemmer for language {language!r} (available: {known})")
    return algo


def snowball_name(language: str) -> str:
    """``snowball-<algorithm>-snowballstemmer<version>``: what the signature records."""
    return f"snowball-{snowball_algorithm(language)}-snowballstemmer{_package_version()}"


class SnowballStemmer:
    """``stem(word)`` / ``stem_all(words)`` with a per-token cache; thread-safe."""

    MAX_CACHE = 1_000_000

    def __init__(self, language: str):
        import snowballstemmer

        self.language = language
        self.algorithm = snowball_algorithm(language)
        self.name = snowball_name(language)
        self._stemmer = snowballstemmer.stemmer(self.algorithm)
        self._cache: dict[str, str] = {}
        self._lock = threading.Lock()  # Snowball stemmer objects keep state while stemming

    def stem(self, word: str) -> str:
        s = self._cache.get(word)
        if s is None:
            with self._lock:
                if len(self._cache) >= self.MAX_CACHE:
                    self._cache.clear()
                s = self._cache[word] = self._stemmer.stemWord(word)
        return s

    def stem_all(self, words: list[str]) -> list[str]:
        cache = self._cache
        try:
            return [cache[w] for w in words]
        except KeyError:
            return [self.stem(w) for w in words]

    def __getstate__(self):  # picklable (Dask): rebuild the stemmer on the other side
        return {"language": self.language}

    def __setstate__(self, state):
        self.__init__(state["language"])
