"""Mergeable, exact corpus statistics for ROUGE scores.

One :class:`StatsAccumulator` holds, per system and per (rouge type, stat) column, sufficient
statistics that merge by integer addition (so a tree reduction over any partitioning, in any
order, gives byte-identical results):

* ``count``; ``sum X`` and ``sum X*X`` with ``X = round(x * 2**52)`` as exact Python ints
  (see :mod:`pipeline.stats.fixedpoint`: quantisation error <= 2**-53 per score);
* exact ``min`` / ``max`` (the float64 scores themselves);
* a fixed-bin histogram on ``[0, 1]`` (``hist_bins`` bins, default 10,000: bin ``j`` holds
  ``j/bins <= x < (j+1)/bins``, the last bin also holds ``x == 1``) for the quantiles, which
  are therefore accurate to one bin width (1e-4 by default), and named so (``median_approx``);
* a bucketed Poisson bootstrap: every example falls in one of ``boot_buckets`` buckets (4096
  by default), a pure function of ``(seed, key)`` (:mod:`pipeline.stats.poisson`); per bucket
  ``k`` the count ``n_k`` and ``S_k = sum X26`` with ``X26 = round(x * 2**26)``.  At
  finalisation replicate ``b`` gives every bucket a weight ``w_bk ~ Poisson(1)``, a pure
  function of ``(seed, k, b)``, and its mean is ``sum_k w_bk S_k / (2**26 sum_k w_bk n_k)``.

Why buckets: weighting every example in every replicate (1,000 weights per example) made the
statistics 1.75 s of the one-process job's 8.1 s for 200,000 pairs (cProfile; 0.74 s of it
generating the weights); per bucket it is O(n) per partition plus O(buckets x replicates)
once (0.32 s).  Resampling buckets of examples assigned at
random is a cluster bootstrap, valid for the mean of independent examples.  While buckets
hold one example each it is the example-level Poisson bootstrap; with many examples per
bucket it estimates the variance of the mean from ``boot_buckets`` groups, so the width of
the interval carries an extra relative error of about ``1/sqrt(2 * boot_buckets)`` (1.1% at
4096, from the chi-square approximation of a variance estimated from that many groups), below
the Monte-Carlo error of the percentile endpoints at 1000 replicates (~4% by the usual normal
approximation of a sample quantile; both computed, not measured).
The replicate means use the scores rounded to 2**-26 (<= 1.5e-8 each); the mean, std and
quantiles do not.

Finalisation (:mod:`pipeline.stats.finalize`) turns these into rows: count, mean, std (sample,
ddof=1), min, max, the approximate quantiles (``q05_approx`` ... ``q95_approx``, within
``quantile_error``, one bin) and the ``confidence`` percentile interval of the replicate means and
their median (:data:`pipeline.stats.rows.ROW_KEYS`).
Only NumPy is needed (pyarrow is imported lazily by :meth:`StatsAccumulator.to_arrow`).
"""
from __future__ import annotations

import base64
import zlib
import operator
from typing import Iterable, Sequence

import numpy as np

from pipeline.scoring.types import STATS
from pipeline.stats import fixedpoint as fp
from pipeline.stats import poisson
from pipeline.stats.finalize import BOOT_BITS, QUANTILES, _boot_ci, _hist_quantiles, _moments, _replicate_means
from pipeline.stats.rows import ROW_KEYS, rows_to_arrow, stats_schema, stats_to_json
from pipeline.stats.keys import DEFAULT_SEED, example_key_hashes
from pipeline.stats.sums import SystemSums

# the names other modules import from here (the finalisation and the row outputs live in
# pipeline.stats.finalize and pipeline.stats.rows)
__all__ = ["BOOT_BITS", "BOOT_BUCKETS", "CI_METHOD", "FORMAT", "FORMAT_VERSION", "QUANTILES", "ROW_KEYS", "STATS",
           "StatsAccumulator", "pack_ints", "rows_to_arrow", "stats_schema", "stats_to_json", "unpack_ints"]

CI_METHOD = "bucketed-poisson-bootstrap"
BOOT_BUCKETS = 4096
FORMAT = "rouge-pipeline.stats"
FORMAT_VERSION = 3

