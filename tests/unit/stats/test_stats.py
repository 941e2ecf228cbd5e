"""Tests for pipeline.stats: exact mergeable accumulators, Poisson bootstrap, rouge-score bootstrap."""
from __future__ import annotations

import ast
import dataclasses
import json
import math
import pathlib
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.bootstrap_definition import direct_ci

from pipeline.stats import (
    ROW_KEYS,
    StatsAccumulator,
    bootstrap_aggregate,
    stats_schema,
    stats_to_json,
)
from pipeline.stats import fixedpoint as fp
from pipeline.stats import poisson

TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
STATS_DIR = pathlib.Path(__file__).resolve().parents[3] / "pipeline" / "stats"


def make_data(n, n_systems=3, seed=0, T=len(TYPES), rouge_like=True):
    rng = np.random.default_rng(seed)
    if rouge_like:  # ROUGE scores are ratios of small integers, with many exact 0s and 1s
        den = rng.integers(1, 40, size=(n, T, 3))
        num = rng.integers(0, 41, size=(n, T, 3))
        scores = np.minimum(num, den) / den
    else:
        scores = rng.random((n, T, 3))
    systems = [f"sys{i % n_systems}" for i in range(n)]
    keys = [f"{s}\x1f{i}" for i, s in enumerate(systems)]
    return keys, systems, scores


def build(keys, systems, scores, parts, **kw):
    """One accumulator per slice between consecutive cut points."""
    cuts = [0, *parts, len(keys)]
    return [
        StatsAccumulator.from_scores(keys[a:b], systems[a:b], scores[a:b], TYPES[: scores.shape[1]], **kw)
        for a, b in zip(cuts[:-1], cuts[1:])
    ]


def canon(acc):
    return json.dumps(acc.to_dict(), sort_keys=True)


# ----------------------------------------------------------------------------- merging
SMALL = dict(seed=7, n_boot=40, hist_bins=64, boot_buckets=16)  # buckets shared by several examples


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(0, 60),
    n_systems=st.integers(1, 4),
    data_seed=st.integers(0, 2**32 - 1),
    data=st.data(),
)
def test_random_partitionings_and_merge_orders_give_identical_dicts(n, n_systems, data_seed, data):
    keys, systems, scores = make_data(n, n_systems, data_seed, T=2, rouge_like=data_seed % 2 == 0)
    whole = StatsAccumulator.from_scores(keys, systems, scores, TYPES[:2], **SMALL)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=8)))
    parts = build(keys, systems, scores, cuts, **SMALL)
    # random merge tree: repeatedly merge two random entries (either order)
    pool = list(parts)
    while len(pool) > 1:
        i = data.draw(st.integers(0, len(pool) - 1))
        a = pool.pop(i)
        j = data.draw(st.integers(0, len(pool) - 1))
        b = pool.pop(j)
        pool.append(a.merge(b) if data.draw(st.booleans()) else b.merge(a))
    merged = pool[0]
    assert canon(merged) == canon(whole)
    assert merged == whole
    assert merged.finalize() == whole.finalize()


def test_partitioning_independence_default_settings():
    keys, systems, scores = make_data(3000, 3, seed=1)
    whole = StatsAccumulator.from_scores(keys, systems, scores, TYPES)
    ref = canon(whole)
    rng = np.random.default_rng(5)
    for k in (2, 7, 31):
        cuts = sorted(rng.choice(np.arange(1, 3000), size=k - 1, replace=False).tolist())
        parts = build(keys, systems, scores, cuts)
        rng.shuffle(parts)
        assert canon(StatsAccumulator.merge_all(parts)) == ref
    # rows shuffled inside a partition: same result (weights follow the key, not the position)
    perm = rng.permutation(3000)
    shuffled = StatsAccumulator.from_scores([keys[i] for i in perm], [systems[i] for i in perm], scores[perm], TYPES)
    assert canon(shuffled) == ref
    assert stats_to_json(shuffled.finalize()) == stats_to_json(whole.finalize())


