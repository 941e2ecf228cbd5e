"""The ``rouge155`` profile against ROUGE-1.5.5's own numbers.

* unit checks from ``shared/reference/rouge155-semantics.md`` (resources, stemmer, tokeniser,
  the worked examples of §9, length-limit quirks, corpus example (c));
* sacrerouge's token lists produced by the Perl script;
* every per-pair golden (``rouge155_goldens*.jsonl``) within abs 1e-5;
* every corpus run (a)-(f) of ``rouge155_corpus_goldens.json`` exactly as printed.
"""
from __future__ import annotations

import json
from functools import lru_cache

import pytest

from pipeline.rouge155 import (
    Rouge155Options, corpus_average, default_eval_ids, drand48_indices, morph_stem, porter_stem,
    score_pair, tokenize,
)
from pipeline.rouge155.fast import Rouge155Scorer
from pipeline.rouge155.resources import exception_db, stopwords
from pipeline.rouge155.text import limit_bytes, limit_words, perl_split_words, read_sentences

from support.rouge155_goldens import CONFIGS, DATA, golden_cases, goldens, needs_data, records  # noqa: E402

TOL = 1e-5 + 1e-12  # goldens are printed with 5 decimals



def rpf(result: dict, metric: str) -> tuple[float, float, float]:
    return tuple(result[metric][k] for k in "rpf")


# ----------------------------------------------------------------------------- resources

def test_exception_db_merged_in_sorted_order():
    db = exception_db()
    assert len(db) == 5930
    assert db["went"] == "go" and db["mice"] == "mouse"
    assert db["best"] == "well" and db["better"] == "well"   # adv.exc read after adj.exc
    assert db["testes"] == "testes" and db["is"] == "be"
    assert db["offer"] == "offer" and db["involucra"] == "involucrum"   # last line of a file wins


def test_stopwords():
    words = stopwords()
    assert len(words) == 596   # 598 lines, "may" and "would" twice
    assert {"said", "new", "may", "news", "jan", "a", "z", "the"} <= words


# ----------------------------------------------------------------------------- stemming

@pytest.mark.parametrize("word, stem", [
    # exception table first, never stemmed further
    ("said", "say"), ("mice", "mouse"), ("went", "go"), ("best", "well"), ("denied", "deny"),
    ("studied", "study"), ("were", "be"), ("found", "find"),
    # modified Porter
    ("says", "sai"), ("mouse", "mous"), ("denies", "deni"), ("studying", "studi"),
    ("monday", "mondai"), ("this", "thi"), ("ages", "ag"), ("goes", "go"),
    # CYL's step 4: ment, then ent, as separate rules
    ("document", "docum"), ("agreement", "agreem"), ("element", "elem"),
    ("accidental", "accid"), ("implementation", "implem"),
    # Porter's Perl reference departures
    ("possibly", "possibl"), ("archaeology", "archaeolog"),
])
def test_morph_stem(word, stem):
    assert morph_stem(word) == stem


def test_porter_classics():
    cases = {"caresses": "caress", "ponies": "poni", "cats": "cat", "agreed": "agre",
             "plastered": "plaster", "motoring": "motor", "hopping": "hop", "filing": "file",
             "happy": "happi", "relational": "relat", "generalization": "gener",
             "electrical": "electr", "adjustable": "adjust", "controll": "control",
             "yelling": "yell", "youth": "youth"}
    assert {w: porter_stem(w) for w in cases} == cases


# ----------------------------------------------------------------------------- tokenisation

@pytest.mark.parametrize("text, tokens", [
    ("a state-of-the-art system", ["a", "state", "of", "the", "art", "system"]),
    ("U.S. don't $5 3.5", ["u", "s", "don", "t", "5", "3", "5"]),
    ("e-mail -- x", ["e", "mail", "x"]),
    ("café naïve Zürich", ["caf", "na", "ve", "z", "rich"]),
])
def test_tokenize(text, tokens):
    assert tokenize(read_sentences(text)[0]) == tokens


