"""pipeline.scoring.diagnostics against values computed by hand (small cases), and the job wiring."""
from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

from support.shared import DATA, load_records, needs_data

from pipeline.scoring import diagnostics as D
from pipeline import job


def test_grusky_fragments_and_longest_span_by_hand():
    # summary  a b c x d e   article  a b c d e f a b
    S = np.array([1, 2, 3, 9, 4, 5], dtype=np.int32)
    A = np.array([1, 2, 3, 4, 5, 6, 1, 2], dtype=np.int32)
    # i=0: longest match starting at S[0] is "a b c" (3; "a b" at A[6] is shorter) -> i=3
    # i=3: "x" is not in A -> i=4;  i=4: "d e" (2) -> done.  F = {abc, de}
    assert D.fragments(S, A) == (5, 3 * 3 + 2 * 2, 3)
    assert D.longest_common_span(S, A) == 3
    # the longest common span can beat the greedy fragments: greedy takes "a b" at i=0 ...
    S2 = np.array([1, 2, 3, 4, 5], dtype=np.int32)
    A2 = np.array([1, 2, 7, 2, 3, 4, 5], dtype=np.int32)
    assert D.fragments(S2, A2) == (5, 2 * 2 + 3 * 3, 3)       # "a b" then "c d e"
    assert D.longest_common_span(S2, A2) == 4                 # "b c d e"
    assert D.fragments(S, np.zeros(0, np.int32)) == (0, 0, 0)


def _settings(**kw):
    return job.ScoringSettings(("rouge1", "rougeL"), **kw)


def _row(table, k=0):
    return {c: table.column(c)[k].as_py() for c in table.column_names}


def test_diagnostics_by_hand():
    table = pa.table({
        "id": ["a", "b", "c"], "system": ["s", "s", "s"],
        "candidate": ["the cat sat on a mat", "the cat sat the cat sat", "x"],
        "references": [["the cat sat", "the cat ran", "a dog ran"], ["the cat"], ["y z"]],
        "source": ["the cat sat on the mat", None, None],
    })
    out = job.score_table(table, _settings())
    a, b, c = _row(out, 0), _row(out, 1), _row(out, 2)
    # lengths: 6 candidate tokens over a mean reference length of (3 + 3 + 3) / 3
    assert a["cand_tokens"] == 6 and a["ref_tokens"] == 9 and a["diag_len_ratio"] == 2.0
    # 3-grams of "the cat sat on a mat": 4, all distinct
    assert a["diag_repeat_3gram"] == 0.0
    # Grusky: S = the cat sat on a mat, A = the cat sat on the mat
    # fragments: "the cat sat on" (4), "a" not in A, "mat" (1) -> coverage 5/6, density (16+1)/6
    assert a["diag_src_tokens"] == 6
    assert a["diag_coverage"] == pytest.approx(5 / 6)
    assert a["diag_density"] == pytest.approx(17 / 6)
    assert a["diag_compression"] == pytest.approx(1.0)
    assert a["diag_longest_copy"] == 4
    # novel n-grams: 1-grams {a} of 6; 2-grams {on a, a mat} of 5; 3-grams {sat on a, on a mat} of 4
    assert a["diag_novel_1gram"] == pytest.approx(1 / 6)
    assert a["diag_novel_2gram"] == pytest.approx(2 / 5)
    assert a["diag_novel_3gram"] == pytest.approx(2 / 4)
    # reference agreement, F of each reference against the other two (max-F rule):
    # rougeL: "the cat sat" vs "the cat ran" LCS 2 -> 2/3; "the cat ran" -> 2/3; "a dog ran" vs "the cat ran" -> 1/3
    assert a["diag_ref_agree_rougeL_mean"] == pytest.approx((2 / 3 + 2 / 3 + 1 / 3) / 3)
    assert a["diag_ref_agree_rougeL_min"] == pytest.approx(1 / 3)
    assert a["diag_ref_agree_rougeL_max"] == pytest.approx(2 / 3)
    # rouge2: {the cat, cat sat} vs {the cat, cat ran}: 1/2; the same back; "a dog ran" shares no bigram -> 0
    assert a["diag_ref_agree_rouge2_mean"] == pytest.approx(1 / 3)
    assert a["diag_ref_agree_rouge2_min"] == 0.0
    assert a["diag_ref_agree_rouge2_max"] == pytest.approx(0.5)
    # padding by repetition: 3-grams the-cat-sat, cat-sat-the, sat-the-cat, the-cat-sat: 3 distinct of 4
    assert b["diag_repeat_3gram"] == pytest.approx(0.25)
    assert b["diag_len_ratio"] == 3.0
    # no source / one reference / under three tokens: null, never a made-up number
    for col in ("diag_src_tokens", "diag_coverage", "diag_density", "diag_compression", "diag_longest_copy",
                "diag_novel_1gram", "diag_ref_agree_rougeL_mean", "diag_ref_agree_rouge2_max"):
        assert b[col] is None, col
    assert c["diag_repeat_3gram"] is None and c["diag_len_ratio"] == 0.5