def test_merge_is_associative_commutative_and_returns_new_objects():
    keys, systems, scores = make_data(300, 2, seed=3)
    a, b, c = build(keys, systems, scores, [100, 200], **SMALL)
    before = canon(a)
    ab_c = a.merge(b).merge(c)
    a_bc = a.merge(b.merge(c))
    cba = c.merge(b).merge(a)
    assert canon(ab_c) == canon(a_bc) == canon(cba)
    assert canon(a) == before  # inputs untouched
    assert ab_c is not a


def test_merge_rejects_different_settings():
    keys, systems, scores = make_data(10, 1)
    a = StatsAccumulator.from_scores(keys, systems, scores, TYPES, seed=1, n_boot=10, hist_bins=10)
    for kw in (dict(seed=2, n_boot=10, hist_bins=10), dict(seed=1, n_boot=11, hist_bins=10),
               dict(seed=1, n_boot=10, hist_bins=11)):
        b = StatsAccumulator.from_scores(keys, systems, scores, TYPES, **kw)
        with pytest.raises(ValueError, match="different settings"):
            a.merge(b)
    c = StatsAccumulator.from_scores(keys, systems, scores[:, ::-1], TYPES[::-1], seed=1, n_boot=10, hist_bins=10)
    with pytest.raises(ValueError):
        a.merge(c)


def _ints(packed: str) -> list[int]:
    import base64
    import zlib

    return np.frombuffer(zlib.decompress(base64.b64decode(packed)), dtype="<i8").tolist()


def test_big_counts_do_not_overflow():
    """Doubling 31 times = 2**31 copies of each of 25 examples per system (~2**35.6 examples):
    every sum must stay exact; far beyond the design range an OverflowError is raised."""
    keys, systems, scores = make_data(50, 2, seed=4, rouge_like=False)
    scores[0] = 1.0
    a = StatsAccumulator.from_scores(keys, systems, scores, TYPES, **SMALL)
    big = a
    for _ in range(31):
        big = big.merge(big)
    d, db = a.to_dict(), big.to_dict()
    for s, sb in zip(d["systems"], db["systems"]):
        assert sb["count"] == s["count"] << 31
        assert [int(v) for v in sb["sum_x"]] == [int(v) << 31 for v in s["sum_x"]]
        assert [int(v) for v in sb["sum_x2"]] == [int(v) << 31 for v in s["sum_x2"]]
        assert _ints(sb["bucket_sum_x26"]) == [v << 31 for v in _ints(s["bucket_sum_x26"])]
        assert _ints(sb["bucket_n"]) == [v << 31 for v in _ints(s["bucket_n"])]
        assert _ints(sb["hist"]) == [v << 31 for v in _ints(s["hist"])]
    # the statistics of 2**31 copies: same mean, min, max, quantiles and CI
    ra, rb = a.finalize(), big.finalize()
    for x, y in zip(ra, rb):
        assert y["mean"] == x["mean"] and y["min"] == x["min"] and y["max"] == x["max"]
        assert y["ci_low"] == x["ci_low"] and y["ci_high"] == x["ci_high"]
        assert y["median_approx"] == pytest.approx(x["median_approx"], abs=1 / SMALL["hist_bins"])
    with pytest.raises(OverflowError):
        for _ in range(20):
            big = big.merge(big)


