"""Corpus averages and confidence intervals exactly as ROUGE-1.5.5 prints them.

Semantics: ``shared/reference/rouge155-semantics.md`` §6-§7 and the ID rule of
``shared/data/README.md``.

* The evaluation IDs (``"<evalID>.<peerID>"``) are sorted **as strings**.
* For each resample s = 0 .. B-1 the generator is seeded with s and N indices
  ``int(N * drand48())`` are drawn with replacement into that sorted list (Perl >= 5.20's own
  drand48: x0 = (s << 16) + 0x330E, x <- (0x5DEECE66D x + 0xB) mod 2**48, u = x / 2**48).
* ``-t 0``: a resample's value is the mean of the drawn per-pair values (the printed 5-decimal
  R, P, F).  ``-t 1``: the pooled ratio of the drawn raw counts, R = sum hit / sum model count,
  P = sum hit / sum peer count, F from those unrounded R and P.
* ``Average_X`` = the mean of the B resample values (**not** the plain mean of the pairs);
  the CI bounds are order statistics of the sorted resample values (for B = 1000 and 95%: the
  26th and 975th smallest).  All three are printed with ``%7.5f``.

Sums are accumulated left to right with plain float additions, as Perl does (the resample
sums use ``np.cumsum``, which is sequential).
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from pipeline.rouge155.metrics import f_measure
from pipeline.rouge155.options import Rouge155Options

_MULTIPLIER = 0x5DEECE66D
_INCREMENT = 0xB
_MASK = (1 << 48) - 1
_TWO_48 = float(1 << 48)


@lru_cache(maxsize=4096)
def drand48_indices(n: int, seed: int) -> tuple[int, ...]:
    """The n indices ``int(rand(n))`` that Perl draws after ``srand(seed)``."""
    x = (seed << 16) + 0x330E
    indices = []
    for _ in range(n):
        x = (_MULTIPLIER * x + _INCREMENT) & _MASK
        indices.append(int(n * (x / _TWO_48)))
    return tuple(indices)


def default_eval_ids(n_pairs: int, peer_id: str = "1") -> list[str]:
    """The test IDs of the goldens' rule: pair k (1-based, file order) is ``"k.<peer_id>"``."""
    return [f"{k}.{peer_id}" for k in range(1, n_pairs + 1)]


def _plain_sum(values) -> float:
    total = 0.0
    for v in values:
        total += v
    return total


def _average_and_ci(samples: list[float], confidence: float) -> tuple[float, float, float]:
    """Mean of the resample values and the interpolated CI bounds (ROUGE-1.5.5's formula)."""
    b = len(samples)
    ordered = sorted(samples)
    mean = _plain_sum(ordered) / b
    delta = b * (100 - confidence) / 200
    lower_index = math.floor(delta)
    upper_index = math.floor(b - delta - 1)
    rho = b - delta - 1 - upper_index  # the upper fraction, used for both ends

    def at(i: int) -> float:
        nxt = ordered[i + 1] if i + 1 < b else ordered[i]
        return ordered[i] + (nxt - ordered[i]) * rho

    return mean, at(lower_index), at(upper_index)


@lru_cache(maxsize=64)
def _index_matrix(n: int, resamples: int) -> np.ndarray:
    """Row s: the indices drawn after ``srand(s)`` (shape ``(resamples, n)``)."""
    return np.array([drand48_indices(n, s) for s in range(resamples)], dtype=np.int64).reshape(resamples, n)


def _resample_sums(values: list[float], idx: np.ndarray) -> np.ndarray:
    """Per resample, the sum of the drawn values, added left to right.

    ``np.cumsum`` accumulates sequentially (unlike ``np.sum``'s pairwise summation), so its
    last column is bit for bit Perl's ``$sum += $x`` loop.
    """
    return np.cumsum(np.asarray(values, dtype=np.float64)[idx], axis=1)[:, -1]


def _resample_t0(rows: list[tuple[float, float, float]], resamples: int) -> list[list[float]]:
    """``-t 0``: each resample's value is the mean of the drawn per-pair R, P and F."""
    n = len(rows)
    idx = _index_matrix(n, resamples)
    return [(_resample_sums([row[k] for row in rows], idx) / n).tolist() for k in range(3)]


def _resample_t1(rows: list[tuple[float, float, float]], resamples: int, alpha: float
                 ) -> list[list[float]]:
    """``-t 1``: each resample's value is the ratio of the pooled (model, peer, hit) counts."""
    idx = _index_matrix(len(rows), resamples)
    model, peer, hit = (_resample_sums([row[k] for row in rows], idx).tolist() for k in range(3))
    r = [h / m if m > 0 else 0.0 for h, m in zip(hit, model)]
    p = [h / c if c > 0 else 0.0 for h, c in zip(hit, peer)]
    return [r, p, [f_measure(pi, ri, alpha) for pi, ri in zip(p, r)]]


def corpus_average(per_pair: list[dict], eval_ids: list[str] | None = None,
                   opts: Rouge155Options | None = None, metrics: list[str] | None = None
                   ) -> dict[str, dict]:
    """The printed ``Average_R/P/F`` and CIs of a corpus.

    ``per_pair[k]`` is :func:`~pipeline.rouge155.metrics.score_pair`'s result for pair k (with
    ``-t 0`` only ``r``/``p``/``f`` are read, with ``-t 1`` only the counts); ``eval_ids[k]`` its
    test ID (default: :func:`default_eval_ids`, i.e. ``"k.1"``); ``metrics`` restricts the
    output (default: every metric of ``per_pair[0]``).  The numbers depend on the IDs
    through their string order.  Returns, per metric, ``R``, ``P``, ``F`` and ``R_ci``, ``P_ci``,
    ``F_ci`` (lower, upper) as the printed 5-decimal floats, and ``R_printed``, ``P_printed``,
    ``F_printed``: the printed strings (average, lower, upper).
    """
    opts = opts or Rouge155Options()
    if not per_pair:
        raise ValueError("no pairs")
    if eval_ids is None:
        eval_ids = default_eval_ids(len(per_pair))
    if len(eval_ids) != len(per_pair) or len(set(eval_ids)) != len(eval_ids):
        raise ValueError("eval_ids must be unique, one per pair")
    order = sorted(range(len(per_pair)), key=lambda k: eval_ids[k])
    results = {}
    for metric in (metrics if metrics is not None else list(per_pair[0])):
        if opts.counting_unit == 0:
            keys = ("r", "p", "f")
        else:
            keys = ("model_count", "peer_count", "hit")
        rows = [tuple(per_pair[k][metric][key] for key in keys) for k in order]
        if opts.counting_unit == 0:
            samples = _resample_t0(rows, opts.resamples)
        else:
            samples = _resample_t1(rows, opts.resamples, opts.alpha)
        entry = {}
        for name, values in zip("RPF", samples):
            mean, lower, upper = _average_and_ci(values, opts.confidence)
            printed = tuple(f"{v:.5f}" for v in (mean, lower, upper))
            entry[name] = float(printed[0])
            entry[f"{name}_ci"] = (float(printed[1]), float(printed[2]))
            entry[f"{name}_printed"] = printed
        results[metric] = entry
    return results
