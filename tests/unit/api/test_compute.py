"""``pipeline.compute``, the offline ``evaluate`` metric and the public ``BootstrapAggregator``.

Expected values: Hugging Face evaluate's rouge metric as documented (a rouge-score
``RougeScorer``; ``score_multi`` when the references are lists; ``BootstrapAggregator`` under
``np.random.seed(seed)``; ``mid.fmeasure`` per type, or per-example F lists), computed here
with rouge-score itself.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from rouge_score import rouge_scorer, scoring

import pipeline
from support.shared import ENGLISH_DATASETS, english_records

TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]


def evaluate_rouge(predictions, references, rouge_types=TYPES, use_aggregator=True, use_stemmer=False,
                   tokenizer=None, seed=0, scores=None):
    """evaluate's rouge ``compute``, per its documented semantics, on rouge-score (``scores``:
    rouge-score's per-example dicts, when already computed)."""
    if scores is None:
        scores = rouge_score_dicts(predictions, references, rouge_types, use_stemmer, tokenizer)
    if not use_aggregator:
        return {t: [s[t].fmeasure for s in scores] for t in rouge_types}
    agg = scoring.BootstrapAggregator()
    for s in scores:
        agg.add_scores(s)
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        out = agg.aggregate()
    finally:
        np.random.set_state(state)
    return {t: out[t].mid.fmeasure for t in rouge_types}


def rouge_score_dicts(predictions, references, rouge_types=TYPES, use_stemmer=False, tokenizer=None):
    scorer = rouge_scorer.RougeScorer(rouge_types, use_stemmer=use_stemmer, tokenizer=tokenizer)
    multi = isinstance(references[0], list)
    return [scorer.score_multi(r, p) if multi else scorer.score(r, p) for r, p in zip(references, predictions)]


@pytest.fixture(scope="module")
def english(shared_data):
    return {name: english_records(shared_data, name) for name in ENGLISH_DATASETS}


@pytest.mark.parametrize("use_stemmer", [False, True])
@pytest.mark.parametrize("name", ENGLISH_DATASETS)
def test_compute_equals_evaluate_rouge_on_the_english_datasets(english, name, use_stemmer):
    records = english[name][:200]
    preds = [r["candidate"] for r in records]
    multi = [list(r["references"]) for r in records]
    single = [r["references"][0] for r in records]
    for refs in (single, multi):
        theirs = rouge_score_dicts(preds, refs, use_stemmer=use_stemmer)
        want = evaluate_rouge(preds, refs, seed=7, scores=theirs)
        assert pipeline.compute(preds, refs, use_stemmer=use_stemmer, seed=7) == want
        want = evaluate_rouge(preds, refs, use_aggregator=False, scores=theirs)
        assert pipeline.compute(preds, refs, use_aggregator=False, use_stemmer=use_stemmer) == want


def test_compute_arguments_like_evaluate():
    preds = ["the cat is sitting on the mat", "the fox jumped over the dog", "我爱北京天安门"]
    refs = ["the cat sat on the mat", "the fast fox jumped over the lazy dog near the river", "我爱北京天安门"]
    # the semantics note's measured output of evaluate 0.4.6's rouge
    got = pipeline.compute(predictions=preds, references=refs)
    assert got == pytest.approx({"rouge1": 0.4917043740573152, "rouge2": 0.3151515151515151,
                                 "rougeL": 0.4917043740573152, "rougeLsum": 0.4917043740573152}, abs=0, rel=0)
    assert pipeline.compute(preds, refs, use_aggregator=False)["rouge1"] == [0.7692307692307692,
                                                                             0.7058823529411764, 0.0]
    assert list(pipeline.compute(preds, refs, rouge_types=["rougeL", "rouge1"])) == ["rougeL", "rouge1"]
    tok = pipeline.compute(preds, refs, tokenizer=str.split, use_aggregator=False)
    assert tok == evaluate_rouge(preds, refs, tokenizer=type("T", (), {"tokenize": staticmethod(str.split)})(),
                                 use_aggregator=False)
    with pytest.raises(ValueError, match="2 predictions for 3 references"):
        pipeline.compute(preds[:2], refs)
    with pytest.raises(ValueError, match="Invalid rouge type"):
        pipeline.compute(preds, refs, rouge_types=["rougeX"])


def test_compute_seeds_and_scoring_options():
    rng = np.random.default_rng(1)
    words = "a b c d e f g h".split()
    preds = [" ".join(rng.choice(words, 8)) for _ in range(50)]
    refs = [" ".join(rng.choice(words, 9)) for _ in range(50)]
    assert pipeline.compute(preds, refs, seed=3) == evaluate_rouge(preds, refs, seed=3)
    assert pipeline.compute(preds, refs, seed=3) != pipeline.compute(preds, refs, seed=4)
    state = np.random.get_state()[1].copy()
    pipeline.compute(preds, refs)
    assert (np.random.get_state()[1] == state).all(), "the global generator is left alone"
    # the family and rules reach compute: the per-example F of RougeScorer with the same options
    for kw in ({"rouge_types": ["rougeW-1.2", "rougeSU4"]}, {"alpha": 0.8}, {"multi_ref": "mean"},
               {"profile": "unicode", "language": "de"}):
        scorer = pipeline.RougeScorer(kw.pop("rouge_types", TYPES), **kw)
        want = [s for s in scorer.score_batch([[r, p] for r, p in zip(refs, preds)], preds)]
        got = pipeline.compute(preds, [[r, p] for r, p in zip(refs, preds)], rouge_types=scorer.rouge_types,
                               use_aggregator=False, **kw)
        assert got == {t: [w[t].fmeasure for w in want] for t in scorer.rouge_types}