# ----------------------------------------------------------------------------- finalize
@pytest.mark.parametrize("rouge_like", [True, False])
def test_finalize_matches_numpy(rouge_like):
    keys, systems, scores = make_data(4000, 3, seed=11, rouge_like=rouge_like)
    scores[:, 1, 2] = 0.25  # a constant column: std must be exactly 0
    acc = StatsAccumulator.from_scores(keys, systems, scores, TYPES, n_boot=200)
    rows = acc.finalize()
    assert len(rows) == 3 * len(TYPES) * 3
    assert [(r["system"], TYPES.index(r["type"]), ("precision", "recall", "fmeasure").index(r["stat"]))
            for r in rows] == sorted((r["system"], TYPES.index(r["type"]),
                                      ("precision", "recall", "fmeasure").index(r["stat"])) for r in rows)
    sysarr = np.array(systems)
    width = 1 / acc.hist_bins
    for r in rows:
        assert tuple(r) == ROW_KEYS
        x = scores[sysarr == r["system"], TYPES.index(r["type"]), ("precision", "recall", "fmeasure").index(r["stat"])]
        assert r["count"] == len(x)
        assert abs(r["mean"] - x.mean()) <= 1e-12
        assert abs(r["std"] - x.std(ddof=1)) <= 1e-12
        assert r["min"] == x.min() and r["max"] == x.max()
        assert r["quantile_error"] == width
        for key, q in (("q05_approx", 0.05), ("q25_approx", 0.25), ("median_approx", 0.5), ("q75_approx", 0.75),
                       ("q95_approx", 0.95)):
            assert abs(r[key] - np.quantile(x, q)) <= width + 1e-12, (key, r[key], np.quantile(x, q))
        assert r["ci_method"] == "bucketed-poisson-bootstrap" and r["n_boot"] == 200 and r["seed"] == 12345
        assert r["boot_buckets"] == 4096
    const = [r for r in rows if r["type"] == "rouge2" and r["stat"] == "fmeasure"]
    assert all(r["std"] == 0.0 and r["mean"] == 0.25 and r["median_approx"] == 0.25 and r["q95_approx"] == 0.25
               for r in const)


def test_mean_and_std_are_exact_functions_of_the_quantised_scores():
    keys, systems, scores = make_data(500, 1, seed=2, rouge_like=False)
    acc = StatsAccumulator.from_scores(keys, systems, scores, TYPES, n_boot=0)
    X = [int(v) for v in np.rint(scores[:, 0, 0] * 2.0**52).astype(np.int64)]
    n = len(X)
    mean = Fraction(sum(X), n * 2**52)
    var = (Fraction(sum(v * v for v in X), 2**104) - n * mean * mean) / (n - 1)
    row = acc.finalize()[0]
    assert row["mean"] == float(mean)
    assert abs(row["std"] - math.sqrt(float(var))) <= 1e-16
    assert row["ci_low"] is None and row["ci_high"] is None  # n_boot=0: no interval


def test_single_example_and_extremes():
    scores = np.zeros((1, 1, 3))
    scores[0, 0] = [0.0, 1.0, 0.5]
    acc = StatsAccumulator.from_scores(["a"], ["s"], scores, ["rouge1"])
    rows = acc.finalize()
    assert [r["mean"] for r in rows] == [0.0, 1.0, 0.5]
    assert [r["median_approx"] for r in rows] == [0.0, 1.0, 0.5]
    assert all(r["std"] is None for r in rows)
    # replicates where the only example has weight 0 are dropped; the rest all equal the value
    assert [(r["ci_low"], r["ci_high"]) for r in rows] == [(0.0, 0.0), (1.0, 1.0), (0.5, 0.5)]


def test_exact_column_sums():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2**52 + 1, size=(1000, 5), dtype=np.int64)
    X[:3] = 2**52
    X[3] = 0
    s, q = fp.exact_column_sums(X)
    for j in range(5):
        col = [int(v) for v in X[:, j]]
        assert s[j] == sum(col)
        assert q[j] == sum(v * v for v in col)
    assert fp.to_fixed(np.array([0.0, 1.0, 0.5, 2.0**-53, 3 * 2.0**-53])).tolist() == [0, 2**52, 2**51, 0, 2]


