"""``pipeline.compute``: lists in, corpus scores out, in one call (Hugging Face ``evaluate``'s rouge
arguments and return shape).

```python
import pipeline
pipeline.compute(predictions=["the cat is on the mat"], references=["the cat sat on the mat"])
# {'rouge1': 0.833..., 'rouge2': 0.6, 'rougeL': 0.833..., 'rougeLsum': 0.833...}
```

Replacing ``evaluate.load("rouge").compute(...)`` by ``pipeline.compute(...)`` keeps every
argument: ``use_aggregator=True`` gives, per type, the ``mid`` F-measure of rouge-score's
``BootstrapAggregator`` (the median of ``n_boot`` bootstrap means: evaluate's number, seeded);
``use_aggregator=False`` the per-example F lists.  ``references[i]`` is a text or a list of
texts (max-F reference by default, as ``score_multi``).  ``return_result=True`` returns a
:class:`RougeResult` (exact means of P, R and F, the bootstrap low/mid/high, the signature).
``systems=`` (a name per prediction) scores each system on its own examples: ``{system: ...}``,
never one number pooled over several systems.

In process, no Dask; NumPy only, and small inputs are scored without loading numba.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from pipeline.scorer import DEFAULT_PROFILE, RougeScorer, Score
from pipeline.scoring.types import DEFAULT_TYPES, STATS
from pipeline.settings import ScoringSettings
from pipeline.signature import Signature
from pipeline.stats.keys import DEFAULT_SEED, MAX_N_BOOT
from pipeline.stats.rows import QUANTILE_KEYS, ROW_KEYS
from pipeline.stats.rouge_score_bootstrap import AggregateScore, bootstrap_aggregate, bootstrap_percentiles
from pipeline.text.sentences import resolve_splitter_name


@dataclass
class RougeResult:
    """Corpus result of :func:`compute`.

    ``mean[type]``: ``Score`` of the exact means (correctly rounded sums) of per-example P, R, F;
    ``aggregate[type]``: rouge-score's ``AggregateScore(low, mid, high)`` (empty when
    ``n_boot=0``; computed when first read); ``f_interval()``: its F alone, without the P and R
    resample means; ``scores``: float64 ``(n, types, 3)`` per-example P, R, F.
    """

    rouge_types: list
    scores: np.ndarray
    mean: dict
    _aggregate: dict | None  # None: not computed yet (``aggregate``)
    confidence: float
    n_boot: int
    seed: int
    settings: dict = field(default_factory=dict, repr=False)
    tokenizer_name: str = "default"
    system: str | None = None   # compute(systems=...): the system these examples are of

    def _by_type(self) -> dict:
        return {t: self.scores[:, i, :] for i, t in enumerate(self.rouge_types)}

    @property
    def aggregate(self) -> dict:
        """``{type: AggregateScore(low, mid, high)}``: rouge-score's bootstrap, seeded (``{}``
        when ``n_boot=0``)."""
        if self._aggregate is None:
            self._aggregate = bootstrap_aggregate(self._by_type(), self.seed, self.n_boot, self.confidence) \
                if self.n_boot > 0 else {}
        return self._aggregate

    def f_interval(self) -> dict:
        """``{type: (low, mid, high)}`` of F: ``aggregate``'s, summing only the F column when
        ``aggregate`` has not been read (the same draws, so the same numbers); ``{}`` when
        ``n_boot=0``."""
        if self._aggregate is not None or self.n_boot <= 0:
            return {t: (a.low.fmeasure, a.mid.fmeasure, a.high.fmeasure) for t, a in self.aggregate.items()}
        pct = bootstrap_percentiles(self._by_type(), self.seed, self.n_boot, self.confidence, cols=[2])
        return {t: tuple(float(v) for v in p[:, 0]) for t, p in pct.items()}

    @property
    def n(self) -> int:
        """Number of examples."""
        return int(self.scores.shape[0])

    @property
    def signature(self) -> str:
        """The sacrebleu-style signature of every setting that changes a number."""
        sc = ScoringSettings(**self.settings)
        st = SimpleNamespace(bootstrap="rouge-score", n_boot=self.n_boot, seed=self.seed, confidence=self.confidence)
        sig = Signature.from_config(SimpleNamespace(scoring=sc, stats=st))
        fields = dict(sig.__dict__)
        if self.n_boot > 0:  # rouge-score's bootstrap, not the run's bucketed Poisson one
            fields["bs"] = f"rouge-score-{self.n_boot}"
        if self.tokenizer_name != "default":  # a custom tokenizer: use_stemmer is a no-op
            fields.update(tok=self.tokenizer_name, stem="no")
        return str(Signature(**fields))

    def fmeasure(self) -> dict:
        """``{type: F}``: what ``compute`` returns with ``use_aggregator=True`` (the bootstrap mid,
        or the exact mean when ``n_boot=0``)."""
        if self.n_boot > 0:
            return {t: float(f[1]) for t, f in self.f_interval().items()}
        return {t: m.fmeasure for t, m in self.mean.items()}

    def per_example(self) -> list[dict]:
        """One ``{type: Score}`` per example."""
        return [{t: Score(*map(float, self.scores[e, k])) for k, t in enumerate(self.rouge_types)}
                for e in range(self.n)]

    def rows(self) -> list[dict]:
        """One row per (type, stat), in the statistics rows' one shape (:data:`pipeline.stats.rows.ROW_KEYS`,
        a run's too): exact mean, std, min, max and quantiles (``quantile_error`` 0.0), rouge-score's
        bootstrap low/mid/high as ``ci_low``/``ci_mid``/``ci_high``."""
        out = []
        for j, t in enumerate(self.rouge_types):
            a = self.aggregate.get(t)
            for k, stat in enumerate(STATS):
                x = self.scores[:, j, k]
                row = {"system": self.system or "", "type": t, "stat": stat, "count": self.n, "mean": self.mean[t][k],
                       "std": float(np.std(x, ddof=1)) if self.n > 1 else None,
                       "min": float(x.min()) if self.n else None, "max": float(x.max()) if self.n else None,
                       **{key: float(np.quantile(x, q)) if self.n else None for key, q in QUANTILE_KEYS},
                       "quantile_error": 0.0,
                       "ci_low": float(a.low[k]) if a else None, "ci_mid": float(a.mid[k]) if a else None,
                       "ci_high": float(a.high[k]) if a else None, "confidence": self.confidence,
                       "ci_method": "rouge-score-bootstrap", "n_boot": self.n_boot, "boot_buckets": None,
                       "seed": self.seed}
                out.append({key: row[key] for key in ROW_KEYS})
        return out

    def to_dict(self, rows: bool = True) -> dict:
        """JSON-ready: the rows (:meth:`rows`; ``rows=False``: without them), the confidence, the
        bootstrap settings and the signature."""
        first = {} if self.system is None else {"system": self.system}
        return {**first, "n": self.n, "confidence": self.confidence, "n_boot": self.n_boot, "seed": self.seed,
                "signature": self.signature, **({"rows": self.rows()} if rows else {})}


def _fsum_mean(col: np.ndarray) -> float:
    return math.fsum(col.tolist()) / col.shape[0]


def _type_names(rouge_types) -> list:
    """The types asked for: one name given as a text is that name (evaluate's rouge takes it),
    never its characters; no type, or a type named twice (two columns of one number), is refused."""
    if rouge_types is None:
        return list(DEFAULT_TYPES)
    types = [rouge_types] if isinstance(rouge_types, str) else list(rouge_types)
    if not types:
        raise ValueError("compute: rouge_types is empty: give at least one type")
    twice = sorted({t for t in types if types.count(t) > 1}, key=str)
    if twice:
        raise ValueError(f"compute: rouge_types names {', '.join(map(repr, twice))} twice: {types!r}")
    return types


def _system_groups(systems, n: int) -> dict[str, list[int]]:
    """``{system: [example index, ...]}``, systems in sorted order (as a run's table)."""
    systems = list(systems)
    if len(systems) != n:
        raise ValueError(f"compute: {len(systems)} systems for {n} predictions (one system name per prediction)")
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(systems):
        if isinstance(s, bool) or not isinstance(s, (str, int)):
            raise ValueError(f"compute: systems[{i}] is not a system name (a text): {s!r:.60}")
        groups.setdefault(str(s), []).append(i)
    return {s: groups[s] for s in sorted(groups)}


def _aggregate(scores: np.ndarray, types: list, confidence: float, n_boot: int, seed: int, settings: dict,
               tokenizer_name: str, system: str | None = None) -> RougeResult:
    # the bootstrap runs when first read: the default return reads its mid F alone (f_interval)
    agg: dict[str, AggregateScore] | None = None if n_boot > 0 else {}
    mean = {t: Score(*(_fsum_mean(scores[:, i, s]) for s in range(3))) for i, t in enumerate(types)}
    return RougeResult(types, scores, mean, agg, confidence, n_boot, seed, settings, tokenizer_name, system)


def compute(predictions, references, rouge_types=None, use_aggregator: bool = True, use_stemmer: bool = False,
            tokenizer=None, *, systems=None, profile: str = DEFAULT_PROFILE, language: str = "en",
            multi_ref: str | None = None, alpha: float = 0.5, sentence_splitter: str | None = None,
            split_summaries: bool = False, stemming: str = "none", cjk: str = "chars", confidence: float = 0.95,
            n_boot: int = 1000, seed: int = DEFAULT_SEED, return_result: bool = False):
    """ROUGE of ``predictions`` against ``references``, with ``evaluate``'s rouge arguments.

    ``rouge_types`` (default rouge1, rouge2, rougeL, rougeLsum; any :class:`RougeScorer` type; one
    name as a text is that type), ``use_stemmer``, ``tokenizer`` (a callable or an object with
    ``.tokenize``): as in evaluate.
    ``use_aggregator=True``: ``{type: F}``, the ``mid`` F of rouge-score's bootstrap with
    ``n_boot`` resamples at ``confidence``, seeded by ``seed`` (equal to evaluate's
    ``evaluate.load("rouge", seed=seed)``); ``False``: ``{type: [F per example]}``.
    ``profile``, ``language``, ``multi_ref``, ``alpha``, ``sentence_splitter``,
    ``stemming``, ``cjk``: the run configuration's ``scoring`` settings (:class:`RougeScorer`).
    ``return_result=True``: a :class:`RougeResult` instead of the dict.
    ``systems``: one system name per prediction; each system is aggregated over its own examples
    (its own bootstrap, same ``seed``) and the result is ``{system: what one system gives}``
    (``{system: {type: F}}``, or ``{system: RougeResult}``), systems in sorted order;
    ``use_aggregator=False`` still gives the per-example lists, in the order given.
    """
    for name, given in (("predictions", predictions), ("references", references)):
        if isinstance(given, (str, bytes)):  # list() would score each character
            raise ValueError(f"compute: {name} must be a list of texts (one per example), got one {type(given).__name__}")
    predictions = list(predictions)
    references = list(references)
    if len(predictions) != len(references):
        raise ValueError(f"compute: {len(predictions)} predictions for {len(references)} references")
    types = _type_names(rouge_types)
    groups = None if systems is None else _system_groups(systems, len(predictions))
    if not 0 <= confidence <= 1:
        raise ValueError(f"confidence must be in [0, 1], got {confidence!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or not 0 <= n_boot <= MAX_N_BOOT:
        raise ValueError(f"n_boot must be an integer from 0 to {MAX_N_BOOT:,}, got {n_boot!r}")
    settings = dict(rouge_types=types, use_stemmer=bool(use_stemmer), profile=profile, language=language,
                    multi_ref=multi_ref, alpha=alpha, stemming=stemming, cjk=cjk,
                    sentence_splitter=resolve_splitter_name(split_summaries, sentence_splitter))
    scorer = RougeScorer(types, use_stemmer=use_stemmer, split_summaries=split_summaries, tokenizer=tokenizer,
                         sentence_splitter=sentence_splitter, language=language, profile=profile,
                         multi_ref=multi_ref, alpha=alpha, stemming=stemming, cjk=cjk)
    scores = scorer.score_matrix(references, predictions)
    if not use_aggregator and not return_result:
        return {t: scores[:, i, 2].tolist() for i, t in enumerate(types)}
    if not predictions:
        raise ValueError("compute: no predictions to aggregate")
    args = (types, confidence, n_boot, seed, settings, scorer.tokenizer_name)
    if groups is not None:
        results = {s: _aggregate(scores[idx], *args, system=s) for s, idx in groups.items()}
        return results if return_result else {s: r.fmeasure() for s, r in results.items()}
    result = _aggregate(scores, *args)
    if return_result:
        return result
    return result.fmeasure()
