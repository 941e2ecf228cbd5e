"""Deterministic Poisson(1) bootstrap weights, a pure function of (seed, example key, replicate).

Specification (all arithmetic modulo 2**64 on unsigned integers)::

    GAMMA = 0x9E3779B97F4A7C15
    mix64(z) = splitmix64 finaliser:
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
        z = (z ^ (z >> 27)) * 0x94D049BB133111EB
        z ^ (z >> 31)
    seed_key   = mix64((seed mod 2**64) + GAMMA)                      # once per run
    h(key)     = little-endian uint64 of blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8)
    base(key)  = mix64(h(key) ^ seed_key)                            # once per example
    u_b        = mix64(base + (b + 1) * GAMMA)                        # b = 0 .. n_boot-1
    w_b        = #{k >= 0 : u_b >= T_k}

with ``T_k = floor(2**64 * P(Poisson(1) <= k))`` for every k with ``P(Poisson(1) > k) >= 2**-64``
(20 thresholds, so ``w <= 20``).  The thresholds are integers computed exactly with rational
arithmetic (``POISSON1_THRESHOLDS``), so no floating point or libm is involved anywhere and
the weights are identical on every platform.  ``u_b`` is the ``b``-th output of a splitmix64
stream seeded by ``base``.

The caller chooses the key; the pipeline uses ``f"{system}\\x1f{id}"`` so that the same id in
two systems gets independent weights.

Buckets (what :mod:`pipeline.stats.accumulator` resamples): with ``K = 2**k`` buckets, an
example's bucket is the top ``k`` bits of ``base(key)``, and bucket ``j`` draws its weights
from the same stream with ``bucket_base(j) = mix64(((j + 1) * BUCKET_SALT) ^ seed_key)``.
The bucket is a pure function of (seed, key), so it does not depend on how the corpus is
partitioned either.
"""
from __future__ import annotations

import hashlib
import math
from fractions import Fraction
from typing import Sequence

import numpy as np

from pipeline.stats.blake2b import blake2b64_spans

GAMMA = 0x9E3779B97F4A7C15
C1 = 0xBF58476D1CE4E5B9
C2 = 0x94D049BB133111EB
M64 = (1 << 64) - 1
BUCKET_SALT = 0xD1B54A32D192ED03  # odd, so (j + 1) * salt is distinct for every bucket index
LUT_BITS = 12


def mix64_int(z: int) -> int:
    z &= M64
    z = ((z ^ (z >> 30)) * C1) & M64
    z = ((z ^ (z >> 27)) * C2) & M64
    return z ^ (z >> 31)


def mix64(z: np.ndarray) -> np.ndarray:
    """Vectorised splitmix64 finaliser on a uint64 array (wrapping arithmetic)."""
    z = np.array(z, dtype=np.uint64, copy=True)
    z ^= z >> np.uint64(30)
    z *= np.uint64(C1)
    z ^= z >> np.uint64(27)
    z *= np.uint64(C2)
    z ^= z >> np.uint64(31)
    return z


def _poisson1_thresholds() -> np.ndarray:
    # e^-1 as a rational with error < 1/60! (~1e-82), far below 2**-64 resolution.
    einv = sum(Fraction((-1) ** j, math.factorial(j)) for j in range(60))
    out = []
    cdf = Fraction(0)
    k = 0
    while True:
        cdf += einv / math.factorial(k)
        if (1 - cdf) * (1 << 64) < 1:
            break
        out.append(math.floor(cdf * (1 << 64)))
        k += 1
    return np.array(out, dtype=np.uint64)


POISSON1_THRESHOLDS = _poisson1_thresholds()
# LUT[j] = number of thresholds <= j * 2**52: the weight of every u in bucket j is at least LUT[j].
_LUT = np.searchsorted(
    POISSON1_THRESHOLDS, np.arange(1 << LUT_BITS, dtype=np.uint64) << np.uint64(64 - LUT_BITS), side="right"
).astype(np.int64)


def seed_key(seed: int) -> int:
    return mix64_int((int(seed) + GAMMA) & M64)


def key_hashes(keys: Sequence[str]) -> np.ndarray:
    """uint64 blake2b-64 of the UTF-8 bytes of every key."""
    blake = hashlib.blake2b
    # "surrogatepass" only matters for strings that are not valid Unicode (lone surrogates).
    buf = b"".join([blake(k.encode("utf-8", "surrogatepass"), digest_size=8).digest() for k in keys])
    return np.frombuffer(buf, dtype="<u8").astype(np.uint64)


def example_bases(keys: Sequence[str], seed: int) -> np.ndarray:
    """Per-example stream seeds ``base = mix64(h(key) ^ seed_key)``."""
    return bases_from_hashes(key_hashes(keys), seed)


def bases_from_hashes(hashes: np.ndarray, seed: int) -> np.ndarray:
    """:func:`example_bases` from the keys' hashes ``h(key)`` (:func:`key_hashes`,
    :func:`key_hashes_utf8`)."""
    return mix64(np.asarray(hashes, dtype=np.uint64) ^ np.uint64(seed_key(seed)))


