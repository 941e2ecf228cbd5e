"""The cold-start tier (``pipeline.scoring.cold``): a fresh process's first small batches are
scored in pure Python, with the same numbers as rouge-score and as the compiled path, and the
process moves to the compiled path for good once the tier's budget is spent."""
from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer

from support.shared import ENGLISH_DATASETS, english_records
from pipeline import RougeScorer
from pipeline.scoring import cold, spec
from pipeline.scoring.types import parse_rouge_types
from test_hard_cases import ODD_TEXTS, texts, tie_heavy_pairs  # texts: awkward pieces (NUL, CR, U+0130, ...)

TYPES = ["rouge1", "rouge2", "rouge3", "rougeL", "rougeLsum"]
STEM = pytest.mark.parametrize("use_stemmer", [False, True], ids=["nostem", "stem"])


@pytest.fixture
def unlimited(monkeypatch):
    """The tier on, with no budget or length limit, for comparing its numbers."""
    monkeypatch.setenv("ROUGE_PIPELINE_COLD_START", "1")
    monkeypatch.setattr(cold, "_off", False)  # an in-process compile earlier in the session turns it off
    monkeypatch.setattr(cold, "_left", 1 << 62)
    monkeypatch.setattr(cold, "MAX_TEXT_CHARS", 1 << 62)
    monkeypatch.setattr(cold, "_numba_loaded", lambda: False)  # this test process has loaded it


@pytest.fixture
def fresh(monkeypatch):
    """The tier as a fresh process has it (full budget, limits as shipped) on a machine whose
    cache holds the kernels."""
    monkeypatch.setenv("ROUGE_PIPELINE_COLD_START", "1")
    monkeypatch.setattr(cold, "_off", False)  # an in-process compile earlier in the session turns it off
    monkeypatch.setattr(cold, "_left", cold.BUDGET_CHARS)
    monkeypatch.setattr(cold, "_numba_loaded", lambda: False)
    monkeypatch.setattr(cold, "kernels_ready", lambda: True)


def cold_scores(types, refs, cands, use_stemmer=False):
    out = cold.try_score(parse_rouge_types(types), use_stemmer, refs, cands)
    assert out is not None, "the batch was sent to the compiled path"
    return out


def rouge_score_scores(types, refs, cands, use_stemmer=False):
    theirs = rouge_scorer.RougeScorer(types, use_stemmer=use_stemmer)
    return [{k: tuple(v) for k, v in (theirs.score(r, c) if isinstance(r, str) else theirs.score_multi(r, c)).items()}
            for r, c in zip(refs, cands)]


def mismatches(ours, theirs, labels=None):
    labels = labels or range(len(ours))
    bad = []
    for label, o, t in zip(labels, ours, theirs, strict=True):
        assert list(o) == list(t)
        bad += [f"{label} {k}: cold {o[k]!r} oracle {tuple(t[k])!r}" for k in o if tuple(o[k]) != tuple(t[k])]
    return bad


# --- the LCS primitives against the specification's tables --------------------------------------

def test_lcs_primitives_exhaustive_on_two_letters():
    words = [list(p) for n in range(0, 6) for p in itertools.product("ab", repeat=n)]
    for r, c in itertools.product(words, repeat=2):
        assert cold.lcs_length(r, c) == spec.lcs_table(r, c)[-1][-1], (r, c)
        assert cold.lcs_positions(r, c) == spec.lcs_positions(r, c), (r, c)


def test_lcs_primitives_random_long():
    rng = random.Random(5)
    for _ in range(300):
        vocab = "abcdefgh"[: rng.randint(1, 8)]
        r = [rng.choice(vocab) for _ in range(rng.randint(0, 150))]
        c = [rng.choice(vocab) for _ in range(rng.randint(0, 150))]
        assert cold.lcs_length(r, c) == spec.lcs_table(r, c)[-1][-1]
        assert cold.lcs_positions(r, c) == spec.lcs_positions(r, c) == rouge_scorer.lcs_ind(r, c)


