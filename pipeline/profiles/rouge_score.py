"""``rouge-score-0.1.2`` (the default): Google's rouge-score 0.1.2 numbers, bit for bit.

Its tokenizer keeps ``[a-z0-9]`` runs (optional nltk Porter stemming: ``use_stemmer``) and runs
in the compiled encoder; ``tokenizer: whitespace`` or a caller's own tokenizer replace it.
"""
from __future__ import annotations

from pipeline.checks import ConfigError
from pipeline.profiles.base import TEXT_OPTION_DEFAULTS, Profile, rouge_score_scorer
from pipeline.text.tokenizers import WhitespaceTokenizer

STEMMINGS = ("none", "snowball")
CJK_MODES = ("chars", "segmenter")


def check_text_options(s) -> None:
    """``language``, ``stemming``, ``cjk``: valid values (which profile reads them is its own check)."""
    if s.stemming not in STEMMINGS:
        raise ConfigError(f"scoring.stemming: expected one of {', '.join(STEMMINGS)}, got {s.stemming!r}")
    if s.cjk not in CJK_MODES:
        raise ConfigError(f"scoring.cjk: expected one of {', '.join(CJK_MODES)}, got {s.cjk!r}")
    lang = s.language
    if not isinstance(lang, str) or not lang.isalpha() or not 2 <= len(lang) <= 3:
        raise ConfigError(f"scoring.language: expected an ISO 639 code such as 'de', got {lang!r}")


class RougeScoreProfile(Profile):
    name = "rouge-score-0.1.2"

    def check(self, s) -> None:
        super().check(s)
        check_text_options(s)
        if s.stemming != TEXT_OPTION_DEFAULTS["stemming"]:
            raise ConfigError(f"scoring.stemming: {s.stemming!r} needs profile 'unicode' "
                              "(the rouge-score profile stems with use_stemmer: Porter)")
        if s.cjk != TEXT_OPTION_DEFAULTS["cjk"]:
            raise ConfigError(f"scoring.cjk: {s.cjk!r} needs profile 'unicode'")

    def build_scorer(self, s, tokenizer=None):
        if tokenizer is None and s.tokenizer == "whitespace":
            tokenizer = WhitespaceTokenizer()
        elif s.tokenizer != "default":
            raise ValueError(f"unknown tokenizer {s.tokenizer!r} (default, whitespace)")
        return rouge_score_scorer(s, tokenizer)


PROFILE = RougeScoreProfile()
