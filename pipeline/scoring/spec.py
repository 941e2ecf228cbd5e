"""The readable specification of the default (``rouge-score`` 0.1.2) profile.

Pure Python, written to be read next to the ROUGE paper and ``rouge-score``'s
source.  The compiled path (:mod:`pipeline.scoring.kernels`) is tested against
these functions on real and generated data, so they favour clarity over speed:
full DP tables, ``Counter`` n-grams, one sentence pair at a time.
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

from pipeline.scoring.types import RougeType, parse_rouge_types

Tokens = Sequence[str]
Triple = tuple[float, float, float]  # precision, recall, fmeasure


def fmeasure(precision: float, recall: float) -> float:
    # Same operation order as rouge_score.scoring.fmeasure, so the last bit agrees.
    if precision + recall > 0:
        return 2 * precision * recall / (precision + recall)
    return 0.0


def ngram_counts(tokens: Tokens, n: int) -> Counter:
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def rouge_n(ref: Tokens, cand: Tokens, n: int) -> Triple:
    ref_grams, cand_grams = ngram_counts(ref, n), ngram_counts(cand, n)
    hits = sum(min(count, cand_grams[g]) for g, count in ref_grams.items())
    precision = hits / max(sum(cand_grams.values()), 1)
    recall = hits / max(sum(ref_grams.values()), 1)
    return precision, recall, fmeasure(precision, recall)


def lcs_table(ref: Tokens, cand: Tokens) -> list[list[int]]:
    t = [[0] * (len(cand) + 1) for _ in range(len(ref) + 1)]
    for i in range(1, len(ref) + 1):
        for j in range(1, len(cand) + 1):
            if ref[i - 1] == cand[j - 1]:
                t[i][j] = t[i - 1][j - 1] + 1
            else:
                t[i][j] = max(t[i - 1][j], t[i][j - 1])
    return t


def lcs_length(ref: Tokens, cand: Tokens) -> int:
    return lcs_table(ref, cand)[-1][-1]


def rouge_l(ref: Tokens, cand: Tokens, lcs_length=lcs_length) -> Triple:
    if not ref or not cand:
        return 0.0, 0.0, 0.0
    lcs = lcs_length(ref, cand)
    precision, recall = lcs / len(cand), lcs / len(ref)
    return precision, recall, fmeasure(precision, recall)


def lcs_positions(ref: Tokens, cand: Tokens) -> list[int]:
    """Positions in ``ref`` of the one LCS that rouge-score's backtracking picks.

    The tie-break decides rougeLsum's value (``"a b"`` vs ``"b a\\na"``: 0.4, not
    0.8): a match always goes diagonal; otherwise a candidate token is dropped
    only when that is strictly better, and on a tie the reference token is dropped.
    """
    t = lcs_table(ref, cand)
    return lcs_walk(ref, cand, lambda i, j: t[i][j])


def lcs_walk(ref: Tokens, cand: Tokens, table) -> list[int]:
    """rouge-score's backtracking from the bottom-right corner; ``table(i, j)`` is the LCS
    length of ``ref[:i]`` and ``cand[:j]``."""
    i, j, picked = len(ref), len(cand), []
    while i > 0 and j > 0:
        if ref[i - 1] == cand[j - 1]:
            picked.append(i - 1)
            i, j = i - 1, j - 1
        elif table(i, j - 1) > table(i - 1, j):
            j -= 1
        else:
            i -= 1
    return picked[::-1]


def rouge_lsum(ref_sents: Sequence[Tokens], cand_sents: Sequence[Tokens], lcs_positions=lcs_positions) -> Triple:
    """Summary-level LCS (ROUGE paper section 3.2) as rouge-score computes it.

    Each reference sentence takes the union of its LCS positions against every
    candidate sentence; a union token is a hit only while its unigram count is
    still positive in both whole summaries (rouge-score's "as in version 1.5.5").
    """
    m = sum(map(len, ref_sents))
    n = sum(map(len, cand_sents))
    if not m or not n:
        return 0.0, 0.0, 0.0
    ref_left = Counter(tok for s in ref_sents for tok in s)
    cand_left = Counter(tok for s in cand_sents for tok in s)
    hits = 0
    for r in ref_sents:
        union = sorted(set().union(*(lcs_positions(r, c) for c in cand_sents)))
        for tok in (r[i] for i in union):
            if cand_left[tok] > 0 and ref_left[tok] > 0:
                hits += 1
                cand_left[tok] -= 1
                ref_left[tok] -= 1
    precision, recall = hits / n, hits / m
    return precision, recall, fmeasure(precision, recall)


def score_tokens(
    rouge_types: Sequence[str | RougeType],
    ref: Tokens,
    cand: Tokens,
    ref_sents: Sequence[Tokens],
    cand_sents: Sequence[Tokens],
    lcs_length=lcs_length,
    lcs_positions=lcs_positions,
) -> dict[str, Triple]:
    """Every requested type for one reference, from already tokenized text.  The LCS
    primitives can be swapped for equivalent ones (:mod:`pipeline.scoring.cold`)."""
    out = {}
    for rt in parse_rouge_types(rouge_types):
        if rt.kind == "n":
            out[rt.name] = rouge_n(ref, cand, rt.n)
        elif rt.kind == "L":
            out[rt.name] = rouge_l(ref, cand, lcs_length)
        else:
            out[rt.name] = rouge_lsum(ref_sents, cand_sents, lcs_positions)
    return out


def best_by_fmeasure(per_ref: Sequence[dict[str, Triple]]) -> dict[str, Triple]:
    """rouge-score's ``score_multi`` rule: per type, the reference with the highest F; first wins."""
    if not per_ref:
        raise ValueError("at least one reference is needed")
    best = {}
    for name in per_ref[0]:
        best[name] = per_ref[0][name]
        for scores in per_ref[1:]:
            if scores[name][2] > best[name][2]:
                best[name] = scores[name]
    return best
