"""Per-example diagnostics stored next to the scores: what can move ROUGE besides content.

ROUGE rewards verbosity (recall grows with length), does not punish redundancy, and gives
full credit to copying (see ``shared/seeds/001``).  These columns make those exploits
visible per example, so that a moved mean can be explained by reading a few rows.

All functions are pure (NumPy, numba ``@njit(cache=True)`` kernels over the CSR token ids
of :meth:`pipeline.scorer.RougeScorer.encode`).  Tokens are the scorer's tokens (with the
run's tokenizer and stemmer): a copied span is a span of ROUGE tokens.

Columns (all nullable; ``null`` when undefined), appended after the score columns:

``diag_len_ratio``
    candidate tokens / mean reference tokens (``cand_tokens / (ref_tokens / n_refs)``).
``diag_repeat_3gram``
    share of repeated 3-grams in the candidate: ``1 - distinct_3grams / total_3grams``
    (null below 3 tokens).  Padding and a duplicated header raise it.
``diag_src_tokens``, ``diag_coverage``, ``diag_density``, ``diag_compression``
    extractive fragments of Grusky et al. 2018 (Newsroom, section 4.1), when the example
    has a ``source`` document: the greedy fragment set ``F(A, S)`` of article ``A`` and
    summary ``S`` (for each summary position ``i``, the longest article match starting
    at ``S[i]`` is taken and ``i`` advances past it, else ``i += 1``);
    coverage ``= sum|f| / |S|``, density ``= sum|f|^2 / |S|``, compression ``= |A| / |S|``.
``diag_longest_copy``
    the longest span of candidate tokens that occurs contiguously in the source
    (longest common substring, which is at least the longest greedy fragment).
``diag_novel_1gram``, ``diag_novel_2gram``, ``diag_novel_3gram``
    share of the candidate's n-gram occurrences that occur nowhere in the source.
``diag_ref_agree_<type>_{mean,min,max}`` (``type`` in rouge2, rougeL)
    with two or more references: every reference ``i`` is scored (F-measure) as a
    candidate against the other references with rouge-score's max-F rule; mean, min
    and max over ``i``.  Human agreement bounds what any system can reach: a system
    scoring above this band is matching the references better than they match each other.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pyarrow as pa

from numba import njit

from pipeline.scoring.kernels import _clear, _new_table, _pair_ids  # the kernels' per-pair dense ids

AGREEMENT_TYPES = ("rouge2", "rougeL")
NOVEL_ORDERS = (1, 2, 3)

DIAG_FIELDS = [
    pa.field("diag_len_ratio", pa.float64()),
    pa.field("diag_repeat_3gram", pa.float64()),
    pa.field("diag_src_tokens", pa.int64()),
    pa.field("diag_coverage", pa.float64()),
    pa.field("diag_density", pa.float64()),
    pa.field("diag_compression", pa.float64()),
    pa.field("diag_longest_copy", pa.int64()),
    *[pa.field(f"diag_novel_{n}gram", pa.float64()) for n in NOVEL_ORDERS],
    *[pa.field(f"diag_ref_agree_{t}_{s}", pa.float64()) for t in AGREEMENT_TYPES for s in ("mean", "min", "max")],
]
DIAG_NAMES = [f.name for f in DIAG_FIELDS]


# --------------------------------------------------------------------------- kernels
@njit(cache=True)
def fragments(summary, article):
    """Grusky et al.'s greedy fragments: ``(sum |f|, sum |f|^2, longest |f|)``."""
    ns, na = summary.shape[0], article.shape[0]
    i = 0
    tot = 0
    sq = 0
    longest = 0
    while i < ns:
        best = 0
        j = 0
        while j < na:
            if summary[i] == article[j]:
                ii = i
                jj = j
                while ii < ns and jj < na and summary[ii] == article[jj]:
                    ii += 1
                    jj += 1
                if ii - i > best:
                    best = ii - i
                j = jj
            else:
                j += 1
        if best > 0:
            tot += best
            sq += best * best
            if best > longest:
                longest = best
            i += best
        else:
            i += 1
    return tot, sq, longest


