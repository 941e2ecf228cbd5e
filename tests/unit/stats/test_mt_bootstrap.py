"""The compiled rouge-score bootstrap (pipeline/stats/mt_bootstrap.py) against NumPy's own draws
and means and against rouge-score's BootstrapAggregator, bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

from pipeline.stats.mt_bootstrap import bootstrap_means
from pipeline.stats.rouge_score_bootstrap import bootstrap_aggregate, bootstrap_percentiles


def _numpy_means(rs, matrix, n_samples):
    """rouge-score's loop: one ``choice(arange(N), size=N)`` and one ``np.mean`` per resample."""
    return np.array([np.mean(matrix[rs.choice(np.arange(matrix.shape[0]), size=matrix.shape[0])], axis=0)
                     for _ in range(n_samples)])


@pytest.mark.parametrize("n", [1, 2, 3, 8, 9, 1023, 1024, 1025, 5000])
@pytest.mark.parametrize("seed", [0, 7, 2**32 - 1])
def test_means_and_generator_state_equal_numpy(n, seed):
    rng = np.random.default_rng(n * 31 + seed % 1000)
    matrix = rng.random((n, 3)) * np.array([1.0, 1e-3, 1e5])
    matrix[::3, 1] = np.round(matrix[::3, 1] * 7) / 7  # ties, like real ROUGE scores
    ref_rs, our_rs = np.random.RandomState(seed), np.random.RandomState(seed)
    ref_rs.random_sample(5)  # start inside a block of MT19937's state
    our_rs.random_sample(5)
    ref = _numpy_means(ref_rs, matrix, 40)
    ours = bootstrap_means(our_rs, matrix, 40, [0, 1, 2])
    assert ours.tobytes() == ref.tobytes()
    assert bootstrap_means(np.random.RandomState(seed), matrix, 40, [2]).shape == (40, 1)
    assert our_rs.randint(0, 2**31, size=20).tolist() == ref_rs.randint(0, 2**31, size=20).tolist()


def test_one_column_alone_equals_that_column_of_all():
    matrix = np.random.default_rng(1).random((3000, 3))
    full = bootstrap_means(np.random.RandomState(3), matrix, 100, [0, 1, 2])
    assert bootstrap_means(np.random.RandomState(3), matrix, 100, [2])[:, 0].tobytes() == full[:, 2].tobytes()
    with pytest.raises(ValueError):
        bootstrap_means(np.random.RandomState(3), matrix[:, :1], 10, [0])  # NumPy sums a 1-D mean pairwise


def test_large_input_equals_rouge_score_with_the_global_generator():
    scoring = pytest.importorskip("rouge_score.scoring")
    rng = np.random.default_rng(5)
    d = {"rouge1": rng.random((2100, 3)), "rougeL": np.round(rng.random((2100, 3)) * 9) / 9}
    agg = scoring.BootstrapAggregator(n_samples=2000)  # 2100 x 2000 draws: the compiled path
    for i in range(2100):
        agg.add_scores({t: scoring.Score(*map(float, m[i])) for t, m in d.items()})
    np.random.seed(11)
    ref = agg.aggregate()
    ref_next = np.random.randint(0, 1000, size=10).tolist()
    np.random.seed(11)
    ours = bootstrap_aggregate(d, None, n_samples=2000)
    assert np.random.randint(0, 1000, size=10).tolist() == ref_next  # the global generator advanced alike
    for t in d:
        assert tuple(map(tuple, ours[t])) == tuple(map(tuple, ref[t]))
    mid_f = bootstrap_percentiles(d, 11, 2000, 0.95, cols=[2])
    for t in d:
        assert mid_f[t].shape == (3, 1) and mid_f[t][1, 0] == ref[t].mid.fmeasure
        assert (mid_f[t][0, 0], mid_f[t][2, 0]) == (ref[t].low.fmeasure, ref[t].high.fmeasure)
