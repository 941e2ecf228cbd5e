"""The three levels of meta-evaluation, each defined once (the specification: the point
estimates are these functions; :mod:`.kernels` computes the same under resampling).

The data of one metric column: ``x[i, j]`` the metric score and ``h[i, j]`` the human score of
system ``i`` on document ``j`` (NaN: missing or not finite; a cell takes part only where both
are finite).

* **summary level** -- for each document, correlate across systems; average over documents.  A
  document is **skipped** (and counted) when fewer than two of its systems have both scores or
  when its metric or its human column is constant over them: a correlation is undefined there,
  and counting it as 0 would pull the average towards 0.
* **system level** -- each system's mean metric score and mean human score over its cells with
  both, then correlate across systems (the level ROUGE was validated at: Lin 2004).
* **global** -- every (system, document) cell with both scores at once.

Each returns ``(r, used, skipped)``: the coefficient (NaN when undefined), the documents
(summary), systems (system) or cells (global) it used, and the documents or systems skipped.
"""
from __future__ import annotations

import numpy as np

from pipeline.meta.coefficients import coefficient

LEVELS = ("summary", "system", "global")


def _defined(x: np.ndarray, y: np.ndarray) -> bool:
    """At least two items and neither side constant."""
    return len(x) >= 2 and np.unique(x).size > 1 and np.unique(y).size > 1


def summary_level(x: np.ndarray, h: np.ndarray, coef: str) -> tuple[float, int, int]:
    values, skipped = [], 0
    for j in range(x.shape[1]):
        ok = np.isfinite(x[:, j]) & np.isfinite(h[:, j])
        if not _defined(x[ok, j], h[ok, j]):
            skipped += 1
            continue
        values.append(coefficient(coef, x[ok, j], h[ok, j]))
    return (float(np.mean(values)) if values else float("nan")), len(values), skipped


def mean(v: np.ndarray) -> float:
    """The sum in document order, left to right, over the count (not NumPy's pairwise sum: a tie
    between two systems' means must not depend on how the sum is split)."""
    return float(np.cumsum(v)[-1] / len(v))


def system_means(x: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each system's mean metric and human score over its cells with both (systems without any left out)."""
    ok = np.isfinite(x) & np.isfinite(h)
    keep = np.flatnonzero(ok.any(axis=1))
    return np.array([mean(x[i, ok[i]]) for i in keep]), np.array([mean(h[i, ok[i]]) for i in keep])


def system_level(x: np.ndarray, h: np.ndarray, coef: str) -> tuple[float, int, int]:
    mx, mh = system_means(x, h)
    skipped = x.shape[0] - len(mx)
    return (coefficient(coef, mx, mh) if _defined(mx, mh) else float("nan")), len(mx), skipped


def global_level(x: np.ndarray, h: np.ndarray, coef: str) -> tuple[float, int, int]:
    ok = np.isfinite(x) & np.isfinite(h)
    return (coefficient(coef, x[ok], h[ok]) if _defined(x[ok], h[ok]) else float("nan")), int(ok.sum()), 0


LEVEL_FUNCTIONS = {"summary": summary_level, "system": system_level, "global": global_level}
