"""Every coefficient at every level equals a direct scipy computation, written here from the
definitions (pandas grouping, scipy's functions), on data with ties, NaNs and constant groups."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

scipy_stats = pytest.importorskip("scipy.stats")

from pipeline.errors import NothingToCorrelateError  # noqa: E402
from pipeline.meta import correlate  # noqa: E402

from support.meta_data import generated  # noqa: E402

COEFS = ("pearson", "spearman", "kendall", "kendall_c")


def direct(x, y, coef):
    if coef == "pearson":
        return scipy_stats.pearsonr(x, y)[0]
    if coef == "spearman":
        return scipy_stats.spearmanr(x, y)[0]
    return scipy_stats.kendalltau(x, y, variant="c" if coef == "kendall_c" else "b")[0]


def sum_in_order(v) -> float:
    s = 0.0
    for x in v:
        s += float(x)
    return s


def expected(scores, human, column, level, coef, doc_of=lambda ids: ids):
    df = scores.merge(human, on=["system", "id"])
    df["doc"] = doc_of(df["id"])
    df = df[np.isfinite(df[column]) & np.isfinite(df["rel"])]
    if level == "summary":
        vals, skipped = [], 0
        for _, g in df.groupby("doc"):
            if len(g) < 3 or g[column].nunique() < 2 or g["rel"].nunique() < 2:
                skipped += 1
                continue
            vals.append(direct(g[column].to_numpy(), g["rel"].to_numpy(), coef))
        all_docs = scores.merge(human, on=["system", "id"]).assign(doc=lambda f: doc_of(f["id"]))["doc"].nunique()
        return float(np.mean(vals)), len(vals), all_docs - len(vals)
    if level == "system":
        m = df.groupby("system")[[column, "rel"]].agg(lambda v: sum_in_order(v) / len(v))
        return direct(m[column].to_numpy(), m["rel"].to_numpy(), coef), len(m), None
    return direct(df[column].to_numpy(), df["rel"].to_numpy(), coef), len(df), 0


@pytest.mark.parametrize("coef", COEFS)
def test_every_level_equals_scipy_on_the_definition(coef):
    scores, human, cols = generated()
    res = correlate(scores, human, field="rel", coefficients=[coef], n_boot=0)
    assert len(res.rows) == 3 * len(cols)
    for _, row in res.rows.iterrows():
        r, used, skipped = expected(scores, human, f"{row['type']}_{row['stat']}", row["level"], coef)
        assert row["r"] == r, (row["level"], row["type"], row["stat"])
        assert row["n_used"] == used
        if skipped is not None:
            assert row["n_skipped"] == skipped


def test_the_skip_rule_skips_constant_and_single_system_documents():
    scores, human, _ = generated()
    res = correlate(scores, human, field="rel", levels="summary", coefficients="pearson", n_boot=0)
    row = res.rows[(res.rows["type"] == "rouge1") & (res.rows["stat"] == "precision")].iloc[0]
    # d00 (constant metric), d01 (constant human) and d02 (one judged system) at least
    assert row["n_skipped"] >= 3
    # counting a skipped document as a 0 correlation would give another number
    df = scores.merge(human, on=["system", "id"]).dropna(subset=["rouge1_precision", "rel"])
    per_doc = [scipy_stats.pearsonr(g["rouge1_precision"], g["rel"])[0] if len(g) > 1 and g["rouge1_precision"].nunique()
               > 1 and g["rel"].nunique() > 1 else 0.0 for _, g in df.groupby("id")]
    assert row["r"] != pytest.approx(np.mean(per_doc))


def test_the_grouping_follows_the_document_key():
    scores, human, _ = generated(id_with_system=True)
    res = correlate(scores, human, field="rel", levels="summary", coefficients="kendall", doc_key="(.*):{system}$",
                    n_boot=0)
    for _, row in res.rows.iterrows():
        r, used, skipped = expected(scores, human, f"{row['type']}_{row['stat']}", "summary", "kendall",
                                    doc_of=lambda ids: ids.str.rsplit(":", n=1).str[0])
        assert (row["r"], row["n_used"], row["n_skipped"]) == (r, used, skipped)
    # without it every example is its own document: nothing to correlate at the summary level
    with pytest.raises(NothingToCorrelateError, match="summary: no document has 3 or more systems"):
        correlate(scores, human, field="rel", levels="summary", coefficients="kendall", n_boot=0)


def test_a_document_key_that_does_not_match_is_one_error():
    from pipeline.errors import MetaError

    scores, human, _ = generated()
    with pytest.raises(MetaError, match="does not match id"):
        correlate(scores, human, field="rel", doc_key="(.*):{system}$", n_boot=0)
    with pytest.raises(MetaError, match="several examples of document"):
        correlate(scores, human, field="rel", doc_key=r"(d)\d+", n_boot=0)