# ----------------------------------------------------------------------------- confidence interval
def test_ci_covers_the_mean_and_shrinks_with_n():
    widths = []
    for n in (100, 1000, 10000):
        keys, systems, scores = make_data(n, 1, seed=n, rouge_like=False)
        acc = StatsAccumulator.from_scores(keys, systems, scores, TYPES)
        rows = acc.finalize()
        w = []
        for r in rows:
            assert r["ci_low"] < r["mean"] < r["ci_high"]
            half = 1.96 * r["std"] / math.sqrt(n)  # normal approximation of the 95% interval
            assert (r["ci_high"] - r["ci_low"]) / 2 == pytest.approx(half, rel=0.2)
            w.append(r["ci_high"] - r["ci_low"])
        widths.append(np.mean(w))
    assert widths[0] > 2.5 * widths[1] > 2.5 * 2.5 * widths[2]
    # a wider confidence level gives a wider interval
    r90, r99 = acc.finalize(0.90)[0], acc.finalize(0.99)[0]
    assert r99["ci_low"] < r90["ci_low"] < r90["ci_high"] < r99["ci_high"]
    with pytest.raises(ValueError):
        acc.finalize(1.5)


def test_seed_changes_the_interval_but_nothing_else():
    keys, systems, scores = make_data(500, 1, seed=9)
    a = StatsAccumulator.from_scores(keys, systems, scores, TYPES, seed=1).finalize()
    b = StatsAccumulator.from_scores(keys, systems, scores, TYPES, seed=2).finalize()
    strip = lambda r: {k: v for k, v in r.items() if k not in ("ci_low", "ci_mid", "ci_high", "seed")}  # noqa: E731
    assert [strip(r) for r in a] == [strip(r) for r in b]
    assert [r["ci_low"] for r in a] != [r["ci_low"] for r in b]


# (6000, 4096): ~3,100 non-empty buckets, more than one chunk of the finalisation's product
@pytest.mark.parametrize("n,buckets", [(300, 4096), (300, 32), (2000, 2), (2000, 256), (6000, 4096)])
def test_ci_equals_its_definition_computed_directly(n, buckets):
    keys, systems, scores = make_data(n, 1, seed=n + buckets, rouge_like=buckets % 2 == 0)
    acc = StatsAccumulator.from_scores(keys, systems, scores, TYPES, seed=31, n_boot=120, boot_buckets=buckets)
    got = [(r["ci_low"], r["ci_high"]) for r in acc.finalize()]
    assert got == direct_ci(keys, scores.reshape(n, -1), 31, 120, buckets)
    assert all(r["boot_buckets"] == buckets for r in acc.finalize())


@pytest.mark.parametrize("n,buckets,n_boot", [(300, 4096, 200), (5000, 2, 50), (6000, 4096, 1000), (1, 2, 30)])
def test_replicate_means_int64_path_equals_the_python_int_definition(n, buckets, n_boot):
    """The finalisation divides int64 sums as float64 while they stay below 2**53: the same
    bits as Python's correctly rounded int / int (one path taken for each, checked below)."""
    from pipeline.stats import accumulator as A

    keys, systems, scores = make_data(n, 1, seed=n, rouge_like=n % 2 == 0)
    acc = StatsAccumulator.from_scores(keys, systems, scores, TYPES, seed=5, n_boot=n_boot, boot_buckets=buckets)
    st = next(iter(acc._systems.values()))
    fast = A._replicate_means(st, 5, n_boot)
    exact = A._replicate_means(st, 5, n_boot, python_ints=True)
    assert fast.shape == exact.shape and fast.shape[1] == len(TYPES) * 3 and fast.shape[0] > 0
    assert fast.tobytes() == exact.tobytes()
    # past 2**53 the Python-int path divides: bucket sums raised by 2**50 (sums of ~2**62)
    big = dataclasses.replace(st, bucket_s=st.bucket_s + (1 << 50) * (st.bucket_n > 0)[:, None, None])
    assert A._replicate_means(big, 5, n_boot).tobytes() == A._replicate_means(big, 5, n_boot, True).tobytes()