def test_tokenize_stems_only_long_tokens():
    assert tokenize("the cat sat sitting ages", stem=True) == ["the", "cat", "sat", "sit", "ag"]


def test_ascii_only_lowercasing_and_bytes():
    # the Kelvin sign is 3 bytes in UTF-8, none of them ASCII: it never becomes "k"
    assert tokenize(read_sentences("\u212aelvin ÀB")[0]) == ["elvin", "b"]


@needs_data
def test_perl_tokenization_examples():
    fixture = json.loads((DATA / "sacrerouge_fixtures" / "perl_tokenization_examples.json").read_text())
    text = read_sentences(fixture["input"])[0]
    for case in fixture["cases"]:
        assert tokenize(text, case["stem"], case["remove_stopwords"]) == case["tokens"], case


def test_length_limit_helpers():
    assert perl_split_words(" a b ") == ["", "a", "b"]      # Perl keeps a leading empty field
    assert limit_words(["a b c", "d e f"], 4) == ["a b c", "d"]
    assert limit_words(["a b", "c d"], 4) == ["a b", "c d"]
    assert limit_bytes(["w1 w2 w3", "w4 w5 w6"], 12) == ["w1 w2 w3", "w4 w"]
    assert limit_bytes(["w1 w2 w3", "w4 w5 w6"], 12, lcs_quirk=True) == ["w1 w2 w3", "w4 w5 w6"]


# ----------------------------------------------------------------------------- worked examples (§9)

def test_example_a_and_d():
    res = score_pair("the cat is sitting on the mat", ["the cat sat on the mat"],
                     Rouge155Options(stem=True))
    assert rpf(res, "ROUGE-1") == (0.83333, 0.71429, 0.76923)
    assert rpf(res, "ROUGE-2") == (0.6, 0.5, 0.54545)
    assert rpf(res, "ROUGE-L") == (0.83333, 0.71429, 0.76923)
    assert rpf(res, "ROUGE-W-1.2") == (0.5209, 0.63891, 0.5739)   # double-weighted recall
    assert rpf(res, "ROUGE-SU4") == (0.65, 0.5, 0.56522)           # last unigram not counted
    assert (res["ROUGE-SU4"]["hit"], res["ROUGE-SU4"]["model_count"]) == (13, 20)
    s4 = score_pair("the cat is sitting on the mat", ["the cat sat on the mat"],
                    Rouge155Options(stem=True, su=False))
    assert rpf(s4, "ROUGE-S4") == (0.6, 0.45, 0.51429)


REF_B = ("police killed the gunman \n the gunman was shot dead by police on monday \n "
         "residents were told to stay indoors")
CAND_B = "police kill the gunman \n the gunman police shot on monday \n residents were asked to stay at home"


def test_example_b_summary_level_lcs():
    opts = Rouge155Options(w_weight=None, skip_gap=None)
    res = score_pair(CAND_B, [REF_B], opts)
    assert rpf(res, "ROUGE-1") == (0.68421, 0.76471, 0.72222)
    assert rpf(res, "ROUGE-2") == (0.38889, 0.4375, 0.41177)       # F from rounded R and P
    assert rpf(res, "ROUGE-L") == (0.63158, 0.70588, 0.66667)
    stemmed = score_pair(CAND_B, [REF_B], Rouge155Options(stem=True, w_weight=None, skip_gap=None))
    assert rpf(stemmed, "ROUGE-1") == (0.73684, 0.82353, 0.77778)
    assert rpf(stemmed, "ROUGE-2") == (0.5, 0.5625, 0.52941)
    assert rpf(stemmed, "ROUGE-L") == (0.68421, 0.76471, 0.72222)
    reordered = "\n".join(reversed(CAND_B.split("\n")))
    res = score_pair(reordered, [REF_B], opts)
    assert rpf(res, "ROUGE-L") == (0.63158, 0.70588, 0.66667)
    assert rpf(res, "ROUGE-2") == (0.27778, 0.3125, 0.29412)
    lin = score_pair("w1 w2 w6 w7 w8\nw1 w3 w8 w9 w5", ["w1 w2 w3 w4 w5"], opts)
    assert rpf(lin, "ROUGE-L") == (0.8, 0.4, 0.53333)


