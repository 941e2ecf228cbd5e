"""Other ROUGE variants defined by the seed documents, by name, as pure functions on tokens.

Neither is rouge-score's nor ROUGE-1.5.5's rule; they are here so that numbers quoted from
those sources can be reproduced and compared.  Inputs are token lists (tokenize first, e.g.
lowercase whitespace tokens as the sources do).

* ``reval-rougeLsum`` (:func:`rouge_lsum_best_sentence`; seed ``002``, the Go library
  ``reval``): each candidate sentence is matched to its **best reference sentence by LCS
  length**; the LCS lengths are summed; P = sum / candidate tokens, R = sum / reference
  tokens (all reference sentences), F = 2PR/(P+R).  Unlike the union LCS of ROUGE-1.5.5 /
  rouge-score's ``rougeLsum`` (per *reference* sentence, union over candidate sentences,
  clipped), two candidate sentences may both use the same reference sentence, and a
  candidate sentence never combines matches from several reference sentences.
* ``summed-recall`` (:func:`rouge_n_recall_summed`; seed ``001``): ROUGE-N recall with several
  references: clipped matches summed over the references divided by all reference n-grams
  (so a candidate matching only one of four equal references scores at most 1/4).  This is
  ROUGE-1.5.5's ``-f A`` recall, unrounded.

Also the helpers the sources name: :func:`lcs_length`, :func:`overlap`, :func:`f1`,
:func:`fbeta` (F_beta = (1 + beta^2) P R / (beta^2 P + R)).
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

Tokens = Sequence[str]


def lcs_length(a: Tokens, b: Tokens) -> int:
    """Length of the longest common subsequence (O(len(a) len(b)) time, two rows)."""
    if not a or not b:
        return 0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b, 1):
            cur.append(prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def overlap(a: Tokens, b: Tokens) -> int:
    """Clipped token matches: each token of ``b`` matches at most one token of ``a``."""
    ca = Counter(a)
    return sum(min(c, ca[t]) for t, c in Counter(b).items())


def f1(precision: float, recall: float) -> float:
    return fbeta(precision, recall, 1.0)


def fbeta(precision: float, recall: float, beta: float) -> float:
    """(1 + beta^2) P R / (beta^2 P + R); 0 when P and R are 0.  beta > 1 favours recall."""
    if precision == 0 and recall == 0:
        return 0.0
    b2 = beta * beta
    return (1 + b2) * precision * recall / (b2 * precision + recall)


def rouge_lsum_best_sentence(candidate: Sequence[Tokens], reference: Sequence[Tokens]
                             ) -> tuple[float, float, float]:
    """reval's ROUGE-Lsum: (precision, recall, F1); zeros when either side is empty."""
    cand_tokens = sum(len(s) for s in candidate)
    ref_tokens = sum(len(s) for s in reference)
    if cand_tokens == 0 or ref_tokens == 0:
        return 0.0, 0.0, 0.0
    total = sum(max((lcs_length(c, r) for r in reference), default=0) for c in candidate)
    p, r = total / cand_tokens, total / ref_tokens
    return p, r, f1(p, r)


def _ngrams(tokens: Tokens, n: int) -> Counter:
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def rouge_n_recall_summed(candidate: Tokens, references: Sequence[Tokens], n: int = 1) -> float:
    """Seed 001's multi-reference ROUGE-N recall: sum of clipped matches / sum of reference n-grams."""
    if n < 1:
        raise ValueError("n must be >= 1")
    cand = _ngrams(candidate, n)
    matched = total = 0
    for ref in references:
        counts = _ngrams(ref, n)
        total += sum(counts.values())
        matched += sum(min(c, cand.get(g, 0)) for g, c in counts.items())
    return matched / total if total else 0.0


VARIANTS = {"reval-rougeLsum": rouge_lsum_best_sentence, "summed-recall": rouge_n_recall_summed}
