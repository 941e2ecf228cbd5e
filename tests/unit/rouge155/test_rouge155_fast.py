"""The compiled rouge155 path (pipeline.rouge155.fast / kernels) against the pure-Python spec.

* every golden dataset and option set: compiled == spec **exactly** (printed R/P/F and the raw
  (model, peer, hit) counts; ROUGE-W's float counts bit for bit), and compiled == golden
  within 1e-5;
* every corpus golden (printed averages and CIs) from the compiled per-pair values;
* generated hard cases (ties, repeats, empty texts, long texts, many references) over many
  option sets (n up to 4, S with gaps -1/0/2 with and without U, W weights 1/1.5/2, alpha,
  stopwords, -l, -b, all four multi-reference rules);
* the exact 5-decimal rounding.
"""
from __future__ import annotations

import json
import random
from functools import lru_cache

import numpy as np
import pytest

from pipeline.rouge155 import Rouge155Options, corpus_average, default_eval_ids, score_pair
from pipeline.rouge155.fast import Rouge155Scorer
from pipeline.rouge155.kernels import round5

from support.rouge155_goldens import CONFIGS, DATA, golden_cases, goldens, needs_data, records  # noqa: E402

TOL = 1e-5 + 1e-12

KEYS = ("r", "p", "f", "model_count", "peer_count", "hit")


def _pairs(dataset, suffix):
    recs = records(dataset)
    gs = goldens(dataset, suffix)
    return [recs[g["id"]]["references"] for g in gs], [recs[g["id"]]["candidate"] for g in gs]


@lru_cache(maxsize=None)
def compiled(dataset: str, suffix: str, config: str) -> tuple[dict, ...]:
    refs, cands = _pairs(dataset, suffix)
    return tuple(Rouge155Scorer(CONFIGS[config]).score_pairs(refs, cands))


def spec(dataset: str, suffix: str, config: str) -> list[dict]:
    refs, cands = _pairs(dataset, suffix)
    return [score_pair(c, r, CONFIGS[config]) for r, c in zip(refs, cands)]


def assert_same(ours: list[dict], expected: list[dict], where=""):
    bad = []
    for i, (a, b) in enumerate(zip(ours, expected)):
        assert list(a) == list(b)
        for metric in b:
            for k in KEYS:
                if k in b[metric] and a[metric][k] != b[metric][k]:
                    bad.append((i, metric, k, a[metric][k], b[metric][k]))
    assert len(ours) == len(expected)
    assert not bad, f"{where}: {len(bad)} values differ, e.g. {bad[:5]}"


GOLDEN_CASES = golden_cases()


@needs_data
@pytest.mark.parametrize("dataset, suffix, key, config", GOLDEN_CASES)
def test_compiled_equals_spec_and_goldens(dataset, suffix, key, config):
    ours = compiled(dataset, suffix, config)
    assert_same(list(ours), spec(dataset, suffix, config), f"{dataset}{suffix}-{config}")
    mismatches = []
    n_values = 0
    for gold, row in zip(goldens(dataset, suffix), ours):
        for metric, expected in gold[key].items():
            for x in "rpf":
                n_values += 1
                if abs(row[metric][x] - expected[x]) > TOL:
                    mismatches.append((gold["id"], metric, x, row[metric][x], expected[x]))
    assert n_values > 0
    assert not mismatches, mismatches[:5]


CORPUS_DATASETS = ["rouge155_sample_sl2003", "duc2004_pyrouge_tests", "newsroom", "dialsummeval"]
CORPUS_RUNS = {"a": ("", "stem", 0), "b": ("", "stem", 0), "c": ("_s", "s", 0),
               "d": ("_l100", "l100", 0), "e": ("_fB", "fB-nostem", 0), "f": ("", "stem", 1)}