def test_bucketed_interval_matches_the_example_level_bootstrap():
    """The bucketed interval estimates what the example-level Poisson bootstrap estimates: on
    20,000 examples (~5 per bucket) the widths agree within the two Monte-Carlo errors."""
    n, n_boot = 20000, 1000
    keys, systems, scores = make_data(n, 1, seed=77, rouge_like=False)
    rows = StatsAccumulator.from_scores(keys, systems, scores, TYPES, seed=5, n_boot=n_boot).finalize()
    flat = scores.reshape(n, -1)
    w_sum = np.zeros(n_boot)
    wx = np.zeros((n_boot, flat.shape[1]))
    bases = poisson.example_bases(keys, 5)
    for lo in range(0, n, 2000):  # per example weights, the same Poisson(1) streams
        W = poisson.poisson_weights(bases[lo:lo + 2000], n_boot)
        w_sum += W.sum(axis=1)
        wx += W @ flat[lo:lo + 2000]
    means = wx / w_sum[:, None]
    ratios = []
    for j, r in enumerate(rows):
        lo, hi = np.percentile(means[:, j], [2.5, 97.5])
        ratios.append((r["ci_high"] - r["ci_low"]) / (hi - lo))
        assert r["ci_low"] < r["mean"] < r["ci_high"]
    assert 0.9 < float(np.median(ratios)) < 1.1, ratios
    assert all(0.8 < x < 1.25 for x in ratios), ratios


@pytest.mark.parametrize("n_boot,buckets,hist_bins", [(0, 4096, 64), (40, 16, 10), (40, 4096, 10000), (7, 2, 3)])
def test_compiled_partition_pass_equals_the_numpy_specification(n_boot, buckets, hist_bins):
    from pipeline.stats import accumulator as acc_mod

    rng = np.random.default_rng(n_boot + buckets + hist_bins)
    n, T = 3000, 4
    x = rng.random((n, T * 3))
    # exact bin edges, 0, 1 and their neighbours: the histogram's floor must agree to the bin
    edges = np.arange(hist_bins + 1) / hist_bins
    x[: 3 * len(edges)].flat[: len(edges)] = edges
    x[-5:] = [[0.0], [1.0], [np.nextafter(1.0, 0)], [np.nextafter(0.0, 1)], [0.5]]
    X = fp.to_fixed(x)
    b = poisson.buckets_of(poisson.example_bases([f"s\x1f{i}" for i in range(n)], 3), buckets)
    compiled = acc_mod._system_stats(X, x, b, T, n_boot, hist_bins, buckets)
    spec = acc_mod._system_stats_numpy(X, x, b, T, n_boot, hist_bins, buckets)
    assert compiled.equals(spec) and compiled.count == n


def test_bucket_count_must_be_a_power_of_two():
    keys, systems, scores = make_data(10, 1)
    for bad in (0, 1, 3, 1000, 2**25, True, 4.0):
        with pytest.raises(ValueError):
            StatsAccumulator.from_scores(keys, systems, scores, TYPES, boot_buckets=bad)
    a = StatsAccumulator.from_scores(keys, systems, scores, TYPES, boot_buckets=64)
    with pytest.raises(ValueError, match="boot_buckets"):
        a.merge(StatsAccumulator.from_scores(keys, systems, scores, TYPES, boot_buckets=128))


def test_poisson_weights_compiled_equals_reference_and_is_poisson():
    bases = poisson.example_bases([f"s\x1f{i}" for i in range(300)], 12345)
    w = poisson.poisson_weights(bases, 1000)
    assert np.array_equal(w, poisson.weights_reference(bases, 1000))
    # each example's weights depend only on its own key
    assert np.array_equal(poisson.poisson_weights(bases[7:9], 1000), w[:, 7:9])
    freq = np.bincount(w.astype(np.int64).ravel()) / w.size
    pmf = [math.exp(-1) / math.factorial(k) for k in range(len(freq))]
    assert np.allclose(freq[:5], pmf[:5], atol=3e-3)
    assert w.mean() == pytest.approx(1.0, abs=0.01) and w.var() == pytest.approx(1.0, abs=0.02)
    # thresholds: exact floor(2**64 * CDF), strictly increasing, first = floor(2**64 / e)
    T = poisson.POISSON1_THRESHOLDS
    assert len(T) == 20 and np.all(np.diff(T.astype(object)) > 0)
    assert int(T[0]) == int(Fraction(2**64) * sum(Fraction((-1) ** j, math.factorial(j)) for j in range(40)))
    # pinned values: the weights are part of the reproducibility contract
    b0 = poisson.example_bases(["sys\x1fex-1"], 12345)
    assert poisson.weights_reference(b0, 12).astype(int).ravel().tolist() == \
        poisson.poisson_weights(b0, 12).astype(int).ravel().tolist()


