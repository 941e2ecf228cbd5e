"""Exact, order-independent fixed-point arithmetic for corpus statistics.

Every score ``x`` (float64 in ``[0, 1]``) is quantised once to the integer
``X = round_half_even(x * 2**52)``.  ``x * 2**52`` is exact in float64 (a power of two
scaling), so ``X`` is a pure function of ``x`` and ``|x - X / 2**52| <= 2**-53``
(scores in ``[0.5, 1)`` lose their last mantissa bit, nothing else changes).

All sums are then integer sums, so they are exact and do not depend on the order in
which examples are added or partitions are merged: merging is integer addition.
NumPy ``int64`` is only used in chunks whose bounds are proven below; everything that
can outgrow 64 bits is held as a Python ``int``.
"""
from __future__ import annotations

import numpy as np

FIXED_BITS = 52
ONE = 1 << FIXED_BITS

_L18 = 18
_M18 = (1 << _L18) - 1
# l0, l1 < 2**18 and l2 <= 2**16, so every limb product is < 2**36 and a sum of up to
# 2**26 of them is < 2**62: exact in int64.
_SUM_CHUNK = 1 << 24


def to_fixed(x: np.ndarray) -> np.ndarray:
    """float64 scores in [0, 1] -> int64 fixed point ``round(x * 2**52)`` (half to even)."""
    x = np.asarray(x, dtype=np.float64)
    bad = ~((x >= 0.0) & (x <= 1.0))  # also catches NaN
    if bad.any():
        raise ValueError(
            f"scores must be finite and in [0, 1]; {int(bad.sum())} value(s) are not "
            f"(first: {x[bad].ravel()[0]!r})"
        )
    return np.rint(x * float(ONE)).astype(np.int64)


def exact_column_sums(X: np.ndarray) -> tuple[list[int], list[int]]:
    """Exact ``sum(X)`` and ``sum(X*X)`` per column of an int64 matrix ``(n, m)``, 0 <= X <= 2**52.

    Returns Python ints (the sum of squares needs up to ~140 bits).
    """
    X = np.asarray(X, dtype=np.int64)
    if X.ndim != 2:
        raise ValueError("expected a 2-d matrix")
    m = X.shape[1]
    s = [0] * m
    q = [0] * m
    for start in range(0, X.shape[0], _SUM_CHUNK):
        c = X[start:start + _SUM_CHUNK]
        l0 = c & _M18
        l1 = (c >> _L18) & _M18
        l2 = c >> (2 * _L18)
        add_limb_sums(s, q, np.stack([l0.sum(axis=0), l1.sum(axis=0), l2.sum(axis=0),
                                      (l0 * l0).sum(axis=0), (l1 * l1).sum(axis=0), (l2 * l2).sum(axis=0),
                                      (l0 * l1).sum(axis=0), (l0 * l2).sum(axis=0), (l1 * l2).sum(axis=0)], axis=1))
    return s, q


def add_limb_sums(s: list[int], q: list[int], limbs: np.ndarray) -> None:
    """Add one chunk's limb sums to the exact ``s`` and ``q``: ``limbs[j]`` holds column ``j``'s
    sums of ``l0, l1, l2, l0*l0, l1*l1, l2*l2, l0*l1, l0*l2, l1*l2`` with
    ``X = l0 + l1 * 2**18 + l2 * 2**36`` (chunks of at most ``_SUM_CHUNK`` rows: exact in int64)."""
    for j, (s0, s1, s2, q00, q11, q22, q01, q02, q12) in enumerate(limbs.tolist()):
        s[j] += s0 + (s1 << 18) + (s2 << 36)
        q[j] += q00 + (q11 << 36) + (q22 << 72) + (q01 << 19) + (q02 << 37) + (q12 << 55)