C1 = ("the cat sat on the mat", ["the cat sat on the mat", "a dog lay on a rug near the door"])
C2 = ("the cat sat on the mat", ["the cat sat", "the cat sat on the red mat"])


def test_example_c_multiple_references():
    a = Rouge155Options(stem=True, w_weight=None, skip_gap=None)
    b = Rouge155Options(stem=True, w_weight=None, skip_gap=None, multi_ref="B")
    c1a, c1b = score_pair(*C1, a), score_pair(*C1, b)
    assert rpf(c1a, "ROUGE-1") == (0.53333, 0.66667, 0.59259)
    assert rpf(c1a, "ROUGE-2") == (0.38462, 0.5, 0.43479)
    assert rpf(c1a, "ROUGE-L") == (0.53333, 0.66667, 0.59259)
    assert all(rpf(c1b, m) == (1.0, 1.0, 1.0) for m in ("ROUGE-1", "ROUGE-2", "ROUGE-L"))
    c2a, c2b = score_pair(*C2, a), score_pair(*C2, b)
    assert rpf(c2a, "ROUGE-1") == (0.9, 0.75, 0.81818)
    assert rpf(c2a, "ROUGE-2") == (0.75, 0.6, 0.66667)
    assert rpf(c2b, "ROUGE-1") == (1.0, 0.5, 0.66667)   # best recall, not best F
    assert rpf(c2b, "ROUGE-2") == (1.0, 0.4, 0.57143)
    assert rpf(c2b, "ROUGE-L") == (1.0, 0.5, 0.66667)

    avg_a = corpus_average([c1a, c2a], None, a)["ROUGE-1"]
    assert avg_a["R_printed"] == ("0.71666", "0.53333", "0.90000")
    assert avg_a["P"] == 0.70833
    assert avg_a["F_printed"] == ("0.70538", "0.59259", "0.81818")
    avg_b = corpus_average([c1b, c2b], None, b)["ROUGE-1"]
    assert (avg_b["R"], avg_b["P"]) == (1.0, 0.75)
    assert avg_b["F_printed"] == ("0.83333", "0.66667", "1.00000")
    t1 = Rouge155Options(stem=True, w_weight=None, skip_gap=None, counting_unit=1)
    avg_t1 = corpus_average([score_pair(*C1, t1), score_pair(*C2, t1)], None, t1)["ROUGE-1"]
    assert avg_t1["R_printed"] == ("0.69848", "0.53333", "0.90000")


def test_length_limits():
    l1 = ("a b c d e f", ["a b c d x y z w"])
    assert score_pair(*l1, Rouge155Options())["ROUGE-1"]["r"] == 0.5
    limited = score_pair(*l1, Rouge155Options(length_limit_words=4))
    assert rpf(limited, "ROUGE-1")[:2] == (1.0, 1.0)          # the reference is cut too
    l2 = score_pair("w1 w2 w3\nw4 w5 w6", ["w1 w2 w3 w4\nw5 w6 w7 w8"],
                    Rouge155Options(length_limit_bytes=12, w_weight=None, skip_gap=None))
    assert rpf(l2, "ROUGE-1")[:2] == (1.0, 1.0)
    assert rpf(l2, "ROUGE-L")[:2] == (0.5, 0.8)                # readText_LCS byte quirk


