"""``compare --systems``: the same not-comparable checks as run vs run compare (settings,
coverage of the documents actually compared, none), and the approximate-randomization p-value
computed chunk by chunk equal to the whole sign matrix at once."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pipeline.gate import significance as sig
from pipeline.gate.runs import RunData
from pipeline.stats import poisson

SIG = "rouge:1|tok:default|seed:12345"
BASE = [0.2, 0.3, 0.4, 0.5, 0.35, 0.45, 0.25, 0.55]


def run_of(url: str, f: dict[str, list[float]], signature: str = SIG) -> RunData:
    rows = [{"id": f"d{i}", "system": system, "rouge1_precision": v, "rouge1_recall": v, "rouge1_fmeasure": v}
            for system, vals in f.items() for i, v in enumerate(vals)]
    info = {"config": {"scoring": {"rouge_types": ["rouge1"]}}, "signature": signature}
    return RunData(url, info, None, None, pd.DataFrame(rows))


FAST = dict(n_boot=50, n_trials=50)


def test_two_runs_of_other_settings_are_not_comparable_unless_allowed():
    base, new = run_of("b", {"A": BASE}), run_of("n", {"B": BASE}, signature="rouge:1|tok:whitespace|seed:12345")
    res = sig.significance(base, new, ["A", "B"], **FAST)
    assert not res["comparable"] and "signatures differ: tok: default vs whitespace" in res["not_comparable"][0]
    ok = sig.significance(base, new, ["A", "B"], allow_different_settings=True, **FAST)
    assert ok["comparable"] and len(ok["rows"]) == 1 and "allowed" in ok["notes"][0]


def test_coverage_counts_documents_with_finite_scores_in_both():
    nan = float("nan")
    run = run_of("r", {"A": BASE, "B": [nan] * 4 + BASE[4:], "C": [nan] * 8})
    res = sig.significance(run, run, ["A", "B"], **FAST)
    assert not res["comparable"] and res["rows"] == []
    assert "B: coverage 50.0% (4 of 8 documents of A compared" in res["not_comparable"][0]
    assert sig.significance(run, run, ["A", "B"], min_coverage=0.5, **FAST)["rows"][0]["n_docs"] == 4
    # no finite pair at all: one not-comparable reason, never a NumPy error
    none = sig.significance(run, run, ["A", "C"], min_coverage=0.0, **FAST)
    assert not none["comparable"] and none["rows"] == []
    assert "C: coverage 0.0% (0 of 8" in none["not_comparable"][0]


def test_sign_flips_from_a_start_are_that_slice_of_the_stream():
    bases = poisson.example_bases([f"d{i}" for i in range(7)], 99)
    whole = poisson.sign_flips(bases, 40)
    for lo, m in ((0, 40), (3, 10), (17, 23), (39, 1)):
        assert np.array_equal(poisson.sign_flips(bases, m, start=lo), whole[lo:lo + m])


@pytest.mark.parametrize("chunk", [1, 7, 64, 10**6])
def test_chunked_ar_pvalue_equals_the_whole_sign_matrix_at_once(monkeypatch, chunk):
    rng = np.random.default_rng(5)
    keys = [f"doc{i}" for i in range(13)]
    d = rng.normal(0.01, 0.05, len(keys))
    bases = poisson.example_bases(keys, 12345)
    n_trials = 257
    # the previous code's result: every trial's signs in one matrix (one chunk, from trial 0)
    s = poisson.sign_flips(bases, n_trials)
    obs = abs(float(d.mean()))
    tol = 1e-12 * max(1.0, float(np.abs(d).max()))
    want = (1 + int((np.abs(s @ d / len(d)) >= obs - tol).sum())) / (1 + n_trials)
    monkeypatch.setattr(sig, "_CHUNK", chunk)
    assert sig._ar_pvalue(bases, d, n_trials) == want
