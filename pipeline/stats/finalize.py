"""Finalisation of the sufficient statistics (:mod:`pipeline.stats.accumulator`): the mean and
std from the exact sums, the quantiles from the histogram, and the bucketed bootstrap's
replicate means and percentile interval."""
from __future__ import annotations

import math

import numpy as np

from pipeline.stats import fixedpoint as fp
from pipeline.stats import poisson
from pipeline.stats.rows import QUANTILE_KEYS
from pipeline.stats.sums import SystemSums

BOOT_BITS = 26  # the bootstrap's fixed point: X26 = round(x * 2**26)
QUANTILES = QUANTILE_KEYS   # (row key, q); approximate: within one histogram bin

# Buckets per chunk of the finalisation's product: the weight block is n_boot x chunk float64
# (8 MB at 1000 x 1024).
_BOOT_CHUNK = 1024
# Limbs for that product: S = hi * 2**26 + lo with lo < 2**26 and hi <= n_k (S <= 2**26 n_k);
# w <= 20 < 2**5, so a chunk sum of w * lo is < 1024 * 2**31 = 2**41 and of w * hi or w * n_k
# < 20 * (examples) <= 2**53: the float64 matrix product is exact whatever BLAS's summation order.
_L26 = 26
_M26 = (1 << _L26) - 1


def _replicate_means(st: SystemSums, seed: int, n_boot: int, python_ints: bool = False) -> np.ndarray:
    """The bootstrap replicates' weighted means, float64 ``(replicates, n_types * 3)``: per
    replicate with any weight, ``sum_k w_bk S_k / (2**26 * sum_k w_bk n_k)``, each the correctly
    rounded quotient of the exact integer sums (replicates whose weights are all zero have no
    mean and are dropped).  Only non-empty buckets draw weights (an empty bucket adds nothing
    whatever its weight), so a small corpus costs little.

    The sums are int64 and the quotients float64 divisions while every sum stays below 2**53
    (each is then an exact float64, and IEEE division rounds correctly, as Python's int / int
    does); past that, and with ``python_ints`` (the definition the fast path is tested
    against), Python ints: no bound on the corpus."""
    if st.count >= 1 << 48:  # 20 * count must stay below 2**53 for the float64 product below
        raise OverflowError("more than 2**48 examples in one system")
    m = st.bucket_s.shape[1] * 3
    nz = np.flatnonzero(st.bucket_n) if n_boot else np.zeros(0, dtype=np.int64)
    if not nz.size:
        return np.zeros((0, m), dtype=np.float64)
    S = st.bucket_s.reshape(st.bucket_s.shape[0], m)[nz]
    limbs = np.empty((nz.size, 2 * m + 1), dtype=np.float64)
    limbs[:, :m] = S & _M26
    limbs[:, m:2 * m] = S >> _L26
    limbs[:, 2 * m] = st.bucket_n[nz]
    bases = poisson.bucket_bases(seed, nz)
    # weights <= 20: the sums are < 20 * (sum of a column's limbs), an int64 while that is < 2**58
    small = not python_ints and float(limbs.sum(axis=0).max()) * 20 < 2.0 ** 58
    total = np.zeros((n_boot, 2 * m + 1), dtype=np.int64 if small else object)
    W = np.empty((n_boot, min(nz.size, _BOOT_CHUNK)), dtype=np.float64)
    for start in range(0, nz.size, _BOOT_CHUNK):
        stop = min(nz.size, start + _BOOT_CHUNK)
        Wc = W if stop - start == W.shape[1] else np.empty((n_boot, stop - start))
        poisson.poisson_weights(bases[start:stop], n_boot, Wc)
        part = (Wc @ limbs[start:stop]).astype(np.int64)  # exact: see _L26
        total += part if small else part.astype(object)
    ok = np.asarray(total[:, 2 * m] > 0, dtype=bool)  # all-zero weights: no mean
    total = total[ok]
    if small:
        lo, hi, n_w = total[:, :m], total[:, m:2 * m], total[:, 2 * m]
        if hi.size and int(hi.max()) < 1 << 26 and int(n_w.max()) < 1 << 27:
            # sum_wx = hi * 2**26 + lo < 2**53 and sum_w = n_w * 2**26 < 2**53: exact floats
            return ((hi << _L26) + lo).astype(np.float64) / (n_w << BOOT_BITS).astype(np.float64)[:, None]
    means = np.empty((total.shape[0], m), dtype=np.float64)
    for b in range(total.shape[0]):
        sum_w = int(total[b, 2 * m]) << BOOT_BITS
        for j in range(m):
            means[b, j] = ((int(total[b, m + j]) << _L26) + int(total[b, j])) / sum_w
    return means


# ---------------------------------------------------------------------- finalisation helpers
def _moments(n: int, s: int, q: int) -> dict:
    """Mean and sample std (ddof=1; None when n < 2) from exact integer sums.

    ``int / int`` is correctly rounded in Python, so both are deterministic functions of the
    integer sums (mean within 1 ulp of the exact mean of the quantised scores).
    """
    mean = s / (n << fp.FIXED_BITS)
    if n < 2:
        return {"mean": mean, "std": None}
    num = n * q - s * s  # n^2 * population variance, exact and >= 0
    var = num / ((n * (n - 1)) << (2 * fp.FIXED_BITS))
    return {"mean": mean, "std": math.sqrt(var)}


def _hist_quantiles(counts: np.ndarray, n: int, lo: float, hi: float) -> dict:
    """NumPy's default ('linear') quantiles, with each order statistic estimated inside its bin.

    The r-th order statistic (0-based) lies in bin j; its estimate is the position of the
    i-th of the c values of that bin spread evenly, ``(j + (i + 0.5) / c) / bins``, clamped to
    the exact [min, max].  Each estimate is in the true value's bin, so the error is at most
    one bin width.
    """
    bins = counts.shape[0]
    cum = np.cumsum(counts)

    def order_stat(r: int) -> float:
        j = int(np.searchsorted(cum, r, side="right"))
        before = int(cum[j - 1]) if j else 0
        c = int(counts[j])
        v = (j + (r - before + 0.5) / c) / bins
        return min(max(v, lo), hi)

    out = {}
    for key, q in QUANTILES:
        h = (n - 1) * q
        r0 = math.floor(h)
        frac = h - r0
        v0 = order_stat(r0)
        out[key] = v0 if frac == 0 else v0 + frac * (order_stat(min(r0 + 1, n - 1)) - v0)
    return out


def _boot_ci(means: np.ndarray, confidence: float):
    """``(low, mid, high)``: the percentile interval of the replicate means and their median."""
    if not means.size:
        return None, None, None
    delta = (1.0 - confidence) / 2.0
    low, mid, high = np.percentile(means, [100.0 * delta, 50.0, 100.0 * (1.0 - delta)])
    return float(low), float(mid), float(high)