@needs_data
@pytest.mark.parametrize("dataset", CORPUS_DATASETS)
def test_corpus_goldens_through_compiled_path(dataset):
    golden = json.loads((DATA / dataset / "rouge155_corpus_goldens.json").read_text())
    assert golden["runs"]
    for run, g in golden["runs"].items():
        suffix, config, unit = CORPUS_RUNS[run]
        per_pair = list(compiled(dataset, suffix, config))
        ours = corpus_average(per_pair, default_eval_ids(len(per_pair)), Rouge155Options(counting_unit=unit))
        for metric, expected in g["metrics"].items():
            for x in "RPF":
                assert ours[metric][f"{x}_printed"] == tuple(expected[f"{x}_printed"]), (run, metric, x)


# ----------------------------------------------------------------------------- hard cases

def _text(rng: random.Random, vocab: list[str], max_sents: int, max_len: int) -> str:
    sents = []
    for _ in range(rng.randint(0, max_sents)):
        words = [rng.choice(vocab) for _ in range(rng.randint(0, max_len))]
        if rng.random() < 0.2:
            words.insert(rng.randint(0, len(words)), rng.choice(["--", "U.S.", "state-of-the-art", "Zürich",
                                                                 "don't", "$5", "3.5", "  ", "THE"]))
        sents.append(" ".join(words))
    sep = rng.choice(["\n", "\n", "\n\n", "\n \n"])
    return sep.join(sents)


def hard_cases(seed: int, n: int, long: bool = False):
    rng = random.Random(seed)
    small = ["a", "b", "c", "the", "cat", "sat", "on", "mat", "x"]  # many ties and repeats
    words = small + ["running", "studies", "mice", "went", "said", "says", "documents", "agreement",
                     "best", "better", "goes", "denied", "it", "is", "was", "new"]
    refs, cands = [], []
    for i in range(n):
        vocab = small if i % 3 == 0 else words
        ms, ml = (6, 60) if long else (4, 12)
        cands.append(_text(rng, vocab, ms, ml))
        k = rng.choice([1, 1, 2, 3, 4])
        refs.append([_text(rng, vocab, ms, ml) for _ in range(k)])
    # explicit corner cases: identical, empty sides, one token, reversed, repeated tokens
    refs += [["the cat sat on the mat"], ["a"], [""], ["a b c"], ["a a a a"], ["a b\nb a", "c"],
             ["x y z", "x y z"], ["w1 w2 w3 w4 w5"]]
    cands += ["the cat sat on the mat", "a", "a b", "", "a a", "b a\na b", "z y x",
              "w1 w2 w6 w7 w8\nw1 w3 w8 w9 w5"]
    return refs, cands


OPTION_SETS = [
    Rouge155Options(),
    Rouge155Options(stem=True, n=4, skip_gap=-1, su=False, w_weight=2.0, alpha=0.9),
    Rouge155Options(n=3, skip_gap=0, su=True, w_weight=1.0, alpha=0.0, multi_ref="B"),
    Rouge155Options(n=1, skip_gap=2, su=False, w_weight=1.5, alpha=1.0, multi_ref="max_f"),
    Rouge155Options(stem=True, skip_gap=-1, su=True, multi_ref="mean", alpha=0.3),
    Rouge155Options(stem=True, stopwords=True, multi_ref="B", w_weight=None),
    Rouge155Options(length_limit_words=7, multi_ref="A", w_weight=1.2, skip_gap=3),
    Rouge155Options(length_limit_bytes=20, stem=True, w_weight=None, skip_gap=4, su=True),
    Rouge155Options(length_limit_bytes=9, multi_ref="B", w_weight=None),
]


def _spec_or_error(c, r, opts):
    try:
        return score_pair(c, r, opts)
    except ZeroDivisionError:
        return None