@njit(cache=True)
def longest_common_span(a, b):
    """Length of the longest common contiguous span of ``a`` and ``b`` (O(|a| |b|) DP)."""
    nb = b.shape[0]
    prev = np.zeros(nb + 1, dtype=np.int64)
    cur = np.zeros(nb + 1, dtype=np.int64)
    best = 0
    for i in range(a.shape[0]):
        for j in range(nb):
            if a[i] == b[j]:
                cur[j + 1] = prev[j] + 1
                if cur[j + 1] > best:
                    best = cur[j + 1]
            else:
                cur[j + 1] = 0
        prev, cur = cur, prev
    return best


@njit(cache=True)
def _gram_keys(lid, start, length, order, L):
    """Exact keys of the ``order``-grams of ``lid[start:start+length]`` (local ids < L)."""
    cnt = max(length - order + 1, 0)
    out = np.empty(cnt, dtype=np.int64)
    for i in range(cnt):
        k = np.int64(0)
        for q in range(order):
            k = k * L + lid[start + i + q]
        out[i] = k
    return out


@njit(cache=True)
def _per_example(tok, c_start, c_end, s_start, s_end, has_src, out_f, out_i):
    """Fill ``out_f`` (n, 7): repeat3, coverage, density, compression, novel1..3 and
    ``out_i`` (n, 2): source tokens, longest copy.  NaN / -1 mark undefined values.

    n-grams are compared through per-example dense ids (at most candidate + source
    tokens of them, so a 3-gram packs exactly into 64 bits below 2M distinct tokens)."""
    n = c_start.shape[0]
    biggest = 1
    for d in range(n):
        size = c_end[d] - c_start[d]
        if has_src[d]:
            size += s_end[d] - s_start[d]
        biggest = max(biggest, size)
    tk, tv, used = _new_table(biggest)
    lid = np.empty(biggest, dtype=np.int64)
    for d in range(n):
        c0, c1 = c_start[d], c_end[d]
        m = c1 - c0
        s0, s1 = s_start[d], s_end[d]
        ns = s1 - s0 if has_src[d] else 0
        for k in range(out_f.shape[1]):
            out_f[d, k] = np.nan
        out_i[d, 0] = -1
        out_i[d, 1] = -1
        # local ids: candidate at [0, m), source at [m, m + ns)
        nxt, n_used = _pair_ids(tk, tv, used, tok, c0, m, tok, s0, ns, lid)
        _clear(tk, used, n_used)
        L = max(nxt, 1)
        if m >= 3:
            g = np.sort(_gram_keys(lid, 0, m, 3, L))
            distinct = 1
            for t in range(1, g.shape[0]):
                if g[t] != g[t - 1]:
                    distinct += 1
            out_f[d, 0] = 1.0 - distinct / g.shape[0]
        if not has_src[d]:
            continue
        out_i[d, 0] = ns
        if m == 0:
            continue
        S = tok[c0:c1]
        A = tok[s0:s1]
        tot, sq, _ = fragments(S, A)
        out_f[d, 1] = tot / m
        out_f[d, 2] = sq / m
        out_f[d, 3] = ns / m
        out_i[d, 1] = longest_common_span(S, A)
        for order in range(1, 4):
            if m < order:
                continue
            cg = _gram_keys(lid, 0, m, order, L)
            novel = cg.shape[0]
            if ns >= order:
                sg = np.sort(_gram_keys(lid, m, ns, order, L))
                pos = np.searchsorted(sg, cg)
                for t in range(cg.shape[0]):
                    if pos[t] < sg.shape[0] and sg[pos[t]] == cg[t]:
                        novel -= 1
            out_f[d, 3 + order] = novel / cg.shape[0]


# --------------------------------------------------------------------------- helpers
def _nullable(values: np.ndarray, typ: pa.DataType, missing: np.ndarray) -> pa.Array:
    return pa.array(values, typ, mask=missing)


