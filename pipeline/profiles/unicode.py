"""``unicode``: any script (NFKC, casefold, Unicode words, CJK characters or segmenters,
optional Snowball stemming by language), scored by the same kernels as rouge-score's profile.

The tokenizer is :class:`pipeline.text.unicode.UnicodeTokenizer`; its name (language, CJK
method, Unicode data versions) is the signature's ``tok``.
"""
from __future__ import annotations

from pipeline.checks import ConfigError
from pipeline.profiles.base import Profile, rouge_score_scorer
from pipeline.profiles.rouge_score import check_text_options
from pipeline.text.snowball import snowball_algorithm, snowball_name


class UnicodeProfile(Profile):
    name = "unicode"

    def check(self, s) -> None:
        super().check(s)
        check_text_options(s)
        if s.stemming == "snowball":
            try:
                snowball_algorithm(s.language)
            except ValueError as e:
                raise ConfigError(f"scoring.stemming: {e}") from None
        if s.use_stemmer:
            raise ConfigError("scoring.use_stemmer: the unicode profile stems with scoring.stemming: snowball")
        if s.tokenizer != "default":
            raise ConfigError(f"scoring.tokenizer: {s.tokenizer!r} cannot be combined with profile 'unicode'")

    def build_scorer(self, s, tokenizer=None):
        if tokenizer is not None:
            raise ValueError(f"tokenizer: a custom tokenizer cannot be combined with profile {self.name!r}")
        from pipeline.text.unicode import UnicodeTokenizer  # compiles its patterns: only for this profile (cold start)

        return rouge_score_scorer(s, UnicodeTokenizer(language=s.language, stem=s.stemming == "snowball", cjk=s.cjk))

    def signature_parts(self, s) -> dict[str, str]:
        from pipeline.text.unicode import tokenizer_name  # as build_scorer (cold start)

        return {"tok": tokenizer_name(s.language.lower(), s.cjk),
                "stem": snowball_name(s.language) if s.stemming == "snowball" else "no", "profile": self.name}


PROFILE = UnicodeProfile()
