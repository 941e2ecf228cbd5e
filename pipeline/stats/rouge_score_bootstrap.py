"""rouge-score's ``BootstrapAggregator``, reproduced exactly with a private RNG.

``rouge_score.scoring.BootstrapAggregator.aggregate()`` processes the rouge types in insertion
order and, for each, draws ``n_samples`` resamples with
``np.random.choice(np.arange(N), size=N)`` from NumPy's *global* legacy generator, averages
each resample with ``np.mean(sample, axis=0)`` and reports the percentiles
``(1-ci)/2, 0.5, 1-(1-ci)/2`` (linear interpolation) of those means as low/mid/high.

For the legacy generator, ``choice(arange(N), size=N)`` is ``randint(0, N, size=N)``, which
consumes the MT19937 stream one draw per element (and nothing at all when N == 1), so the
indices can be drawn many resamples at a time.  The means are still computed one resample at
a time with the same ``np.mean(matrix[idx], axis=0)`` call, so that NumPy's summation order --
and therefore every bit of the result -- is the one rouge-score gets.  On large inputs (or once
numba is loaded) :mod:`pipeline.stats.mt_bootstrap` makes the same draws and sums in one
compiled pass, and only for the columns asked for (``bootstrap_percentiles(..., cols=[2])``:
the mid F that ``evaluate``'s rouge returns, a third of the work).

So ``bootstrap_aggregate(scores, seed)`` equals ``np.random.seed(seed)`` followed by
``BootstrapAggregator().aggregate()`` on the same scores, without touching the global RNG.
:class:`BootstrapAggregator` is the drop-in class (``add_scores``, ``aggregate``), seeded.
"""
from __future__ import annotations

import sys
from collections import namedtuple
from typing import Mapping, Sequence

import numpy as np

from pipeline.scoring import cold, kernel_cache
from pipeline.scoring.types import STATS

# The compiled pass's module: a fresh cache's background compile (and a process waiting for the
# scoring kernels) compiles it too, by name (the scoring layer does not import this one).
COMPILED_MODULE = "pipeline.stats.mt_bootstrap"
kernel_cache.register(COMPILED_MODULE)

# Field-for-field the namedtuples of rouge_score.scoring (equal as tuples).
Score = namedtuple("Score", STATS)
AggregateScore = namedtuple("AggregateScore", ["low", "mid", "high"])

# Resamples whose indices are drawn at once (bounded memory: at most ~2**22 int64 indices).
_MAX_INDEX_BLOCK = 1 << 22


# Resamples x examples from which the compiled pass is worth loading numba for (NumPy takes
# ~0.1 s there); below it the NumPy path runs unless numba is loaded already.
_COMPILED_MIN_DRAWS = 1 << 22


def _check(confidence_interval: float, n_samples: int) -> None:
    if confidence_interval < 0 or confidence_interval > 1:
        raise ValueError("confidence_interval must be in range [0, 1]")
    if n_samples <= 0:
        raise ValueError("n_samples must be positive")


def _use_compiled(N: int, n_samples: int, width: int) -> bool:
    """The compiled pass when the input is large or numba is loaded already (start-up time).  While
    the cache lacks its kernel, a small bootstrap takes NumPy (not a compile) and a large one waits
    for the background compile of that kernel alone when it is under way (its wait shown), else
    compiles it here."""
    large = N * n_samples >= _COMPILED_MIN_DRAWS
    if width < 2 or N >= 1 << 32 or not (large or "numba" in sys.modules):
        return False
    if cold.compiles_here() or kernel_cache.is_ready(COMPILED_MODULE):
        return True
    if large:
        kernel_cache.wait_ready(part=COMPILED_MODULE, what="the bootstrap kernel")
    return large


