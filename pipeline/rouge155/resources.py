"""The resources behind ROUGE-1.5.5's ``-m`` and ``-s`` options (shipped in ``data/``).

* :func:`exception_db` -- the WordNet-2.0 morphological exception table (inflected form ->
  base form) that ``-m`` consults before the Porter stemmer.
* :func:`stopwords` -- the SMART common-word list that ``-s`` removes.

See ``data/README.md`` for provenance and the WordNet licence.
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources

#: The exception lists, in the order they are merged (sorted file names; later wins).
EXCEPTION_FILES = ("adj.exc", "adv.exc", "noun.exc", "verb.exc")
STOPWORD_FILE = "smart_common_words.txt"


def _read_data(name: str) -> str:
    # The files are plain ASCII; latin-1 maps every byte to one character, like Perl.
    return resources.files("pipeline.rouge155").joinpath("data").joinpath(name).read_bytes().decode("latin-1")


@lru_cache(maxsize=None)
def exception_db() -> dict[str, str]:
    """Merge ``adj``, ``adv``, ``noun``, ``verb``.exc (in this order) into one dict.

    Each line maps its first field to its second; a later line overwrites an earlier one,
    so ``best``/``better`` -> ``well`` (adv after adj) and ``testes`` -> ``testes``.
    The result equals the ``WordNet-2.0.exc.db`` shipped with ROUGE-1.5.5 (5930 keys).
    """
    table: dict[str, str] = {}
    for name in EXCEPTION_FILES:
        for line in _read_data(name).split("\n"):
            fields = line.split()
            if len(fields) >= 2:
                table[fields[0]] = fields[1]
    return table


@lru_cache(maxsize=None)
def stopwords() -> frozenset[str]:
    """The 598 SMART common words (one a line; matched against tokens before stemming)."""
    return frozenset(w.strip() for w in _read_data(STOPWORD_FILE).split("\n") if w.strip())