def test_schema_columns_after_the_scores_and_switch_off():
    table = pa.table({"id": ["a"], "system": [""], "candidate": ["x y"], "references": [["x"]]})
    on = job.score_table(table, _settings())
    names = on.column_names
    assert names[names.index("status") + 1:] == D.DIAG_NAMES
    assert on.schema == job.scores_schema(("rouge1", "rougeL"))
    off = job.score_table(table, _settings(diagnostics=False))
    assert off.column_names == names[: names.index("status") + 1]
    assert off.schema == job.scores_schema(("rouge1", "rougeL"), diagnostics=False)
    # scores do not depend on the diagnostics (the digest does: it covers the source they read)
    same = [c for c in off.column_names if c != "text_digest"]
    assert on.select(same).equals(off.select(same))
    assert job.score_table(table.slice(0, 0), _settings()).schema == on.schema


def test_config_switch():
    from pipeline.config import ConfigError, RunConfig

    base = {"input": {"layout": "records", "paths": "x.jsonl"}, "output": {"url": "/tmp/x"}}
    on = RunConfig.from_dict(base)
    off = RunConfig.from_dict({**base, "scoring": {"diagnostics": False}})
    assert job.ScoringSettings.from_config(on.scoring).diagnostics is True
    assert job.ScoringSettings.from_config(off.scoring).diagnostics is False
    assert on.config_hash() != off.config_hash()
    assert "diagnostics" not in on.hashed_settings()["scoring"]      # default: earlier hashes unchanged
    with pytest.raises(ConfigError, match="scoring.diagnostics"):
        RunConfig.from_dict({**base, "scoring": {"diagnostics": "yes"}})


def test_real_newsroom_systems_are_told_apart():
    """On real data the copy measures separate extractive from abstractive systems."""
    from support.newsroom_runs import records

    recs = records()
    table = pa.table({k: [r[k] for r in recs] for k in ("id", "system", "candidate", "references", "source")})
    df = job.score_table(table, _settings()).to_pandas()
    mean = df.groupby("system")[["diag_coverage", "diag_density", "diag_novel_3gram"]].mean()
    # lede3 copies the first sentences: coverage 1, no novel 3-grams; abstractive copies little
    assert mean.loc["lede3", "diag_coverage"] > 0.99 and mean.loc["lede3", "diag_novel_3gram"] < 0.01
    assert mean.loc["abstractive", "diag_coverage"] < 0.6 < mean.loc["pointer_c", "diag_coverage"]
    assert mean.loc["lede3", "diag_density"] > mean.loc["pointer_c", "diag_density"]
    assert df["diag_src_tokens"].notna().all()
    assert all(math.isfinite(v) for v in df["diag_len_ratio"])


def test_repeat_and_novel_ngrams_match_a_set_computation_on_random_texts():
    """The compiled per-example n-gram ids against plain Python sets, on texts over a small
    vocabulary (many repeats) with and without a source."""
    import random

    rng = random.Random(7)
    words = ["a", "b", "c", "d", "e"]
    cands, sources = [], []
    for i in range(300):
        cands.append(" ".join(rng.choice(words) for _ in range(rng.randint(0, 12))))
        sources.append(None if i % 5 == 0 else " ".join(rng.choice(words) for _ in range(rng.randint(0, 15))))
    table = pa.table({"id": [str(i) for i in range(300)], "system": ["s"] * 300, "candidate": cands,
                      "references": [["a b"]] * 300, "source": sources})
    out = job.score_table(table, _settings())

    def grams(toks, n):
        return [tuple(toks[i:i + n]) for i in range(len(toks) - n + 1)]

    for i in range(300):
        row = _row(out, i)
        c = cands[i].split()
        g3 = grams(c, 3)
        want = 1.0 - len(set(g3)) / len(g3) if g3 else None
        assert row["diag_repeat_3gram"] == (pytest.approx(want) if want is not None else None)
        if sources[i] is None or not c:
            assert row["diag_novel_1gram"] is None
            continue
        s = sources[i].split()
        for n in (1, 2, 3):
            cg = grams(c, n)
            want = sum(g not in set(grams(s, n)) for g in cg) / len(cg) if cg else None
            assert row[f"diag_novel_{n}gram"] == (pytest.approx(want) if want is not None else None), (i, n)