def test_misc_options():
    res = score_pair("the cat is sitting on the mat", ["the cat sat on the mat"],
                     Rouge155Options(n=4, skip_gap=-1, su=False, w_weight=2.0, alpha=0.9))
    assert list(res) == ["ROUGE-1", "ROUGE-2", "ROUGE-3", "ROUGE-4", "ROUGE-L", "ROUGE-W-2", "ROUGE-S*"]
    assert res["ROUGE-S*"]["model_count"] == 15 and res["ROUGE-S*"]["peer_count"] == 21
    r, p = res["ROUGE-1"]["r"], res["ROUGE-1"]["p"]
    assert res["ROUGE-1"]["f"] == float(f"{p * r / (0.1 * p + 0.9 * r):.5f}")
    with pytest.raises(ZeroDivisionError):      # -w dies on a reference without tokens
        score_pair("a b", ["--"], Rouge155Options())
    no_w = score_pair("a b", ["--"], Rouge155Options(w_weight=None))
    assert rpf(no_w, "ROUGE-1") == (0.0, 0.0, 0.0)


def test_drand48_matches_glibc_sequence():
    # srand48(0); drand48() -> 0.170828036106207 (glibc), so int(1000 * u) == 170
    assert drand48_indices(1000, 0)[0] == 170
    assert default_eval_ids(3) == ["1.1", "2.1", "3.1"]


# ----------------------------------------------------------------------------- goldens



@lru_cache(maxsize=None)
def computed(dataset: str, suffix: str, config: str) -> tuple[dict, ...]:
    """Our per-pair results for the pairs of one golden file, in its order (computed once)."""
    recs = records(dataset)
    opts = CONFIGS[config]
    return tuple(score_pair(recs[g["id"]]["candidate"], recs[g["id"]]["references"], opts)
                 for g in goldens(dataset, suffix))


GOLDEN_CASES = golden_cases()


@needs_data
@pytest.mark.parametrize("dataset, suffix, key, config", GOLDEN_CASES)
def test_per_pair_goldens(dataset, suffix, key, config):
    mismatches = []
    n_values = 0
    for gold, ours in zip(goldens(dataset, suffix), computed(dataset, suffix, config)):
        for metric, expected in gold[key].items():
            for x in "rpf":
                n_values += 1
                if abs(ours[metric][x] - expected[x]) > TOL:
                    mismatches.append((gold["id"], metric, x, ours[metric][x], expected[x]))
    assert n_values > 0
    assert not mismatches, f"{len(mismatches)} of {n_values} values differ, e.g. {mismatches[:5]}"


CORPUS_DATASETS = ["rouge155_sample_sl2003", "duc2004_pyrouge_tests", "newsroom", "dialsummeval"]
# corpus run -> (golden file whose pairs it scores, config, counting unit)
CORPUS_RUNS = {"a": ("", "stem", 0), "b": ("", "stem", 0), "c": ("_s", "s", 0),
               "d": ("_l100", "l100", 0), "e": ("_fB", "fB-nostem", 0), "f": ("", "stem", 1)}


@lru_cache(maxsize=None)
def corpus_goldens(dataset: str) -> dict:
    return json.loads((DATA / dataset / "rouge155_corpus_goldens.json").read_text())


@lru_cache(maxsize=None)
def computed_average(dataset: str, suffix: str, config: str, counting_unit: int) -> dict:
    per_pair = computed(dataset, suffix, config)
    ids = [g["id"] for g in goldens(dataset, suffix)]
    assert ids == list(records(dataset)), "corpus runs score every pair in file order"
    opts = Rouge155Options(counting_unit=counting_unit)   # only -t, -p, -r, -c matter here
    return corpus_average(list(per_pair), default_eval_ids(len(per_pair)), opts)


CORPUS_CASES = [
    pytest.param(ds, run, id=f"{ds}-{run}")
    for ds in CORPUS_DATASETS for run in "abcdef"
    if not DATA.is_dir() or run in corpus_goldens(ds)["runs"]
]


