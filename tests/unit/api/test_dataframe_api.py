"""The Dask DataFrame API with a reference column of Python lists, and its scoring options.
Expected values from rouge-score (``score_multi``) and from ``RougeScorer`` with the same options."""
from __future__ import annotations

import dask
import dask.dataframe as dd
import pandas as pd
import pyarrow as pa
import pytest
from rouge_score import rouge_scorer

from pipeline import RougeScorer
from pipeline.execution.dataframe import score_dataframe

CANDS = ["the cat sat on the mat", "a fox jumped over the dog", "b"]
REFS = [["the cat sat on a mat", "the cat sat on the mat today"], ["the fox jumped"], ["a", "b"]]


def _frame():
    return pd.DataFrame({"id": ["x", "y", "z"], "candidate": CANDS, "references": REFS})


def test_a_list_column_stringified_by_from_pandas_is_refused_with_the_fix():
    ddf = dd.from_pandas(_frame(), npartitions=2)  # dataframe.convert-string (on by default): str(list)
    with pytest.raises(ValueError, match=r"holds the text of a Python list.*pd\.ArrowDtype\(pa\.list_"):
        score_dataframe(ddf, ["rouge1"]).compute(scheduler="sync")


@pytest.mark.parametrize("how", ["from_pandas", "object column"])
def test_a_reference_that_merely_looks_like_a_list_is_scored_as_text(how):
    refs = ["['a', 'b']", "the fox jumped", "b"]     # the first reference is literally that text
    df = pd.DataFrame({"candidate": CANDS, "references": refs})
    with dask.config.set({"dataframe.convert-string": how == "from_pandas"}):
        ddf = dd.from_pandas(df, npartitions=1)
    out = score_dataframe(ddf, ["rouge1"]).compute(scheduler="sync")
    theirs = rouge_scorer.RougeScorer(["rouge1"])
    assert out["n_refs"].tolist() == [1, 1, 1]
    assert out["rouge1_fmeasure"].tolist() == [theirs.score(r, c)["rouge1"].fmeasure for c, r in zip(CANDS, refs)]


@pytest.mark.parametrize("how", ["arrow", "no-convert"])
def test_a_list_column_kept_as_lists_is_scored_as_several_references(how):
    df = _frame()
    if how == "arrow":
        df["references"] = df["references"].astype(pd.ArrowDtype(pa.list_(pa.string())))
        ddf = dd.from_pandas(df, npartitions=2)
    else:
        with dask.config.set({"dataframe.convert-string": False}):
            ddf = dd.from_pandas(df, npartitions=2)
    out = score_dataframe(ddf, ["rouge1", "rougeL"]).compute(scheduler="sync")
    theirs = rouge_scorer.RougeScorer(["rouge1", "rougeL"])
    assert out["n_refs"].tolist() == [2, 1, 2]
    for i, (refs, cand) in enumerate(zip(REFS, CANDS)):
        want = theirs.score_multi(refs, cand)
        assert out["rouge1_fmeasure"].iloc[i] == want["rouge1"].fmeasure
        assert out["rougeL_precision"].iloc[i] == want["rougeL"].precision


def test_score_dataframe_takes_the_scoring_options():
    df = _frame()
    df["references"] = df["references"].astype(pd.ArrowDtype(pa.list_(pa.string())))
    ddf = dd.from_pandas(df, npartitions=1)
    types = ["rouge1", "rougeW-1.2", "rougeSU4"]
    for kw in ({"multi_ref": "mean", "alpha": 0.7}, {"profile": "unicode", "language": "de"},
               {"profile": "rouge155", "use_stemmer": True}):
        out = score_dataframe(ddf, types, **kw).compute(scheduler="sync")
        want = RougeScorer(types, **kw).score_batch(REFS, CANDS)
        for t in types:
            assert out[f"{t}_fmeasure"].tolist() == [w[t].fmeasure for w in want], (kw, t)
    with pytest.raises(ValueError, match="multi_ref: expected one of"):
        score_dataframe(ddf, types, multi_ref="best")
