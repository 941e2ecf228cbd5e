"""A correlation over fewer than 3 items is no evidence (two points always correlate +-1): such a
group is skipped and counted, a level with no group of 3 has no number (with its reason, in the
text and the JSON), and nothing at all to correlate is one line with status 5.  The join's
leftovers, averaged duplicate judgments and intervals from fewer valid replicates are reported,
and ``--compare`` reuses the correlation's replicates with the same numbers."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

scipy_stats = pytest.importorskip("scipy.stats")

from pipeline.cli import main as cli  # noqa: E402
from pipeline.errors import EXIT_NO_ROWS, NothingToCorrelateError  # noqa: E402
from pipeline.meta import compare_metrics, compare_metrics_from_result, correlate, resample  # noqa: E402

from support.meta_data import generated  # noqa: E402


def _frames(n_sys: int, n_docs: int, seed: int = 3):
    rng = np.random.default_rng(seed)
    rows = [{"system": f"s{s}", "id": f"d{d}", "rouge1_fmeasure": float(rng.random()),
             "rouge1_recall": float(rng.random()), "rel": float(rng.integers(1, 6))}
            for s in range(n_sys) for d in range(n_docs)]
    df = pd.DataFrame(rows)
    return df[["system", "id", "rouge1_fmeasure", "rouge1_recall"]], df[["system", "id", "rel"]]


def _files(tmp_path, scores, human):
    scores.to_parquet(tmp_path / "scores.parquet")
    (tmp_path / "h.jsonl").write_text("".join(json.dumps(r) + "\n" for r in human.to_dict("records")),
                                      encoding="utf-8")
    return str(tmp_path / "h.jsonl")


def test_two_systems_give_no_system_or_summary_number_and_say_why():
    scores, human = _frames(2, 12)
    res = correlate(scores, human, field="rel", coefficients="pearson", n_boot=30)
    rows = res.rows.set_index(["level", "stat"])
    for level in ("summary", "system"):
        row = rows.loc[(level, "fmeasure")]
        assert np.isnan(row["r"]) and row["too_few"] and np.isnan(row["ci_low"]) and row["n_boot_valid"] == 0
        assert "two points always correlate" in row["note"]
    assert rows.loc[("summary", "fmeasure"), "n_too_few"] == 12 == rows.loc[("summary", "fmeasure"), "n_skipped"]
    assert "2 system(s) with both scores" in rows.loc[("system", "fmeasure"), "note"]
    # the global level has 24 cells: a number, scipy's
    g = rows.loc[("global", "fmeasure")]
    assert not g["too_few"] and pd.isna(g["note"])
    df = scores.merge(human, on=["system", "id"]).sort_values(["system", "id"])   # the cells in (system, id) order
    assert g["r"] == scipy_stats.pearsonr(df["rouge1_fmeasure"], df["rel"])[0]


def test_a_document_with_two_judged_systems_is_skipped_and_counted():
    scores, human = _frames(4, 6)
    human.loc[(human["id"] == "d0") & human["system"].isin(["s0", "s1"]), "rel"] = np.nan   # d0: 2 systems
    res = correlate(scores, human.dropna(), field="rel", levels="summary", coefficients="spearman", n_boot=0)
    row = res.rows.set_index("stat").loc["fmeasure"]
    assert (row["n_used"], row["n_skipped"], row["n_too_few"], row["too_few"]) == (5, 1, 1, False)
    df = scores.merge(human.dropna(), on=["system", "id"])
    want = np.mean([scipy_stats.spearmanr(g["rouge1_fmeasure"], g["rel"])[0]
                    for d, g in df.groupby("id") if d != "d0"])
    assert row["r"] == pytest.approx(want, rel=1e-15)


@pytest.mark.parametrize("level", ["summary", "system", "global"])
def test_a_replicate_with_fewer_than_three_copies_has_no_value(level):
    # 3 systems, documents where one system is not judged: resamples drawing 2 copies there
    scores, human, _ = generated(n_sys=3, n_docs=8, seed=4)
    from pipeline.meta import levels
    from pipeline.meta.data import judged
    from pipeline.meta.human import judgments

    data = judged(scores, judgments(human.to_dict("records"), "rel", "test"))
    got = resample.replicates(resample.Prepared(data.X, data.H, level), "pearson", 40, "both", 5)
    cs, cd = resample.weights(5, "both", len(data.systems), len(data.docs), 0, 40)
    for b in range(40):
        si = np.repeat(np.arange(len(data.systems)), cs[b].astype(int))
        di = np.repeat(np.arange(len(data.docs)), cd[b].astype(int))
        for k in range(len(data.columns)):
            want = levels.LEVEL_FUNCTIONS[level](data.X[k][np.ix_(si, di)], data.H[np.ix_(si, di)], "pearson")[0]
            assert got[b, k] == pytest.approx(want, rel=1e-12, abs=1e-12, nan_ok=True), (b, k)


def test_nothing_to_correlate_is_one_line_with_status_5(tmp_path, capsys, monkeypatch):
    scores, human = _frames(2, 1)
    with pytest.raises(NothingToCorrelateError, match="nothing to correlate at any level: summary: .*; system: "):
        correlate(scores, human, field="rel", n_boot=0)
    path = _files(tmp_path, scores, human)
    from pipeline import meta

    real = meta.correlate
    monkeypatch.setattr(meta, "correlate", lambda run, *a, **k: real(scores, *a, **k))
    rc = cli.main(["correlate", "RUN", "--human", path, "--field", "rel"])
    err = capsys.readouterr().err
    assert rc == EXIT_NO_ROWS == 5
    assert err.count("\n") == 1 and err.startswith("rouge-pipeline: correlate: nothing to correlate")


def _cli(argv, capsys, monkeypatch, scores):
    # a DataFrame stands in for the run folder (load_scores takes either)
    from pipeline import meta

    real = meta.correlate
    monkeypatch.setattr(meta, "correlate", lambda run, *a, **k: real(scores, *a, **k))
    rc = cli.main(["correlate", "RUN", *argv])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return out


def test_the_text_says_why_a_level_has_no_number_and_json_flags_it(tmp_path, capsys, monkeypatch):
    scores, human = _frames(2, 12)
    path = _files(tmp_path, scores, human)
    out = _cli(["--human", path, "--field", "rel", "--coefficient", "kendall", "--n-boot", "0"], capsys,
               monkeypatch, scores)
    block = out.split("system level, kendall")[1].split("global level")[0]
    assert "no value: 2 system(s) with both scores: a correlation needs at least 3" in block
    assert "1.0000" not in block and "fmeasure" not in block
    doc = json.loads(_cli(["--human", path, "--field", "rel", "--n-boot", "0", "--json"], capsys, monkeypatch,
                          scores))
    system = [r for r in doc["rows"] if r["level"] == "system"]
    assert system and all(r["too_few"] and r["r"] is None and r["note"] for r in system)


def test_the_text_reports_a_partial_join_and_averaged_duplicates(tmp_path, capsys, monkeypatch):
    scores, human = _frames(5, 20)
    part = human[human["id"].isin(["d0", "d1", "d2", "d3"])]
    extra = pd.DataFrame([{"system": "s9", "id": "d0", "rel": 1.0}, {"system": "s0", "id": "d0", "rel": 5.0},
                          {"system": "s1", "id": "d1", "rel": 2.0}])
    path = _files(tmp_path, scores, pd.concat([part, extra]))
    out = _cli(["--human", path, "--field", "rel", "--n-boot", "0"], capsys, monkeypatch, scores)
    assert ("examples: 20 joined with a judgment; 80 scored example(s) without a judgment; "
            "1 judgment(s) without a scored example") in out
    assert "averaged: 2 (system, id) judged in several rows (4 rows)" in out
    doc = json.loads(_cli(["--human", path, "--field", "rel", "--n-boot", "0", "--json"], capsys, monkeypatch,
                          scores))
    s = doc["settings"]
    assert (s["examples"], s["scored_unjudged"], s["human_unmatched"], s["human_averaged"],
            s["human_averaged_rows"]) == (20, 80, 1, 2, 4)


def test_an_interval_from_fewer_valid_replicates_is_flagged(tmp_path, capsys, monkeypatch):
    # 3 systems: a resample drawing one system's copies only has a constant side, no value
    scores, human = _frames(3, 10)
    res = correlate(scores, human, field="rel", levels="system", coefficients="pearson", n_boot=100)
    row = res.rows.iloc[0]
    reps = res.replicates[("system", "pearson")][:, 0]
    assert 0 < row["n_boot_valid"] == np.isfinite(reps).sum() < 100 and row["ci_partial"]
    path = _files(tmp_path, scores, human)
    out = _cli(["--human", path, "--field", "rel", "--level", "system", "--coefficient", "pearson", "--n-boot",
                "100"], capsys, monkeypatch, scores)
    assert "]*" in out and "fewer valid replicates than --n-boot 100 (as few as " in out
    full = correlate(scores, human, field="rel", levels="global", coefficients="pearson", n_boot=50)
    assert not full.rows["ci_partial"].any()


@pytest.mark.parametrize("level, coef", [("summary", "kendall"), ("system", "pearson"), ("global", "spearman")])
def test_compare_from_the_result_is_compare_metrics(level, coef):
    scores, human, _ = generated(n_sys=6, n_docs=10)
    res = correlate(scores, human, field="rel", levels=level, coefficients=coef, n_boot=60, seed=3)
    for a, b in (("rouge1_recall", "rougeL_fmeasure"), ("rouge1_fmeasure", "rouge1_recall")):
        want = compare_metrics(scores, human, a, b, field="rel", level=level, coefficient=coef, n_boot=60,
                               n_perm=20, seed=3)
        got = compare_metrics_from_result(res, a, b, level, coef, n_perm=20)
        assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)


def test_compare_reuses_the_replicates_when_the_columns_share_their_cells(monkeypatch):
    scores, human, _ = generated(n_sys=6, n_docs=10)
    scores = scores.fillna(0.25)   # every column finite on the same cells
    res = correlate(scores, human, field="rel", levels="system", coefficients="pearson", n_boot=60, seed=3)
    calls = []
    real = resample.replicates
    monkeypatch.setattr(resample, "replicates", lambda *a, **k: calls.append(1) or real(*a, **k))
    got = compare_metrics_from_result(res, "rouge1_recall", "rougeL_fmeasure", "system", "pearson", n_perm=0)
    assert calls == []
    # the bootstrap test from the replicates computed independently: scipy on each resampled matrix
    from pipeline.meta.data import judged
    from pipeline.meta.human import judgments

    data = judged(scores, judgments(human.to_dict("records"), "rel", "test"))
    a, b = data.X[data.columns.index("rouge1_recall")], data.X[data.columns.index("rougeL_fmeasure")]
    cs, cd = resample.weights(3, "both", len(data.systems), len(data.docs), 0, 60)
    deltas = []
    for k in range(60):
        si = np.repeat(np.arange(len(data.systems)), cs[k].astype(int))
        di = np.repeat(np.arange(len(data.docs)), cd[k].astype(int))
        h = data.H[np.ix_(si, di)]
        r = []
        for x in (a[np.ix_(si, di)], b[np.ix_(si, di)]):
            ok = np.isfinite(x) & np.isfinite(h)
            keep = ok.any(axis=1)
            mx = [np.cumsum(x[i, ok[i]])[-1] / ok[i].sum() for i in np.flatnonzero(keep)]
            mh = [np.cumsum(h[i, ok[i]])[-1] / ok[i].sum() for i in np.flatnonzero(keep)]
            r.append(scipy_stats.pearsonr(mx, mh)[0] if len(set(mx)) > 1 and len(set(mh)) > 1 else np.nan)
        deltas.append(r[0] - r[1])
    d = np.array(deltas)
    d = d[np.isfinite(d)]
    assert got["n_boot_valid"] == len(d)
    assert got["delta_ci"] == pytest.approx(list(np.quantile(d, [0.025, 0.975])), rel=1e-9)