def test_rich_result():
    preds = ["the cat is on the mat", "a b c", "hello there world"]
    refs = ["the cat sat on the mat", "a b d", "hello world"]
    res = pipeline.compute(preds, refs, return_result=True, seed=5, n_boot=200, confidence=0.9)
    theirs = rouge_scorer.RougeScorer(TYPES)
    per = [theirs.score(r, p) for r, p in zip(refs, preds)]
    for t in TYPES:
        for k in range(3):
            assert res.mean[t][k] == math.fsum(s[t][k] for s in per) / 3
    agg = scoring.BootstrapAggregator(confidence_interval=0.9, n_samples=200)
    for s in per:
        agg.add_scores(s)
    np.random.seed(5)
    assert res.aggregate == agg.aggregate()
    assert res.per_example() == per
    assert res.fmeasure() == {t: res.aggregate[t].mid.fmeasure for t in TYPES}
    assert res.signature.startswith("rouge:1,2,L,Lsum|tok:default|stem:no|split:newline|multiref:max_f|"
                                    "bs:rouge-score-200|ci:90|seed:5|")
    d = res.to_dict()
    assert json.loads(json.dumps(d)) == d and len(d["rows"]) == 12 and d["n"] == 3
    assert pipeline.compute(preds, refs, return_result=True, n_boot=0).fmeasure()["rouge1"] == res.mean["rouge1"][2]


def test_compute_on_small_input_loads_no_compiled_code():
    code = ("import sys, pipeline; pipeline.compute(['the cat sat'] * 100, ['the cat is here'] * 100); "
            "print('numba' in sys.modules, 'dask' in sys.modules)")
    env = dict(os.environ, ROUGE_PIPELINE_COLD_START="1")  # as shipped (conftest turns it off)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.stdout.split() == ["False", "False"], out.stderr[-2000:]


# --- BootstrapAggregator -----------------------------------------------------------------------

def _scores(n=40, seed=0):
    rng = np.random.default_rng(seed)
    words = "the cat sat on a mat dog ran".split()
    sc = rouge_scorer.RougeScorer(["rouge1", "rougeL"])
    return [sc.score(" ".join(rng.choice(words, 6)), " ".join(rng.choice(words, 5))) for _ in range(n)]


def test_bootstrap_aggregator_is_rouge_scores():
    per = _scores()
    for ci, n in ((0.95, 1000), (0.8, 37)):
        theirs = scoring.BootstrapAggregator(confidence_interval=ci, n_samples=n)
        seeded = pipeline.BootstrapAggregator(confidence_interval=ci, n_samples=n, seed=11)
        unseeded = pipeline.BootstrapAggregator(confidence_interval=ci, n_samples=n)
        for s in per:
            for a in (theirs, seeded, unseeded):
                a.add_scores(s)
        np.random.seed(11)
        want = theirs.aggregate()
        state = np.random.get_state()[1].copy()
        assert seeded.aggregate() == want and seeded.aggregate() == want
        assert (np.random.get_state()[1] == state).all()
        np.random.seed(11)
        assert unseeded.aggregate() == want  # no seed: numpy's global generator, like rouge-score
        assert type(want["rouge1"].mid) is type(seeded.aggregate()["rouge1"].mid)
        assert seeded.aggregate()["rouge1"]._fields == ("low", "mid", "high")
    assert pipeline.BootstrapAggregator().aggregate() == {} == scoring.BootstrapAggregator().aggregate()
    for bad in ({"confidence_interval": 1.5}, {"n_samples": 0}):
        with pytest.raises(ValueError) as theirs_e:
            scoring.BootstrapAggregator(**bad)
        with pytest.raises(ValueError) as ours_e:
            pipeline.BootstrapAggregator(**bad)
        assert str(ours_e.value) == str(theirs_e.value)


# --- the offline evaluate metric ---------------------------------------------------------------

def test_evaluate_load_works_offline(tmp_path):
    pytest.importorskip("evaluate")
    preds = ["the cat is sitting on the mat", "the fox jumped over the dog"]
    refs = [["the cat sat on the mat", "a cat"], ["the fast fox jumped over the lazy dog near the river"]]
    code = f"""
import json, evaluate
from pipeline.hf import METRIC_PATH
m = evaluate.load(METRIC_PATH, seed=42)
p, r = {preds!r}, {refs!r}
print(json.dumps([m.compute(predictions=p, references=r),
                  m.compute(predictions=p, references=[x[0] for x in r], use_aggregator=False, use_stemmer=True),
                  m.compute(predictions=p, references=r, systems=["y", "x"])]))
"""
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_HOME=str(tmp_path / "hf"),
               HF_EVALUATE_OFFLINE="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    agg, per, systems = json.loads(out.stdout.strip().splitlines()[-1])
    assert agg == evaluate_rouge(preds, refs, seed=42)
    # systems= reaches compute through evaluate's keyword arguments: each system on its own example
    assert systems == {"x": evaluate_rouge(preds[1:], refs[1:], seed=42),
                       "y": evaluate_rouge(preds[:1], refs[:1], seed=42)}
    assert per == evaluate_rouge(preds, [x[0] for x in refs], use_aggregator=False, use_stemmer=True)
