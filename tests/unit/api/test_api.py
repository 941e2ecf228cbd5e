"""The public API of the scoring core: rouge-score's ``RougeScorer`` (drop-in) plus
``score_batch``, ``score_arrays`` and ``score_table``.

Expected values come from rouge-score 0.1.2 run in this process, or are literal.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from rouge_score import rouge_scorer, scoring
from rouge_score import tokenize as rs_tokenize

import pipeline
from pipeline import RougeScorer, Score

TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]

PAIRS = [  # (references, candidate)
    ("the cat sat on the mat", "the cat is sitting on the mat"),
    (["the fast fox jumped over the lazy dog near the river", "a fox jumped"], "the fox jumped over the dog"),
    ("", "nothing to match"),
    (["w1 w2 w3 w4 w5", "w1\nw5"], "w1 w2 w6 w7 w8\nw1 w3 w8 w9 w5"),
    (["我爱北京天安门"], "我爱北京天安门"),
]


def rouge_score_expected(types, refs, cand, **kw):
    theirs = rouge_scorer.RougeScorer(types, **kw)
    return theirs.score(refs, cand) if isinstance(refs, str) else theirs.score_multi(refs, cand)


# --- Score ---------------------------------------------------------------------------------------

def test_score_equals_rouge_score_namedtuple():
    ours = RougeScorer(TYPES).score("the cat sat on the mat", "the cat is sitting on the mat")
    theirs = rouge_scorer.RougeScorer(TYPES).score("the cat sat on the mat", "the cat is sitting on the mat")
    assert ours == theirs
    for k in TYPES:
        assert isinstance(ours[k], tuple) and ours[k]._fields == scoring.Score._fields
        assert ours[k] == theirs[k] and theirs[k] == ours[k]
        assert (ours[k].precision, ours[k].recall, ours[k].fmeasure) == tuple(theirs[k])
    assert Score(1.0, 0.5, 2 / 3) == scoring.Score(1.0, 0.5, 2 / 3)
    assert Score(1.0, 0.5, 2 / 3) != scoring.Score(1.0, 0.5, 0.6)
    assert pipeline.Score is Score and pipeline.RougeScorer is RougeScorer


def test_scores_are_python_floats_even_where_rouge_score_returns_int_zero():
    ours = RougeScorer(TYPES).score("", "the cat")
    theirs = rouge_scorer.RougeScorer(TYPES).score("", "the cat")
    assert ours == theirs
    assert type(theirs["rougeL"].fmeasure) is int  # rouge-score's quirk Q6
    assert all(type(x) is float for s in ours.values() for x in s)


def test_keys_in_requested_order_and_duplicates():
    types = ["rougeLsum", "rouge3", "rouge1", "rougeL", "rouge9"]
    ours = RougeScorer(types).score("a b c d e f", "a b c x e f")
    assert list(ours) == types
    assert ours == rouge_scorer.RougeScorer(types).score("a b c d e f", "a b c x e f")
    dup = ["rouge1", "rouge2", "rouge1"]
    assert RougeScorer(dup).score("a b", "a") == rouge_scorer.RougeScorer(dup).score("a b", "a")
    assert list(RougeScorer(dup).score("a b", "a")) == ["rouge1", "rouge2"]


def test_rouge_types_attribute():
    s = RougeScorer(("rouge1", "rougeL"), use_stemmer=True)
    assert s.rouge_types == ["rouge1", "rougeL"]
    assert s.use_stemmer is True


# --- errors --------------------------------------------------------------------------------------

def _error(cls, types, call):
    """The ValueError message of constructing and using a scorer (either may raise)."""
    with pytest.raises(ValueError) as info:
        scorer = cls(types)
        call(scorer)
    return str(info.value)


@pytest.mark.parametrize("bad", ["rouge10", "rougeLSum", "rouge0", "rougeS", "rougel", "ROUGE1", "rouge1 ",
                                 "rougeW", "rouge", "", "rouge-1"])
def test_invalid_rouge_type_raises_value_error_like_rouge_score(bad):
    for types in ([bad], ["rouge1", bad]):
        def call(s):
            return s.score("the cat", "the cat")

        theirs = _error(rouge_scorer.RougeScorer, types, call)
        ours = _error(RougeScorer, types, call)
        assert ours == theirs


def test_invalid_rouge_type_messages():
    # section 2 of the semantics note: "Invalid rouge type" / "rougen requires positive n"
    assert _error(RougeScorer, ["rouge10"], lambda s: s.score("a", "a")) == "Invalid rouge type: rouge10"
    assert _error(RougeScorer, ["rougeLSum"], lambda s: s.score("a", "a")) == "Invalid rouge type: rougeLSum"
    assert _error(RougeScorer, ["rouge0"], lambda s: s.score("a", "a")) == "rougen requires positive n: rouge0"


def test_score_multi_with_no_reference_raises_value_error():
    with pytest.raises(ValueError) as theirs:
        rouge_scorer.RougeScorer(TYPES).score_multi([], "the cat")
    with pytest.raises(ValueError) as ours:
        RougeScorer(TYPES).score_multi([], "the cat")
    assert str(ours.value) == str(theirs.value)


def test_batch_errors():
    scorer = RougeScorer(TYPES)
    with pytest.raises(ValueError):
        scorer.score_arrays(["a", "b"], ["a"])
    with pytest.raises(ValueError):
        scorer.score_arrays([["a"], []], ["a", "b"])
    with pytest.raises(ValueError):
        scorer.score_batch([[]], ["a"])


def test_empty_type_list_like_rouge_score():
    """rouge-score accepts an empty type list and returns ``{}`` from ``score``; so do we."""
    assert rouge_scorer.RougeScorer([]).score("a b", "a") == {}
    assert RougeScorer([]).score("a b", "a") == {}


def test_rouge_types_given_as_one_string_like_rouge_score():
    """rouge-score iterates ``rouge_types``, so ``RougeScorer("rouge1")`` raises
    ``ValueError("Invalid rouge type: r")`` when scoring; so do we, with the same message."""
    theirs = _error(rouge_scorer.RougeScorer, "rouge1", lambda s: s.score("a", "a"))
    assert theirs == "Invalid rouge type: r"
    assert _error(RougeScorer, "rouge1", lambda s: s.score("a", "a")) == theirs


# --- score_batch ---------------------------------------------------------------------------------

@pytest.mark.parametrize("use_stemmer", [False, True], ids=["nostem", "stem"])
def test_score_batch_equals_rouge_score(use_stemmer):
    refs = [r for r, _ in PAIRS]
    cands = [c for _, c in PAIRS]
    scorer = RougeScorer(TYPES, use_stemmer=use_stemmer)
    ours = scorer.score_batch(refs, cands)
    assert len(ours) == len(PAIRS)
    for got, (r, c) in zip(ours, PAIRS):
        assert got == rouge_score_expected(TYPES, r, c, use_stemmer=use_stemmer)
        assert got == (scorer.score(r, c) if isinstance(r, str) else scorer.score_multi(r, c))


def test_score_batch_empty():
    assert RougeScorer(TYPES).score_batch([], []) == []


# --- score_arrays --------------------------------------------------------------------------------

def test_score_arrays_shape_and_columns():
    refs = [r for r, _ in PAIRS]
    cands = [c for _, c in PAIRS]
    scorer = RougeScorer(TYPES)
    res = scorer.score_arrays(refs, cands)
    n = len(PAIRS)
    assert len(res) == n
    assert res.scores.shape == (n, len(TYPES), 3) and res.scores.dtype == np.float64
    assert res.best_ref.shape == (n, len(TYPES)) and res.best_ref.dtype == np.int32
    for arr in (res.cand_len, res.ref_len, res.n_refs):
        assert arr.shape == (n,) and arr.dtype == np.int64
    assert [t.name for t in res.types] == TYPES

    def ntok(text):
        return len(rs_tokenize.tokenize(text, None))

    ref_lists = [[r] if isinstance(r, str) else r for r in refs]
    assert res.n_refs.tolist() == [len(r) for r in ref_lists]
    assert res.cand_len.tolist() == [ntok(c) for c in cands]
    assert res.ref_len.tolist() == [sum(ntok(x) for x in r) for r in ref_lists]

    for t, name in enumerate(TYPES):
        for k, stat in enumerate(("precision", "recall", "fmeasure")):
            col = res.column(name, stat)
            assert col.shape == (n,)
            expected = [getattr(rouge_score_expected(TYPES, r, c)[name], stat) for r, c in PAIRS]
            assert col.tolist() == expected
            assert np.array_equal(col, res.scores[:, t, k])


def test_score_arrays_best_ref():
    refs = [["a b c", "x y", "a b c d"], ["the cat", "the cat sat"], ["q"]]
    cands = ["a b c d", "the cat sat", "q"]
    res = RougeScorer(["rouge1", "rouge2", "rougeL"]).score_arrays(refs, cands)
    theirs = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"])
    for rs_, c, best in zip(refs, cands, res.best_ref.tolist()):
        per_ref = [theirs.score(r, c) for r in rs_]
        assert best == [int(np.argmax([s[k].fmeasure for s in per_ref])) for k in ("rouge1", "rouge2", "rougeL")]
    assert res.best_ref.tolist() == [[2, 2, 2], [1, 1, 1], [0, 0, 0]]


def test_score_arrays_empty_batch():
    res = RougeScorer(TYPES).score_arrays([], [])
    assert res.scores.shape == (0, len(TYPES), 3)
    assert res.best_ref.shape == (0, len(TYPES))


# --- score_table ---------------------------------------------------------------------------------

def test_score_table_on_pyarrow_table():
    refs = [[r] if isinstance(r, str) else r for r, _ in PAIRS]
    cands = [c for _, c in PAIRS]
    table = pa.table({
        "id": [f"ex{i}" for i in range(len(PAIRS))],
        "system": ["s"] * len(PAIRS),
        "candidate": cands,
        "references": pa.array(refs, type=pa.list_(pa.string())),
    })
    out = RougeScorer(TYPES, use_stemmer=True).score_table(table)
    stats = ("precision", "recall", "fmeasure")
    assert out.column_names == table.column_names + [f"{t}_{s}" for t in TYPES for s in stats]
    assert out.num_rows == table.num_rows
    for name in table.column_names:
        assert out.column(name).equals(table.column(name))
    for t in TYPES:
        for s in stats:
            col = out.column(f"{t}_{s}")
            assert col.type == pa.float64()
            expected = [getattr(rouge_scorer.RougeScorer(TYPES, use_stemmer=True).score_multi(r, c)[t], s)
                        for r, c in zip(refs, cands)]
            assert col.to_pylist() == expected


def test_score_table_custom_column_names_and_string_references():
    table = pa.table({"pred": ["the cat sat", "a b"], "gold": ["the cat sat on the mat", "b a\na"]})
    out = RougeScorer(["rouge2", "rougeLsum"]).score_table(table, candidate="pred", references="gold")
    theirs = rouge_scorer.RougeScorer(["rouge2", "rougeLsum"])
    for i, (c, r) in enumerate(zip(table.column("pred").to_pylist(), table.column("gold").to_pylist())):
        exp = theirs.score(r, c)
        for t in ("rouge2", "rougeLsum"):
            row = tuple(out.column(f"{t}_{s}")[i].as_py() for s in ("precision", "recall", "fmeasure"))
            assert row == tuple(exp[t])


def test_score_arrow_refuses_what_score_arrays_refuses():
    """The Arrow path lays out the batch itself; it must refuse an example without references
    (an empty or null list) and mismatched columns, as score_arrays does."""
    import pyarrow as pa

    scorer = RougeScorer(["rouge1"])
    cands = pa.array(["a b", "c d"])
    for refs in (pa.array([["a"], []]), pa.array([["a"], None], pa.list_(pa.string()))):
        with pytest.raises(ValueError, match="example 1 has no reference"):
            scorer.score_arrays(refs.to_pylist()[:1] + [[]], cands.to_pylist())
        with pytest.raises(ValueError, match="example 1 has no reference"):
            scorer.score_arrow(refs, cands)
    with pytest.raises(ValueError, match="1 references for 2 candidates"):
        scorer.score_arrow(pa.array([["a"]]), cands)