def test_pinned_weights_stream():
    """Guard against accidental changes of the hashing scheme (values computed once, by spec)."""
    key = "sysA\x1fdoc-42"
    h = int.from_bytes(__import__("hashlib").blake2b(key.encode(), digest_size=8).digest(), "little")
    base = poisson.mix64_int(h ^ poisson.seed_key(2024))
    expect = []
    for b in range(16):
        u = poisson.mix64_int(base + (b + 1) * poisson.GAMMA)
        expect.append(sum(1 for t in poisson.POISSON1_THRESHOLDS.tolist() if u >= t))
    got = poisson.poisson_weights(poisson.example_bases([key], 2024), 16).astype(int).ravel().tolist()
    assert got == expect


def test_compiled_blake2b_equals_hashlib_at_every_block_boundary():
    import hashlib

    rng = np.random.default_rng(5)
    raw = [bytes(rng.integers(0, 256, size=n, dtype=np.uint8)) for n in
           list(range(0, 260)) + [383, 384, 385, 1000]]
    raw += ["sysA\x1fdoc-42".encode(), "é中\x1f🙂".encode()]
    buf = np.frombuffer(b"".join(raw), dtype=np.uint8)
    offs = np.concatenate([[0], np.cumsum([len(r) for r in raw])]).astype(np.int64)
    want = [int.from_bytes(hashlib.blake2b(r, digest_size=8).digest(), "little") for r in raw]
    assert poisson.key_hashes_utf8(buf, offs).tolist() == want


def test_arrow_keys_and_systems_give_the_same_accumulator():
    import pyarrow as pa

    keys, systems, scores = make_data(600, 3, seed=4)
    keys = [k + "é中" if i % 5 == 0 else k for i, k in enumerate(keys)]
    a = StatsAccumulator.from_scores(keys, systems, scores, TYPES, seed=7, n_boot=200)
    b = StatsAccumulator.from_scores(pa.array(keys), pa.chunked_array([systems[:100], systems[100:]]), scores,
                                     TYPES, seed=7, n_boot=200)
    assert a == b and a.to_dict() == b.to_dict()
    with pytest.raises(ValueError, match="unique"):
        StatsAccumulator.from_scores(pa.array([keys[0]] * 2), "s", scores[:2], TYPES)
    with pytest.raises(TypeError, match="null"):
        StatsAccumulator.from_scores(pa.array([keys[0], None]), "s", scores[:2], TYPES)
    with pytest.raises(TypeError, match="strings"):
        StatsAccumulator.from_scores(pa.array([1, 2]), "s", scores[:2], TYPES)
    # the keys' hashes given by a caller that has them (the job's plan pass): the same accumulator
    h = poisson.key_hashes(keys)
    for k in (keys, pa.array(keys)):
        c = StatsAccumulator.from_scores(k, systems, scores, TYPES, seed=7, n_boot=200, key_hashes=h)
        assert c == a and c.to_dict() == a.to_dict()
    with pytest.raises(ValueError, match="one key hash per example"):
        StatsAccumulator.from_scores(keys, systems, scores, TYPES, key_hashes=h[:-1])
    # equal hashes prove nothing: the exact count decides (distinct keys pass, repeated ones fail)
    same = np.zeros(2, dtype=np.uint64)
    StatsAccumulator.from_scores(pa.array(keys[:2]), "s", scores[:2], TYPES, key_hashes=same)
    with pytest.raises(ValueError, match="unique"):
        StatsAccumulator.from_scores(pa.array([keys[0]] * 2), "s", scores[:2], TYPES, key_hashes=same)


