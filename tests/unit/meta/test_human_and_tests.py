"""The judgments file (formats, dotted fields, annotators pooled), scipy missing as one line, and
the metric-vs-metric test (paired bootstrap on the same draws, Williams)."""
from __future__ import annotations

import json
import math
import sys

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("scipy.stats")

from pipeline.cli import main as cli  # noqa: E402
from pipeline.errors import MetaError  # noqa: E402
from pipeline.meta import compare_metrics, correlate, williams  # noqa: E402
from pipeline.meta.human import read_human  # noqa: E402

from support.meta_data import generated  # noqa: E402

RECORDS = [{"id": "a", "system": "x", "human": {"relevance": [1, 2, 4]}},
           {"id": "a", "system": "x", "human": {"relevance": 5}},
           {"id": "b", "system": "x", "human": {"relevance": None}},
           {"id": "c", "human": {"relevance": 3.5}},
           {"id": "d", "system": "y", "expert": [{"relevance": 2}, {"relevance": 3}]}]


def test_dotted_fields_lists_and_repeated_rows_are_pooled_annotations(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    got = read_human(str(path), "human.relevance")
    assert got.to_dict("records") == [{"system": "", "id": "c", "human": 3.5, "n_annotations": 1, "n_rows": 1},
                                      {"system": "x", "id": "a", "human": 3.0, "n_annotations": 4, "n_rows": 2}]
    assert read_human(str(path), "expert.relevance")["human"].tolist() == [2.5]


def test_csv_and_parquet_hold_the_same_judgments(tmp_path):
    df = pd.DataFrame({"system": ["x", "x", "y"], "id": ["1", "2", "1"], "human.relevance": [1.0, 2.0, np.nan]})
    df.to_csv(tmp_path / "h.csv", index=False)
    df.rename(columns={"human.relevance": "rel"}).to_parquet(tmp_path / "h.parquet")
    a = read_human(str(tmp_path / "h.csv"), "human.relevance")
    b = read_human(str(tmp_path / "h.parquet"), "rel")
    assert a.to_dict("records") == b.to_dict("records") == [
        {"system": "x", "id": "1", "human": 1.0, "n_annotations": 1, "n_rows": 1},
        {"system": "x", "id": "2", "human": 2.0, "n_annotations": 1, "n_rows": 1}]


def test_a_value_that_is_not_a_number_is_an_error_naming_the_record(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_text('{"id": "a", "rel": 1}\n{"id": "b", "rel": "good"}\n', encoding="utf-8")
    with pytest.raises(MetaError, match="record 2: rel: 'good' is not a number"):
        read_human(str(path), "rel")


def test_without_scipy_correlate_says_how_to_install_it(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.stats", None)
    scores, human, _ = generated()
    with pytest.raises(MetaError, match=r"pip install 'rouge-pipeline\[meta\]'"):
        correlate(scores, human, field="rel", n_boot=0)
    (tmp_path / "h.jsonl").write_text('{"id": "a", "rel": 1}\n', encoding="utf-8")
    assert cli.main(["correlate", str(tmp_path), "--human", str(tmp_path / "h.jsonl"), "--field", "rel"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rouge-pipeline[meta]" in err


def _steiger_t2(r12, r13, r23, n):
    """Williams' T2 as Steiger (1980, eq. 7) writes it, with the mean correlation rbar."""
    det = 1 - r12 ** 2 - r13 ** 2 - r23 ** 2 + 2 * r12 * r13 * r23
    rbar = (r12 + r13) / 2
    return (r12 - r13) * math.sqrt((n - 1) * (1 + r23) / (2 * (n - 1) / (n - 3) * det + rbar ** 2 * (1 - r23) ** 3))


def test_williams_is_steigers_t2():
    for r12, r13, r23, n in [(0.9, 0.7, 0.6, 20), (0.3, 0.5, 0.1, 100), (0.62, 0.62, 0.8, 12)]:
        w = williams(r12, r13, r23, n)
        assert w["t"] == pytest.approx(_steiger_t2(r12, r13, r23, n), rel=1e-12, abs=1e-15)
        assert w["df"] == n - 3
    assert williams(0.62, 0.62, 0.8, 12)["p"] == pytest.approx(0.5)
    assert williams(0.9, 0.7, 0.6, 20)["p"] < 0.05 < williams(0.7, 0.9, 0.6, 20)["p"]


def test_a_metric_close_to_the_humans_beats_noise_on_the_same_draws():
    rng = np.random.default_rng(1)
    scores, human, _ = generated(n_sys=10, n_docs=30)
    scores = scores.drop(columns=[c for c in scores.columns if c.startswith("rougeL")])
    h = human["rel"].fillna(3.0).to_numpy()
    human = human.assign(rel=h)
    scores = scores.assign(rouge1_recall=h + rng.normal(0, 0.3, len(h)), rouge1_precision=rng.random(len(h)))
    t = compare_metrics(scores, human, "rouge1_recall", "rouge1_precision", field="rel", level="system",
                        coefficient="pearson", n_boot=200)
    assert t["delta"] > 0.5 and t["delta_ci"][0] > 0 and t["p_bootstrap"] < 0.05 and t["williams"]["p"] < 0.05
    res = correlate(scores, human, field="rel", levels="system", coefficients="pearson", n_boot=200,
                    stats=["precision", "recall"], types=["rouge1"])
    reps = res.replicates[("system", "pearson")]
    a, b = res.columns.index("rouge1_recall"), res.columns.index("rouge1_precision")
    assert t["delta_ci"] == pytest.approx(list(np.quantile(reps[:, a] - reps[:, b], [0.025, 0.975])), rel=1e-12)
    back = compare_metrics(scores, human, "rouge1_precision", "rouge1_recall", field="rel", level="system",
                           coefficient="pearson", n_boot=200)
    assert back["delta"] == -t["delta"] and back["p_bootstrap"] > 0.9


@pytest.mark.parametrize("level", ["summary", "system", "global"])
@pytest.mark.parametrize("how", ["both", "systems", "documents"])
def test_the_permutation_test_is_the_definition_on_each_swapped_trial(level, how):
    import importlib

    from pipeline.meta import levels
    from pipeline.meta.data import judged
    from pipeline.meta.human import judgments

    cm_module = importlib.import_module("pipeline.meta.compare_metrics")   # the module, not the function

    scores, human, _ = generated(n_sys=6, n_docs=10)
    n_perm = 15
    t = compare_metrics(scores, human, "rouge1_recall", "rougeL_fmeasure", field="rel", level=level,
                        coefficient="spearman", resample=how, n_boot=0, n_perm=n_perm, seed=9)
    data = judged(scores[["system", "id", "rouge1_recall", "rougeL_fmeasure"]],
                            judgments(human.to_dict("records"), "rel", "test"))
    a, b = data.X[data.columns.index("rouge1_recall")], data.X[data.columns.index("rougeL_fmeasure")]
    both = np.isfinite(a) & np.isfinite(b)
    a, b = np.where(both, a, np.nan), np.where(both, b, np.nan)
    za, zb = (a - np.nanmean(a)) / np.nanstd(a), (b - np.nanmean(b)) / np.nanstd(b)
    fn = levels.LEVEL_FUNCTIONS[level]
    hits = n = 0
    for sw in cm_module.swaps(9, how, len(data.systems), len(data.docs), 0, n_perm):
        d = fn(np.where(sw, zb, za), data.H, "spearman")[0] - fn(np.where(sw, za, zb), data.H, "spearman")[0]
        if np.isfinite(d):
            n += 1
            hits += d >= t["delta"] - 1e-12
    assert (t["p_permutation"], t["n_perm_valid"]) == ((1 + hits) / (1 + n), n)
    if how == "systems":   # a system's whole row swaps together
        sw = cm_module.swaps(9, how, 5, 10, 0, 4)
        assert (sw == sw[:, :, :1]).all() and sw.any() and not sw.all()
