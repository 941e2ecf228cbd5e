"""``pipeline.compute(systems=...)``: each system aggregated on its own examples, never one number
pooled over several systems; and the rouge type names ``compute`` takes.

Expected values come from rouge-score itself: each system's examples scored by its
``RougeScorer`` and aggregated by its ``BootstrapAggregator`` under ``np.random.seed(seed)``
(what ``evaluate.load("rouge", seed=seed)`` gives on that system's examples alone).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from rouge_score import rouge_scorer, scoring

import pipeline

SAMPLE = Path(__file__).resolve().parents[3] / "configs" / "sample" / "part-0.jsonl"
TYPES = ["rouge1", "rougeL"]


def _sample():
    recs = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    return ([r["candidate"] for r in recs], [r["references"] for r in recs], [r["system"] for r in recs])


def _rouge_score(preds, refs, seed=12345):
    """(per-example dicts, {type: AggregateScore}) of rouge-score on these examples."""
    sc = rouge_scorer.RougeScorer(TYPES)
    per = [sc.score_multi(r, p) for r, p in zip(refs, preds)]
    agg = scoring.BootstrapAggregator()
    for s in per:
        agg.add_scores(s)
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        return per, agg.aggregate()
    finally:
        np.random.set_state(state)


def test_each_system_is_aggregated_on_its_own_examples():
    preds, refs, systems = _sample()
    assert sorted(set(systems)) == ["abstractive", "lead"]   # the sample: two systems, 50 documents each
    got = pipeline.compute(preds, refs, rouge_types=TYPES, systems=systems)
    assert list(got) == ["abstractive", "lead"]
    rich = pipeline.compute(preds, refs, rouge_types=TYPES, systems=systems, return_result=True)
    for name in ("abstractive", "lead"):
        idx = [i for i, s in enumerate(systems) if s == name]
        per, agg = _rouge_score([preds[i] for i in idx], [refs[i] for i in idx])
        assert got[name] == {t: agg[t].mid.fmeasure for t in TYPES}
        res = rich[name]
        assert res.n == 50 and res.system == name
        for t in TYPES:
            assert tuple(res.mean[t]) == tuple(math.fsum(p[t][k] for p in per) / len(per) for k in range(3))
            assert (res.aggregate[t].low, res.aggregate[t].high) == (agg[t].low, agg[t].high)
        rows = res.rows()
        assert {r["system"] for r in rows} == {name} and res.to_dict()["system"] == name
    # the pooled number is not one of them: a silent pool would have been a third value
    pooled = pipeline.compute(preds, refs, rouge_types=TYPES)
    assert all(pooled["rouge1"] != got[s]["rouge1"] for s in got)


def test_systems_keep_the_per_example_lists_in_input_order():
    preds, refs, systems = _sample()
    assert pipeline.compute(preds, refs, rouge_types=TYPES, systems=systems, use_aggregator=False) == \
        pipeline.compute(preds, refs, rouge_types=TYPES, use_aggregator=False)


def test_systems_are_checked():
    with pytest.raises(ValueError, match="1 systems for 2 predictions"):
        pipeline.compute(["a", "b"], ["a", "b"], systems=["x"])
    with pytest.raises(ValueError, match=r"systems\[1\] is not a system name"):
        pipeline.compute(["a", "b"], ["a", "b"], systems=["x", None])
    assert list(pipeline.compute(["a", "b"], ["a", "b"], systems=[2, 1], rouge_types="rouge1")) == ["1", "2"]


def test_rouge_type_names():
    # one name as a text is that type (evaluate's rouge takes it), never its characters
    assert list(pipeline.compute(["a b"], ["a b"], rouge_types="rougeLsum")) == ["rougeLsum"]
    assert pipeline.compute(["a b"], ["a b"], rouge_types="rouge1", return_result=True).rouge_types == ["rouge1"]
    # a type named twice is refused, not folded into one or scored twice
    for kw in ({}, {"return_result": True}, {"use_aggregator": False}):
        with pytest.raises(ValueError, match="'rouge1' twice"):
            pipeline.compute(["a b"], ["a b"], rouge_types=["rouge1", "rougeL", "rouge1"], **kw)
        with pytest.raises(ValueError, match="rouge_types is empty"):
            pipeline.compute(["a b"], ["a b"], rouge_types=[], **kw)