# Rows per bincount: a float64 bucket sum of X26 <= 2**26 stays exact below 2**27 rows.
_BINCOUNT_ROWS = 1 << 26
# X26 = round(X / 2**_X26_SHIFT) (half up) from the 52-bit fixed point X
_X26_SHIFT = fp.FIXED_BITS - BOOT_BITS
_X26_HALF = 1 << (_X26_SHIFT - 1)


def pack_ints(a: np.ndarray, level: int = 1) -> str:
    """int64 array -> base64(zlib(little-endian bytes)): canonical, and fast to (de)serialise.
    ``level=0`` stores without compressing (same format), for data zlib cannot shrink much."""
    return base64.b64encode(zlib.compress(np.ascontiguousarray(a, dtype="<i8").tobytes(), level)).decode("ascii")


def unpack_ints(text: str, size: int) -> np.ndarray:
    a = np.frombuffer(zlib.decompress(base64.b64decode(text)), dtype="<i8").astype(np.int64)
    if a.size != size:
        raise ValueError(f"packed array has {a.size} values, expected {size}")
    return a


def _check_int(name: str, v, lo: int | None = None) -> int:
    if isinstance(v, bool):
        raise TypeError(f"{name} must be an int")
    v = operator.index(v)
    if lo is not None and v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")
    return v