@needs_data
@pytest.mark.parametrize("dataset, run", CORPUS_CASES)
def test_corpus_goldens(dataset, run):
    golden = corpus_goldens(dataset)["runs"][run]
    suffix, config, counting_unit = CORPUS_RUNS[run]
    ours = computed_average(dataset, suffix, config, counting_unit)
    for metric, expected in golden["metrics"].items():
        for x in "RPF":
            assert ours[metric][f"{x}_printed"] == tuple(expected[f"{x}_printed"]), (metric, x)


@needs_data
def test_sacrerouge_expected_multiling2011():
    """sacrerouge's regression values from official ROUGE-1.5.5 (-n 2 -m, percent scale)."""
    recs = [r for r in records("sacrerouge_fixtures").values() if r.get("expected_rouge155")]
    assert len(recs) == 12
    opts = Rouge155Options(stem=True, w_weight=None, skip_gap=None)
    names = {"rouge-1": "ROUGE-1", "rouge-2": "ROUGE-2", "rouge-l": "ROUGE-L"}
    for rec in recs:
        ours = score_pair(rec["candidate"], rec["references"], opts)
        for key, metric in names.items():
            for x, field in zip("rpf", ("recall", "precision", "f1")):
                assert abs(ours[metric][x] * 100 - rec["expected_rouge155"][key][field]) < 1e-6


@needs_data
def test_google_rouge_synthetic_expected():
    names = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L", "rougeLsum": "ROUGE-L"}
    checked = 0
    for rec in records("google_rouge_synthetic").values():
        for key, by_stem in rec["expected_rouge155"].items():
            for stem_key, expected in by_stem.items():
                opts = Rouge155Options(stem=stem_key == "stem", w_weight=None, skip_gap=None)
                ours = score_pair(rec["candidate"], rec["references"], opts)
                for x in "rpf":
                    checked += 1
                    assert abs(ours[names[key]][x] - expected[x]) <= TOL, (rec["id"], key, stem_key, x)
    assert checked == 33


# sentences of 2, 3 and 1 raw words: they end at words 2, 5 and 6
_SENTENCES = ["a b", "c d e", "f"]


@pytest.mark.parametrize("limit, kept", [
    (1, ["a"]),
    (2, ["a b"]),                     # the first sentence ends exactly at N: nothing after it
    (3, ["a b", "c"]),
    (4, ["a b", "c d"]),
    (5, ["a b", "c d e"]),            # a later sentence ends exactly at N
    (6, ["a b", "c d e", "f"]),       # the last one does
    (7, ["a b", "c d e", "f"]),
])
def test_word_limit_at_a_sentence_end(limit, kept):
    """``-l N`` keeps whole sentences while ``count + len < N`` and cuts the one that reaches N
    (semantics §3.2): a sentence ending exactly at N words is the last one, and no empty sentence
    follows it."""
    assert limit_words(_SENTENCES, limit) == kept


@pytest.mark.parametrize("limit", range(1, 10))
def test_word_limit_counts_at_every_boundary(limit):
    """Tokens counted under ``-l N`` for N around each sentence end (candidate ends at 2, 4 and 7
    words, reference at 3 and 8): the specification and the compiled path both keep exactly
    min(N, length) words of each side."""
    cand, ref = "a b\nc d\ne f g", "a b x\nc d e f g"
    opts = Rouge155Options(length_limit_words=limit, w_weight=None, skip_gap=None)
    spec = score_pair(cand, [ref], opts)["ROUGE-1"]
    fast = Rouge155Scorer(opts).score_arrays([[ref]], [cand]).as_dicts()[0]["ROUGE-1"]
    for res in (spec, fast):
        assert (res["peer_count"], res["model_count"]) == (min(limit, 7), min(limit, 8))
    # hits: the candidate's words a b c d e f g against the reference's a b x c d e f g, both cut
    kept_c, kept_r = "abcdefg"[:limit], "abxcdefg"[:limit]
    assert spec["hit"] == fast["hit"] == len(set(kept_c) & set(kept_r))