@pytest.mark.parametrize("k", range(len(OPTION_SETS)))
def test_hard_cases_equal_spec(k):
    opts = OPTION_SETS[k]
    refs, cands = hard_cases(100 + k, 120)
    expected = [_spec_or_error(c, r, opts) for r, c in zip(refs, cands)]
    res = Rouge155Scorer(opts).score_arrays(refs, cands)
    rows = res.as_dicts()
    w_names = [m for m in res.metrics if m.startswith("ROUGE-W")]
    for i, (row, exp) in enumerate(zip(rows, expected)):
        if exp is None:   # ROUGE-1.5.5 dies (-w with a reference without tokens): W is NaN
            assert res.status[i] == 2 and w_names
            assert all(np.isnan(row[m]["f"]) for m in w_names)
            exp = _spec_or_error(cands[i], refs[i], Rouge155Options(**{**opts.__dict__, "w_weight": None}))
            row = {m: v for m, v in row.items() if m not in w_names}
        else:
            assert res.status[i] == 0
        assert_same([row], [exp], f"options {k} pair {i}")


def test_long_texts_equal_spec():
    opts = Rouge155Options(stem=True, n=3)
    refs, cands = hard_cases(7, 12, long=True)
    res = Rouge155Scorer(opts).score_pairs([[r[0]] if r[0] else ["z"] for r in refs], cands)
    exp = [score_pair(c, [r[0]] if r[0] else ["z"], opts) for r, c in zip(refs, cands)]
    assert_same(res, exp, "long")


def test_one_batch_equals_pair_by_pair_and_cache():
    refs, cands = hard_cases(3, 40)
    scorer = Rouge155Scorer(Rouge155Options(stem=True, w_weight=None))
    whole = scorer.score_arrays(refs, cands)
    again = scorer.score_arrays(refs, cands)   # vocabulary and text cache reused
    single = [scorer.score_arrays([r], [c]).scores[0] for r, c in zip(refs, cands)]
    assert np.array_equal(whole.scores, again.scores)
    assert np.array_equal(whole.scores, np.stack(single))


def test_api_shapes_and_order():
    scorer = Rouge155Scorer(Rouge155Options(stem=True))
    res = scorer.score_arrays(["the cat sat on the mat", ["a", "the cat"]], ["the cat is sitting on the mat", "cat"])
    assert res.metrics == ["ROUGE-1", "ROUGE-2", "ROUGE-L", "ROUGE-W-1.2", "ROUGE-SU4"]
    assert res.scores.shape == (2, 5, 3) and res.n_refs.tolist() == [1, 2]
    assert res.scores[0, 0].tolist() == [0.71429, 0.83333, 0.76923]     # P, R, F
    assert res.column("ROUGE-W-1.2", "recall")[0] == 0.5209
    only = Rouge155Scorer(Rouge155Options(), metrics=["ROUGE-L", "ROUGE-1"])
    assert only.metrics == ["ROUGE-L", "ROUGE-1"]
    with pytest.raises(ValueError):
        Rouge155Scorer(Rouge155Options(), metrics=["ROUGE-3"])
    with pytest.raises(ValueError):
        scorer.score_arrays([[]], ["x"])


def test_too_long_lcs_is_reported():
    from pipeline.rouge155 import fast

    scorer = Rouge155Scorer(Rouge155Options(w_weight=None, skip_gap=None))
    docs, n_refs, ex_doc = fast._flatten(["a b c d e f"], ["a b c d e f g"])
    res = fast.score_encoded(scorer.encoder.encode(docs), ex_doc, n_refs, scorer.specs, scorer.rule,
                             0.5, True, False, max_cells=10)
    assert res.status.tolist() == [1] and np.isnan(res.scores[0]).all()


