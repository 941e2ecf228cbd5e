"""An example without references never shows an internal sentinel.

Every public entry refuses an empty reference list (``tests/unit/api/test_api.py::
test_score_arrow_refuses_what_score_arrays_refuses``, ``tests/conformance/test_cold_start.py::
test_unusual_input_goes_to_the_compiled_path``); below them the kernels keep a running best F
that starts below any real F.  These tests reach the kernels and the block merge directly with an
example that has no reference document, so a sentinel that leaks shows here.
"""
import numpy as np
import pytest

from pipeline import RougeScorer
from pipeline.rouge155 import Rouge155Options
from pipeline.rouge155.fast import Rouge155Scorer
from pipeline.rouge155.fast import score_encoded as score_encoded_155
from pipeline.scoring.batch import score_encoded
from pipeline.scoring.split import merge_blocks

TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
DOCS = ["a b c", "a b", "x y"]          # example 0: candidate 0, reference 1; example 1: candidate 2 alone
EX_DOC = np.array([0, 2, 3])


@pytest.mark.parametrize("stem", [False, True])
def test_kernel_example_without_reference_scores_zero(stem):
    scorer = RougeScorer(TYPES, use_stemmer=stem)
    res = score_encoded(scorer.encode(DOCS), EX_DOC, scorer.types)
    assert res.scores[1].tolist() == [[0.0, 0.0, 0.0]] * len(TYPES)
    assert res.best_ref[1].tolist() == [0] * len(TYPES)
    assert (res.n_refs.tolist(), res.ref_len.tolist()) == ([1, 0], [2, 0])
    # the example with a reference is untouched by its neighbour
    assert res.scores[0, 0].tolist() == [2 / 3, 1.0, 0.8]


@pytest.mark.parametrize("rule", ["A", "B", "max_f", "mean"])
def test_rouge155_kernel_example_without_reference_scores_zero(rule):
    scorer = Rouge155Scorer(Rouge155Options(multi_ref=rule))
    res = score_encoded_155(scorer.encoder.encode(DOCS), EX_DOC, np.array([1, 0]), scorer.specs, scorer.rule,
                            scorer.opts.alpha, True, False)
    assert res.scores[1].tolist() == [[0.0, 0.0, 0.0]] * len(scorer.specs)


def test_merge_blocks_refuses_no_reference():
    """The job's block merge of an oversized example: an empty reference list is refused as
    every other entry refuses it, never scored as F = -1."""
    scorer = RougeScorer(TYPES)
    with pytest.raises(ValueError, match="example 0 has no reference"):
        merge_blocks(scorer, "a b", [], [])