def compute(candidates: Sequence[str] | None, references: Sequence[Sequence[str]], sources: Sequence[str | None],
            cand_tokens: np.ndarray, ref_tokens: np.ndarray, n_refs: np.ndarray, scorer,
            agreement_scorer=None, encoded=None, reference_rows=None) -> dict[str, pa.Array]:
    """The diagnostic columns (``DIAG_NAMES``, in order) for a batch of examples.

    ``cand_tokens``, ``ref_tokens``, ``n_refs``: the scorer's counts (``BatchScores``).
    ``scorer`` encodes the texts (its tokenizer and stemmer); ``agreement_scorer`` (a
    ``RougeScorer`` for ``AGREEMENT_TYPES``) scores references against each other, and the
    agreement columns are null without it.  ``encoded``: the candidates as ``scorer`` already
    encoded them (``BatchScores.candidate_tokens()``); ``candidates`` (a list or an Arrow array)
    is then read only if the vocabulary was rebuilt since (the ids would not match the sources').
    ``reference_rows``: the examples ``references`` belong to, when it holds only some."""
    n = len(sources)
    has_src = np.array([s is not None for s in sources], dtype=np.bool_)
    if encoded is not None:
        tok, c_start, c_end, generation = encoded
        s_start = s_end = np.zeros(n, dtype=np.int64)
        if has_src.any():
            src = scorer.encode([s or "" for s in sources])
            if src.generation == generation:
                s_start = src.doc_tok[:-1] + tok.shape[0]
                s_end = src.doc_tok[1:] + tok.shape[0]
                tok = np.concatenate([tok, src.tokens])
            else:  # the vocabulary was rebuilt since the candidates were encoded
                encoded = None
    if encoded is None:
        cands = candidates.to_pylist() if hasattr(candidates, "to_pylist") else list(candidates)
        enc = scorer.encode(cands + [s or "" for s in sources])
        tok = np.asarray(enc.tokens)
        off = np.asarray(enc.doc_tok, dtype=np.int64)
        c_start, c_end, s_start, s_end = off[:n], off[1:n + 1], off[n:-1], off[n + 1:]
    out_f = np.empty((n, 7), dtype=np.float64)
    out_i = np.empty((n, 2), dtype=np.int64)
    # candidates and sources are one token stream, addressed by their own spans
    _per_example(np.asarray(tok), np.asarray(c_start, dtype=np.int64), np.asarray(c_end, dtype=np.int64),
                 np.asarray(s_start, dtype=np.int64), np.asarray(s_end, dtype=np.int64), has_src, out_f, out_i)

    cand_tokens = np.asarray(cand_tokens, dtype=np.float64)
    mean_ref = np.asarray(ref_tokens, dtype=np.float64) / np.maximum(np.asarray(n_refs, dtype=np.float64), 1)
    ratio = np.divide(cand_tokens, mean_ref, out=np.full(n, np.nan), where=mean_ref > 0)
    cols: dict[str, pa.Array] = {"diag_len_ratio": _nullable(ratio, pa.float64(), np.isnan(ratio))}
    f = {name: out_f[:, k] for k, name in enumerate(
        ["diag_repeat_3gram", "diag_coverage", "diag_density", "diag_compression",
         "diag_novel_1gram", "diag_novel_2gram", "diag_novel_3gram"])}
    cols["diag_repeat_3gram"] = _nullable(f["diag_repeat_3gram"], pa.float64(), np.isnan(f["diag_repeat_3gram"]))
    cols["diag_src_tokens"] = _nullable(out_i[:, 0], pa.int64(), out_i[:, 0] < 0)
    for name in ("diag_coverage", "diag_density", "diag_compression"):
        cols[name] = _nullable(f[name], pa.float64(), np.isnan(f[name]))
    cols["diag_longest_copy"] = _nullable(out_i[:, 1], pa.int64(), out_i[:, 1] < 0)
    for order in NOVEL_ORDERS:
        name = f"diag_novel_{order}gram"
        cols[name] = _nullable(f[name], pa.float64(), np.isnan(f[name]))
    cols.update(reference_agreement(references, agreement_scorer, reference_rows, n))
    return {name: cols[name] for name in DIAG_NAMES}