class StatsAccumulator:
    """Exact, mergeable corpus statistics (see the module docstring).

    Build with :meth:`from_scores` (one partition), combine with :meth:`merge` /
    :meth:`merge_all`, serialise with :meth:`to_dict` / :meth:`from_dict`, read out with
    :meth:`finalize` or :meth:`to_arrow`.  :meth:`empty` is the neutral element.
    """

    __slots__ = ("type_names", "seed", "n_boot", "hist_bins", "boot_buckets", "_systems")

    def __init__(self, type_names, seed, n_boot, hist_bins, boot_buckets,
                 systems: dict[str, SystemSums] | None = None):
        self.type_names = None if type_names is None else tuple(type_names)
        self.seed = seed
        self.n_boot = n_boot
        self.hist_bins = hist_bins
        self.boot_buckets = boot_buckets
        self._systems: dict[str, SystemSums] = dict(sorted((systems or {}).items()))

    # ------------------------------------------------------------------ construction
    @classmethod
    def empty(cls, type_names=None, seed: int | None = None, n_boot: int | None = None,
              hist_bins: int | None = None, boot_buckets: int = BOOT_BUCKETS) -> "StatsAccumulator":
        """An accumulator with no examples.  Without a configuration it adopts the other
        side's on :meth:`merge` (identity element); with one it must match it."""
        if type_names is None:
            return cls(None, None, None, None, None)
        poisson.bucket_bits(boot_buckets)
        return cls(list(type_names), _check_int("seed", seed), _check_int("n_boot", n_boot, 0),
                   _check_int("hist_bins", hist_bins, 1), int(boot_buckets))

    @property
    def configured(self) -> bool:
        return self.type_names is not None

    @property
    def systems(self) -> list[str]:
        return list(self._systems)

    @property
    def n_examples(self) -> int:
        return sum(s.count for s in self._systems.values())

    @classmethod
    def from_scores(
        cls,
        keys: Sequence[str] | np.ndarray,
        systems: Sequence[str] | np.ndarray | str,
        scores: np.ndarray,
        type_names: Sequence[str],
        seed: int = DEFAULT_SEED,
        n_boot: int = 1000,
        hist_bins: int = 10000,
        boot_buckets: int = BOOT_BUCKETS,
        key_hashes: np.ndarray | None = None,
    ) -> "StatsAccumulator":
        """Statistics of one partition.

        ``keys[i]``: the example's unique key (the bootstrap weights are a function of it and
        ``seed`` only; the pipeline passes ``f"{system}\\x1f{id}"``, and refuses system names that
        hold ``"\\x1f"``, so different pairs never share a key); ``systems[i]``: its system
        (a single ``str`` applies to all); ``scores``: float64 ``(n, len(type_names), 3)`` of
        precision, recall, fmeasure in ``[0, 1]``; ``boot_buckets``: a power of two (module
        docstring); ``key_hashes``: :func:`poisson.key_hashes` of ``keys``, when the caller has
        them already (a wave-1 task hashes its unit's keys once, for the duplicate search and these).
        """
        type_names = [str(t) for t in type_names]
        if not type_names:
            raise ValueError("type_names must not be empty")
        if len(set(type_names)) != len(type_names):
            raise ValueError(f"duplicate type names: {type_names}")
        seed = _check_int("seed", seed)
        if not -(1 << 63) <= seed < (1 << 63):
            raise ValueError("seed must fit in a signed 64-bit integer")
        n_boot = _check_int("n_boot", n_boot, 0)
        hist_bins = _check_int("hist_bins", hist_bins, 1)
        poisson.bucket_bits(boot_buckets)
        T = len(type_names)
        scores = np.asarray(scores, dtype=np.float64)
        if scores.ndim != 3 or scores.shape[1:] != (T, 3):
            raise ValueError(f"scores must have shape (n, {T}, 3), got {scores.shape}")
        n = scores.shape[0]
        keys, systems, hashes = _checked_keys(keys, systems, key_hashes, n, n_boot)
        acc = cls(type_names, seed, n_boot, hist_bins, int(boot_buckets))
        if n == 0:
            return acc

        X = fp.to_fixed(scores).reshape(n, T * 3)
        flat = scores.reshape(n, T * 3)
        if not n_boot:  # the keys' hashes only place examples in bootstrap buckets
            buckets = np.zeros(n, dtype=np.int64)
        elif hashes is None:  # a list of str
            buckets = poisson.buckets_of(poisson.example_bases(keys, seed), boot_buckets)
        else:
            buckets = poisson.buckets_of(poisson.bases_from_hashes(hashes, seed), boot_buckets)
        sys_names, codes = _system_codes(systems, n)
        order = np.argsort(codes, kind="stable")
        bounds = np.searchsorted(codes[order], np.arange(len(sys_names) + 1))
        out: dict[str, SystemSums] = {}
        for s, name in enumerate(sys_names):
            idx = order[bounds[s]:bounds[s + 1]]
            out[name] = _system_stats(X[idx], flat[idx], buckets[idx], T, n_boot, hist_bins, boot_buckets)
        acc._systems = dict(sorted(out.items()))
        return acc

    # ------------------------------------------------------------------ merging
    def _config(self):
        return (self.type_names, self.seed, self.n_boot, self.hist_bins, self.boot_buckets)

    def merge(self, other: "StatsAccumulator") -> "StatsAccumulator":
        """A new accumulator of both (exact; associative and commutative)."""
        if not isinstance(other, StatsAccumulator):
            raise TypeError(f"cannot merge with {type(other).__name__}")
        if not other.configured:
            return StatsAccumulator(*self._config(), self._systems)
        if not self.configured:
            return StatsAccumulator(*other._config(), other._systems)
        if self._config() != other._config():
            raise ValueError(
                "cannot merge statistics with different settings: "
                f"{self._config()} vs {other._config()} (type_names, seed, n_boot, hist_bins, boot_buckets)"
            )
        systems = dict(self._systems)
        for name, st in other._systems.items():
            systems[name] = systems[name].merge(st) if name in systems else st
        return StatsAccumulator(*self._config(), systems)

    @staticmethod
    def merge_all(accs: Iterable["StatsAccumulator"]) -> "StatsAccumulator":
        out = StatsAccumulator.empty()
        for a in accs:
            out = out.merge(a)
        return out

    def __eq__(self, other) -> bool:
        if not isinstance(other, StatsAccumulator):
            return NotImplemented
        return (
            self._config() == other._config()
            and list(self._systems) == list(other._systems)
            and all(a.equals(other._systems[k]) for k, a in self._systems.items())
        )

    __hash__ = None

    def __repr__(self) -> str:
        return (f"StatsAccumulator(systems={len(self._systems)}, examples={self.n_examples}, "
                f"types={self.type_names}, seed={self.seed}, n_boot={self.n_boot}, "
                f"hist_bins={self.hist_bins}, boot_buckets={self.boot_buckets})")

    def nbytes(self) -> int:
        """The bytes of its arrays (what keeping it in memory costs, about)."""
        return sum(a.nbytes for st in self._systems.values()
                   for a in (st.min, st.max, st.hist, st.bucket_n, st.bucket_s))

    # ------------------------------------------------------------------ serialisation
    def to_dict(self) -> dict:
        """JSON-serialisable, canonical (equal accumulators give equal dicts).

        The per-type sums, which can exceed 2**53, are decimal strings.  The large integer
        arrays (the bootstrap buckets' counts and sums, the histogram) are packed: little-endian int64, zlib-compressed, base64 (:func:`pack_ints`); a task's
        completion marker would otherwise spend longer in JSON than its scoring.
        """
        systems = []
        for name, st in self._systems.items():
            flat = st.hist.ravel()
            systems.append({
                "system": name,
                "count": st.count,
                "sum_x": [str(v) for v in st.sum_x],
                "sum_x2": [str(v) for v in st.sum_x2],
                "min": st.min.ravel().tolist(),
                "max": st.max.ravel().tolist(),
                "hist": pack_ints(flat),
                "bucket_n": pack_ints(st.bucket_n),
                # near-random sums: zlib -1 would spend ~8 ms per system to save ~40%
                "bucket_sum_x26": pack_ints(st.bucket_s, level=0),
            })
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "fixed_point_bits": fp.FIXED_BITS,
            "type_names": None if self.type_names is None else list(self.type_names),
            "seed": self.seed,
            "n_boot": self.n_boot,
            "hist_bins": self.hist_bins,
            "boot_buckets": self.boot_buckets,
            "systems": systems,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "StatsAccumulator":
        if d.get("format") != FORMAT or d.get("version") != FORMAT_VERSION:
            raise ValueError(f"not a {FORMAT} v{FORMAT_VERSION} dict: {d.get('format')!r} v{d.get('version')!r}")
        if d.get("fixed_point_bits") != fp.FIXED_BITS:
            raise ValueError(f"fixed_point_bits {d.get('fixed_point_bits')!r} != {fp.FIXED_BITS}")
        if d["type_names"] is None:
            if d["systems"]:
                raise ValueError("an unconfigured accumulator cannot hold systems")
            return cls.empty()
        acc = cls.empty(d["type_names"], d["seed"], d["n_boot"], d["hist_bins"], d["boot_buckets"])
        T, H = len(acc.type_names), acc.hist_bins
        K = acc.boot_buckets if acc.n_boot else 0
        m = T * 3
        systems = {}
        for s in d["systems"]:
            hist = unpack_ints(s["hist"], m * H)
            st = SystemSums(
                count=int(s["count"]),
                sum_x=tuple(int(v) for v in s["sum_x"]),
                sum_x2=tuple(int(v) for v in s["sum_x2"]),
                min=np.asarray(s["min"], dtype=np.float64).reshape(T, 3),
                max=np.asarray(s["max"], dtype=np.float64).reshape(T, 3),
                hist=hist.reshape(T, 3, H),
                bucket_n=unpack_ints(s["bucket_n"], K),
                bucket_s=unpack_ints(s["bucket_sum_x26"], K * m).reshape(K, T, 3),
            )
            if len(st.sum_x) != m or len(st.sum_x2) != m:
                raise ValueError("sum_x/sum_x2 length does not match type_names")
            # counts that cannot come from from_scores/merge (a damaged or hand-edited marker)
            n = st.count
            if (n < 1 or (st.hist < 0).any() or (st.bucket_n < 0).any() or (st.bucket_s < 0).any()
                    or not (st.hist.reshape(m, H).sum(axis=1) == n).all()
                    or (K and int(st.bucket_n.sum()) != n)):
                raise ValueError(f"system {s['system']!r}: counts, histogram and bootstrap buckets disagree")
            systems[s["system"]] = st
        acc._systems = dict(sorted(systems.items()))
        return acc

    # ------------------------------------------------------------------ read-out
    def finalize(self, confidence: float = 0.95) -> list[dict]:
        """One row per (system, type, stat), sorted by system, type order, stat order."""
        if not 0.0 <= confidence <= 1.0:
            raise ValueError("confidence must be in [0, 1]")
        rows = []
        for name, st in self._systems.items():
            boot_means = _replicate_means(st, self.seed, self.n_boot)
            for t, tname in enumerate(self.type_names):
                for k, stat in enumerate(STATS):
                    j = t * 3 + k
                    row = {"system": name, "type": tname, "stat": stat, "count": st.count}
                    row.update(_moments(st.count, st.sum_x[j], st.sum_x2[j]))
                    lo_v, hi_v = float(st.min[t, k]), float(st.max[t, k])
                    row["min"], row["max"] = lo_v, hi_v
                    row.update(_hist_quantiles(st.hist[t, k], st.count, lo_v, hi_v))
                    row["quantile_error"] = 1.0 / self.hist_bins   # each estimate is in its value's bin
                    row["ci_low"], row["ci_mid"], row["ci_high"] = _boot_ci(boot_means[:, j], confidence)
                    row["confidence"] = float(confidence)
                    row["ci_method"] = CI_METHOD
                    row["n_boot"] = self.n_boot
                    row["boot_buckets"] = self.boot_buckets
                    row["seed"] = self.seed
                    rows.append({key: row[key] for key in ROW_KEYS})
        return rows

    def to_arrow(self, confidence: float = 0.95):
        return rows_to_arrow(self.finalize(confidence))


