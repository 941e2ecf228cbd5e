"""``ScoringSettings``: the 14 settings that decide every number, validated once, frozen.

The ``scoring`` section of a run configuration (docs/configuration.md), ``RougeScorer``'s and
``pipeline.compute``'s options and the workers' task context are this one type.  Building one
validates it (``ConfigError`` naming ``scoring.<key>``); the profile (:mod:`pipeline.profiles`)
checks the settings only it reads.  ``multi_ref`` left unset is the profile's own rule
(``max_f``; ``A`` with ``rouge155``), resolved here, so the recorded settings name it.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pipeline import profiles
from pipeline.checks import ConfigError, check_bool, check_choice, check_int, check_str
from pipeline.scoring.family_types import MULTI_REF_NAMES, check_alpha, parse_family_types
from pipeline.scoring.types import DEFAULT_TYPES

TOKENIZERS = ("default", "whitespace")
SENTENCE_SPLITTERS = ("newline", "punkt", "sentencex")
MULTI_REF = MULTI_REF_NAMES  # the old name (pipeline.config re-exports it)


@dataclass(frozen=True)
class ScoringSettings:
    rouge_types: tuple = DEFAULT_TYPES
    use_stemmer: bool = False
    tokenizer: str = "default"
    sentence_splitter: str = "newline"
    multi_ref: str | None = None  # None: the profile's (max_f, or A with profile rouge155)
    profile: str = profiles.DEFAULT
    language: str = "en"
    stemming: str = "none"
    cjk: str = "chars"
    diagnostics: bool = True  # pipeline.scoring.diagnostics columns after the score columns
    alpha: float = 0.5  # F = PR / ((1-alpha) P + alpha R); alpha = 1 / (1 + beta^2)
    remove_stopwords: bool = False  # profile rouge155: -s
    length_limit_words: int | None = None  # profile rouge155: -l N
    length_limit_bytes: int | None = None  # profile rouge155: -b N

    def __post_init__(self):
        rt = self.rouge_types
        if isinstance(rt, str):
            rt = [s.strip() for s in rt.split(",") if s.strip()]
        if not isinstance(rt, (list, tuple)) or not all(isinstance(x, str) for x in rt):
            raise ConfigError(f"scoring.rouge_types: expected a list of names, got {list(rt) if isinstance(rt, tuple) else rt!r}")
        def set_(name, value):  # frozen: the normalised values are set once, here
            object.__setattr__(self, name, value)

        set_("rouge_types", tuple(rt))
        try:
            parse_family_types(rt)
        except ValueError as e:
            raise ConfigError(f"scoring.rouge_types: {e}") from None
        if self.multi_ref is None:
            set_("multi_ref", profiles.default_multi_ref(self.profile))
        try:
            set_("alpha", check_alpha(self.alpha))
        except ValueError as e:
            raise ConfigError(f"scoring.{e}") from None
        check_bool(self.remove_stopwords, "scoring.remove_stopwords")
        check_int(self.length_limit_words, "scoring.length_limit_words", minimum=1, allow_none=True)
        check_int(self.length_limit_bytes, "scoring.length_limit_bytes", minimum=1, allow_none=True)
        if len(set(rt)) != len(rt):
            raise ConfigError(f"scoring.rouge_types: duplicate type in {list(rt)}")
        check_bool(self.use_stemmer, "scoring.use_stemmer")
        check_choice(self.tokenizer, "scoring.tokenizer", TOKENIZERS)
        check_choice(self.sentence_splitter, "scoring.sentence_splitter", SENTENCE_SPLITTERS)
        check_choice(self.multi_ref, "scoring.multi_ref", MULTI_REF)
        check_choice(self.profile, "scoring.profile", profiles.names())
        check_str(self.language, "scoring.language")
        check_bool(self.diagnostics, "scoring.diagnostics")
        profiles.get(self.profile).check(self)

    def validate(self) -> "ScoringSettings":
        """Validated when built; kept so every config section has ``validate()``."""
        return self

    @classmethod
    def from_config(cls, sc) -> "ScoringSettings":
        """``sc`` itself, or the settings of anything with these attributes."""
        if isinstance(sc, cls):
            return sc
        return cls(**{f.name: getattr(sc, f.name) for f in dataclasses.fields(cls) if hasattr(sc, f.name)})

    def to_dict(self) -> dict:
        """Plain values (``rouge_types`` a list), as recorded in ``_run.json``."""
        out = dataclasses.asdict(self)
        out["rouge_types"] = list(self.rouge_types)
        return out
