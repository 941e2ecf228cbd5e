"""The three levels of meta-evaluation, each defined once (the specification: the point
estimates are these functions; :mod:`.kernels` computes the same under resampling).

The data of one metric column: ``x[i, j]`` the metric score and ``h[i, j]`` the human score of
system ``i`` on document ``j`` (NaN: missing or not finite; a cell takes part only where both
are finite).

* **summary level** -- for each document, correlate across systems; average over documents.  A
  document is **skipped** (and counted) when fewer than :data:`MIN_ITEMS` of its systems have
  both scores or when its metric or its human column is constant over them: a correlation is
  undefined or degenerate there (two points always correlate +-1, so a 2-system document says
  only whether the signs agree), and counting it as 0 would pull the average towards 0.
* **system level** -- each system's mean metric score and mean human score over its cells with
  both, then correlate across systems (the level ROUGE was validated at: Lin 2004).
* **global** -- every (system, document) cell with both scores at once.

The system and the global level are one group of items each: fewer than :data:`MIN_ITEMS` items
there (or a constant side) give NaN, never a number.

Each returns ``(r, used, skipped, too_few)``: the coefficient (NaN when undefined), the
documents (summary), systems (system) or cells (global) it used, the documents or systems
skipped, and the groups (documents; at the system and global level the one group: 0 or 1) left
out because they had fewer than :data:`MIN_ITEMS` items.  Under resampling an item drawn twice
counts twice (:mod:`.resample`).
"""
from __future__ import annotations

import numpy as np

from pipeline.meta.coefficients import coefficient

LEVELS = ("summary", "system", "global")
MIN_ITEMS = 3   # fewer items per group: no correlation (two points always correlate +-1)


def _defined(x: np.ndarray, y: np.ndarray) -> bool:
    """At least :data:`MIN_ITEMS` items and neither side constant."""
    return len(x) >= MIN_ITEMS and np.unique(x).size > 1 and np.unique(y).size > 1


def summary_level(x: np.ndarray, h: np.ndarray, coef: str) -> tuple[float, int, int, int]:
    values, skipped, too_few = [], 0, 0
    for j in range(x.shape[1]):
        ok = np.isfinite(x[:, j]) & np.isfinite(h[:, j])
        if not _defined(x[ok, j], h[ok, j]):
            skipped += 1
            too_few += int(ok.sum()) < MIN_ITEMS
            continue
        values.append(coefficient(coef, x[ok, j], h[ok, j]))
    return (float(np.mean(values)) if values else float("nan")), len(values), skipped, too_few


def mean(v: np.ndarray) -> float:
    """The sum in document order, left to right, over the count (not NumPy's pairwise sum: a tie
    between two systems' means must not depend on how the sum is split)."""
    return float(np.cumsum(v)[-1] / len(v))


def system_means(x: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each system's mean metric and human score over its cells with both (systems without any left out)."""
    ok = np.isfinite(x) & np.isfinite(h)
    keep = np.flatnonzero(ok.any(axis=1))
    return np.array([mean(x[i, ok[i]]) for i in keep]), np.array([mean(h[i, ok[i]]) for i in keep])


def system_level(x: np.ndarray, h: np.ndarray, coef: str) -> tuple[float, int, int, int]:
    mx, mh = system_means(x, h)
    skipped = x.shape[0] - len(mx)
    r = coefficient(coef, mx, mh) if _defined(mx, mh) else float("nan")
    return r, len(mx), skipped, int(len(mx) < MIN_ITEMS)


def global_level(x: np.ndarray, h: np.ndarray, coef: str) -> tuple[float, int, int, int]:
    ok = np.isfinite(x) & np.isfinite(h)
    n = int(ok.sum())
    return (coefficient(coef, x[ok], h[ok]) if _defined(x[ok], h[ok]) else float("nan")), n, 0, int(n < MIN_ITEMS)


LEVEL_FUNCTIONS = {"summary": summary_level, "system": system_level, "global": global_level}