# --- whole scores against rouge-score ----------------------------------------------------------

@STEM
@pytest.mark.parametrize("name", ENGLISH_DATASETS)
def test_every_english_pair_equals_rouge_score(shared_data, unlimited, name, use_stemmer):
    records = english_records(shared_data, name)
    refs = [ref for rec in records for ref in rec["references"]]
    cands = [rec["candidate"] for rec in records for _ in rec["references"]]
    ours = cold_scores(TYPES, refs, cands, use_stemmer)
    bad = mismatches(ours, rouge_score_scores(TYPES, refs, cands, use_stemmer))
    assert not bad, f"{len(bad)} differences:\n" + "\n".join(bad[:10])


@STEM
def test_multi_reference_equals_compiled_path(shared_data, unlimited, use_stemmer):
    records = [r for name in ("rouge155_sample_sl2003", "duc2004_pyrouge_tests", "sacrerouge_fixtures")
               for r in english_records(shared_data, name)]
    refs, cands = [r["references"] for r in records], [r["candidate"] for r in records]
    assert any(len(r) > 1 for r in refs)
    ours = cold_scores(TYPES, refs, cands, use_stemmer)
    some = slice(None, None, 20)
    bad = mismatches(ours[some], rouge_score_scores(TYPES, refs[some], cands[some], use_stemmer))
    assert not bad, "\n".join(bad[:10])
    scorer = RougeScorer(TYPES, use_stemmer=use_stemmer)
    compiled = scorer.to_dicts(scorer.score_arrays(refs, cands))  # held to rouge-score in test_parity_data
    bad = mismatches(ours, compiled, [r["id"] for r in records])
    assert not bad, f"{len(bad)} differences:\n" + "\n".join(bad[:10])


@STEM
def test_odd_texts_all_combinations(unlimited, use_stemmer):
    refs, cands = map(list, zip(*itertools.product(ODD_TEXTS, repeat=2)))
    bad = mismatches(cold_scores(TYPES, refs, cands, use_stemmer), rouge_score_scores(TYPES, refs, cands, use_stemmer))
    assert not bad, "\n".join(bad[:10])


@pytest.mark.parametrize("seed", [0, 1])
def test_tie_heavy_pairs(unlimited, seed):
    refs, cands = tie_heavy_pairs(seed, 40)
    bad = mismatches(cold_scores(TYPES, refs, cands), rouge_score_scores(TYPES, refs, cands))
    assert not bad, "\n".join(bad[:10])


@STEM
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(refs=st.lists(texts, min_size=1, max_size=3), cand=texts)
def test_hypothesis_pairs(unlimited, use_stemmer, refs, cand):
    ours = cold_scores(TYPES, [refs], [cand], use_stemmer)
    assert not mismatches(ours, rouge_score_scores(TYPES, [refs], [cand], use_stemmer))


# --- what goes where -----------------------------------------------------------------------------

def test_unusual_input_goes_to_the_compiled_path(unlimited, monkeypatch):
    monkeypatch.setattr(cold, "kernels_ready", lambda: True)
    types = parse_rouge_types(["rouge1"])
    for refs, cands in ([[]], ["a"]), (["a"], [None]), ([["a", 3]], ["a"]), (["a", "b"], ["a"]), \
                       ((r for r in ["a"]), ["a"]):
        monkeypatch.setattr(cold, "_left", 1 << 62)
        assert cold.try_score(types, False, refs, cands) is None   # the compiled path words any error
        assert cold._left == 0   # ... and is loaded by then: the tier ends
    monkeypatch.setattr(cold, "_left", 1 << 62)
    assert cold.try_score([], False, ["a"], ["a"]) is None
    assert cold.try_score(types, False, [("a", "b")], ["a"]) == [{"rouge1": (1.0, 1.0, 1.0)}]
    scorer = RougeScorer(["rouge1"])
    with pytest.raises(ValueError, match="no reference"):
        scorer.score_batch([[]], ["a"])


