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

from pipeline.scoring.kernels import _GOLD, _clear, _new_table, _pair_ids  # the kernels' per-pair dense ids

AGREEMENT_TYPES = ("rouge2", "rougeL")
# Up to this many steps per candidate + source token the quadratic definitions run directly
# (candidates of up to ~256 tokens); above, copy_stats' suffix automaton (benchmarks/bench_diagnostics.py).
_DIRECT_STEPS = 256
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


# ------------------------------------------------------------ copy statistics in linear time
# ``fragments`` and ``longest_common_span`` above are the definitions (O(|S| |A|)); ``copy_stats``
# gives the same three numbers from a suffix automaton of the article (O(|A| + |S|) besides the
# rare scans described in ``_greedy_fragment``).  tests/unit/scoring/test_diagnostics.py checks them against
# each other and against a brute force on generated hard cases.
@njit(cache=True, inline="always")
def _slot(key, mask):
    return np.int64((np.uint64(key) * _GOLD) >> np.uint64(32)) & mask


@njit(cache=True, inline="always")
def _find(hkey, hval, key):
    """Edge index of ``key`` (state * alphabet + token), -1 if absent."""
    mask = hkey.shape[0] - 1
    slot = _slot(key, mask)
    while True:
        k = hkey[slot]
        if k == key:
            return hval[slot]
        if k < 0:
            return -1
        slot = (slot + 1) & mask


@njit(cache=True, inline="always")
def _insert(hkey, hval, key, edge):
    mask = hkey.shape[0] - 1
    slot = _slot(key, mask)
    while hkey[slot] >= 0:
        slot = (slot + 1) & mask
    hkey[slot] = key
    hval[slot] = edge


@njit(cache=True)
def _suffix_automaton(article, alphabet):
    """The suffix automaton of ``article`` (token ids < ``alphabet``): state lengths, suffix
    links, and its transitions as edges (target ``e_to``) found by ``_find(hkey, hval, state *
    alphabet + token)``.  At most 2n states and 3n edges."""
    n = article.shape[0]
    cap = 2 * n + 2
    length = np.zeros(cap, dtype=np.int64)
    link = np.full(cap, -1, dtype=np.int64)
    head = np.full(cap, -1, dtype=np.int64)       # each state's edges, as a list (for clones)
    ecap = 3 * n + 8
    e_tok = np.empty(ecap, dtype=np.int64)
    e_to = np.empty(ecap, dtype=np.int64)
    e_next = np.empty(ecap, dtype=np.int64)
    hsize = 16
    while hsize < 2 * ecap:
        hsize *= 2
    hkey = np.full(hsize, -1, dtype=np.int64)
    hval = np.empty(hsize, dtype=np.int64)
    size = 1
    last = 0
    n_edges = 0
    for t in range(n):
        c = np.int64(article[t])
        cur = size
        size += 1
        length[cur] = length[last] + 1
        p = last
        while p != -1 and _find(hkey, hval, p * alphabet + c) < 0:
            e_tok[n_edges] = c
            e_to[n_edges] = cur
            e_next[n_edges] = head[p]
            head[p] = n_edges
            _insert(hkey, hval, p * alphabet + c, n_edges)
            n_edges += 1
            p = link[p]
        if p == -1:
            link[cur] = 0
        else:
            q = e_to[_find(hkey, hval, p * alphabet + c)]
            if length[p] + 1 == length[q]:
                link[cur] = q
            else:
                clone = size
                size += 1
                length[clone] = length[p] + 1
                link[clone] = link[q]
                e = head[q]
                while e >= 0:
                    e_tok[n_edges] = e_tok[e]
                    e_to[n_edges] = e_to[e]
                    e_next[n_edges] = head[clone]
                    head[clone] = n_edges
                    _insert(hkey, hval, clone * alphabet + e_tok[e], n_edges)
                    n_edges += 1
                    e = e_next[e]
                while p != -1:
                    e = _find(hkey, hval, p * alphabet + c)
                    if e < 0 or e_to[e] != q:
                        break
                    e_to[e] = clone
                    p = link[p]
                link[q] = clone
                link[cur] = clone
        last = cur
    return length, link, e_to, hkey, hval


@njit(cache=True)
def _longest_matches(summary, article, alphabet):
    """``M[i]``: the longest prefix of ``summary[i:]`` that occurs contiguously in ``article``."""
    m = summary.shape[0]
    length, link, e_to, hkey, hval = _suffix_automaton(article, alphabet)
    # E[j]: the longest suffix of summary[:j + 1] occurring in the article (matching statistics)
    E = np.empty(m, dtype=np.int64)
    v = 0
    cur = 0
    for j in range(m):
        c = np.int64(summary[j])
        e = _find(hkey, hval, v * alphabet + c)
        while e < 0 and v != 0:
            v = link[v]
            cur = length[v]
            e = _find(hkey, hval, v * alphabet + c)
        if e >= 0:
            v = e_to[e]
            cur += 1
        else:
            cur = 0
        E[j] = cur
    # the match ending at j starts at j - E[j] + 1, which never decreases with j: the longest
    # match starting at i ends at the last j whose match starts at or before i
    M = np.empty(m, dtype=np.int64)
    J = -1
    for i in range(m):
        while J + 1 < m and J + 1 - E[J + 1] + 1 <= i:
            J += 1
        M[i] = J - i + 1
    return M