# ---------------------------------------------------------------------- per-partition work
def _checked_keys(keys, systems, key_hashes, n: int, n_boot: int):
    """``(keys, systems, hashes)`` of :meth:`StatsAccumulator.from_scores`'s arguments for ``n``
    examples, checked: strings (a list, or one Arrow column), one of each per example, the
    keys unique; ``hashes``: the keys' hashes when given or cheap (an Arrow column), else None."""
    keys = _strings(keys, "keys")
    systems = [systems] * n if isinstance(systems, str) else _strings(systems, "systems")
    if len(keys) != n or len(systems) != n:
        raise ValueError(f"need one key and one system per example: {len(keys)} keys, "
                         f"{len(systems)} systems, {n} score rows")
    hashes = None
    if key_hashes is not None:
        hashes = np.asarray(key_hashes, dtype=np.uint64)
        if hashes.shape != (n,):
            raise ValueError(f"need one key hash per example: {hashes.shape} for {n} examples")
    elif n_boot and not isinstance(keys, list):  # an Arrow column: hashed from its UTF-8 buffer
        hashes = example_key_hashes(keys)
    # distinct hashes prove distinct keys; equal ones need the exact count
    if (hashes is None or poisson.any_equal(hashes)) and _n_distinct(keys) != n:
        raise ValueError("example keys must be unique (use f'{system}\\x1f{id}')")
    return keys, systems, hashes