def test_budget_and_length_limit(fresh, monkeypatch):
    types = parse_rouge_types(["rouge1"])
    monkeypatch.setattr(cold, "_left", 60)
    assert cold.try_score(types, False, ["a" * 11], [""]) is None   # 50 + 11 > 60
    assert cold._left == 0  # a batch over the budget ends the tier
    assert cold.try_score(types, False, ["a"], ["a"]) is None
    monkeypatch.setattr(cold, "_left", cold.BUDGET_CHARS)
    assert cold.try_score(types, False, ["a b"], ["a"]) is not None
    assert cold._left == cold.BUDGET_CHARS - cold.EXAMPLE_CHARS - 4
    # rougeLsum is charged per pair of lines: 3 reference lines x 2 candidate lines
    left = cold._left
    assert cold.try_score(parse_rouge_types(["rougeLsum"]), False, ["a\nb\nc"], ["a\nb"]) is not None
    assert cold._left == left - cold.EXAMPLE_CHARS - 8 - 6 * cold.LINE_PAIR_CHARS
    many_lines = "a\n" * (cold.MAX_TEXT_CHARS // 2)
    assert cold.try_score(types, False, [many_lines], [many_lines]) is not None   # no rougeLsum: lines are free
    assert cold.try_score(parse_rouge_types(["rougeLsum"]), False, [many_lines], [many_lines]) is None
    monkeypatch.setattr(cold, "_left", cold.BUDGET_CHARS)
    assert cold.try_score(types, False, ["a " * cold.MAX_TEXT_CHARS], ["a"]) is None
    monkeypatch.setattr(cold, "_left", cold.BUDGET_CHARS)
    assert cold.try_score(types, False, ["a"] * 10 ** 6, ["a"] * 10 ** 6) is None   # refused before copying
    monkeypatch.setattr(cold, "_left", cold.BUDGET_CHARS)
    monkeypatch.setattr(cold, "_numba_loaded", lambda: True)
    assert cold.try_score(types, False, ["a"], ["a"]) is None and cold._left == 0   # numba is loaded anyway
    monkeypatch.setattr(cold, "_left", cold.BUDGET_CHARS)
    monkeypatch.setattr(cold, "_numba_loaded", lambda: False)
    monkeypatch.setenv("ROUGE_PIPELINE_COLD_START", "0")
    assert cold.try_score(types, False, ["a"], ["a"]) is None


def test_routing_through_the_scorer(fresh):
    ours = RougeScorer(["rouge1", "rougeLsum"]).score_batch(["a b\nc"], ["b a c"])
    assert cold._left < cold.BUDGET_CHARS   # the default scorer's small batch was scored here
    assert ours == rouge_score_scores(["rouge1", "rougeLsum"], ["a b\nc"], ["b a c"])
    left = cold._left
    # a custom tokenizer, sentences from a segmenter, no types, the columnar API: never this tier
    assert RougeScorer(["rouge1"], tokenizer=str.split).score("Hello, world", "hello world")["rouge1"].fmeasure == 0.5
    split = RougeScorer(["rougeLsum"], split_summaries=True, sentence_splitter="sentencex")
    assert split.score("The cat sat. The dog ran.", "the dog ran the cat sat")["rougeLsum"].fmeasure == 1.0  # 0.5 by lines
    assert RougeScorer([]).score_batch(["a"], ["a"]) == [{}]
    RougeScorer(["rouge1"]).score_arrays(["a"], ["a"])
    assert cold._left == left


LINE_BREAKS = ["\r", "\r\n", "\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]


def test_characters_that_are_not_newlines_do_not_split_lines(unlimited):
    """Only "\n" separates rougeLsum's sentences (str.splitlines would also split at these)."""
    refs, cands = [], []
    for br in LINE_BREAKS:
        refs += ["a b", f"a{br}b", "a b\nc", f"b a{br}c"]
        cands += [f"b{br}a", "b a", f"c{br}b a", "c\nb a"]
    ours = cold_scores(["rougeLsum", "rougeL"], refs, cands)
    assert not mismatches(ours, rouge_score_scores(["rougeLsum", "rougeL"], refs, cands))
    assert ours[0]["rougeLsum"] == rouge_score_scores(["rougeLsum"], ["a b"], ["b\ra"])[0]["rougeLsum"] != (1.0, 1.0, 1.0)


tiny = st.lists(st.sampled_from(["a", "b", " ", "\n", *LINE_BREAKS]), max_size=24).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ref=tiny, cand=tiny)
def test_hypothesis_two_letters_and_line_breaks(unlimited, ref, cand):
    assert not mismatches(cold_scores(TYPES, [ref], [cand]), rouge_score_scores(TYPES, [ref], [cand]))


def test_warmup_loads_the_kernels_with_the_tier_on():
    code = ("import pipeline.execution.warmup as w; w.warmup()\n"
            "from pipeline.text import csr, intrinsics\n"
            "print(bool(csr.map_ids.signatures), bool(intrinsics.str_to_utf8.signatures))")
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, ROUGE_PIPELINE_COLD_START="1"),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["True", "True"]