def test_round5_is_python_formatting():
    rng = np.random.default_rng(0)
    xs = np.concatenate([rng.random(50_000), rng.integers(0, 10**6, 20_000) / 10**6,
                         np.arange(0, 200) / 64.0, np.arange(1, 3000) / 3001.0, [0.0, 1.0, 0.5]])
    ours = [round5(float(x)) for x in xs[:2000]]  # scalar calls (jitted)
    assert ours == [float(f"{x:.5f}") for x in xs[:2000]]
    from pipeline.rouge155.kernels import _scores_of

    for x in xs:
        assert round5(float(x)) == float(f"{x:.5f}"), x
    assert _scores_of(6.0, 7.0, 5.0, 0.0, 0.5, True, False) == (0.71429, 0.83333, 0.76923)
    assert round5(1 / 64) == 0.01562 and round5(3 / 64) == 0.04688   # exact halves: even


# ----------------------------------------------------------------------------- the family, rouge-score profile

from pipeline.rouge155 import metrics as spec_metrics  # noqa: E402
from pipeline.rouge155.family import (  # noqa: E402
    FamilyScorer, PipelineRouge155Scorer, options_for_types, parse_family_type, perl_options,
)
from pipeline.rouge155.text import Summary  # noqa: E402
from pipeline.scorer import RougeScorer  # noqa: E402
from pipeline.text.sentences import split_newlines  # noqa: E402
from pipeline.text.tokenizers import DefaultTokenizer  # noqa: E402

STANDARD = ["rouge1", "rouge2", "rouge3", "rougeL", "rougeLsum"]


def _family_data():
    refs, cands = hard_cases(11, 150)
    refs = [[x if x.strip() else "q" for x in r] for r in refs]   # rouge-score: any text is fine
    return refs, cands


@pytest.mark.parametrize("stem", [False, True])
def test_family_standard_types_equal_rouge_score(stem):
    """Through the family kernels with max_f, rouge-score's own types give its numbers exactly."""
    refs, cands = _family_data()
    ours = FamilyScorer(STANDARD, use_stemmer=stem).score_arrays(refs, cands)
    theirs = RougeScorer(STANDARD, use_stemmer=stem).score_arrays(refs, cands)
    assert np.array_equal(ours.scores, theirs.scores)
    assert np.array_equal(ours.best_ref, theirs.best_ref)


def _rs_summary(text, tok):
    sents = [tok.tokenize(s) for s in split_newlines(text)]
    return Summary(tok.tokenize(text), [s for s in sents if s])


def _unrounded(counts, weight=None, alpha=0.5):
    r = spec_metrics._ratio(counts.hit, counts.model_count, weight)
    p = spec_metrics._ratio(counts.hit, counts.peer_count, weight)
    f = 2 * p * r / (p + r) if alpha == 0.5 and p + r > 0 else (spec_metrics.f_measure(p, r, alpha)
                                                                if alpha != 0.5 else 0.0)
    return p, r, f


@pytest.mark.parametrize("rule", ["pooled", "best_recall", "max_f", "mean"])
def test_family_w_s_su_definitions_on_rouge_score_tokens(rule):
    """rougeW/S/SU on rouge-score's tokens == the spec's ROUGE-1.5.5 counting, unrounded."""
    types = ["rougeW-1.2", "rougeS4", "rougeSU4", "rougeS*", "rougeW-2", "rouge2", "rougeLsum"]
    refs, cands = _family_data()
    tok = DefaultTokenizer(use_stemmer=True)
    res = FamilyScorer(types, use_stemmer=True, multi_ref=rule).score_arrays(refs, cands)
    for i, (rr, c) in enumerate(zip(refs, cands)):
        peer = _rs_summary(c, tok)
        models = [_rs_summary(r, tok) for r in rr]
        for t, name in enumerate(types):
            spec_t = parse_family_type(name)
            weight = spec_t.weight if name.startswith("rougeW") else None
            per_ref = []
            for mdl in models:
                if weight is not None:
                    try:
                        cnt, key = spec_metrics.rouge_w_counts(peer, mdl, weight)
                    except ZeroDivisionError:
                        cnt, key = spec_metrics.Counts(0.0, len(peer.tokens) ** weight, 0.0), 0.0
                elif name.startswith("rougeS"):
                    cnt = spec_metrics.rouge_s_counts(peer, mdl, spec_t.gap, spec_t.su)
                    key = spec_metrics._ratio(cnt.hit, cnt.model_count, None)
                elif name == "rouge2":
                    cnt = spec_metrics.rouge_n_counts(peer, mdl, 2)
                    key = spec_metrics._ratio(cnt.hit, cnt.model_count, None)
                else:
                    cnt = spec_metrics.rouge_l_counts(peer, mdl)
                    key = spec_metrics._ratio(cnt.hit, cnt.model_count, None)
                per_ref.append((cnt, key))
            if rule == "pooled":
                total = per_ref[0][0]
                for cnt, _ in per_ref[1:]:
                    total = total + cnt
                exp = _unrounded(total, weight)
            elif rule == "best_recall":
                best = per_ref[0]
                for x in per_ref[1:]:
                    if x[1] > best[1]:
                        best = x
                exp = _unrounded(best[0], weight)
            else:
                each = [_unrounded(cnt, weight) for cnt, _ in per_ref]
                if rule == "max_f":
                    exp = each[0]
                    for x in each[1:]:
                        if x[2] > exp[2]:
                            exp = x
                else:
                    exp = tuple(sum(x[k] for x in each) / len(each) for k in range(3))
            assert tuple(res.scores[i, t].tolist()) == exp, (i, name, rule)


