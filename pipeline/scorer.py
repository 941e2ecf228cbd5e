"""``RougeScorer``: rouge-score's API, same numbers, compiled batches underneath.

Changing ``from rouge_score.rouge_scorer import RougeScorer`` to
``from pipeline import RougeScorer`` gives identical ``Score`` tuples.  Whole lists
go through :meth:`RougeScorer.score_batch` (rouge-score-rs's name),
:meth:`RougeScorer.score_arrays` (columnar NumPy) or :meth:`RougeScorer.score_table`
(Arrow), each one encoder pass and one kernel call per batch.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from pipeline import profiles
from pipeline.checks import ConfigError
from pipeline.scoring import engine
from pipeline.scoring.engine import Score, _compiled, default_encoder  # noqa: F401 - this module's names, as before
from pipeline.scoring.types import is_family_name
from pipeline.settings import ScoringSettings
from pipeline.text.sentences import resolve_splitter_name
from pipeline.text.tokenizers import as_tokenizer, routes

if TYPE_CHECKING:
    from pipeline.scoring.batch import BatchScores
    from pipeline.text.csr import EncodedDocs

DEFAULT_PROFILE = profiles.DEFAULT


class RougeScorer(engine.RougeEngine):
    """rouge-score's ``RougeScorer`` (same arguments, same ``Score`` numbers), plus the pipeline's
    scoring options.

    ``rouge_types``: rouge-score's ``rouge1``..``rouge9``, ``rougeL``, ``rougeLsum``, and the ROUGE
    family's ``rougeW-<weight>``, ``rougeS<gap>``, ``rougeSU<gap>``, ``rougeS*``, ``rougeSU*``.
    ``use_stemmer``, ``split_summaries``, ``tokenizer`` (an object with ``.tokenize(text)`` or a
    callable; it makes ``use_stemmer`` a no-op, as in rouge-score): rouge-score's.
    ``sentence_splitter``: ``newline`` | ``punkt`` | ``sentencex`` for rougeLsum.
    Keyword-only, as in a run's ``scoring`` section (docs/configuration.md): ``profile``
    (``rouge-score-0.1.2`` | ``unicode`` | ``rouge155``), ``language``, ``stemming`` and ``cjk``
    (unicode profile), ``multi_ref`` (``max_f`` | ``pooled``/``A`` | ``best_recall``/``B`` |
    ``mean``; default ``max_f``, ``A`` with ``rouge155``), ``alpha`` (F = PR / ((1-alpha)P +
    alpha R)), ``remove_stopwords``, ``length_limit_words``, ``length_limit_bytes`` (rouge155).
    Every option gives the numbers a YAML run with the same ``scoring`` settings writes.
    """

    def __init__(self, rouge_types, use_stemmer: bool = False, split_summaries: bool = False,
                 tokenizer=None, sentence_splitter: str | None = None, language: str = "en", *,
                 profile: str = DEFAULT_PROFILE, multi_ref: str | None = None, alpha: float = 0.5,
                 stemming: str = "none", cjk: str = "chars", remove_stopwords: bool = False,
                 length_limit_words: int | None = None, length_limit_bytes: int | None = None):
        options = dict(profile=profile, multi_ref=multi_ref, alpha=alpha, stemming=stemming, cjk=cjk,
                       remove_stopwords=remove_stopwords, length_limit_words=length_limit_words,
                       length_limit_bytes=length_limit_bytes)
        self.profile = profile
        self.multi_ref = multi_ref or profiles.default_multi_ref(profile)
        self.alpha = alpha
        self.language = language
        self._delegate = None
        if not isinstance(rouge_types, (list, tuple, str)):
            rouge_types = list(rouge_types)  # read twice below (a generator would be empty the second time)
        names = list(dict.fromkeys(rouge_types))
        # rouge-score's own types on its own options take the engine's path; the ROUGE family's
        # types and every other option go through the profile's scorer
        extended = any(is_family_name(n) for n in names)
        if extended or profile != DEFAULT_PROFILE or multi_ref not in (None, "max_f") or alpha != 0.5 \
                or stemming != "none" or cjk != "chars" or remove_stopwords or length_limit_words \
                or length_limit_bytes:
            self._delegate = _family_scorer(names, use_stemmer, split_summaries, tokenizer, sentence_splitter,
                                            language, options)
            self.types = None
            self.rouge_types = list(dict.fromkeys(names))
            self.use_stemmer = use_stemmer
            self.split_summaries = split_summaries
            self.sentence_splitter = resolve_splitter_name(split_summaries, sentence_splitter)
            self._tokenizer = None if tokenizer is None else as_tokenizer(tokenizer)
            self._routes = None if tokenizer is None else routes(self._tokenizer)
            self._default_stream = False
            return
        super().__init__(rouge_types, use_stemmer, split_summaries, tokenizer, sentence_splitter, language)

    def encode(self, texts: Sequence[str]) -> EncodedDocs:
        """Token ids of ``texts`` for the kernels (the profile's scorer's, with other options)."""
        if self._delegate is not None:
            return self._delegate.encode(texts)
        return super().encode(texts)

    def score_arrays(self, references, candidates: Sequence[str]) -> BatchScores:
        """Columnar scoring.  ``references[i]`` is one text or a list of texts (combined by
        ``multi_ref``); the result's ``scores[e, t]`` is (precision, recall, fmeasure)."""
        if self._delegate is not None:
            return self._delegate.score_arrays(references, candidates)
        return super().score_arrays(references, candidates)

    def score_arrow(self, references, candidates) -> BatchScores:
        """:meth:`score_arrays` on Arrow columns (``references``: strings or lists of strings)."""
        if self._delegate is not None:
            arrow = getattr(self._delegate, "score_arrow", None)
            if arrow is not None:
                return arrow(references, candidates)
            return self._delegate.score_arrays(references.to_pylist(), candidates.to_pylist())
        return super().score_arrow(references, candidates)


def _family_scorer(names, use_stemmer, split_summaries, tokenizer, sentence_splitter, language, options):
    """The scorer a run with these ``scoring`` settings uses (its profile's), validated as a run's
    configuration is; with a custom tokenizer, the profile's scorer on it."""
    splitter = resolve_splitter_name(split_summaries, sentence_splitter)
    try:
        sc = ScoringSettings(rouge_types=list(names), use_stemmer=bool(use_stemmer), sentence_splitter=splitter,
                             language=language, **options)
    except ConfigError as e:
        raise ValueError(str(e).replace("scoring.", "", 1)) from None
    return profiles.get(sc.profile).build_scorer(sc, None if tokenizer is None else as_tokenizer(tokenizer))