@pytest.mark.parametrize("kw", [{}, {"use_stemmer": True}, {"tokenizer": "whitespace"}])
def test_reusing_the_scored_tokens_gives_the_same_columns_as_encoding_again(kw):
    """for_table reuses the candidates' token ids from scoring; encoding every text again
    (the path for scorers that do not keep them) must give identical columns."""
    import dataclasses

    cands = ["The cats sat on the mat.\nThey ran.", "a b c a b c", "", "Running dogs ran far"]
    refs = [["the cat sat", "cats ran on mats"], ["a b c"], ["x y"], ["dogs run", "far away", "ran"]]
    sources = ["The cats sat on the mat and then they ran away.", None, "x", "Dogs were running far, far away."]
    settings = job.ScoringSettings(("rouge1", "rougeL"), diagnostics=True, **kw)
    table = pa.table({"id": list("abcd"), "system": ["s"] * 4, "candidate": cands, "references": refs,
                      "source": sources})
    scorer = job.scorer_for(settings)
    res = scorer.score_arrow(table.column("references"), table.column("candidate"))
    assert res.candidate_tokens() is not None
    fast = D.for_table(table, res, settings, job.scorer_for)
    agree = job.scorer_for(dataclasses.replace(settings, rouge_types=D.AGREEMENT_TYPES))
    slow = D.compute(cands, refs, sources, res.cand_len, res.ref_len, res.n_refs, agree, agree)
    assert list(fast) == list(slow)
    for name in fast:
        assert fast[name].to_pylist() == slow[name].to_pylist(), name


@pytest.mark.parametrize("kw", [{"profile": "rouge155"}, {"rouge_types": ("rouge1", "rougeSU4")}])
def test_diagnostics_with_scorers_that_do_not_keep_tokens(kw):
    """The rouge155 profile and the family scorer return their own result types (no token
    ids kept): diagnostics then encode the candidates themselves."""
    import dataclasses

    settings = dataclasses.replace(_settings(diagnostics=True), **kw)
    table = pa.table({"id": ["a", "b"], "system": ["s", "s"], "candidate": ["the cat sat on a mat", "x y"],
                      "references": [["the cat sat", "a dog ran"], ["y z"]],
                      "source": ["the cat sat on the mat", None]})
    row = _row(job.score_table(table, settings), 0)
    assert row["diag_novel_1gram"] == pytest.approx(1 / 6)
    assert row["diag_ref_agree_rougeL_mean"] is not None


# ------------------------------------------------------------ copy statistics in linear time
def _brute_longest_span(S, A):
    """The longest common contiguous span, from the definition (every span of S, as a set)."""
    spans = {tuple(A[j:k]) for j in range(len(A)) for k in range(j + 1, len(A) + 1)}
    return max((k - i for i in range(len(S)) for k in range(i + 1, len(S) + 1) if tuple(S[i:k]) in spans),
               default=0)


def _hard_cases():
    """Repeats, periods, long copies, the greedy scan's skipped matches, empty and one token."""
    rng = np.random.default_rng(17)
    cases = [([], []), ([1], []), ([], [1]), ([1], [1]), ([1], [2]),
             ([1] * 7, [1] * 12), ([1] * 12, [1] * 7), ([1, 2] * 6, [1, 2] * 9 + [3]),
             ([1, 1, 2], [1, 1, 1, 2]),                     # the scan jumps past the longest match
             ([1, 2, 1, 2, 3], [1, 2, 1, 2, 1, 2, 3]), ([1, 2, 3] * 4, [3, 2, 1] * 5 + [1, 2, 3]),
             (list(range(40)), list(range(40))), (list(range(40)), list(range(39, -1, -1))),
             (list(range(20)) + list(range(10)), [5] + list(range(30)))]
    for _ in range(400):                                   # tiny alphabets: many repeats and skips
        v = int(rng.integers(1, 4))
        A = rng.integers(0, v, int(rng.integers(0, 25))).tolist()
        if A and rng.random() < 0.5:                      # a summary of copied spans and novel tokens
            S = []
            while len(S) < rng.integers(1, 25):
                a = int(rng.integers(0, len(A)))
                S += A[a:a + int(rng.integers(1, 9))] + ([v] if rng.random() < 0.3 else [])
        else:
            S = rng.integers(0, v + 1, int(rng.integers(0, 25))).tolist()
        cases.append((S, A))
    return cases


