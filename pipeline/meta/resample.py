"""Bootstrap replicates of a correlation, resampling systems, documents or both (Deutsch, Dror and
Roth 2021, "A Statistical Analysis of Summarization Evaluation Metrics Using Resampling Methods").

**The draws.**  Replicate ``b`` draws ``n`` positions with replacement from the ``n`` sorted
systems (documents): draw ``t`` is ``floor(u * n / 2**32)`` with ``u`` the top 32 bits of
``mix64(base + (b * n + t + 1) * GAMMA)``, ``base = mix64(seed_key(seed) ^ SALT)`` with one salt
for systems and one for documents (:mod:`pipeline.stats.poisson`'s splitmix64, integers only).
So a replicate is a pure function of ``(seed, b)`` and the sorted names: the same on every
platform, whatever the chunk of replicates or the worker that computes it.  What is not
resampled is drawn once each (weight 1).

**A replicate's number** is the level's definition (:mod:`.levels`) applied to the resampled
matrix -- a system drawn twice is two systems with the same scores -- computed from the draw
counts (:mod:`.kernels`): summary level, each document's correlation across the drawn systems,
averaged over the drawn documents (each as often as drawn; skipped documents left out); system
level, the drawn systems' means over the drawn documents; global, every drawn cell.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from pipeline.meta import kernels
from pipeline.stats.poisson import GAMMA, mix64, mix64_int, seed_key

RESAMPLE = ("both", "systems", "documents")
SALT = {"systems": 0x5EED5157E3500001, "documents": 0x5EED0D0C5E000003}
CHUNK = 50   # replicates per kernel call (changes no number: each replicate is computed alone)
CODES = {"pearson": kernels.PEARSON, "spearman": kernels.SPEARMAN, "kendall": kernels.KENDALL_B,
         "kendall_c": kernels.KENDALL_C}


def counts(seed: int, what: str, n: int, start: int, stop: int) -> np.ndarray:
    """``(stop - start, n)`` float64: how often replicate ``b`` (``start <= b < stop``) draws each
    of the ``n`` sorted systems or documents (``what``)."""
    base = np.uint64(mix64_int(seed_key(seed) ^ SALT[what]))
    b = np.arange(start, stop, dtype=np.uint64)[:, None]
    t = np.arange(n, dtype=np.uint64)[None, :]
    with np.errstate(over="ignore"):
        u = mix64(base + (b * np.uint64(n) + t + np.uint64(1)) * np.uint64(GAMMA))
    idx = ((u >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32)
    rows = np.arange(stop - start, dtype=np.int64)[:, None] * n
    flat = np.bincount((rows + idx.astype(np.int64)).ravel(), minlength=(stop - start) * n)
    return flat.reshape(stop - start, n).astype(np.float64)


def weights(seed: int, resample: str, n_sys: int, n_docs: int, start: int, stop: int):
    """The systems' and the documents' draw counts of replicates ``start .. stop-1``."""
    cs = counts(seed, "systems", n_sys, start, stop) if resample in ("both", "systems") \
        else np.ones((stop - start, n_sys))
    cd = counts(seed, "documents", n_docs, start, stop) if resample in ("both", "documents") \
        else np.ones((stop - start, n_docs))
    return cs, cd


class Prepared:
    """The arrays of one level that every replicate reads (built once per level)."""

    def __init__(self, X: np.ndarray, H: np.ndarray, level: str):
        self.level, self.K, self.S, self.D = level, *X.shape
        ok = np.isfinite(X) & np.isfinite(H)[None]
        if level == "summary":
            self.X = np.ascontiguousarray(X.transpose(0, 2, 1))               # (K, D, S)
            self.H = np.ascontiguousarray(H.T)                                 # (D, S)
            self.OK = np.ascontiguousarray(ok.transpose(0, 2, 1))
            self.OX = np.argsort(self.X, axis=-1, kind="mergesort")
            self.OY = np.argsort(self.H, axis=-1, kind="mergesort")
        elif level == "system":
            self.X, self.H, self.OK = X, H, ok                                  # (K, S, D), (S, D)
        else:
            self.X = X.reshape(1, self.K, -1)
            self.H = np.ascontiguousarray(np.broadcast_to(H.reshape(1, 1, -1), self.X.shape))
            self.OK = ok.reshape(1, self.K, -1)

    def run(self, cs: np.ndarray, cd: np.ndarray, code: int) -> np.ndarray:
        """``(replicates, K)``: the level's coefficient under the draws ``cs``, ``cd``."""
        out = np.empty((cs.shape[0], self.K))
        if self.level == "summary":
            kernels.summary_level(self.X, self.H, self.OK, self.OX, self.OY, cs, cd, code, out)
        elif self.level == "system":
            shape = (cs.shape[0], self.K, self.S)
            mx, mh, has = np.empty(shape), np.empty(shape), np.empty(shape, dtype=np.bool_)
            kernels.system_means(self.X, self.H, self.OK, cd, mx, mh, has)
            kernels.items_level(mx, mh, has, cs, code, out)
        else:
            w = (cs[:, :, None] * cd[:, None, :]).reshape(cs.shape[0], -1)
            kernels.items_level(self.X, self.H, self.OK, w, code, out)
        return out


def replicates(prepared: Prepared, coef: str, n_boot: int, resample: str, seed: int, workers: int = 1,
               chunk: int = CHUNK) -> np.ndarray:
    """``(n_boot, K)`` bootstrap replicates of ``coef`` at the prepared level, computed ``chunk``
    replicates at a time on ``workers`` threads (the kernels release the GIL); the same bytes for
    any ``chunk`` and ``workers``."""
    code = CODES[coef]

    def one(lo: int) -> np.ndarray:
        hi = min(n_boot, lo + chunk)
        return prepared.run(*weights(seed, resample, prepared.S, prepared.D, lo, hi), code)

    starts = range(0, n_boot, max(1, chunk))
    if workers <= 1:
        parts = [one(lo) for lo in starts]
    else:
        with ThreadPoolExecutor(workers) as pool:
            parts = list(pool.map(one, starts))
    return np.concatenate(parts) if parts else np.empty((0, prepared.K))


def interval(reps: np.ndarray, confidence: float) -> tuple[float, float, int]:
    """The percentile interval of the finite replicates (NumPy's linear quantiles) and their count."""
    ok = reps[np.isfinite(reps)]
    if not len(ok):
        return float("nan"), float("nan"), 0
    q = (1 - confidence) / 2
    lo, hi = np.quantile(ok, [q, 1 - q])
    return float(lo), float(hi), int(len(ok))
