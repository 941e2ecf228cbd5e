"""What a profile is: whose numbers a run reproduces, and everything that follows from it.

A profile validates the settings only it reads, builds the scorer, gives its part of the
signature and writes any file of its own into the finished run folder.  Its module imports no
third-party package at import time (the registry is loaded by ``import pipeline``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

from pipeline.checks import ConfigError
from pipeline.scoring.engine import RougeEngine
from pipeline.scoring.family_types import is_extended

if TYPE_CHECKING:
    from pipeline.text.tokenizers import Tokenizer

class Settings(Protocol):
    """What a profile reads of the scoring settings.  :class:`pipeline.settings.ScoringSettings`
    is one; it sits above this registry (it validates itself through it), so it is not named here."""

    rouge_types: tuple
    use_stemmer: bool
    tokenizer: str
    sentence_splitter: str
    multi_ref: str
    language: str
    stemming: str
    cjk: str
    alpha: float
    remove_stopwords: bool
    length_limit_words: int | None
    length_limit_bytes: int | None


# the ROUGE-1.5.5 options: only the rouge155 profile reads them (at these values they are unset)
FAMILY_OPTION_DEFAULTS = {"remove_stopwords": False, "length_limit_words": None, "length_limit_bytes": None}
# the unicode profile's tokenizer settings
TEXT_OPTION_DEFAULTS = {"language": "en", "stemming": "none", "cjk": "chars"}


class Profile:
    """The default behaviour; a profile overrides what it changes."""

    name: str = ""
    default_multi_ref: str = "max_f"  # scoring.multi_ref when not set
    outputs: tuple[str, ...] = ()     # files of its own in the run folder (extra_outputs)

    def check(self, s: Settings) -> None:
        """``ConfigError`` naming ``scoring.<key>`` for a setting this profile cannot honour.
        Called after the settings every profile shares were checked."""
        for name, default in FAMILY_OPTION_DEFAULTS.items():
            if getattr(s, name) != default:
                raise ConfigError(f"scoring.{name}: only with profile 'rouge155' (ROUGE-1.5.5's -s/-l/-b)")

    def build_scorer(self, s: Settings, tokenizer: "Tokenizer | None" = None):
        """The scorer of these settings (``score_arrays``, ``score_arrow``, ``encode``);
        ``tokenizer``: a caller's own (``RougeScorer(tokenizer=...)``) where the profile takes one."""
        raise NotImplementedError

    def signature_parts(self, s: Settings) -> dict[str, str]:
        """Signature fields this profile sets (``tok``, ``stem``, ``profile``, ``opts``); the rest
        are :class:`pipeline.signature.Signature`'s own."""
        return {"profile": self.name}

    def extra_outputs(self, systems, s: Settings, stats,
                      read_scores: Callable[[str, list], Any]) -> dict[str, Any]:
        """``{name: JSON document}`` for each of :attr:`outputs`, from a finished run's scores
        (``read_scores(system, columns)``: a system's per-example scores, an Arrow table or None);
        the run folder's owner (:mod:`pipeline.runfolder`) writes them."""
        return {}


def rouge_score_scorer(s: Settings, tokenizer=None):
    """rouge-score's scorer on ``tokenizer`` (None: its own), or the family scorer where a type,
    the multi-reference rule or alpha is not rouge-score's."""
    from pipeline.rouge155.family import FamilyScorer  # loads the kernels: only when scoring (cold start)

    if is_extended(s.rouge_types) or s.multi_ref != "max_f" or s.alpha != 0.5:
        return FamilyScorer(list(s.rouge_types), use_stemmer=s.use_stemmer, tokenizer=tokenizer,
                            sentence_splitter=s.sentence_splitter, language=s.language,
                            multi_ref=s.multi_ref, alpha=s.alpha)
    return RougeEngine(list(s.rouge_types), use_stemmer=s.use_stemmer, tokenizer=tokenizer,
                       sentence_splitter=s.sentence_splitter, language=s.language)