def test_copy_stats_equal_the_definitions_on_hard_cases():
    """The suffix-automaton path against the readable definitions: Grusky's scan as plain
    Python (``fragments.py_func``) and the longest common span by brute force."""
    n_skips = 0
    for S, A in _hard_cases():
        s, a = np.array(S, dtype=np.int64), np.array(A, dtype=np.int64)
        alphabet = max(S + A + [0]) + 1
        tot, sq, _ = D.fragments.py_func(s, a)
        want = (tot, sq, _brute_longest_span(S, A))
        assert D.copy_stats(s, a, alphabet) == want, (S, A)
        assert (*D.fragments(s, a)[:2], D.longest_common_span(s, a)) == want, (S, A)
        # cases where the scan's fragment is shorter than the longest match (the hard part)
        n_skips += sq < sum(m * m for m in _greedy_longest(S, A))
    assert n_skips >= 20


def _greedy_longest(S, A):
    """Greedy fragments taking the true longest match at each step (not Grusky's scan)."""
    out, i = [], 0
    while i < len(S):
        best = max((k for k in range(1, len(S) - i + 1) for j in range(len(A) - k + 1)
                    if A[j:j + k] == S[i:i + k]), default=0)
        if best:
            out.append(best)
        i += max(best, 1)
    return out


@needs_data
@pytest.mark.parametrize("name", ["newsroom", "dialsummeval"])
def test_copy_stats_equal_todays_kernels_on_real_sources(name):
    """The numbers do not move: on every real candidate/source pair, the linear path gives the
    quadratic kernels' coverage sum, density sum and longest copy."""
    recs = [r for r in load_records(DATA, name) if r.get("source")]
    scorer = job.scorer_for(job.ScoringSettings(("rouge1",), use_stemmer=True))
    enc = scorer.encode([r["candidate"] for r in recs] + [r["source"] for r in recs])
    tok, off, n = np.asarray(enc.tokens, dtype=np.int64), np.asarray(enc.doc_tok), len(recs)
    alphabet = int(tok.max()) + 1
    for k in range(n):
        S, A = tok[off[k]:off[k + 1]], tok[off[n + k]:off[n + k + 1]]
        want = (*D.fragments(S, A)[:2], D.longest_common_span(S, A))
        assert D.copy_stats(S, A, alphabet) == want, recs[k]["id"]


def test_estimate_costs_count_the_source():
    """A long source costs its diagnostics: the estimate grows with it, so one example with a
    long source ends its task instead of stalling one that holds many others."""
    t = pa.table({"candidate": ["a b c"] * 3, "references": [["a b"]] * 3,
                  "source": [None, "w " * 100, "w " * 100_000]})
    c = job.estimate_costs(t)
    assert c[0] < c[1] < c[2]
    assert job.estimate_costs(t.drop_columns(["source"])).tolist() == [c[0]] * 3
    assert c[2] - c[0] >= job.SOURCE_TOKEN_COST * (200_000 // job.BYTES_PER_TOKEN)
    tasks = job.split_by_cost([None], [np.array([c[0]] * 50 + [c[2]] + [c[0]] * 50)], target_cost=c[2])
    assert [(t.lo, t.n_rows) for t in tasks if t.oversized] == [(50, 1)]


def test_long_candidates_take_the_linear_path_with_the_same_columns():
    """Long candidates (past the direct scan's bound) go through copy_stats after the batch
    kernel; the columns equal the definitions on the same tokens, short and long mixed."""
    import random

    rng = random.Random(9)
    words = ["a", "b", "c", "d"]
    cands, sources = [], []
    for k in range(12):
        long = k % 2 == 0
        src = [rng.choice(words) for _ in range(2000 if long else 30)]
        cand = []
        while len(cand) < (900 if long else 20):
            a = rng.randrange(len(src))
            cand += src[a:a + rng.randint(1, 30)] + (["z"] if rng.random() < 0.2 else [])
        cands.append(" ".join(cand))
        sources.append(" ".join(src))
    m_ns = [(len(c.split()), len(s.split())) for c, s in zip(cands, sources)]
    assert any(m * n > D._DIRECT_STEPS * (m + n) for m, n in m_ns)       # both paths are taken
    assert any(m * n <= D._DIRECT_STEPS * (m + n) for m, n in m_ns)
    table = pa.table({"id": [str(i) for i in range(12)], "system": ["s"] * 12, "candidate": cands,
                      "references": [["a b"]] * 12, "source": sources})
    out = job.score_table(table, _settings())
    for i, (c, s) in enumerate(zip(cands, sources)):
        ids = {w: k for k, w in enumerate(sorted(set(words) | {"z"}))}
        S = np.array([ids[w] for w in c.split()], dtype=np.int64)
        A = np.array([ids[w] for w in s.split()], dtype=np.int64)
        tot, sq, _ = D.fragments(S, A)
        row = _row(out, i)
        assert (row["diag_coverage"], row["diag_density"]) == (tot / len(S), sq / len(S)), i
        assert row["diag_longest_copy"] == D.longest_common_span(S, A), i
