"""Tokenization profiles: which tokenizer a run's settings select.

* ``rouge-score-0.1.2`` (default): rouge-score's tokenizer (``[a-z0-9]`` only, optional
  nltk Porter stemming through ``use_stemmer``), run by the compiled encoder.
  :func:`make_tokenizer` returns ``None`` for it.
* ``unicode``: :class:`pipeline.text.unicode.UnicodeTokenizer` (NFKC, casefold, Unicode
  words, CJK characters or segmenters, optional Snowball stemming by language).
  Its tokens are mapped to ids by :func:`pipeline.text.encoder.encode_with_tokenizer`
  and scored by the same compiled kernels.
"""
from __future__ import annotations

from pipeline.text.snowball import snowball_algorithm, snowball_name

PROFILES = ("rouge-score-0.1.2", "unicode")
STEMMERS = ("none", "snowball")
CJK_MODES = ("chars", "segmenter")


def check_profile(profile: str, language: str = "en", stemmer: str = "none", cjk: str = "chars") -> None:
    """``ValueError`` naming the setting if the combination is not valid."""
    if profile not in PROFILES:
        raise ValueError(f"profile: expected one of {', '.join(PROFILES)}, got {profile!r}")
    if stemmer not in STEMMERS:
        raise ValueError(f"stemmer: expected one of {', '.join(STEMMERS)}, got {stemmer!r}")
    if cjk not in CJK_MODES:
        raise ValueError(f"cjk: expected one of {', '.join(CJK_MODES)}, got {cjk!r}")
    if not isinstance(language, str) or not language.isalpha() or not 2 <= len(language) <= 3:
        raise ValueError(f"language: expected an ISO 639 code such as 'de', got {language!r}")
    if profile != "unicode":
        if stemmer != "none":
            raise ValueError(f"stemmer: {stemmer!r} needs profile 'unicode' "
                             "(the rouge-score profile stems with use_stemmer: Porter)")
        if cjk != "chars":
            raise ValueError(f"cjk: {cjk!r} needs profile 'unicode'")
    elif stemmer == "snowball":
        try:
            snowball_algorithm(language)
        except ValueError as e:
            raise ValueError(f"stemmer: {e}") from None


def make_tokenizer(profile: str = "rouge-score-0.1.2", language: str = "en", stemmer: str = "none",
                   cjk: str = "chars"):
    """The tokenizer for these settings, or ``None`` for rouge-score's default tokenizer."""
    check_profile(profile, language, stemmer, cjk)
    if profile != "unicode":
        return None
    from pipeline.text.unicode import UnicodeTokenizer  # compiles its patterns: only for this profile (cold start)

    return UnicodeTokenizer(language=language, stem=stemmer == "snowball", cjk=cjk)


def signature_parts(profile: str, language: str = "en", stemmer: str = "none",
                    cjk: str = "chars") -> tuple[str, str]:
    """``(tok, stem)`` signature fields of the ``unicode`` profile (nothing is loaded)."""
    from pipeline.text.unicode import tokenizer_name  # as make_tokenizer (cold start)

    check_profile(profile, language, stemmer, cjk)
    return tokenizer_name(language.lower(), cjk), (snowball_name(language) if stemmer == "snowball" else "no")
