"""A reference text that repeats in a batch (every system of a multi-system corpus scored against
the same references) is tokenized once, by content, and gives the numbers it gives alone."""
import random
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from rouge_score import rouge_scorer

from pipeline import RougeScorer
from pipeline import job

sys.path.insert(0, str(Path(__file__).parents[3] / "benchmarks"))
from corpus import make_corpus  # noqa: E402
from support.scans import scanned_texts  # noqa: E402

TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
REFS, CANDS = make_corpus("short", 48, 3)


def _fresh(text: str) -> str:
    return text.encode().decode()  # an equal str that is another object, as rows read from a file


def _layouts():
    rng = random.Random(0)
    single = [_fresh(REFS[i % 6]) for i in range(48)]                          # 8 systems x 6 documents
    multi = [[_fresh(rng.choice(REFS[:5])) for _ in range(rng.randint(1, 3))] for _ in range(48)]
    multi[3] = [multi[3][0]] * 3                                                # repeats within one example
    return {"single": single, "multi": multi}


SCORERS = {
    "default-stem": dict(use_stemmer=True),
    "default": dict(),
    "whitespace-tokenizer": dict(tokenizer=str.split),
    "sentencex": dict(sentence_splitter="sentencex"),     # sentences a separate token stream
    "unicode": dict(profile="unicode"),
}


@pytest.mark.parametrize("layout", ["single", "multi"])
@pytest.mark.parametrize("name", list(SCORERS))
def test_shared_references_score_as_alone(name, layout):
    refs = _layouts()[layout]
    scorer = RougeScorer(TYPES, **SCORERS[name])
    together = scorer.score_arrays(refs, CANDS)
    arrow = scorer.score_arrow(pa.array(refs), pa.array(CANDS))
    for i, (r, c) in enumerate(zip(refs, CANDS)):
        alone = scorer.score_arrays([r], [c])
        for res in (together, arrow):
            assert res.scores[i].tolist() == alone.scores[0].tolist()
            assert res.best_ref[i].tolist() == alone.best_ref[0].tolist()
            assert (res.cand_len[i], res.ref_len[i], res.n_refs[i]) == \
                   (alone.cand_len[0], alone.ref_len[0], alone.n_refs[0])


@pytest.mark.parametrize("layout", ["single", "multi"])
def test_shared_references_equal_rouge_score(layout):
    refs = _layouts()[layout]
    ours = RougeScorer(TYPES, use_stemmer=True).score_batch(refs, CANDS)
    theirs = rouge_scorer.RougeScorer(TYPES, use_stemmer=True)
    for r, c, got in zip(refs, CANDS, ours):
        exp = theirs.score(r, c) if isinstance(r, str) else theirs.score_multi(r, c)
        assert {t: tuple(got[t]) for t in TYPES} == {t: tuple(exp[t]) for t in TYPES}


def test_list_path_tokenizes_each_reference_text_once(monkeypatch):
    refs = _layouts()["single"]
    seen = scanned_texts(monkeypatch, fresh_encoders=True)
    RougeScorer(TYPES, use_stemmer=True).score_arrays(refs, CANDS)
    assert sum(seen) == len(CANDS) + 6


def test_job_task_tokenizes_each_reference_text_once(monkeypatch):
    """A task's table of 8 systems x 6 documents (the Arrow path the job takes)."""
    refs = _layouts()["single"]
    table = pa.table({"id": [f"d{i % 6}" for i in range(48)], "system": [f"s{i // 6}" for i in range(48)],
                      "candidate": CANDS, "references": [[r] for r in refs], "source": [None] * 48})
    settings = job.ScoringSettings(rouge_types=TYPES, use_stemmer=True, diagnostics=False)
    seen = scanned_texts(monkeypatch, fresh_encoders=True)
    scores = job.score_table(table, settings)
    assert sorted(seen) == [6, 48]    # the candidates, then the 6 distinct references
    alone = RougeScorer(TYPES, use_stemmer=True).score_arrays(refs, CANDS)
    assert np.array_equal(job.score_matrix(scores, TYPES), alone.scores)