@njit(cache=True)
def _lcp(summary, i, article, p):
    k = 0
    while i + k < summary.shape[0] and p + k < article.shape[0] and summary[i + k] == article[p + k]:
        k += 1
    return k


@njit(cache=True)
def _gram_index(tokens, order, alphabet):
    """The ``order``-grams of ``tokens``: sorted keys and, for equal keys, their start positions
    in increasing order."""
    keys = _gram_keys(tokens, 0, tokens.shape[0], order, alphabet)
    perm = np.argsort(keys, kind="mergesort")
    return keys[perm], perm


@njit(cache=True)
def copy_stats(summary, article, alphabet):
    """``(sum |f|, sum |f|^2, longest common span)``: ``fragments``' first two numbers and
    ``longest_common_span``, for token ids below ``alphabet``."""
    m = summary.shape[0]
    if m == 0 or article.shape[0] == 0:
        return 0, 0, 0
    M = _longest_matches(summary, article, alphabet)
    longest = 0
    for i in range(m):
        longest = max(longest, M[i])
    # the distance to the next equal token of the summary (m: none)
    nxt = np.full(m, m, dtype=np.int64)
    seen = np.full(alphabet, -1, dtype=np.int64)
    for i in range(m - 1, -1, -1):
        c = summary[i]
        if seen[c] >= 0:
            nxt[i] = seen[c] - i
        seen[c] = i
    idx_keys = [np.empty(0, dtype=np.int64) for _ in range(3)]
    idx_pos = [np.empty(0, dtype=np.int64) for _ in range(3)]
    built = np.zeros(3, dtype=np.bool_)
    tot = 0
    sq = 0
    i = 0
    while i < m:
        best = M[i]
        if best > nxt[i]:
            g = min(nxt[i] + 1, 3)
            if not built[g - 1]:
                idx_keys[g - 1], idx_pos[g - 1] = _gram_index(article, g, alphabet)
                built[g - 1] = True
            best = _greedy_fragment(summary, i, article, M[i], g, idx_keys[g - 1], idx_pos[g - 1], alphabet)
        if best > 0:
            tot += best
            sq += best * best
            i += best
        else:
            i += 1
    return tot, sq, longest


@njit(cache=True)
def _greedy_fragment(summary, i, article, most, g, keys, pos, alphabet):
    """The fragment ``fragments`` takes at ``summary[i]`` when its scan can skip a match.

    That scan visits the article's occurrences of ``c = summary[i]`` left to right and jumps past
    each match, so an occurrence inside an earlier match is never tried, and the fragment can be
    shorter than ``most`` (the longest match).  A match of length ``l`` covers only occurrences
    ``p + d`` with ``summary[i + d] == c``, ``d < l``: with ``k`` the distance to the next ``c`` in
    the summary, matches of at most ``k`` tokens skip nothing, so the scan is replayed over the
    occurrences of the ``g``-gram ``summary[i:i + g]`` (``g <= k + 1``), stopping at ``most``."""
    key = np.int64(0)
    for q in range(g):
        key = key * alphabet + summary[i + q]
    lo = np.searchsorted(keys, key)
    best = 0
    reach = 0
    t = lo
    while t < keys.shape[0] and keys[t] == key:
        p = pos[t]
        t += 1
        if p < reach:
            continue
        l = _lcp(summary, i, article, p)
        if l > best:
            best = l
            if best == most:
                break
        reach = p + l
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
        out_f[d, 3] = ns / m
        # a short candidate's direct scan (m x ns steps, at most _DIRECT_STEPS per token) is
        # faster than building the automaton; longer ones are left to copy_stats (-2 marks them)
        if m * ns <= _DIRECT_STEPS * (m + ns):
            # local ids relate equal tokens exactly as the token ids do
            tot, sq, _ = fragments(lid[0:m], lid[m:m + ns])
            out_f[d, 1] = tot / m
            out_f[d, 2] = sq / m
            out_i[d, 1] = longest_common_span(lid[0:m], lid[m:m + ns])
        else:
            out_i[d, 1] = -2
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
    tok = np.asarray(tok)
    c_start, c_end = np.asarray(c_start, dtype=np.int64), np.asarray(c_end, dtype=np.int64)
    s_start, s_end = np.asarray(s_start, dtype=np.int64), np.asarray(s_end, dtype=np.int64)
    _per_example(tok, c_start, c_end, s_start, s_end, has_src, out_f, out_i)
    # long candidates: in a kernel of its own, compiled only by a run that has one
    for d in np.flatnonzero(out_i[:, 1] == -2):
        S, A = tok[c_start[d]:c_end[d]], tok[s_start[d]:s_end[d]]
        uniq, dense = np.unique(np.concatenate([S, A]), return_inverse=True)
        m = S.shape[0]
        tot, sq, longest = copy_stats(dense[:m].astype(np.int64), dense[m:].astype(np.int64), len(uniq))
        out_f[d, 1], out_f[d, 2], out_i[d, 1] = tot / m, sq / m, longest

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