def _system_codes(systems, n: int) -> tuple[list, np.ndarray]:
    """The distinct systems in order of first appearance, and each example's index among them
    (``systems``: a list of str or an Arrow string array)."""
    if isinstance(systems, list):
        sys_names = list(dict.fromkeys(systems))
        codes_of = {name: i for i, name in enumerate(sys_names)}
        codes = (np.zeros(n, dtype=np.int64) if len(sys_names) == 1 else
                 np.fromiter(map(codes_of.__getitem__, systems), dtype=np.int64, count=n))
    else:  # dictionary order is first appearance, as dict.fromkeys above
        enc = systems.dictionary_encode()
        sys_names = enc.dictionary.to_pylist()
        codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return sys_names, codes


def _strings(values, name: str):
    """A list of str, or a pyarrow string array (kept as one Arrow chunk); TypeError otherwise."""
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover
        pa = None
    if pa is not None and isinstance(values, (pa.Array, pa.ChunkedArray)):
        arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            raise TypeError(f"{name} must be strings, got an Arrow column of {arr.type}")
        if arr.null_count:
            raise TypeError(f"{name} must be strings, got {arr.null_count} null(s)")
        return arr
    seq = values.tolist() if isinstance(values, np.ndarray) else list(values)
    if not set(map(type, seq)) <= {str}:
        bad = next(v for v in seq if not isinstance(v, str))
        raise TypeError(f"{name} must be strings, got {type(bad).__name__}: {bad!r}")
    return seq


def _n_distinct(values) -> int:
    if isinstance(values, list):
        return len(set(values))
    import pyarrow.compute as pc

    return pc.count_distinct(values).as_py()