def test_family_alpha():
    refs, cands = _family_data()
    a = FamilyScorer(["rouge1", "rougeLsum"], alpha=0.2).score_arrays(refs, cands)
    p, r = a.scores[:, :, 0], a.scores[:, :, 1]
    den = 0.8 * p + 0.2 * r
    expected = np.where(den > 0, (p * r) / np.where(den > 0, den, 1), 0.0)
    assert np.array_equal(a.scores[:, :, 2], expected)
    with pytest.raises(ValueError):
        FamilyScorer(["rouge1"], alpha=1.5)


def test_type_names():
    assert parse_family_type("rougeW-1.2").weight == 1.2
    s = parse_family_type("rougeSU4")
    assert (s.gap, s.su) == (4, True)
    assert parse_family_type("rougeS*").gap == -1
    for bad in ["rougeW", "rougeW-0", "rougeX", "rouge0", "rougeS", "rougeSU-1"]:
        with pytest.raises(ValueError):
            parse_family_type(bad)


def test_rouge155_pipeline_scorer_maps_types_to_options():
    opts, names = options_for_types(["rouge1", "rouge2", "rougeLsum", "rougeW-1.2", "rougeSU4"], stem=True)
    assert opts == CONFIGS["stem"] and names == ["ROUGE-1", "ROUGE-2", "ROUGE-L", "ROUGE-W-1.2", "ROUGE-SU4"]
    assert perl_options(opts) == "-n 2 -m -w 1.2 -2 4 -u -f A -p 0.5"
    with pytest.raises(ValueError):
        options_for_types(["rougeW-1.2", "rougeW-2"])
    sc = PipelineRouge155Scorer.create(["rougeL", "rouge1"], stem=True)
    res = sc.score_arrays(["the cat sat on the mat"], ["the cat is sitting on the mat"])
    assert res.metrics == ["rougeL", "rouge1"] and res.scores[0, 1].tolist() == [0.71429, 0.83333, 0.76923]
    # a reference without tokens: ROUGE-1.5.5 dies under -w; the pipeline scores W from the others
    sc = PipelineRouge155Scorer.create(["rougeW-1.2"])
    res = sc.score_arrays([["--", "a b"]], ["a b"])
    assert res.status.tolist() == [0] and not np.isnan(res.scores).any()


# ----------------------------------------------------------------------------- the pipeline, profile rouge155

