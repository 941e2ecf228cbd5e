"""rouge-score's bootstrap means, compiled: the resamples of
:func:`pipeline.stats.rouge_score_bootstrap.bootstrap_aggregate` with no index array and no copy.

rouge-score draws each resample with ``np.random.choice(np.arange(N), size=N)`` from NumPy's
legacy ``RandomState`` and averages it with ``np.mean(matrix[idx], axis=0)``.  Specification of
what :func:`bootstrap_means` reproduces bit for bit:

* the generator is MT19937 continued from the ``RandomState``'s own state (``get_state()``:
  624 words and a position), and the state is handed back advanced (``set_state``), so the
  next draw anyone makes is the one NumPy would make;
* ``choice(arange(N), size=N)`` is ``randint(0, N, size=N)``: with ``rng = N - 1`` below
  2**32, NumPy's legacy bounded draw takes 32-bit outputs masked by the smallest ``2**k - 1``
  covering ``rng`` and rejects those above it (``N == 1`` draws nothing);
* ``np.mean(m[idx], axis=0)`` of a C-contiguous ``(N, c)`` float64 matrix with ``c >= 2``
  sums each column sequentially, from the first drawn row on, and divides by ``N`` (the
  reduction axis is the outer loop: no pairwise summation); ``c == 1`` is a contiguous 1-D
  sum, which NumPy sums pairwise, so the caller keeps NumPy for it.

Only the requested columns are summed: a column's sums do not depend on the others, so asking
for rouge-score's mid F alone costs one column.  ``tests/unit/stats/test_mt_bootstrap.py``
holds this to NumPy and to rouge-score.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from pipeline.scoring import kernel_cache

_N, _M = 624, 397
_stamped = False


@njit(cache=True, nogil=True)
def _twist(key):  # pragma: no cover - compiled
    """MT19937's state refill (NumPy's ``mt19937_gen``), in its three loops (no modulo)."""
    upper, lower, a = np.uint32(0x80000000), np.uint32(0x7FFFFFFF), np.uint32(0x9908B0DF)
    one = np.uint32(1)
    for i in range(_N - _M):
        y = (key[i] & upper) | (key[i + 1] & lower)
        key[i] = key[i + _M] ^ (y >> one) ^ (a * (y & one))
    for i in range(_N - _M, _N - 1):
        y = (key[i] & upper) | (key[i + 1] & lower)
        key[i] = key[i + _M - _N] ^ (y >> one) ^ (a * (y & one))
    y = (key[_N - 1] & upper) | (key[0] & lower)
    key[_N - 1] = key[_M - 1] ^ (y >> one) ^ (a * (y & one))


@njit(cache=True, nogil=True)
def _temper(key, out):  # pragma: no cover - compiled
    """MT19937's outputs of a refilled state, all 624 at once."""
    for i in range(_N):
        y = np.uint64(key[i])
        y ^= y >> np.uint64(11)
        y ^= (y << np.uint64(7)) & np.uint64(0x9D2C5680)
        y ^= (y << np.uint64(15)) & np.uint64(0xEFC60000)
        y ^= y >> np.uint64(18)
        out[i] = y


@njit(cache=True, nogil=True)
def _means_kernel(key, pos, columns, n_samples, out):  # pragma: no cover - compiled
    """``out[s, j]``: the mean of ``columns[j]`` over resample ``s``; returns the new position
    in ``key`` (which it advances in place).  Each resample's rows are drawn first (the
    rejections kept out of the way of branch prediction: a rejected draw is overwritten),
    then each column is summed over them in draw order."""
    nc, n = columns.shape
    rng = np.uint64(n - 1)
    mask = rng
    for sh in (1, 2, 4, 8, 16):
        mask |= mask >> np.uint64(sh)
    words = np.empty(_N, dtype=np.uint64)
    if pos < _N:  # a state partly used before: its outputs from ``pos`` on
        _temper(key, words)
    rows = np.zeros(n + 1, dtype=np.int64)
    for s in range(n_samples):
        filled = 0
        while n > 1 and filled < n:
            if pos == _N:
                _twist(key)
                _temper(key, words)
                pos = 0
            q = pos
            while q < _N and filled < n:
                v = words[q] & mask
                rows[filled] = np.int64(v)
                filled += 1 if v <= rng else 0
                q += 1
            pos = q
        for c in range(nc):
            col = columns[c]
            acc = col[rows[0]]
            for j in range(1, n):
                acc += col[rows[j]]
            out[s, c] = acc / n
    return pos


def bootstrap_means(rs: np.random.RandomState, matrix: np.ndarray, n_samples: int,
                    cols: list[int]) -> np.ndarray:
    """float64 ``(n_samples, len(cols))``: rouge-score's resample means of ``matrix``'s columns
    ``cols``, drawn from ``rs`` (advanced as NumPy would advance it).  ``matrix``: float64
    ``(N, c)`` with ``1 <= N < 2**32`` and ``c >= 2`` (see the module docstring)."""
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[1] < 2 or not 1 <= matrix.shape[0] < 1 << 32:
        raise ValueError(f"bootstrap_means: need an (N, c >= 2) matrix, got shape {matrix.shape}")
    name, key, pos, has_gauss, gauss = rs.get_state()
    key = np.array(key, dtype=np.uint32)
    columns = np.ascontiguousarray(matrix[:, list(cols)].T)  # one contiguous row per column summed
    out = np.empty((n_samples, len(cols)), dtype=np.float64)
    pos = _means_kernel(key, int(pos), columns, int(n_samples), out)
    rs.set_state((name, key, int(pos), has_gauss, gauss))
    _stamp()
    return out


def _stamp() -> None:
    """The kernel is in numba's cache now (compiled or loaded here): its stamp, once a process."""
    global _stamped
    if not _stamped:
        _stamped = True
        if not kernel_cache.is_ready(__name__):
            kernel_cache.mark(__name__)


def compile_for_cache() -> None:
    """Compile the kernel into numba's cache with the argument types every call passes (the
    background compile's entry: :func:`pipeline.scoring.kernel_cache.register`)."""
    bootstrap_means(np.random.RandomState(0), np.zeros((2, 3)), 1, [0, 1, 2])
