"""The statistics rows have one shape wherever they are given (a run's files, ``score --json``,
``show --json``, ``eval -f json|csv``, ``RougeResult``), their quantiles are exact or named as
approximate, and a run's histogram quantiles are not biased to a bin's edge (issue 28)."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest

from pipeline.cli.main import main
from pipeline.stats import StatsAccumulator
from pipeline.stats.rows import ROW_KEYS

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "configs" / "sample" / "part-0.jsonl"
QUANTILES = {"q05_approx": 0.05, "q25_approx": 0.25, "median_approx": 0.5, "q75_approx": 0.75, "q95_approx": 0.95}


@pytest.mark.parametrize("per_bin", [1, 2, 3])
def test_histogram_quantiles_sit_where_the_values_are_spread_in_their_bin(per_bin):
    """``per_bin`` values spread evenly in each of 10 bins, at the centres of its equal slots: each
    order statistic's estimate is the value itself, so the quantiles are NumPy's; an estimate at the
    bin's low edge (or the slot's) is off by up to half a bin."""
    bins = 10
    x = np.array([(j + (i + 0.5) / per_bin) / bins for j in range(bins) for i in range(per_bin)])
    scores = np.repeat(x[:, None, None], 3, axis=2)
    acc = StatsAccumulator.from_scores([f"k{i}" for i in range(len(x))], "s", scores, ["rouge1"],
                                       n_boot=0, hist_bins=bins)
    for row in acc.finalize():
        assert row["quantile_error"] == 1 / bins
        for key, q in QUANTILES.items():
            assert row[key] == pytest.approx(float(np.quantile(x, q)), abs=1e-12), (key, per_bin)


def test_histogram_quantiles_are_unbiased_on_random_scores():
    """Over many random corpora the estimates' errors average out (an edge-biased estimate is
    off by the same sign every time)."""
    bins, errors = 50, []
    rng = np.random.default_rng(5)
    for _ in range(40):
        x = rng.random(300)
        acc = StatsAccumulator.from_scores([f"k{i}" for i in range(300)], "s",
                                           np.repeat(x[:, None, None], 3, axis=2), ["rouge1"], n_boot=0,
                                           hist_bins=bins)
        row = acc.finalize()[0]
        errors += [(row[k] - np.quantile(x, q)) * bins for k, q in QUANTILES.items()]
    assert max(map(abs, errors)) <= 1 + 1e-9           # within one bin, as named
    assert abs(float(np.mean(errors))) < 0.02, np.mean(errors)  # in bins; low edge: about -0.5/slot


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """``score --json`` of the sample into a run folder, and the run's URL."""
    run = tmp_path_factory.mktemp("shape") / "run"
    out = io.StringIO()
    import contextlib

    with contextlib.redirect_stdout(out):
        assert main(["score", str(SAMPLE), "-o", str(run), "--sync", "--no-progress", "--json",
                     "--set", "stats.n_boot=50", "--set", "scoring.rouge_types=[rouge1,rougeL]"]) == 0
    return json.loads(out.getvalue()), run


def test_every_command_gives_the_same_row_shape(scored, capsys):
    doc, run = scored
    assert all(set(r) == set(ROW_KEYS) for r in doc["statistics"])   # score --json sorts its keys
    assert main(["show", str(run), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["rows"]
    assert shown == doc["statistics"]
    assert main(["eval", "-i", str(SAMPLE), "-f", "json", "-t", "rouge1,rougeL", "--n-boot", "50"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows and all(tuple(r) == ROW_KEYS for r in rows)
    assert main(["eval", "-i", str(SAMPLE), "-f", "csv", "-t", "rouge1", "--n-boot", "50"]) == 0
    table = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert tuple(table[0]) == (*ROW_KEYS, "signature")


def test_evals_quantiles_are_exact_and_say_so():
    import pipeline

    recs = [json.loads(line) for line in SAMPLE.open()]
    res = pipeline.compute([r["candidate"] for r in recs], [r["references"] for r in recs], rouge_types=["rouge1"],
                           n_boot=20, return_result=True)
    for k, row in enumerate(res.rows()):
        assert row["quantile_error"] == 0.0 and row["count"] == len(recs)
        for key, q in QUANTILES.items():
            assert row[key] == float(np.quantile(res.scores[:, 0, k], q))
        a = res.aggregate["rouge1"]
        assert (row["ci_low"], row["ci_mid"], row["ci_high"]) == (a.low[k], a.mid[k], a.high[k])


def test_read_run_names_a_missing_column(scored):
    from pipeline.errors import ColumnError
    from pipeline.execution.dataframe import read_run

    _, run = scored
    with pytest.raises(KeyError) as e:
        read_run(str(run), columns=["id", "rouge2_fmeasure"])
    assert isinstance(e.value, ColumnError)
    msg = str(e.value)
    assert "rouge2_fmeasure" in msg and str(run) in msg and "rouge1_fmeasure" in msg   # what it has
    got = read_run(str(run), columns=["id", "rouge1_fmeasure"]).compute()
    assert list(got.columns) == ["id", "rouge1_fmeasure"] and len(got) == 100


def test_read_run_selects_a_column_after_reading(scored):
    """A column taken from the frame (Dask's projection), with and without ``columns=``: the rows,
    not a clash with the reader's own column argument."""
    from pipeline.execution.dataframe import read_run

    _, run = scored
    whole = read_run(str(run))
    assert whole["rouge1_fmeasure"].compute().tolist() == whole.compute()["rouge1_fmeasure"].tolist()
    assert len(list(whole["id"])) == 100
    some = read_run(str(run), columns=["id", "rouge1_fmeasure"])
    assert some["id"].compute().tolist() == whole.compute()["id"].tolist()
