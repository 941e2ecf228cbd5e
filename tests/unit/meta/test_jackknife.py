"""Jackknifed multi-reference scores and the human ceiling (pipeline/scoring/jackknife.py), against
the leave-one-out subsets scored directly: ROUGE-1.5.5's specification (``score_pair``, held to
the Perl script's goldens elsewhere) with ``-f A`` and ``-f B``, and rouge-score's ``score_multi``."""
from __future__ import annotations

import pytest
from rouge_score import rouge_scorer

from pipeline import RougeScorer
from pipeline.rouge155 import Rouge155Options, score_pair
from pipeline.scoring import jackknife as J

from support.shared import data_params, load_records, DATA

R155_TYPES = ["rouge1", "rouge2", "rougeL", "rougeW-1.2", "rougeSU4"]
R155_METRICS = ["ROUGE-1", "ROUGE-2", "ROUGE-L", "ROUGE-W-1.2", "ROUGE-SU4"]
RS_TYPES = ["rouge1", "rouge2", "rougeLsum"]
MULTI_REF_DATASETS = ["rouge155_sample_sl2003", "duc2004_pyrouge_tests"]

CAND = "the cat sat on the mat\nit was happy"
REFS = ["the cat sat on the mat", "a dog lay on a rug\nnear the door", "the cat sat", "a cat was on a mat"]


def r155_direct(candidate, refs, rule):
    """Mean over k of the script's per-evaluation (P, R, F) with reference k left out."""
    opts = Rouge155Options(n=2, stem=True, multi_ref=rule)
    per_k = [score_pair(candidate, refs[:k] + refs[k + 1:], opts) for k in range(len(refs))]
    return [[sum(s[m][x] for s in per_k) / len(refs) for x in "prf"] for m in R155_METRICS]


def rs_direct(candidate, refs):
    scorer = rouge_scorer.RougeScorer(RS_TYPES, use_stemmer=True)
    per_k = [scorer.score_multi(refs[:k] + refs[k + 1:], candidate) for k in range(len(refs))]
    return [[sum(getattr(s[t], x) for s in per_k) / len(refs) for x in ("precision", "recall", "fmeasure")]
            for t in RS_TYPES]


@pytest.mark.parametrize("rule", ["A", "B"])
def test_rouge155_jackknife_is_the_mean_of_the_leave_one_out_evaluations(rule):
    scorer = RougeScorer(R155_TYPES, use_stemmer=True, profile="rouge155", multi_ref=rule)
    got = J.jackknife(scorer, [REFS, REFS[:2]], [CAND, "a dog on a rug"])
    assert got.shape == (2, 5, 3)
    assert got[0].tolist() == r155_direct(CAND, REFS, rule)
    assert got[1].tolist() == r155_direct("a dog on a rug", REFS[:2], rule)
    # not the score against all K references
    full = scorer.score_arrays([REFS], [CAND]).scores[0]
    assert got[0].tolist() != full.tolist()


def test_rouge_score_jackknife_is_score_multi_on_each_subset():
    scorer = RougeScorer(RS_TYPES, use_stemmer=True)
    assert J.jackknife(scorer, [REFS], [CAND])[0].tolist() == rs_direct(CAND, REFS)


def test_human_scores_each_reference_against_the_others():
    scorer = RougeScorer(RS_TYPES, use_stemmer=True)
    scores, owner = J.human_scores(scorer, [REFS[:3], REFS])
    assert owner.tolist() == [0, 0, 0, 1, 1, 1, 1]
    direct = rouge_scorer.RougeScorer(RS_TYPES, use_stemmer=True)
    for j, (i, k) in enumerate([(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (1, 3)]):
        refs = [REFS[:3], REFS][i]
        s = direct.score_multi(refs[:k] + refs[k + 1:], refs[k])
        assert scores[j].tolist() == [[s[t].precision, s[t].recall, s[t].fmeasure] for t in RS_TYPES]
    mean = J.human_jackknife(scorer, [REFS])[0]
    assert mean.tolist() == [[sum(scores[3 + k, t, x] for k in range(4)) / 4 for x in range(3)] for t in range(3)]


def test_one_reference_is_refused():
    scorer = RougeScorer(RS_TYPES)
    with pytest.raises(ValueError, match="example 1 has 1 reference"):
        J.jackknife(scorer, [REFS, ["only one"]], [CAND, CAND])
    with pytest.raises(ValueError, match="2 candidates but 1 reference lists"):
        J.jackknife(scorer, [REFS], [CAND, CAND])


def test_ceiling_table_refuses_a_document_with_two_reference_sets():
    rows = [{"system": "a", "doc_id": "d", "candidate": CAND, "references": REFS},
            {"system": "b", "doc_id": "d", "candidate": CAND, "references": REFS[:3]}]
    with pytest.raises(ValueError, match="document 'd' has different references"):
        J.ceiling_table(RougeScorer(RS_TYPES), rows, RS_TYPES)


@pytest.mark.parametrize("name", data_params(lambda: MULTI_REF_DATASETS))
@pytest.mark.parametrize("rule", ["A", "B"])
def test_real_four_reference_corpora_rouge155(name, rule):
    records = load_records(DATA, name)
    scorer = RougeScorer(R155_TYPES, use_stemmer=True, profile="rouge155", multi_ref=rule)
    got = J.jackknife(scorer, [r["references"] for r in records], [r["candidate"] for r in records])
    for k, r in enumerate(records):
        assert len(r["references"]) == 4
        assert got[k].tolist() == r155_direct(r["candidate"], r["references"], rule), r["id"]


@pytest.mark.parametrize("name", data_params(lambda: MULTI_REF_DATASETS))
def test_real_four_reference_corpora_rouge_score_and_the_ceiling(name):
    records = load_records(DATA, name)
    scorer = RougeScorer(RS_TYPES, use_stemmer=True)
    got = J.jackknife(scorer, [r["references"] for r in records], [r["candidate"] for r in records])
    direct = [rs_direct(r["candidate"], r["references"]) for r in records]
    assert got.tolist() == direct
    table = J.ceiling_table(scorer, records, RS_TYPES)
    systems = sorted({r["system"] for r in records})
    assert [row["system"] for row in table] == systems + ["(human)"]
    for row in table[:-1]:
        mine = [d for d, r in zip(direct, records) if r["system"] == row["system"]]
        assert row["n"] == len(mine)
        assert row["rouge1_recall"] == pytest.approx(sum(d[0][1] for d in mine) / len(mine), abs=1e-12)
    docs = {r["doc_id"]: r["references"] for r in records}
    plain = rouge_scorer.RougeScorer(RS_TYPES, use_stemmer=True)
    human = [plain.score_multi(refs[:k] + refs[k + 1:], refs[k]) for refs in docs.values() for k in range(4)]
    assert table[-1]["n"] == len(docs)
    expected = sum(h["rougeLsum"].fmeasure for h in human) / len(human)
    assert table[-1]["rougeLsum_fmeasure"] == pytest.approx(expected, abs=1e-12)
