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
    from pipeline.text.intrinsics import load_u64   # numba's unaligned 8-byte load (only with numba)

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


_B2_IV = np.array([0x6A09E667F3BCC908, 0xBB67AE8584CAA73B, 0x3C6EF372FE94F82B, 0xA54FF53A5F1D36F1,
                   0x510E527FADE682D1, 0x9B05688C2B3E6C1F, 0x1F83D9ABFB41BD6B, 0x5BE0CD19137E2179],
                  dtype=np.uint64)
_B2_SIGMA = np.array([
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
    [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
    [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
    [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
    [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
    [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
    [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
    [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
    [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0]], dtype=np.int64)

if _numba is not None:

    @_numba.njit(cache=True, nogil=True, inline="always")
    def _rotr(x, n):  # pragma: no cover - compiled
        return (x >> np.uint64(n)) | (x << np.uint64(64 - n))

    @_numba.njit(cache=True, nogil=True, inline="always")
    def _g(a, b, c, d, x, y):  # pragma: no cover - compiled
        a = a + b + x
        d = _rotr(d ^ a, 32)
        c = c + d
        b = _rotr(b ^ c, 24)
        a = a + b + y
        d = _rotr(d ^ a, 16)
        c = c + d
        b = _rotr(b ^ c, 63)
        return a, b, c, d

    @_numba.njit(cache=True, nogil=True)
    def _round(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15,
               x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15):  # pragma: no cover
        """One BLAKE2b round, the message words ``x`` already in the round's SIGMA order."""
        v0, v4, v8, v12 = _g(v0, v4, v8, v12, x0, x1)
        v1, v5, v9, v13 = _g(v1, v5, v9, v13, x2, x3)
        v2, v6, v10, v14 = _g(v2, v6, v10, v14, x4, x5)
        v3, v7, v11, v15 = _g(v3, v7, v11, v15, x6, x7)
        v0, v5, v10, v15 = _g(v0, v5, v10, v15, x8, x9)
        v1, v6, v11, v12 = _g(v1, v6, v11, v12, x10, x11)
        v2, v7, v8, v13 = _g(v2, v7, v8, v13, x12, x13)
        v3, v4, v9, v14 = _g(v3, v4, v9, v14, x14, x15)
        return v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15

    @_numba.njit(cache=True, nogil=True)
    def _blake2b64_kernel(buf, starts, ends, iv, out):  # pragma: no cover - compiled
        """BLAKE2b with an 8-byte digest (RFC 7693; no key) of ``buf[starts[i]:ends[i]]``, as
        the little-endian uint64 :func:`key_hashes` takes from hashlib.  The state and the
        message live in scalars, and the twelve rounds are written out with their SIGMA
        permutations (``_B2_SIGMA``) as constants: looping over the rounds and indexing the
        message through SIGMA is about twice as slow, and wave 1 hashes every key of the input."""
        block = np.zeros(128, dtype=np.uint8)
        m = block.view(np.uint64)  # little-endian words (as is every platform numba targets)
        for i in range(starts.shape[0]):
            start = starts[i]
            length = ends[i] - start
            h0 = iv[0] ^ np.uint64(0x01010008)  # digest length 8, no key, fanout 1, depth 1
            h1, h2, h3, h4, h5, h6, h7 = iv[1], iv[2], iv[3], iv[4], iv[5], iv[6], iv[7]
            n_blocks = max(1, (length + 127) // 128)
            for blk in range(n_blocks):
                lo = 128 * blk
                hi = min(length, lo + 128)
                full = (hi - lo) >> 3
                for w in range(full):   # whole words loaded as words, then the tail's bytes
                    m[w] = load_u64(buf, start + lo + 8 * w)
                for w in range(full, 16):
                    m[w] = 0
                for q in range(8 * full, hi - lo):
                    block[q] = buf[start + lo + q]
                m0, m1, m2, m3, m4, m5, m6, m7 = m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7]
                m8, m9, m10, m11, m12, m13, m14, m15 = m[8], m[9], m[10], m[11], m[12], m[13], m[14], m[15]
                last = blk == n_blocks - 1
                v0, v1, v2, v3, v4, v5, v6, v7 = h0, h1, h2, h3, h4, h5, h6, h7
                v8, v9, v10, v11 = iv[0], iv[1], iv[2], iv[3]
                v12 = iv[4] ^ np.uint64(hi)  # bytes compressed so far (the high word stays 0)
                v13 = iv[5]
                v14 = ~iv[6] if last else iv[6]
                v15 = iv[7]
                v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15 = _round(
                    v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15,
                    m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15)
                v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15 = _round(
                    v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15,
                    m14, m10, m4, m8, m9, m15, m13, m6, m1, m12, m0, m2, m11, m7, m5, m3)
                v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15 = _round(
                    v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15,
                    m11, m8, m12, m0, m5, m2, m15, m13, m10, m14, m3, m6, m7, m1, m9, m4)
                v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15 = _round(
                    v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15,
                    m7, m9, m3, m1, m13, m12, m11, m14, m2, m6, m5, m10, m4, m0, m15, m8)
                v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15 = _round(
                    v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15,
                    m9, m0, m5, m7, m2, m4, m10, m15, m14, m1, m11, m12, m6, m8, m3, m13)
                v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15 = _round(
                    v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15,
                    m2, m12, m6, m10, m0, m11, m8, m3, m4, m13, m7, m5, m15, m14, m1, m9)
                v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15 = _round(
                    v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15,
                    m12, m5, m1, m15, m14, m13, m4, m10, m0, m7, m6, m3, m9, m2, m8, m11)
                v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15 = _round(
                    v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15,
                    m13, m11, m7, m14, m12, m1, m3, m9, m5, m0, m15, m4, m8, m6, m2, m10)
                v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15 = _round(
                    v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15,
                    m6, m15, m14, m9, m11, m3, m0, m8, m12, m2, m13, m7, m1, m4, m10, m5)
                v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15 = _round(
                    v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15,
                    m10, m2, m8, m4, m7, m6, m1, m5, m15, m11, m9, m14, m3, m12, m13, m0)
                v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15 = _round(
                    v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15,
                    m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15)
                v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15 = _round(
                    v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15,
                    m14, m10, m4, m8, m9, m15, m13, m6, m1, m12, m0, m2, m11, m7, m5, m3)
                h0 ^= v0 ^ v8
                h1 ^= v1 ^ v9
                h2 ^= v2 ^ v10
                h3 ^= v3 ^ v11
                h4 ^= v4 ^ v12
                h5 ^= v5 ^ v13
                h6 ^= v6 ^ v14
                h7 ^= v7 ^ v15
            out[i] = h0


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


def blake2b64_spans(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """BLAKE2b-64 (as :func:`key_hashes_utf8`) of ``buf[starts[i]:ends[i]]`` (spans need not touch)."""
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    ends = np.ascontiguousarray(ends, dtype=np.int64)
    out = np.empty(starts.shape[0], dtype=np.uint64)
    if _numba is None:  # pragma: no cover
        raw = bytes(np.asarray(buf, dtype=np.uint8))
        return np.array([int.from_bytes(hashlib.blake2b(raw[a:b], digest_size=8).digest(), "little")
                         for a, b in zip(starts.tolist(), ends.tolist())], dtype=np.uint64)
    _blake2b64_kernel(np.ascontiguousarray(buf, dtype=np.uint8), starts, ends, _B2_IV, out)
    return out


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