def _resample_means(rs, matrix: np.ndarray, n_samples: int, cols: Sequence[int]) -> np.ndarray:
    """``(n_samples, len(cols))`` resample means of ``matrix``'s columns ``cols``, drawn from ``rs``."""
    N = matrix.shape[0]
    if _use_compiled(N, n_samples, matrix.shape[1]):
        # numba: loaded only when the input is large or numba is loaded already (start-up time)
        from pipeline.stats.mt_bootstrap import bootstrap_means

        return bootstrap_means(rs, matrix, n_samples, cols)
    sample_mean = np.zeros((n_samples, matrix.shape[1]))
    block = max(1, min(n_samples, _MAX_INDEX_BLOCK // N))
    for start in range(0, n_samples, block):
        stop = min(n_samples, start + block)
        idx = rs.randint(0, N, size=(stop - start, N))
        for i in range(stop - start):
            sample_mean[start + i, :] = np.mean(matrix[idx[i], :], axis=0)
    return sample_mean[:, list(cols)]


def bootstrap_percentiles(
    scores_by_type: Mapping[str, np.ndarray],
    seed: int | None,
    n_samples: int = 1000,
    confidence_interval: float = 0.95,
    cols: Sequence[int] | None = None,
) -> dict[str, np.ndarray]:
    """``{type: float64 (3, len(cols))}``: rows low, mid, high of the columns ``cols`` (0
    precision, 1 recall, 2 fmeasure; None: every column), each equal to the matching field of
    :func:`bootstrap_aggregate` (which is this for every column)."""
    _check(confidence_interval, n_samples)
    # seed None: the global generator's own RandomState, advanced as rouge-score advances it
    rs = np.random.mtrand._rand if seed is None else np.random.RandomState(seed)
    delta = (1 - confidence_interval) / 2
    q = 100 * np.array([delta, 0.5, 1 - delta])
    result: dict[str, np.ndarray] = {}
    for name, matrix in scores_by_type.items():
        matrix = np.asarray(matrix, dtype=np.float64)
        if matrix.ndim == 1:
            matrix = matrix.reshape(1, -1)
        if matrix.ndim != 2 or matrix.shape[0] == 0:
            raise ValueError(f"{name}: need a non-empty (N, 3) matrix, got shape {matrix.shape}")
        want = range(matrix.shape[1]) if cols is None else cols
        result[name] = np.percentile(_resample_means(rs, matrix, n_samples, want), q, axis=0)
    return result


def bootstrap_aggregate(
    scores_by_type: Mapping[str, np.ndarray],
    seed: int | None,
    n_samples: int = 1000,
    confidence_interval: float = 0.95,
    score_class=Score,
) -> dict[str, AggregateScore]:
    """``{type: AggregateScore(low, mid, high)}`` exactly as rouge-score computes it.

    ``scores_by_type[type]``: float64 ``(N, 3)`` rows of (precision, recall, fmeasure) in the
    order they would have been added; types are processed in the mapping's order.
    ``seed=None`` draws from NumPy's global generator, as rouge-score does.
    """
    pct = bootstrap_percentiles(scores_by_type, seed, n_samples, confidence_interval)
    return {name: AggregateScore(*(score_class(*p[j, :]) for j in range(3))) for name, p in pct.items()}


class BootstrapAggregator:
    """A drop-in for ``rouge_score.scoring.BootstrapAggregator``, seeded.

    ``add_scores({type: Score})`` once per example, then ``aggregate()`` ->
    ``{type: AggregateScore(low, mid, high)}`` of ``Score``: the percentiles
    ``(1-ci)/2``, 50 and ``1-(1-ci)/2`` of ``n_samples`` bootstrap means, P, R and F each on its
    own.  With ``seed`` the numbers are those of rouge-score's class after
    ``np.random.seed(seed)``, and the global generator is left alone; ``seed=None`` draws
    from the global generator as rouge-score does (same numbers for the same global state).
    """

    def __init__(self, confidence_interval: float = 0.95, n_samples: int = 1000, seed: int | None = None):
        if confidence_interval < 0 or confidence_interval > 1:
            raise ValueError("confidence_interval must be in range [0, 1]")
        if n_samples <= 0:
            raise ValueError("n_samples must be positive")
        self._confidence_interval = confidence_interval
        self._n_samples = n_samples
        self._seed = seed
        self._scores: dict[str, list] = {}

    def add_scores(self, scores: Mapping) -> None:
        """Add one example's ``{type: Score(precision, recall, fmeasure)}``."""
        for name, score in scores.items():
            self._scores.setdefault(name, []).append(score)

    def aggregate(self) -> dict[str, AggregateScore]:
        """``{type: AggregateScore}`` (``{}`` when nothing was added); the same result every call
        when seeded."""
        if not self._scores:
            return {}
        first = next(iter(self._scores.values()))[0]
        cls = type(first) if hasattr(type(first), "_fields") else Score
        return bootstrap_aggregate({k: np.array([tuple(s) for s in v], dtype=np.float64)
                                    for k, v in self._scores.items()},
                                   self._seed, self._n_samples, self._confidence_interval, cls)