def _system_stats(X: np.ndarray, x: np.ndarray, buckets: np.ndarray, T: int, n_boot: int,
                  hist_bins: int, boot_buckets: int) -> SystemSums:
    """One system's sufficient statistics: one compiled pass over the rows (exact sums, the
    histogram, the bootstrap buckets) when numba is there; :func:`_system_stats_numpy`, the
    specification it is tested against, otherwise."""
    if _partition_kernel is None:  # pragma: no cover
        return _system_stats_numpy(X, x, buckets, T, n_boot, hist_bins, boot_buckets)
    n, m = X.shape
    K = boot_buckets if n_boot else 0
    sum_x, sum_x2 = [0] * m, [0] * m
    limbs = np.zeros((m, 9), dtype=np.int64)
    hist = np.zeros((m, hist_bins), dtype=np.int64)
    bucket_n = np.zeros(K, dtype=np.int64)
    bucket_s = np.zeros((K, m), dtype=np.int64)
    for start in range(0, n, fp._SUM_CHUNK):
        sl = slice(start, start + fp._SUM_CHUNK)
        limbs[:] = 0
        _partition_kernel(X[sl], x[sl], buckets[sl], hist_bins, K, limbs, hist, bucket_n, bucket_s)
        fp.add_limb_sums(sum_x, sum_x2, limbs)
    return _new_system(x, T, sum_x, sum_x2, hist, bucket_n, bucket_s)


def _new_system(x, T, sum_x, sum_x2, hist, bucket_n, bucket_s) -> SystemSums:
    return SystemSums(
        count=x.shape[0],
        sum_x=tuple(sum_x),
        sum_x2=tuple(sum_x2),
        min=x.min(axis=0).reshape(T, 3),
        max=x.max(axis=0).reshape(T, 3),
        hist=hist.reshape(T, 3, -1),
        bucket_n=bucket_n,
        bucket_s=bucket_s.reshape(bucket_s.shape[0], T, 3),
    )


if poisson._numba is None:  # pragma: no cover
    _partition_kernel = None
else:

    @poisson._numba.njit(cache=True, nogil=True)
    def _partition_kernel(X, x, buckets, hist_bins, n_buckets, limbs, hist, bucket_n, bucket_s):  # pragma: no cover
        # the operations of _system_stats_numpy, row by row (integer arithmetic, and the same
        # IEEE multiply and floor for the histogram bin)
        n, m = X.shape
        bins = np.float64(hist_bins)
        for i in range(n):
            k = buckets[i]
            if n_buckets:
                bucket_n[k] += 1
            for j in range(m):
                v = X[i, j]  # limbs as in fixedpoint.exact_column_sums
                l0 = v & fp._M18
                l1 = (v >> fp._L18) & fp._M18
                l2 = v >> (2 * fp._L18)
                limbs[j, 0] += l0
                limbs[j, 1] += l1
                limbs[j, 2] += l2
                limbs[j, 3] += l0 * l0
                limbs[j, 4] += l1 * l1
                limbs[j, 5] += l2 * l2
                limbs[j, 6] += l0 * l1
                limbs[j, 7] += l0 * l2
                limbs[j, 8] += l1 * l2
                h = np.int64(np.floor(x[i, j] * bins))
                if h > hist_bins - 1:
                    h = hist_bins - 1
                hist[j, h] += 1
                if n_buckets:
                    bucket_s[k, j] += (v + _X26_HALF) >> _X26_SHIFT


def _system_stats_numpy(X: np.ndarray, x: np.ndarray, buckets: np.ndarray, T: int, n_boot: int,
                        hist_bins: int, boot_buckets: int) -> SystemSums:
    n, m = X.shape
    sum_x, sum_x2 = fp.exact_column_sums(X)
    # Histogram: floor(x * bins) (exact IEEE operations: deterministic), x == 1 in the last bin.
    b = np.minimum(np.floor(x * float(hist_bins)).astype(np.int64), hist_bins - 1)
    b += np.arange(m, dtype=np.int64)[None, :] * hist_bins
    hist = np.bincount(b.ravel(), minlength=m * hist_bins).astype(np.int64).reshape(T, 3, hist_bins)

    K = boot_buckets if n_boot else 0
    bucket_n = np.bincount(buckets, minlength=K).astype(np.int64) if K else np.zeros(0, dtype=np.int64)
    bucket_s = np.zeros((K, m), dtype=np.int64)
    if K:
        x26 = ((X + _X26_HALF) >> _X26_SHIFT).astype(np.float64)
        for start in range(0, n, _BINCOUNT_ROWS):
            sl = slice(start, start + _BINCOUNT_ROWS)
            for j in range(m):  # float64 sums of integers < 2**53: exact
                bucket_s[:, j] += np.bincount(buckets[sl], weights=x26[sl, j], minlength=K).astype(np.int64)
    return _new_system(x, T, sum_x, sum_x2, hist, bucket_n, bucket_s)

