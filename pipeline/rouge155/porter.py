"""ROUGE-1.5.5's stemmer: the WordNet exception table, then a modified Porter stemmer.

Written from the behavioural description in ``shared/reference/rouge155-semantics.md`` §3.4
(not from the Perl source).  The Porter part follows Martin Porter's published algorithm as
in his Perl reference implementation -- including its ``bli -> ble`` and ``logi -> log``
departures -- with Chin-Yew Lin's change of step 4:

* standard Porter removes only the single longest step-4 suffix;
* ROUGE-1.5.5 tries three independent rules in turn: the one-suffix rule (the standard list
  *without* ``ment`` and ``ent``), then ``ment``, then ``ent`` -- the last with ``(s|t)ion``
  as its ``else`` branch.  So ``document -> docum``, ``agreement -> agreem``,
  ``accidental -> accid``, ``implementation -> implem``.

Regular expressions are used exactly as the algorithm states its conditions (measure m of
the stem etc.); every suffix test anchors at the end, so Perl's leftmost match equals the
longest listed suffix.
"""
from __future__ import annotations

import re
from functools import lru_cache

from pipeline.rouge155.resources import exception_db

# Porter's character classes: consonant c, vowel v, consonant run C, vowel run V.
_c = "[^aeiou]"
_v = "[aeiouy]"
_C = _c + "[^aeiouy]*"
_V = _v + "[aeiou]*"

_MGR0 = re.compile(f"^({_C})?{_V}{_C}")              # measure m > 0
_MEQ1 = re.compile(f"^({_C})?{_V}{_C}({_V})?$")      # m == 1
_MGR1 = re.compile(f"^({_C})?{_V}{_C}{_V}{_C}")      # m > 1
_HAS_VOWEL = re.compile(f"^({_C})?{_v}")             # the stem contains a vowel
_CVC = re.compile(f"^{_C}{_v}[^aeiouwxy]$")          # *o: consonant-vowel-consonant (not w, x, y)

_STEP2 = {
    "ational": "ate", "tional": "tion", "enci": "ence", "anci": "ance", "izer": "ize",
    "bli": "ble", "alli": "al", "entli": "ent", "eli": "e", "ousli": "ous",
    "ization": "ize", "ation": "ate", "ator": "ate", "alism": "al", "iveness": "ive",
    "fulness": "ful", "ousness": "ous", "aliti": "al", "iviti": "ive", "biliti": "ble",
    "logi": "log",
}
_STEP3 = {
    "icate": "ic", "ative": "", "alize": "al", "iciti": "ic", "ical": "ic", "ful": "", "ness": "",
}
# Step 4's one-suffix list; CYL moved ``ment`` and ``ent`` out of it into their own rules.
_STEP4 = ("al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement",
          "ou", "ism", "ate", "iti", "ous", "ive", "ize")


def _longest_suffix(word: str, suffixes) -> str | None:
    found = None
    for s in suffixes:
        if word.endswith(s) and (found is None or len(s) > len(found)):
            found = s
    return found


def porter_stem(word: str) -> str:
    """Porter's stemmer with ROUGE-1.5.5's step-4 change, for a lowercase token."""
    if len(word) < 3:
        return word
    # An initial y is a consonant: map it to Y (outside every vowel class) until the end.
    initial_y = word[0] == "y"
    if initial_y:
        word = "Y" + word[1:]

    # Step 1a: plurals.
    if word.endswith("sses") or word.endswith("ies"):
        word = word[:-2]
    elif len(word) >= 2 and word[-1] == "s" and word[-2] != "s":
        word = word[:-1]

    # Step 1b: -eed, -ed, -ing.
    if word.endswith("eed"):
        if _MGR0.search(word[:-3]):
            word = word[:-1]
    else:
        suffix = "ed" if word.endswith("ed") else "ing" if word.endswith("ing") else None
        if suffix is not None:
            stem = word[: -len(suffix)]
            if _HAS_VOWEL.search(stem):
                word = stem
                if word.endswith(("at", "bl", "iz")):
                    word += "e"
                elif len(word) >= 2 and word[-1] == word[-2] and word[-1] not in "aeiouylsz":
                    word = word[:-1]
                elif _CVC.search(word):
                    word += "e"

    # Step 1c: y -> i after a vowel-containing stem.
    if word.endswith("y") and _HAS_VOWEL.search(word[:-1]):
        word = word[:-1] + "i"

    # Step 2 and step 3: map the longest listed suffix when the stem has m > 0.
    for table in (_STEP2, _STEP3):
        suffix = _longest_suffix(word, table)
        if suffix is not None:
            stem = word[: -len(suffix)]
            if _MGR0.search(stem):
                word = stem + table[suffix]

    # Step 4 (CYL's version): three independent rules, each needing m > 1.
    suffix = _longest_suffix(word, _STEP4)
    if suffix is not None and _MGR1.search(word[: -len(suffix)]):
        word = word[: -len(suffix)]
    if word.endswith("ment") and _MGR1.search(word[:-4]):
        word = word[:-4]
    if word.endswith("ent"):
        if _MGR1.search(word[:-3]):
            word = word[:-3]
    elif word.endswith(("sion", "tion")):
        if _MGR1.search(word[:-3]):
            word = word[:-3]

    # Step 5: final -e and -ll.
    if word.endswith("e"):
        stem = word[:-1]
        if _MGR1.search(stem) or (_MEQ1.search(stem) and not _CVC.search(stem)):
            word = stem
    if word.endswith("ll") and _MGR1.search(word):
        word = word[:-1]

    if initial_y:
        word = "y" + word[1:]
    return word


@lru_cache(maxsize=1 << 16)
def morph_stem(token: str) -> str:
    """ROUGE-1.5.5's ``-m`` stem of one token (the caller applies it only when len > 3).

    A token found in the WordNet-2.0 exception table is replaced by its base form, which is
    **not** stemmed further (``mice -> mouse`` while ``mouse -> mous``); any other token goes
    through :func:`porter_stem`.
    """
    base = exception_db().get(token)
    if base is not None:
        return base
    return porter_stem(token)
