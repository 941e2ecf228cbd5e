"""Test gaps found by mutating the gate (issue 27, "test gaps found by mutating today's code"): each
test here fails on one hand-made bug that no other test of the gate noticed.  In-memory runs only."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pipeline.gate import significance as sig
from pipeline.gate.bands import sign_flip_pvalues
from pipeline.gate.compare import compare
from pipeline.gate.runs import RunData
from pipeline.stats.poisson import example_bases

SIG = "rouge:1|tok:default|seed:12345"
FAST = dict(n_boot=200, n_perm=200, texts=False)
N = 16
BASE = [0.2 + 0.5 * ((7 * j) % 11) / 11 for j in range(N)]


def run_of(url: str, f: dict[str, list[float]], time: str = "", ids: dict | None = None) -> RunData:
    rows = [{"id": (ids or {}).get(system, [f"d{j}" for j in range(len(vals))])[i], "system": system,
             "rouge1_precision": v, "rouge1_recall": v, "rouge1_fmeasure": v, "cand_tokens": 10}
            for system, vals in f.items() for i, v in enumerate(vals)]
    info = {"config": {"scoring": {"rouge_types": ["rouge1"]}}, "signature": SIG, "started_at": time}
    return RunData(url, info, None, {"finished_at": time}, pd.DataFrame(rows))


def f_row(res, system="A"):
    (r,) = [r for r in res["rows"] if r["system"] == system and r["stat"] == "fmeasure"]
    return r


def test_a_long_history_is_judged_on_its_latest_window_not_its_oldest_runs():
    """(a) 14 nights of an old build, then 14 of today's (accepted in between, say): tonight equals
    the latest 14 and is "no change"; learned from the oldest 14 it would be "moved up".  The drawn
    band is the latest window's too."""
    old = [run_of(f"h{j:02d}", {"A": BASE}, time=f"2026-07-{j + 1:02d}") for j in range(14)]
    new_level = [v + 0.05 for v in BASE]
    latest = [run_of(f"h{14 + j:02d}", {"A": new_level}, time=f"2026-08-{j + 1:02d}") for j in range(14)]
    res = compare(latest[-1], run_of("n", {"A": new_level}), history=old + latest, window=14, **FAST)
    r = f_row(res)
    assert r["band"] == "history" and r["band_runs"] == 14 and r["status"] == "no change", r
    assert r["band_centre"] == pytest.approx(float(np.mean(new_level)), abs=1e-12)


def test_the_replicate_band_is_centred_on_the_history_when_there_is_enough():
    """(b) With replicates and at least ``min_history`` in-control runs, the replicate band's centre
    is the history's mean (0.40), not the mean of the base's and the replicates' means (0.4375):
    0.51 is outside 0.40 +- 4 * sd, inside 0.4375 +- 4 * sd."""
    hist = [run_of(f"h{j}", {"A": [0.40] * 8}, time=f"2026-08-{10 + j:02d}") for j in range(5)]
    base = run_of("b", {"A": [0.40] * 8})
    reps = [run_of(f"r{j}", {"A": [m] * 8}) for j, m in enumerate([0.44, 0.46, 0.45])]
    sd = float(np.std([0.40, 0.44, 0.46, 0.45], ddof=1))
    assert 0.40 + 4 * sd < 0.51 < 0.4375 + 4 * sd
    r = f_row(compare(base, run_of("n", {"A": [0.51] * 8}), history=hist, replicates=reps, **FAST))
    assert r["band"] == "replicates" and r["band_centre"] == pytest.approx(0.40, abs=1e-12)
    assert r["alarm"] and r["status"] == "moved up", r
    r = f_row(compare(base, run_of("n", {"A": [0.51] * 8}), replicates=reps, **FAST))   # no history: theirs
    assert r["band_centre"] == pytest.approx(0.4375, abs=1e-12) and not r["alarm"], r


def test_a_mean_exactly_on_the_control_limit_does_not_alarm():
    """(c) Moved iff strictly outside ``centre +- k * sd``: means 0.5, 0.25, 0.75 (centre 0.5, sd 0.25
    exactly), k = 1: 0.75 and 0.25 are on the limits (inside), just past them alarms."""
    base = run_of("b", {"A": [0.5] * 8})
    reps = [run_of("r0", {"A": [0.25] * 8}), run_of("r1", {"A": [0.75] * 8})]
    for value, alarm in ((0.75, False), (0.25, False), (0.75 + 1e-9, True), (0.25 - 1e-9, True)):
        r = f_row(compare(base, run_of("n", {"A": [value] * 8}), replicates=reps, k=1.0, min_effect=0.0, **FAST))
        assert r["band"] == "replicates" and (r["band_low"], r["band_high"]) == (0.25, 0.75)
        assert r["alarm"] is alarm, (value, r)


def test_permutation_pvalues_count_the_observed_arrangement():
    """(d) ``(1 + hits) / (1 + trials)``: a p-value is never 0, even when no permutation reaches the
    observed mean (every difference of the same sign: only the identity flip does, with chance 2^-40)."""
    d = np.full((40, 1), 0.05)
    assert sign_flip_pvalues(d, seed=3, n_perm=199)[0] == 1 / 200
    r = f_row(compare(run_of("b", {"A": BASE}), run_of("n", {"A": [v + 0.05 for v in BASE]}),
                      n_boot=50, n_perm=99, texts=False))
    assert r["p_value"] == pytest.approx(1 / 100, abs=0)
    bases = example_bases([f"d{j}" for j in range(40)], 3)
    assert sig._ar_pvalue(bases, d[:, 0], 99) == 1 / 100
    b = np.asarray(BASE * 3)                      # --systems' paired bootstrap: (1 + hits) / (1 + n_boot) too
    tests = sig._paired_tests([f"d{j}" for j in range(len(b))], b, b + 0.05, 99, 99, 3, 0.025)
    assert tests["p_bootstrap"] == tests["p_ar"] == 1 / 100


def _family(p_bs: float, p_ar: float) -> dict:
    row = {"type": "rouge1", "stat": "fmeasure", "p_bootstrap": p_bs, "p_ar": p_ar}
    sig._holm_families([row], ["rouge1"], ("fmeasure",), 0.05)
    return row


def test_a_system_is_significant_only_when_both_tests_reject():
    """(e) The star needs the paired bootstrap and approximate randomization both below alpha."""
    assert _family(0.001, 0.001)["significant"]
    assert not _family(0.001, 0.5)["significant"]
    assert not _family(0.5, 0.001)["significant"]
    assert not _family(0.05, 0.001)["significant"]     # at alpha is not below it


def test_a_system_missing_documents_of_the_baseline_is_not_fully_covered():
    """(f) Coverage is over the baseline's documents: B lacks 4 of A's 8 documents (no row at all,
    not NaN scores), so it covers 50%, not 100% of the 4 it shares."""
    run = run_of("r", {"A": BASE[:8], "B": BASE[:4]}, ids={"A": [f"d{j}" for j in range(8)],
                                                           "B": [f"d{j}" for j in range(4)]})
    res = sig.significance(run, run, ["A", "B"], n_boot=50, n_trials=50)
    assert not res["comparable"] and res["rows"] == []
    assert "B: coverage 50.0% (4 of 8 documents of A compared" in res["not_comparable"][0]