CHILD = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
from corpus import make_corpus
refs, cands = make_corpus("short", 300, 3)
import pipeline
from pipeline.scoring import cold
types = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
s = pipeline.RougeScorer(types, use_stemmer=True)
first = s.score_batch(refs[:100], cands[:100])
after_first = {"numba": "numba" in sys.modules, "numpy": "numpy" in sys.modules, "left": cold._left}
one = s.score(refs[100], cands[100])
rest = s.score_batch(refs[101:], cands[101:])   # more than the budget left: the compiled path
after_rest = {"numba": "numba" in sys.modules, "left": cold._left}
last = s.score_multi([refs[0], refs[1]], cands[0])
from rouge_score import rouge_scorer
theirs = rouge_scorer.RougeScorer(types, use_stemmer=True)
expected = [theirs.score(r, c) for r, c in zip(refs, cands)] + [theirs.score_multi([refs[0], refs[1]], cands[0])]
ours = first + [one] + rest + [last]
same = [all(tuple(o[k]) == tuple(e[k]) for k in types) and list(o) == types for o, e in zip(ours, expected)]
print(json.dumps({"first": after_first, "rest": after_rest, "same": sum(same), "n": len(same),
                  "types": [type(v).__name__ for v in first[0].values()]}))
"""


def _child(env_value: str) -> dict:
    bench = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "benchmarks")
    env = dict(os.environ, ROUGE_PIPELINE_COLD_START=env_value)
    out = subprocess.run([sys.executable, "-c", CHILD, bench], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_fresh_process_scores_small_batches_before_loading_numba():
    res = _child("1")
    assert res["n"] == 301 and res["same"] == 301  # every pair equal to rouge-score, both tiers
    assert res["types"] == ["Score"] * 4
    assert res["first"]["numba"] is False and res["first"]["numpy"] is False
    assert 0 < res["first"]["left"] < cold.BUDGET_CHARS
    assert res["rest"] == {"numba": True, "left": 0}


def test_tier_off_loads_the_compiled_path_at_once():
    res = _child("0")
    assert res["same"] == res["n"] == 301
    assert res["first"]["numba"] is True


# --- a machine whose numba cache lacks the kernels (a fresh install) -----------------------------

FIRST_USE = r"""
import io, json, sys
sys.path.insert(0, sys.argv[1])
from corpus import make_corpus
refs, cands = make_corpus("short", 600, 2)
started = []
try:
    from pipeline.scoring import kernel_cache
    kernel_cache.start_background = lambda: started.append(1) or True   # the test starts no compile
except ImportError:  # a tree without it fails on what it does, below
    pass
err = io.StringIO()
sys.stderr = err
import pipeline
ours = pipeline.compute(cands, refs, use_stemmer=True, use_aggregator=False)
mean = pipeline.compute(cands, refs, use_stemmer=True)
sys.stderr = sys.__stderr__
from pipeline.scoring import cold
numba = "numba" in sys.modules
from rouge_score import rouge_scorer, scoring
import numpy as np
s = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=True)
np.random.seed(pipeline.api.DEFAULT_SEED)
agg = scoring.BootstrapAggregator()
theirs = []
for r, c in zip(refs, cands):
    theirs.append(s.score(r, c))
    agg.add_scores(theirs[-1])
