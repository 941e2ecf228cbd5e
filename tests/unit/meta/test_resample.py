"""The bootstrap: each replicate equals the level's definition (scipy) applied to the explicitly
resampled matrix, the draws are a pure function of (seed, replicate), and chunks and workers give
identical bytes."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("scipy.stats")

from pipeline.meta import correlate, levels, resample  # noqa: E402
from pipeline.meta.data import judged  # noqa: E402
from pipeline.meta.human import judgments  # noqa: E402

from support.meta_data import generated  # noqa: E402


def _data(**kw):
    scores, human, _ = generated(**kw)
    return judged(scores, judgments(human.to_dict("records"), "rel", "test"))


@pytest.mark.parametrize("level", levels.LEVELS)
@pytest.mark.parametrize("coef", ["pearson", "spearman", "kendall", "kendall_c"])
@pytest.mark.parametrize("how", resample.RESAMPLE)
def test_each_replicate_is_the_definition_on_the_resampled_matrix(level, coef, how):
    data = _data()
    n_boot, seed = 12, 7
    got = resample.replicates(resample.Prepared(data.X, data.H, level), coef, n_boot, how, seed)
    cs, cd = resample.weights(seed, how, len(data.systems), len(data.docs), 0, n_boot)
    for b in range(n_boot):
        si = np.repeat(np.arange(len(data.systems)), cs[b].astype(int))
        di = np.repeat(np.arange(len(data.docs)), cd[b].astype(int))
        for k in range(len(data.columns)):
            want = levels.LEVEL_FUNCTIONS[level](data.X[k][np.ix_(si, di)], data.H[np.ix_(si, di)], coef)[0]
            assert got[b, k] == pytest.approx(want, rel=1e-12, abs=1e-12, nan_ok=True), (b, k)


def test_unit_weights_give_the_point_estimates():
    data = _data()
    prepared = {lv: resample.Prepared(data.X, data.H, lv) for lv in levels.LEVELS}
    ones = np.ones((1, len(data.systems))), np.ones((1, len(data.docs)))
    for lv, p in prepared.items():
        for coef, code in resample.CODES.items():
            got = p.run(*ones, code)[0]
            want = [levels.LEVEL_FUNCTIONS[lv](data.X[k], data.H, coef)[0] for k in range(len(data.columns))]
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_the_draws_are_a_function_of_seed_and_replicate():
    a = resample.counts(3, "systems", 9, 0, 40)
    assert (a.sum(axis=1) == 9).all()
    np.testing.assert_array_equal(resample.counts(3, "systems", 9, 17, 29), a[17:29])
    assert not np.array_equal(resample.counts(4, "systems", 9, 0, 40), a)
    assert not np.array_equal(resample.counts(3, "documents", 9, 0, 40), a)
    cs, cd = resample.weights(3, "systems", 9, 5, 0, 4)
    assert (cd == 1).all() and not (cs == 1).all()
    cs, cd = resample.weights(3, "documents", 9, 5, 0, 4)
    assert (cs == 1).all() and not (cd == 1).all()


@pytest.mark.parametrize("level", levels.LEVELS)
def test_chunks_and_workers_give_identical_bytes(level):
    data = _data()
    p = resample.Prepared(data.X, data.H, level)
    one = resample.replicates(p, "kendall", 90, "both", 11, workers=1, chunk=90)
    two = resample.replicates(p, "kendall", 90, "both", 11, workers=2, chunk=7)
    assert one.tobytes() == two.tobytes()


def test_correlate_with_one_and_two_workers_is_identical():
    scores, human, _ = generated()
    a = correlate(scores, human, field="rel", n_boot=60, workers=1)
    b = correlate(scores, human, field="rel", n_boot=60, workers=2)
    assert a.rows.to_json() == b.rows.to_json()
    assert a.rows["ci_low"].notna().any()
    # the intervals hold the point estimates here (a sanity check of the draws' use)
    ok = a.rows.dropna(subset=["r", "ci_low"])
    assert ((ok["ci_low"] <= ok["r"] + 0.5) & (ok["r"] - 0.5 <= ok["ci_high"])).all()