# ----------------------------------------------------------------------------- serialisation
def test_to_dict_from_dict_round_trip():
    keys, systems, scores = make_data(700, 3, seed=21)
    acc = StatsAccumulator.from_scores(keys, systems, scores, TYPES, seed=99, n_boot=300)
    d = acc.to_dict()
    text = json.dumps(d, allow_nan=False)
    back = StatsAccumulator.from_dict(json.loads(text))
    assert back == acc
    assert back.to_dict() == d
    assert json.dumps(back.to_dict(), sort_keys=True) == json.dumps(d, sort_keys=True)
    assert back.finalize() == acc.finalize()
    # big sums are strings or packed int64 arrays, never JSON numbers past 2**53
    assert all(isinstance(v, str) for v in d["systems"][0]["sum_x"])
    assert all(isinstance(d["systems"][0][k], str) for k in ("bucket_n", "bucket_sum_x26", "hist"))
    # merging after a round trip is the same as merging before
    other = StatsAccumulator.from_scores([k + "x" for k in keys], systems, scores[::-1], TYPES, seed=99, n_boot=300)
    assert canon(StatsAccumulator.from_dict(json.loads(text)).merge(other)) == canon(acc.merge(other))
    with pytest.raises(ValueError):
        StatsAccumulator.from_dict({**d, "version": 99})
    # contents that from_scores and merge cannot produce are refused
    from pipeline.stats.accumulator import pack_ints
    sys0 = d["systems"][0]
    n_k = np.array(_ints(sys0["bucket_n"]))
    moved = n_k.copy()
    j = int(np.flatnonzero(moved)[0])
    moved[j] -= 1
    for bad in ({"count": sys0["count"] + 1}, {"count": 0}, {"bucket_n": pack_ints(moved)},
                {"bucket_n": pack_ints(np.where(np.arange(len(n_k)) == j, -1, n_k))}):
        with pytest.raises(ValueError, match="disagree"):
            StatsAccumulator.from_dict({**d, "systems": [{**sys0, **bad}, *d["systems"][1:]]})


def test_to_arrow_and_json():
    pa = pytest.importorskip("pyarrow")
    keys, systems, scores = make_data(50, 2, seed=1)
    acc = StatsAccumulator.from_scores(keys, systems, scores, TYPES, n_boot=50)
    table = acc.to_arrow()
    assert table.schema == stats_schema()
    assert table.num_rows == 2 * 4 * 3
    assert table.to_pylist() == acc.finalize()
    rows = json.loads(stats_to_json(acc.finalize()))
    assert rows == acc.finalize()
    empty = StatsAccumulator.empty().to_arrow()
    assert empty.num_rows == 0 and empty.schema == stats_schema()
    assert isinstance(table, pa.Table)


# ----------------------------------------------------------------------------- empty
def test_empty_accumulators():
    keys, systems, scores = make_data(40, 2, seed=5)
    acc = StatsAccumulator.from_scores(keys, systems, scores, TYPES)
    e_generic = StatsAccumulator.empty()
    e_zero = StatsAccumulator.from_scores([], [], np.zeros((0, 4, 3)), TYPES)
    assert e_zero.n_examples == 0 and e_zero.finalize() == [] and e_generic.finalize() == []
    for e in (e_generic, e_zero):
        assert canon(acc.merge(e)) == canon(acc) == canon(e.merge(acc))
        assert StatsAccumulator.from_dict(json.loads(json.dumps(e.to_dict()))) == e
    assert canon(e_generic.merge(e_zero)) == canon(e_zero)
    assert StatsAccumulator.merge_all([]) == StatsAccumulator.empty()
    assert canon(StatsAccumulator.merge_all([e_generic, acc, e_zero, e_generic])) == canon(acc)


