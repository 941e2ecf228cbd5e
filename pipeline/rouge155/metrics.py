"""Per-pair ROUGE-1.5.5 scores: ROUGE-N, ROUGE-L, ROUGE-W, ROUGE-S/SU.

Semantics: ``shared/reference/rouge155-semantics.md`` §4 (metrics) and §5 (references).

Every metric first yields, for one candidate ("peer") and one reference ("model"), the triple
``(model_count, peer_count, hit)``.  The references are then combined:

* ``-f A``: the triples are summed over the references (the peer count is added once per
  reference): R = sum(hit) / sum(model_count), P = sum(hit) / sum(peer_count).
* ``-f B``: the triple of the reference with the highest recall is kept (first one on ties).

R and P are rounded to 5 decimals as printed (``%.5f`` of the double), and F is computed from
the **rounded** R and P and rounded again.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from pipeline.rouge155.options import Rouge155Options, s_metric_name, w_metric_name
from pipeline.rouge155.text import Summary, prepare


def round5(x: float) -> float:
    """The value ROUGE-1.5.5 prints with ``%7.5f``, as a float."""
    return float(f"{x:.5f}")


def f_measure(p: float, r: float, alpha: float) -> float:
    """F = P R / ((1 - alpha) P + alpha R); 0 when the denominator is 0."""
    denominator = (1 - alpha) * p + alpha * r
    if denominator > 0:
        return (p * r) / denominator
    return 0.0


@dataclass
class Counts:
    """The raw statistics of one metric (what ``-t 1`` pools and ``-t 1 -d`` prints).

    For ROUGE-W they are weighted: ``model_count`` = f(sum_i f(|r_i|)) (the double weighting),
    ``peer_count`` = f(|P|), ``hit`` = sum of f(run length).
    """

    model_count: float
    peer_count: float
    hit: float

    def __add__(self, other: "Counts") -> "Counts":
        return Counts(self.model_count + other.model_count, self.peer_count + other.peer_count,
                      self.hit + other.hit)


# --------------------------------------------------------------------------- ROUGE-N

def ngrams(tokens: list[str], n: int) -> Counter:
    """Multiset of the n-grams of the whole token sequence (they cross sentence boundaries)."""
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def clipped_hits(model: Counter, peer: Counter) -> int:
    return sum(min(count, peer[gram]) for gram, count in model.items() if gram in peer)


def rouge_n_counts(peer: Summary, model: Summary, n: int) -> Counts:
    p, m = ngrams(peer.tokens, n), ngrams(model.tokens, n)
    return Counts(sum(m.values()), sum(p.values()), clipped_hits(m, p))


# --------------------------------------------------------------------------- ROUGE-S / SU

def skip_bigrams(tokens: list[str], max_gap: int, with_unigrams: bool) -> Counter:
    """Pairs (t_i, t_j), i < j <= i + max_gap + 1 (any j if max_gap < 0), over the whole summary.

    With ``with_unigrams`` (ROUGE-SU) the unigrams t_0 .. t_{n-2} are added: ROUGE-1.5.5's loop
    stops one short, so **the last token's unigram is never counted**.
    """
    n = len(tokens)

    def last(i: int) -> int:
        return n - 1 if max_gap < 0 else min(n - 1, i + max_gap + 1)

    grams = Counter((tokens[i], tokens[j]) for i in range(n - 1) for j in range(i + 1, last(i) + 1))
    if with_unigrams:
        grams.update((token,) for token in tokens[:-1])
    return grams


def rouge_s_counts(peer: Summary, model: Summary, max_gap: int, su: bool) -> Counts:
    p = skip_bigrams(peer.tokens, max_gap, su)
    m = skip_bigrams(model.tokens, max_gap, su)
    return Counts(sum(m.values()), sum(p.values()), clipped_hits(m, p))


# --------------------------------------------------------------------------- ROUGE-L / W

_DIAG, _UP, _LEFT = 0, 1, 2


@lru_cache(maxsize=1 << 17)
def lcs_positions(model: tuple[str, ...], peer: tuple[str, ...], weight: float | None = None
                  ) -> tuple[int, ...]:
    """Positions of ``model`` on one traced (weighted) LCS with ``peer``.

    Standard O(mn) dynamic programme; the trace goes diagonal on a match, otherwise "up"
    (drops a model token) when ``c[i-1][j] >= c[i][j-1]`` and "left" otherwise.  With a
    ``weight`` W the WLCS score is used: a match extending a run of k consecutive matches
    gives ``c[i-1][j-1] + f(k+1) - f(k)``, f(k) = k**W (ROUGE-W only uses it to *mark*
    positions).  Cached: the same sentence pairs recur when one corpus is scored with several
    option sets (``-f A`` and ``-f B`` trace exactly the same LCSs).
    """
    m, n = len(model), len(peer)
    if m == 0 or n == 0 or set(model).isdisjoint(peer):
        return ()
    c = [[0.0] * (n + 1) for _ in range(m + 1)]
    move = [[_LEFT] * (n + 1) for _ in range(m + 1)]
    if weight is not None:
        f = [k ** weight for k in range(min(m, n) + 2)]
        run = [[0] * (n + 1) for _ in range(m + 1)]  # consecutive matches ending at (i, j)
    for i, token in enumerate(model, 1):
        above, here, move_here = c[i - 1], c[i], move[i]
        if weight is not None:
            run_above, run_here = run[i - 1], run[i]
        for j, other in enumerate(peer, 1):
            if token == other:
                if weight is None:
                    here[j] = above[j - 1] + 1
                else:
                    k = run_above[j - 1]
                    here[j] = above[j - 1] + f[k + 1] - f[k]
                    run_here[j] = k + 1
                move_here[j] = _DIAG
            elif above[j] >= here[j - 1]:
                here[j] = above[j]
                move_here[j] = _UP
            else:
                here[j] = here[j - 1]
    positions = []
    i, j = m, n
    while i > 0 and j > 0:
        step = move[i][j]
        if step == _DIAG:
            positions.append(i - 1)
            i, j = i - 1, j - 1
        elif step == _UP:
            i -= 1
        else:
            j -= 1
    return tuple(positions)


def union_lcs_masks(peer: Summary, model: Summary, weight: float | None = None) -> list[list[bool]]:
    """For each model sentence, the union over peer sentences of the traced LCS positions."""
    masks = []
    for sentence in model.sentence_tokens:
        mask = [False] * len(sentence)
        for peer_sentence in peer.sentence_tokens:
            for position in lcs_positions(tuple(sentence), tuple(peer_sentence), weight):
                mask[position] = True
        masks.append(mask)
    return masks


def rouge_l_counts(peer: Summary, model: Summary) -> Counts:
    """Summary-level union LCS, hits clipped by the unigram counts of the whole texts.

    Masked positions are scanned left to right, sentence after sentence; a token is a hit
    while its count is still > 0 in both the model and the peer, and each hit uses one of both.
    """
    model_left, peer_left = Counter(model.tokens), Counter(peer.tokens)
    hit = 0
    for sentence, mask in zip(model.sentence_tokens, union_lcs_masks(peer, model)):
        for token, marked in zip(sentence, mask):
            if marked and model_left[token] > 0 and peer_left[token] > 0:
                hit += 1
                model_left[token] -= 1
                peer_left[token] -= 1
    model_length = sum(len(s) for s in model.sentence_tokens)
    return Counts(model_length, len(peer.tokens), hit)


def rouge_w_counts(peer: Summary, model: Summary, weight: float) -> tuple[Counts, float]:
    """ROUGE-W as ROUGE-1.5.5 computes it; returns the counts and the single-weighted recall.

    * hit: per model sentence, the masked positions that pass the clipping (as ROUGE-L) form
      runs; a run is credited f(length) when it is followed by an unmasked position or ends the
      sentence.  A masked position that fails clipping neither ends nor extends a run, so the
      run bridges it -- or is lost if no later position of the sentence passes.
    * model count: f(base) with base = sum_i f(|r_i|) (the double weighting of the script);
      peer count: f(|P|).
    * the second value, f^-1(hit / base), is the recall that ``-f B`` compares.
    """
    def f(x):
        return x ** weight

    model_left, peer_left = Counter(model.tokens), Counter(peer.tokens)
    hit = 0.0
    base = 0.0
    for sentence, mask in zip(model.sentence_tokens, union_lcs_masks(peer, model, weight)):
        base += f(len(sentence))
        run = 0
        for k, token in enumerate(sentence):
            if not mask[k] or not (model_left[token] > 0 and peer_left[token] > 0):
                continue
            run += 1
            model_left[token] -= 1
            peer_left[token] -= 1
            if k + 1 == len(sentence) or not mask[k + 1]:
                hit += f(run)
                run = 0
    if base == 0:
        raise ZeroDivisionError("ROUGE-W: a reference has no tokens (ROUGE-1.5.5 dies here)")
    return Counts(f(base), f(len(peer.tokens)), hit), (hit / base) ** (1 / weight)


# --------------------------------------------------------------------------- one pair

def _ratio(hit: float, count: float, weight: float | None) -> float:
    if count <= 0:
        return 0.0
    if weight is None:
        return hit / count
    return (hit / count) ** (1 / weight)


def scores_from_counts(counts: Counts, alpha: float, weight: float | None = None) -> dict[str, float]:
    """R, P, F of one evaluation as printed (5 decimals; F from the rounded R and P)."""
    r = round5(_ratio(counts.hit, counts.model_count, weight))
    p = round5(_ratio(counts.hit, counts.peer_count, weight))
    return {"r": r, "p": p, "f": round5(f_measure(p, r, alpha))}


def _combine(per_reference: list[tuple[Counts, float]], multi_ref: str) -> Counts:
    """``-f A``: sum the counts; ``-f B``: the counts of the first reference with the best recall."""
    if multi_ref == "A":
        total = per_reference[0][0]
        for counts, _ in per_reference[1:]:
            total = total + counts
        return total
    best_counts, best_recall = per_reference[0]
    for counts, recall in per_reference[1:]:
        if recall > best_recall:
            best_counts, best_recall = counts, recall
    return best_counts


def score_summaries(peer: Summary, models: list[Summary], opts: Rouge155Options) -> dict[str, dict]:
    """Scores of prepared summaries; see :func:`score_pair`."""
    if not models:
        raise ValueError("at least one reference is needed")
    results: dict[str, dict] = {}

    def add(name: str, per_reference: list[tuple[Counts, float]], weight: float | None = None):
        if opts.multi_ref in ("max_f", "mean"):
            # not ROUGE-1.5.5 rules: applied to each reference's printed values
            each = [scores_from_counts(c, opts.alpha, weight) for c, _ in per_reference]
            if opts.multi_ref == "max_f":
                best = each[0]
                for s in each[1:]:
                    if s["f"] > best["f"]:
                        best = s
                results[name] = dict(best)
            else:
                results[name] = {k: sum(s[k] for s in each) / len(each) for k in "rpf"}
            return
        counts = _combine(per_reference, opts.multi_ref)
        results[name] = {**scores_from_counts(counts, opts.alpha, weight),
                         "model_count": counts.model_count, "peer_count": counts.peer_count,
                         "hit": counts.hit}

    def recall(counts: Counts) -> float:
        return _ratio(counts.hit, counts.model_count, None)

    for n in range(1, opts.n + 1):
        per_ref = [rouge_n_counts(peer, model, n) for model in models]
        add(f"ROUGE-{n}", [(c, round5(recall(c))) for c in per_ref])   # -f B compares rounded R
    if opts.rouge_l:
        per_ref = [rouge_l_counts(peer, model) for model in models]
        add("ROUGE-L", [(c, recall(c)) for c in per_ref])               # ... unrounded R here
    if opts.w_weight is not None:
        per_ref = [rouge_w_counts(peer, model, opts.w_weight) for model in models]
        add(w_metric_name(opts.w_weight), per_ref, opts.w_weight)        # ... single-weighted R
    if opts.skip_gap is not None:
        per_ref = [rouge_s_counts(peer, model, opts.skip_gap, opts.su) for model in models]
        add(s_metric_name(opts.skip_gap, opts.su), [(c, round5(recall(c))) for c in per_ref])
    return results


def score_pair(candidate: str, references: list[str] | str, opts: Rouge155Options | None = None
               ) -> dict[str, dict]:
    """ROUGE-1.5.5 scores of one candidate against its references.

    ``candidate`` and each reference are texts with one sentence per line (``\\n``), exactly
    what ROUGE-1.5.5 reads from an SPL file.  Returns ``{metric: {"r", "p", "f", "model_count",
    "peer_count", "hit"}}`` with metric names as ROUGE-1.5.5 prints them (``ROUGE-1``,
    ``ROUGE-L``, ``ROUGE-W-1.2``, ``ROUGE-SU4``, ...): ``r``/``p``/``f`` are the per-evaluation
    values printed by ``-d``; the counts are what ``-t 1`` pools.
    """
    opts = opts or Rouge155Options()
    if isinstance(references, str):
        references = [references]

    def read(text: str) -> Summary:
        return prepare(text, opts.stem, opts.stopwords, opts.length_limit_words, opts.length_limit_bytes)

    return score_summaries(read(candidate), [read(r) for r in references], opts)