def bucket_bits(n_buckets: int) -> int:
    """``k`` for ``n_buckets = 2**k`` (2 <= n_buckets <= 2**24); ValueError otherwise.  (One
    bucket would put every example in one group: an interval of width 0.  Few buckets give a
    poor one: the pipeline uses 4096.)"""
    if isinstance(n_buckets, bool) or not isinstance(n_buckets, (int, np.integer)) \
            or not 2 <= n_buckets <= 1 << 24 or n_buckets & (n_buckets - 1):
        raise ValueError(f"the number of bootstrap buckets must be a power of two from 2 to 2**24, got {n_buckets!r}")
    return int(n_buckets).bit_length() - 1


def buckets_of(bases: np.ndarray, n_buckets: int) -> np.ndarray:
    """The bucket (int64 in ``[0, n_buckets)``) of every example: the top bits of its base."""
    k = bucket_bits(n_buckets)
    return (np.asarray(bases, dtype=np.uint64) >> np.uint64(64 - k)).astype(np.int64)


def bucket_bases(seed: int, buckets: np.ndarray) -> np.ndarray:
    """Stream seeds of the given bucket indices: ``mix64(((j + 1) * BUCKET_SALT) ^ seed_key)``."""
    j = np.asarray(buckets, dtype=np.uint64)
    return mix64(((j + np.uint64(1)) * np.uint64(BUCKET_SALT)) ^ np.uint64(seed_key(seed)))


def weights_reference(bases: np.ndarray, n_boot: int, out: np.ndarray | None = None) -> np.ndarray:
    """Pure NumPy weights, float64 ``(n_boot, n)``: the readable specification (slow)."""
    bases = np.asarray(bases, dtype=np.uint64)
    ctr = np.arange(1, n_boot + 1, dtype=np.uint64) * np.uint64(GAMMA)
    u = mix64(ctr[:, None] + bases[None, :])
    w = np.searchsorted(POISSON1_THRESHOLDS, u, side="right")
    if out is None:
        return w.astype(np.float64)
    out[...] = w
    return out


try:  # numba is a project dependency; the NumPy path above is the fallback and the spec.
    import numba as _numba
except Exception:  # pragma: no cover
    _numba = None

if _numba is not None:
    @_numba.njit(cache=True, nogil=True)
    def _weights_kernel(bases, n_boot, thresholds, lut, out):  # pragma: no cover - compiled
        n = bases.shape[0]
        K = thresholds.shape[0]
        for b in range(n_boot):  # row by row: contiguous writes
            g = np.uint64(b + 1) * np.uint64(0x9E3779B97F4A7C15)
            for i in range(n):
                z = bases[i] + g
                z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
                z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
                z = z ^ (z >> np.uint64(31))
                k = lut[z >> np.uint64(52)]
                while k < K and z >= thresholds[k]:
                    k += 1
                out[b, i] = k


def any_equal(hashes: np.ndarray) -> bool:
    """Whether two of ``hashes`` are equal.  By a sort: ``np.unique`` (a hash table) took
    1.4 ms for 12,500 uint64 against 0.1 ms."""
    h = np.sort(hashes)
    return bool((h[1:] == h[:-1]).any())


def key_hashes_utf8(buf: np.ndarray, offs: np.ndarray) -> np.ndarray:
    """:func:`key_hashes` of keys given as UTF-8 bytes ``buf[offs[i]:offs[i+1]]`` (e.g. an
    Arrow string column's buffers), compiled: no Python object per key."""
    offs = np.ascontiguousarray(offs, dtype=np.int64)
    return blake2b64_spans(buf, offs[:-1], offs[1:])


def poisson_weights(bases: np.ndarray, n_boot: int, out: np.ndarray | None = None) -> np.ndarray:
    """Weights ``w[b, i]`` as float64 ``(n_boot, n)`` (integers 0..20), compiled when possible."""
    bases = np.ascontiguousarray(bases, dtype=np.uint64)
    if out is None:
        out = np.empty((n_boot, bases.shape[0]), dtype=np.float64)
    if _numba is None:  # pragma: no cover
        return weights_reference(bases, n_boot, out)
    _weights_kernel(bases, n_boot, POISSON1_THRESHOLDS, _LUT, out)
    return out


def replicate_means(bases: np.ndarray, X: np.ndarray, n_boot: int, step: int) -> np.ndarray:
    """``(n_boot, k)`` Poisson(1)-bootstrap replicate means of the columns of ``X`` (n, k), with the
    weights of :func:`poisson_weights` built ``step`` examples at a time (memory stays bounded)."""
    sw = np.zeros(n_boot)
    swx = np.zeros((n_boot, X.shape[1]))
    for lo in range(0, len(bases), step):
        w = poisson_weights(bases[lo:lo + step], n_boot)
        sw += w.sum(axis=1)
        swx += w @ X[lo:lo + step]
    with np.errstate(invalid="ignore", divide="ignore"):
        return swx / sw[:, None]


def sign_flips(bases: np.ndarray, n: int, start: int = 0) -> np.ndarray:
    """Signs ``s[r, i]`` in {-1, +1} as float64 ``(n, len(bases))`` for paired randomization tests:
    ``+1`` iff the top bit of ``u_r`` (the same splitmix64 stream as the weights, trials
    ``r = start .. start+n-1``) is set, so an example's signs are a pure function of (seed, key)
    like its weights, and a chunk of trials needs none of the trials before it."""
    bases = np.asarray(bases, dtype=np.uint64)
    steps = (np.arange(start + 1, start + n + 1, dtype=np.uint64) * np.uint64(GAMMA))[:, None]
    u = mix64(bases[None, :] + steps)
    return np.where((u >> np.uint64(63)) == 1, 1.0, -1.0)
