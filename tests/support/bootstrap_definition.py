"""The bucketed Poisson bootstrap interval computed from its written definition (the module
docstrings of ``pipeline.stats.accumulator`` and ``pipeline.stats.poisson``) with Python ints,
hashlib and the pure-NumPy reference weights: what the tests hold the accumulator to."""
from __future__ import annotations

import hashlib
from fractions import Fraction

import numpy as np

from pipeline.stats import poisson


def direct_ci(keys: list[str], columns: np.ndarray, seed: int, n_boot: int, buckets: int,
              confidence: float = 0.95) -> list[tuple[float, float]]:
    """``(ci_low, ci_high)`` per column of ``columns`` (n, k): the scores of the examples
    whose bootstrap keys are ``keys``."""
    k = buckets.bit_length() - 1
    sk = poisson.seed_key(seed)
    n_k: dict[int, int] = {}
    s_k: dict[int, list[int]] = {}
    for key, row in zip(keys, np.asarray(columns, dtype=np.float64).tolist()):
        h = int.from_bytes(hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")
        b = poisson.mix64_int(h ^ sk) >> (64 - k)
        # x -> X = round(x * 2**52) (half to even) -> X26 = round(X / 2**26) (half up)
        x26 = [(round(Fraction(v) * 2**52) + 2**25) >> 26 for v in row]
        n_k[b] = n_k.get(b, 0) + 1
        s_k[b] = [a + v for a, v in zip(s_k.get(b, [0] * len(row)), x26)]
    used = sorted(n_k)
    bases = np.array([poisson.mix64_int(((j + 1) * poisson.BUCKET_SALT) ^ sk) for j in used], dtype=np.uint64)
    W = poisson.weights_reference(bases, n_boot).astype(np.int64).tolist()
    d = (1 - confidence) / 2
    out = []
    for col in range(np.asarray(columns).shape[1]):
        means = []
        for w in W:
            den = sum(wi * n_k[j] for wi, j in zip(w, used))
            if den:  # a replicate whose weights are all zero has no mean
                means.append(sum(wi * s_k[j][col] for wi, j in zip(w, used)) / (den << 26))
        lo, hi = np.percentile(np.array(means), [100 * d, 100 * (1 - d)])
        out.append((float(lo), float(hi)))
    return out