@needs_data
def test_pipeline_run_rouge155_profile(tmp_path):
    """A sync run with profile rouge155: per-example columns == compiled ROUGE-1.5.5 values, the
    signature, and rouge155_corpus.json == the corpus goldens (ids "k.1" as in the goldens)."""
    from pipeline.config import RunConfig
    from pipeline.execution.driver import run
    from pipeline.signature import Signature

    ds = "rouge155_sample_sl2003"
    recs = list(records(ds).values())
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"{k}.1", "candidate": r["candidate"],
                                       "references": r["references"]}) + "\n"
                           for k, r in enumerate(recs, 1)))
    out = tmp_path / "run"
    cfg = RunConfig.from_dict({
        "input": {"layout": "records", "paths": str(src)}, "output": {"url": str(out)},
        "scoring": {"profile": "rouge155", "use_stemmer": True, "rouge_types": ["rouge1", "rouge2", "rougeL"],
                    "diagnostics": False},
        "stats": {"n_boot": 1000}, "execution": {"mode": "sync"}})
    assert cfg.scoring.multi_ref == "A"
    sig = Signature.from_config(cfg)
    assert sig.profile == "rouge155-1.5.5" and sig.opts == "-n 2 -m -f A -p 0.5"
    run(cfg, None, progress=False, log=lambda m: None)
    from pipeline.runfolder import read_scores

    table = read_scores(str(out), "").to_pandas()
    assert table["id"].tolist() == [f"{k}.1" for k in range(1, len(recs) + 1)]
    per_pair = compiled(ds, "", "stem")
    assert np.array_equal(table["rouge1_recall"].to_numpy(), [p["ROUGE-1"]["r"] for p in per_pair])
    assert np.array_equal(table["rougeL_fmeasure"].to_numpy(), [p["ROUGE-L"]["f"] for p in per_pair])
    got = json.loads((out / "rouge155_corpus.json").read_text())["systems"][""]
    golden = json.loads((DATA / ds / "rouge155_corpus_goldens.json").read_text())["runs"]["a"]["metrics"]
    for t, metric in zip(["rouge1", "rouge2", "rougeL"], ["ROUGE-1", "ROUGE-2", "ROUGE-L"]):
        assert got[t]["metric"] == metric
        for x in "RPF":
            assert tuple(got[t][f"{x}_printed"]) == tuple(golden[metric][f"{x}_printed"]), (t, x)


def test_config_family_and_rouge155_settings():
    from pipeline.config import ConfigError, RunConfig

    def cfg(**sc):
        return RunConfig.from_dict({"input": {"layout": "records", "paths": "x.jsonl"}, "output": {"url": "/tmp/x"},
                                    "scoring": sc})

    base = cfg()
    assert base.scoring.multi_ref == "max_f"
    assert cfg(multi_ref="max_f").config_hash() == base.config_hash() == cfg(alpha=0.5).config_hash()
    c = cfg(rouge_types=["rouge1", "rougeW-1.2", "rougeSU4", "rougeS*"], multi_ref="mean", alpha=0.25)
    assert c.config_hash() != base.config_hash()
    for bad in [dict(rouge_types=["rougeW"]), dict(alpha=2), dict(multi_ref="max"), dict(remove_stopwords=True),
                dict(profile="rouge155", rouge_types=["rougeW-1.2", "rougeW-2"]),
                dict(profile="rouge155", tokenizer="whitespace"),
                dict(profile="rouge155", length_limit_words=10, length_limit_bytes=10)]:
        with pytest.raises(ConfigError):
            cfg(**bad)


def test_job_scorer_for_routes_profiles():
    from pipeline.job import ScoringSettings, scorer_for

    assert type(scorer_for(ScoringSettings())).__name__ == "RougeEngine"
    assert type(scorer_for(ScoringSettings(rouge_types=("rouge1", "rougeSU4")))).__name__ == "FamilyScorer"
    assert type(scorer_for(ScoringSettings(multi_ref="B"))).__name__ == "FamilyScorer"
    assert type(scorer_for(ScoringSettings(profile="rouge155", multi_ref="A"))).__name__ == "PipelineRouge155Scorer"