def test_input_validation():
    keys, systems, scores = make_data(5, 1)
    bad = scores.copy()
    bad[0, 0, 0] = 1.5
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        StatsAccumulator.from_scores(keys, systems, bad, TYPES)
    bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError):
        StatsAccumulator.from_scores(keys, systems, bad, TYPES)
    with pytest.raises(ValueError, match="unique"):
        StatsAccumulator.from_scores(["a"] * 5, systems, scores, TYPES)
    with pytest.raises(ValueError, match="shape"):
        StatsAccumulator.from_scores(keys, systems, scores, TYPES[:3])
    with pytest.raises(ValueError):
        StatsAccumulator.from_scores(keys[:4], systems, scores, TYPES)
    with pytest.raises(TypeError):
        StatsAccumulator.from_scores(list(range(5)), systems, scores, TYPES)
    # numpy string arrays and a single system string are accepted
    a = StatsAccumulator.from_scores(np.array(keys), np.array(systems), scores, TYPES)
    b = StatsAccumulator.from_scores(keys, systems[0], scores, TYPES)
    assert a == b


def test_stats_package_imports_only_numpy_level_dependencies():
    forbidden = {"dask", "distributed", "fsspec", "s3fs", "pandas"}
    for path in STATS_DIR.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name.split(".")[0] not in forbidden, f"{path.name} imports {name}"


# ----------------------------------------------------------------------------- rouge-score parity
def _rouge_score_reference(d, seed, **kw):
    from rouge_score import scoring

    agg = scoring.BootstrapAggregator(**kw)
    n = len(next(iter(d.values())))
    for i in range(n):
        agg.add_scores({t: scoring.Score(*map(float, m[i])) for t, m in d.items()})
    np.random.seed(seed)
    return agg.aggregate()


@pytest.mark.parametrize(
    "seed,n",
    [(s, n) for s in (0, 1, 42, 123, 2**31 - 1) for n in (1, 2, 7, 100)] + [(0, 1500), (123, 1500)],
)
def test_bootstrap_aggregate_equals_rouge_score_exactly(seed, n):
    pytest.importorskip("rouge_score")
    rng = np.random.default_rng(seed * 1000 + n)
    d = {t: rng.random((n, 3)) for t in ("rouge1", "rouge2", "rougeL")}
    d["rougeLsum"] = np.round(rng.random((n, 3)) * 7) / 7  # ties, like real ROUGE scores
    state = np.random.get_state()
    ours = bootstrap_aggregate(d, seed)
    after = np.random.get_state()
    assert all(np.array_equal(a, b) for a, b in zip(state[1:3], after[1:3]))  # global RNG untouched
    ref = _rouge_score_reference(d, seed)
    assert list(ours) == list(ref)
    for t in d:
        assert tuple(tuple(s) for s in ours[t]) == tuple(tuple(s) for s in ref[t])  # bit-exact
        assert ours[t].mid.fmeasure == ref[t].mid.fmeasure
        assert ours[t]._fields == ("low", "mid", "high") and ours[t].low._fields == ("precision", "recall", "fmeasure")


@pytest.mark.parametrize("kw", [dict(n_samples=1), dict(n_samples=37, confidence_interval=0.9),
                                dict(confidence_interval=0.0), dict(confidence_interval=1.0)])
def test_bootstrap_aggregate_options_equal_rouge_score(kw):
    pytest.importorskip("rouge_score")
    rng = np.random.default_rng(3)
    d = {"rouge1": rng.random((50, 3)), "rougeL": rng.random((50, 3))}
    ours = bootstrap_aggregate(d, 5, **kw)
    ref = _rouge_score_reference(d, 5, **kw)
    for t in d:
        assert tuple(tuple(s) for s in ours[t]) == tuple(tuple(s) for s in ref[t])


def test_bootstrap_aggregate_errors_and_empty():
    assert bootstrap_aggregate({}, 1) == {}
    with pytest.raises(ValueError):
        bootstrap_aggregate({"rouge1": np.zeros((3, 3))}, 1, confidence_interval=1.5)
    with pytest.raises(ValueError):
        bootstrap_aggregate({"rouge1": np.zeros((3, 3))}, 1, n_samples=0)
    with pytest.raises(ValueError):
        bootstrap_aggregate({"rouge1": np.zeros((0, 3))}, 1)