def reference_agreement(references: Sequence[Sequence[str]], agreement_scorer, rows=None,
                        n: int | None = None) -> dict[str, pa.Array]:
    """``diag_ref_agree_<type>_{mean,min,max}``: each reference ``i`` scored against the
    references ``!= i`` (max-F rule), F-measure; null with fewer than two references.
    ``rows``: the example each entry of ``references`` belongs to (of ``n``), when only
    some examples are given."""
    n = len(references) if n is None else n
    rows = range(len(references)) if rows is None else rows
    out = {t: np.full((n, 3), np.nan) for t in AGREEMENT_TYPES}
    pairs_ex, pairs_c, pairs_r = [], [], []
    for e, refs in zip(rows, references):
        refs = [refs] if isinstance(refs, str) else list(refs)
        if len(refs) < 2:
            continue
        for i, r in enumerate(refs):
            pairs_ex.append(e)
            pairs_c.append(r)
            pairs_r.append(refs[:i] + refs[i + 1:])
    if pairs_ex and agreement_scorer is not None:
        res = agreement_scorer.score_arrays(pairs_r, pairs_c)
        ex = np.asarray(pairs_ex)
        for t, name in enumerate(AGREEMENT_TYPES):
            fm = res.scores[:, t, 2]      # the agreement scorer's types are AGREEMENT_TYPES, in order
            s = np.bincount(ex, weights=fm, minlength=n)
            c = np.bincount(ex, minlength=n)
            lo = np.full(n, np.inf)
            hi = np.full(n, -np.inf)
            np.minimum.at(lo, ex, fm)
            np.maximum.at(hi, ex, fm)
            has = c > 0
            out[name][has, 0] = s[has] / c[has]
            out[name][has, 1] = lo[has]
            out[name][has, 2] = hi[has]
    cols = {}
    for name in AGREEMENT_TYPES:
        for k, s in enumerate(("mean", "min", "max")):
            v = out[name][:, k]
            cols[f"diag_ref_agree_{name}_{s}"] = _nullable(v, pa.float64(), np.isnan(v))
    return cols


def for_table(table: pa.Table, res, settings, scorer_for: Callable) -> dict[str, pa.Array]:
    """The diagnostic columns of a canonical example table scored as ``res`` (``BatchScores``)
    with ``settings`` (``job.ScoringSettings``); ``scorer_for(settings)`` gives cached scorers."""
    import dataclasses

    # encoded with the agreement scorer: same tokenizer and stemmer, no sentence pass
    agree = scorer_for(dataclasses.replace(settings, rouge_types=AGREEMENT_TYPES))
    sources = table.column("source").to_pylist() if "source" in table.column_names else [None] * table.num_rows
    # only examples with several references have an agreement: only theirs become Python strs
    multi = np.flatnonzero(np.asarray(res.n_refs) >= 2)
    refs = table.column("references").take(pa.array(multi, pa.int64())).to_pylist() if multi.size else []
    # only pipeline.scoring's BatchScores keep the tokens (the rouge155 and family scorers do not)
    encoded = res.candidate_tokens() if hasattr(res, "candidate_tokens") else None
    if encoded is not None:
        # the scorer that made these ids encodes the sources (same tokenizer, vocabulary)
        return compute(table.column("candidate"), refs, sources, res.cand_len, res.ref_len, res.n_refs,
                       scorer_for(settings), agree, encoded=encoded, reference_rows=multi.tolist())
    return compute(table.column("candidate").to_pylist(), refs, sources,
                   res.cand_len, res.ref_len, res.n_refs, agree, agree, reference_rows=multi.tolist())


def summarize(table, systems_col: str = "system") -> list[dict]:
    """Per system: mean / median / max of every diagnostic column present (nulls skipped), and
    for the agreement columns the range (min of ``_min``, max of ``_max``).  ``table``: pandas."""
    rows = []
    present = [c for c in DIAG_NAMES if c in table.columns]
    for system, g in table.groupby(systems_col, sort=True):
        for c in present:
            v = g[c].dropna().to_numpy(dtype=np.float64)
            if v.size == 0:
                continue
            rows.append({"system": system, "column": c, "count": int(v.size), "mean": float(v.mean()),
                         "median": float(np.median(v)), "min": float(v.min()), "max": float(v.max())})
    return rows