same = all(ours[t] == [d[t].fmeasure for d in theirs] for t in ours)
same_mid = mean == {t: a.mid.fmeasure for t, a in agg.aggregate().items()}
print(json.dumps({"numba": numba, "started": len(started), "same": same, "same_mid": same_mid,
                  "over_budget": sum(map(len, refs + cands)) > cold.BUDGET_CHARS, "stderr": err.getvalue()}))
"""


def test_first_call_on_an_empty_kernel_cache_answers_without_compiling(tmp_path):
    """compute() on 600 pairs (more than the budget) in a fresh process whose numba cache is
    empty: rouge-score's numbers, bit for bit, without loading numba (so without waiting on a
    compile), silently, and the kernels' background compile requested."""
    bench = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "benchmarks")
    env = dict(os.environ, ROUGE_PIPELINE_COLD_START="1", NUMBA_CACHE_DIR=str(tmp_path / "empty"))
    out = subprocess.run([sys.executable, "-c", FIRST_USE, bench], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["over_budget"] and res["same"] and res["same_mid"]
    assert res["numba"] is False and res["started"] >= 1 and res["stderr"] == ""


def test_a_batch_too_large_for_python_waits_with_its_wait_shown(monkeypatch, capsys):
    """Kernels not compiled and a batch over the pure-Python limit: the compiled path waits for
    the background compile, and says so on stderr while it waits."""
    from pipeline.scoring import engine, kernel_cache

    polls = []
    monkeypatch.setattr(cold, "_off", False)
    monkeypatch.setattr(cold, "_ready", False)
    monkeypatch.setattr(cold, "COMPILING_LIMIT_CHARS", 10)
    monkeypatch.setattr(cold, "_left", 0)
    monkeypatch.setattr(engine, "_waited", False)
    monkeypatch.setattr(kernel_cache, "is_ready", lambda part=kernel_cache.ALL: len(polls) > 3)
    monkeypatch.setattr(kernel_cache, "start_background", lambda: True)
    monkeypatch.setattr(kernel_cache, "compiling", lambda: polls.append(1) or True)
    monkeypatch.setattr(kernel_cache.time, "sleep", lambda s: None)
    refs, cands = ["the cat sat on the mat today"] * 3, ["a cat sat on a mat"] * 3
    ours = RougeScorer(TYPES).score_batch(refs, cands)
    assert ours == rouge_score_scores(TYPES, refs, cands)
    assert len(polls) > 3
    assert "compiling the scoring kernels (first use on this machine; cached after)" in capsys.readouterr().err


def test_small_batches_stay_in_python_while_the_kernels_compile(monkeypatch):
    """Kernels not compiled: past the budget and the length limit a batch is still scored here
    (the compile started), until the kernels are in the cache."""
    from pipeline.scoring import kernel_cache

    started = []
    monkeypatch.setenv("ROUGE_PIPELINE_COLD_START", "1")
    monkeypatch.setattr(cold, "_off", False)  # an in-process compile earlier in the session turns it off
    monkeypatch.setattr(cold, "_left", 0)
    monkeypatch.setattr(cold, "_ready", False)
    monkeypatch.setattr(kernel_cache, "is_ready", lambda part=kernel_cache.ALL: False)
    monkeypatch.setattr(kernel_cache, "start_background", lambda: started.append(1) or True)
    types = parse_rouge_types(["rouge1", "rougeLsum"])
    long = "the cat sat on the mat\n" * (cold.MAX_TEXT_CHARS // 10)
    assert cold.try_score(types, False, [long], ["the cat"]) is not None and started
    monkeypatch.setattr(kernel_cache, "is_ready", lambda part=kernel_cache.ALL: True)
    assert cold.try_score(types, False, [long], ["the cat"]) is None   # compiled: the compiled path
