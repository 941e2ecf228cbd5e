"""Compiled ROUGE-1.5.5 family kernels: flat token ids in, raw counts out, one call per batch.

The pure-Python modules of this package (:mod:`pipeline.rouge155.metrics`) are the
specification; ``tests/unit/rouge155/test_rouge155_fast.py`` holds these kernels to it exactly (integer
counts, and bit-identical floats for ROUGE-W).

Layout (as :class:`pipeline.text.csr.EncodedDocs`): document ``d`` is
``tokens[doc_tok[d]:doc_tok[d+1]]`` (the whole-summary token stream: ROUGE-N, ROUGE-S/SU and
the clipping counts of ROUGE-L/W) and its sentences are ``sent_tokens[sent_tok[s]:sent_tok[s+1]]``
for ``s`` in ``range(doc_sent[d], doc_sent[d+1])`` (ROUGE-L/W).  Token ids are dense global ids
``0 .. vocab-1``.  Example ``e`` has candidate document ``ex_doc[e]`` and reference documents
``ex_doc[e]+1 .. ex_doc[e+1]-1``.

:func:`count_batch` writes, per reference document and metric, the triple ROUGE-1.5.5 works with
(model count, peer count, hit) plus the value ``-f B`` ranks references by
(:data:`C_MODEL`, :data:`C_PEER`, :data:`C_HIT`, :data:`C_BASE`).  :func:`combine_batch` turns them
into precision / recall / F per example under one multi-reference rule.

Metric kinds (``kinds[t]`` with parameters ``ns[t]``, ``weights[t]``, ``gaps[t]``, ``sus[t]``):

* ``KIND_N``: n-grams of the whole token stream (they cross sentence boundaries), clipped.
* ``KIND_L``: summary-level union LCS: for every model sentence the union over peer sentences
  of one traced LCS (diagonal on a match, else "up" when ``c[i-1][j] >= c[i][j-1]``), hits
  clipped by the unigram counts of the whole texts.  ROUGE-1.5.5's ROUGE-L, rouge-score's
  ``rougeLsum``.
* ``KIND_LWHOLE``: LCS of the whole token streams (rouge-score's ``rougeL``); the clipping never
  binds for one LCS, so hits = LCS length.
* ``KIND_W``: weighted LCS, f(k) = k**W: the WLCS programme only marks positions (same tie rule,
  union over peer sentences), hits are f(run) over runs of surviving marked positions; model
  count f(sum_i f(|r_i|)) (ROUGE-1.5.5's double weighting), peer count f(|P|).
* ``KIND_S``: skip bigrams (t_i, t_j), i < j <= i + gap + 1 (any j if gap < 0), plus with
  ``su`` the unigrams t_0 .. t_{n-2} (ROUGE-1.5.5 never counts the last one); clipped.

No fastmath: every float operation is done in the specification's order.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from pipeline.scoring.kernels import _lookup, _new_table  # the same exact local-id table

from pipeline.scoring.family_types import KIND_L, KIND_LWHOLE, KIND_N, KIND_S, KIND_W  # noqa: F401 - the metric kinds
C_MODEL, C_PEER, C_HIT, C_BASE = 0, 1, 2, 3
RULE_POOLED, RULE_BEST_RECALL, RULE_MAX_F, RULE_MEAN = 0, 1, 2, 3
STATUS_OK, STATUS_TOO_LONG, STATUS_W_EMPTY_REF = 0, 1, 2

_UNIGRAM_TAG = np.int64(1) << np.int64(62)


# --------------------------------------------------------------------------- helpers

@njit(cache=True, nogil=True)
def _two_prod(a, b):
    """Dekker: a*b == p + e exactly."""
    p = a * b
    c = 134217729.0 * a
    ahi = c - (c - a)
    alo = a - ahi
    c = 134217729.0 * b
    bhi = c - (c - b)
    blo = b - bhi
    e = ((ahi * bhi - p) + ahi * blo + alo * bhi) + alo * blo
    return p, e


@njit(cache=True, nogil=True)
def round5(x):
    """``float(f"{x:.5f}")`` exactly: the double nearest to x rounded half-even to 5 decimals.

    x * 1e5 is split exactly into hi + lo; hi is rounded to an integer k, lo decides the
    exact halves; k / 1e5 is then the correctly rounded quotient of two exact doubles.
    """
    if x != x or x == np.inf or x == -np.inf or abs(x) >= 1e10:
        return x
    hi, lo = _two_prod(x, 100000.0)
    k = np.rint(hi)
    d = hi - k
    if d == 0.5 and lo > 0.0:
        k += 1.0
    elif d == -0.5 and lo < 0.0:
        k -= 1.0
    return k / 100000.0


@njit(cache=True, nogil=True, inline="always")
def _ratio(hit, count, w):
    if count <= 0:
        return 0.0
    if w <= 0.0:
        return hit / count
    return (hit / count) ** (1.0 / w)


@njit(cache=True, nogil=True, inline="always")
def _f_alpha(p, r, alpha):
    d = (1 - alpha) * p + alpha * r
    if d > 0:
        return (p * r) / d
    return 0.0


@njit(cache=True, nogil=True, inline="always")
def _f_rs(p, r):
    """rouge-score's 2PR/(P+R), in its operation order."""
    if p + r > 0:
        return 2 * p * r / (p + r)
    return 0.0


# --------------------------------------------------------------------------- LCS tracing

@njit(cache=True, nogil=True, inline="always")
def _backtrack_mark(st, a0, a, b0, b, c, mask):
    """Read one LCS out of the filled table ``c`` ((a+1) x (b+1), int or float) into ``mask``."""
    w = b + 1
    i = a
    j = b
    while i > 0 and j > 0:
        if st[a0 + i - 1] == st[b0 + j - 1]:
            mask[i - 1] = True
            i -= 1
            j -= 1
        elif c[(i - 1) * w + j] >= c[i * w + j - 1]:
            i -= 1
        else:
            j -= 1


@njit(cache=True, nogil=True)
def _lcs_mark(st, a0, a, b0, b, c, mask):
    """Mark (``mask[i] = True``) the model positions of one traced LCS of
    ``st[a0:a0+a]`` (model) and ``st[b0:b0+b]`` (peer); ``c``: int32 scratch >= (a+1)(b+1)."""
    w = b + 1
    for j in range(w):
        c[j] = 0
    for i in range(1, a + 1):
        ti = st[a0 + i - 1]
        base = i * w
        prev = base - w
        c[base] = 0
        for j in range(1, w):
            if ti == st[b0 + j - 1]:
                c[base + j] = c[prev + j - 1] + 1
            else:
                up = c[prev + j]
                left = c[base + j - 1]
                c[base + j] = up if up >= left else left
    _backtrack_mark(st, a0, a, b0, b, c, mask)


@njit(cache=True, nogil=True)
def _wlcs_mark(st, a0, a, b0, b, c, run, f, mask):
    """As :func:`_lcs_mark` with the weighted programme (c float64, run int32 scratch)."""
    w = b + 1
    for j in range(w):
        c[j] = 0.0
        run[j] = 0
    for i in range(1, a + 1):
        ti = st[a0 + i - 1]
        base = i * w
        prev = base - w
        c[base] = 0.0
        run[base] = 0
        for j in range(1, w):
            if ti == st[b0 + j - 1]:
                k = run[prev + j - 1]
                c[base + j] = c[prev + j - 1] + f[k + 1] - f[k]
                run[base + j] = k + 1
            else:
                run[base + j] = 0
                up = c[prev + j]
                left = c[base + j - 1]
                c[base + j] = up if up >= left else left
    _backtrack_mark(st, a0, a, b0, b, c, mask)


@njit(cache=True, nogil=True)
def _lcs_length(tokens, a0, a, b0, b, row):
    """Plain LCS length (two rows), for ``KIND_LWHOLE``; ``row``: int32 scratch >= 2(b+1)."""
    w = b + 1
    for j in range(2 * w):
        row[j] = 0
    cur = 0
    for i in range(a):
        ti = tokens[a0 + i]
        prev = cur
        cur = w - cur
        row[cur] = 0
        for j in range(1, w):
            if ti == tokens[b0 + j - 1]:
                row[cur + j] = row[prev + j - 1] + 1
            else:
                up = row[prev + j]
                left = row[cur + j - 1]
                row[cur + j] = up if up >= left else left
    return row[cur + b]


# --------------------------------------------------------------------------- the batch

@njit(cache=True, nogil=True)
def count_batch(tokens, doc_tok, sent_tokens, sent_tok, doc_sent, ex_doc, vocab,
                kinds, ns, weights, gaps, sus, ftabs, max_cells, counts, status):
    """Raw counts of every (reference, metric): ``counts[ref_row, t, C_*]``.

    ``ref_row`` runs over the reference documents in order (example e's references are rows
    ``ex_doc[e] - e .. ex_doc[e+1] - e - 2``).  ``ftabs[t, k] = k ** weights[t]`` (from Python)
    for ROUGE-W.  ``status[e]``: :data:`STATUS_TOO_LONG` when one LCS table would exceed
    ``max_cells`` cells (its L/W counts are NaN), :data:`STATUS_W_EMPTY_REF` when a reference has
    no token for ROUGE-W (ROUGE-1.5.5 dies there; its W base is 0).
    """
    n_types = kinds.shape[0]
    n_docs = doc_tok.shape[0] - 1
    max_doc = 1
    max_sent = 1
    for d in range(n_docs):
        max_doc = max(max_doc, doc_tok[d + 1] - doc_tok[d])
        for s in range(doc_sent[d], doc_sent[d + 1]):
            max_sent = max(max_sent, sent_tok[s + 1] - sent_tok[s])
    want_w = False
    for t in range(n_types):
        if kinds[t] == KIND_W:
            want_w = True
    keys, vals, used = _new_table(2 * max_doc + 2)
    cur = np.empty(2 * max_doc + 2, dtype=np.int32)
    cnt = np.zeros(max(vocab, keys.shape[0]) + 1, dtype=np.int64)
    mleft = np.zeros(vocab + 1, dtype=np.int64)
    pleft = np.zeros(vocab + 1, dtype=np.int64)
    inpeer = np.zeros(vocab + 1, dtype=np.bool_)
    mask = np.zeros(max_sent + 1, dtype=np.bool_)
    cells = 16
    ci = np.empty(cells, dtype=np.int32)
    cf = np.empty(cells if want_w else 1, dtype=np.float64)
    crun = np.empty(cells if want_w else 1, dtype=np.int32)
    lrow = np.empty(2 * max_doc + 4, dtype=np.int32)

    for e in range(ex_doc.shape[0] - 1):
        cdoc = ex_doc[e]
        c0 = doc_tok[cdoc]
        n = doc_tok[cdoc + 1] - c0
        cs0 = doc_sent[cdoc]
        cs1 = doc_sent[cdoc + 1]
        status[e] = STATUS_OK
        # peer sentence-stream tokens present (quick skip of disjoint model sentences)
        for s in range(sent_tok[cs0], sent_tok[cs1]):
            inpeer[sent_tokens[s]] = True
        for rdoc in range(cdoc + 1, ex_doc[e + 1]):
            rr = rdoc - e - 1
            r0 = doc_tok[rdoc]
            m = doc_tok[rdoc + 1] - r0
            rs0 = doc_sent[rdoc]
            rs1 = doc_sent[rdoc + 1]
            for t in range(n_types):
                kind = kinds[t]
                if kind == KIND_N:
                    k = ns[t]
                    mc = max(m - k + 1, 0)
                    pc = max(n - k + 1, 0)
                    hit = 0
                    if mc > 0 and pc > 0:
                        # level-1 ids are the global ids; level j>1 ids from the table
                        n_used = 0
                        next_id = 0
                        for i in range(m):
                            cur[i] = tokens[r0 + i]
                        for j in range(n):
                            cur[m + j] = tokens[c0 + j]
                        for lev in range(2, k + 1):
                            for i in range(m - lev + 1):
                                key = (np.int64(cur[i]) << 32) | np.int64(tokens[r0 + i + lev - 1])
                                got, n_used, next_id = _lookup(keys, vals, used, n_used, key, next_id)
                                cur[i] = got
                            for j in range(n - lev + 1):
                                key = (np.int64(cur[m + j]) << 32) | np.int64(tokens[c0 + j + lev - 1])
                                got, n_used, next_id = _lookup(keys, vals, used, n_used, key, next_id)
                                cur[m + j] = got
                            for u in range(n_used):
                                keys[used[u]] = -1
                            n_used = 0
                            next_id = 0
                        for i in range(mc):
                            cnt[cur[i]] += 1
                        for j in range(pc):
                            g = cur[m + j]
                            if cnt[g] > 0:
                                cnt[g] -= 1
                                hit += 1
                        for i in range(mc):
                            cnt[cur[i]] = 0
                    counts[rr, t, C_MODEL] = mc
                    counts[rr, t, C_PEER] = pc
                    counts[rr, t, C_HIT] = hit
                    counts[rr, t, C_BASE] = mc
                elif kind == KIND_S:
                    gap = gaps[t]
                    su = sus[t]
                    need = 0
                    for L in (m, n):
                        for i in range(L - 1):
                            last = L - 1 if gap < 0 else min(L - 1, i + gap + 1)
                            need += last - i
                        if su and L > 0:
                            need += L - 1
                    if keys.shape[0] < 2 * need:
                        keys, vals, used = _new_table(need)
                    if cnt.shape[0] < keys.shape[0] + 1:
                        cnt = np.zeros(keys.shape[0] + 1, dtype=np.int64)
                    n_used = 0
                    next_id = 0
                    mc = 0
                    for i in range(m - 1):
                        last = m - 1 if gap < 0 else min(m - 1, i + gap + 1)
                        a = np.int64(tokens[r0 + i]) << 32
                        for j in range(i + 1, last + 1):
                            got, n_used, next_id = _lookup(keys, vals, used, n_used,
                                                           a | np.int64(tokens[r0 + j]), next_id)
                            cnt[got] += 1
                            mc += 1
                    if su:
                        for i in range(m - 1):
                            got, n_used, next_id = _lookup(keys, vals, used, n_used,
                                                           _UNIGRAM_TAG | np.int64(tokens[r0 + i]), next_id)
                            cnt[got] += 1
                            mc += 1
                    pc = 0
                    hit = 0
                    for i in range(n - 1):
                        last = n - 1 if gap < 0 else min(n - 1, i + gap + 1)
                        a = np.int64(tokens[c0 + i]) << 32
                        for j in range(i + 1, last + 1):
                            got, n_used, next_id = _lookup(keys, vals, used, n_used,
                                                           a | np.int64(tokens[c0 + j]), next_id)
                            pc += 1
                            if cnt[got] > 0:
                                cnt[got] -= 1
                                hit += 1
                    if su:
                        for i in range(n - 1):
                            got, n_used, next_id = _lookup(keys, vals, used, n_used,
                                                           _UNIGRAM_TAG | np.int64(tokens[c0 + i]), next_id)
                            pc += 1
                            if cnt[got] > 0:
                                cnt[got] -= 1
                                hit += 1
                    for u in range(n_used):
                        keys[used[u]] = -1
                    for g in range(next_id):
                        cnt[g] = 0
                    counts[rr, t, C_MODEL] = mc
                    counts[rr, t, C_PEER] = pc
                    counts[rr, t, C_HIT] = hit
                    counts[rr, t, C_BASE] = mc
                elif kind == KIND_LWHOLE:
                    lcs = 0
                    if m > 0 and n > 0:
                        lcs = _lcs_length(tokens, r0, m, c0, n, lrow)
                    counts[rr, t, C_MODEL] = m
                    counts[rr, t, C_PEER] = n
                    counts[rr, t, C_HIT] = lcs
                    counts[rr, t, C_BASE] = m
                else:  # KIND_L / KIND_W: union (weighted) LCS per model sentence
                    weighted = kind == KIND_W
                    for i in range(m):
                        mleft[tokens[r0 + i]] += 1
                    for j in range(n):
                        pleft[tokens[c0 + j]] += 1
                    hit_i = 0
                    hit_f = 0.0
                    base = 0.0
                    model_len = 0
                    too_long = False
                    for rs in range(rs0, rs1):
                        a0 = sent_tok[rs]
                        a = sent_tok[rs + 1] - a0
                        model_len += a
                        if weighted:
                            base += ftabs[t, a]
                        for i in range(a):
                            mask[i] = False
                        touches = False
                        for i in range(a):
                            if inpeer[sent_tokens[a0 + i]]:
                                touches = True
                                break
                        if touches:
                            for cs in range(cs0, cs1):
                                b0 = sent_tok[cs]
                                b = sent_tok[cs + 1] - b0
                                need = (a + 1) * (b + 1)
                                if need > max_cells:
                                    too_long = True
                                    break
                                if ci.shape[0] < need:
                                    cells = 2 * need
                                    ci = np.empty(cells, dtype=np.int32)
                                    if want_w:
                                        cf = np.empty(cells, dtype=np.float64)
                                        crun = np.empty(cells, dtype=np.int32)
                                if weighted:
                                    _wlcs_mark(sent_tokens, a0, a, b0, b, cf, crun, ftabs[t], mask)
                                else:
                                    _lcs_mark(sent_tokens, a0, a, b0, b, ci, mask)
                        if too_long:
                            break
                        if not weighted:
                            for i in range(a):
                                if mask[i]:
                                    tok = sent_tokens[a0 + i]
                                    if mleft[tok] > 0 and pleft[tok] > 0:
                                        hit_i += 1
                                        mleft[tok] -= 1
                                        pleft[tok] -= 1
                        else:
                            run = 0
                            for i in range(a):
                                if not mask[i]:
                                    continue
                                tok = sent_tokens[a0 + i]
                                if not (mleft[tok] > 0 and pleft[tok] > 0):
                                    continue
                                run += 1
                                mleft[tok] -= 1
                                pleft[tok] -= 1
                                if i + 1 == a or not mask[i + 1]:
                                    hit_f += ftabs[t, run]
                                    run = 0
                    for i in range(m):
                        mleft[tokens[r0 + i]] = 0
                    for j in range(n):
                        pleft[tokens[c0 + j]] = 0
                    # the -b quirk: sentence-stream tokens may be absent from the token stream
                    for s in range(sent_tok[rs0], sent_tok[rs1]):
                        mleft[sent_tokens[s]] = 0
                    for s in range(sent_tok[cs0], sent_tok[cs1]):
                        pleft[sent_tokens[s]] = 0
                    if too_long:
                        status[e] = STATUS_TOO_LONG
                        counts[rr, t, C_MODEL] = np.nan
                        counts[rr, t, C_PEER] = np.nan
                        counts[rr, t, C_HIT] = np.nan
                        counts[rr, t, C_BASE] = np.nan
                    elif not weighted:
                        counts[rr, t, C_MODEL] = model_len
                        counts[rr, t, C_PEER] = n
                        counts[rr, t, C_HIT] = hit_i
                        counts[rr, t, C_BASE] = model_len
                    else:
                        w = weights[t]
                        counts[rr, t, C_MODEL] = base ** w
                        counts[rr, t, C_PEER] = ftabs[t, n]
                        counts[rr, t, C_HIT] = hit_f
                        counts[rr, t, C_BASE] = base
                        if base == 0.0 and status[e] == STATUS_OK:
                            status[e] = STATUS_W_EMPTY_REF
        for s in range(sent_tok[cs0], sent_tok[cs1]):
            inpeer[sent_tokens[s]] = False


@njit(cache=True, nogil=True)
def _scores_of(mc, pc, hit, w, alpha, rounded, rs_f):
    r = _ratio(hit, mc, w)
    p = _ratio(hit, pc, w)
    if rounded:
        r = round5(r)
        p = round5(p)
        f = round5(_f_alpha(p, r, alpha))
    elif rs_f:
        f = _f_rs(p, r)
    else:
        f = _f_alpha(p, r, alpha)
    return p, r, f


@njit(cache=True, nogil=True)
def combine_batch(counts, ex_doc, kinds, weights, rule, alpha, rounded, rs_f, out, best_ref, pooled):
    """Per example and metric, (precision, recall, F) into ``out[e, t, 0:3]`` under ``rule``.

    * ``RULE_POOLED`` (ROUGE-1.5.5 ``-f A``): counts summed over the references in order;
    * ``RULE_BEST_RECALL`` (``-f B``): the counts of the first reference with the highest
      recall -- rounded to 5 decimals for N and S when ``rounded`` (as the script compares
      them), unrounded for L, f^-1(hit / base) (single weighting) for W;
    * ``RULE_MAX_F`` (rouge-score): the reference with the highest F, first on ties;
    * ``RULE_MEAN``: the mean over references of P, R and F.

    ``rounded``: R and P rounded to 5 decimals and F from them, rounded (ROUGE-1.5.5's printed
    values); otherwise unrounded, F = 2PR/(P+R) when ``rs_f`` (rouge-score's formula), else
    PR/((1-alpha)P + alpha R).  ``pooled[e, t]`` gets the (model, peer, hit) counts behind the
    scores for the pooled and best-recall rules (NaN otherwise); ``best_ref[e, t]`` the kept
    reference (-1 for pooled and mean).
    """
    n_types = kinds.shape[0]
    for e in range(ex_doc.shape[0] - 1):
        first = ex_doc[e] - e
        last = ex_doc[e + 1] - e - 1  # exclusive
        k_refs = last - first
        for t in range(n_types):
            w = weights[t] if kinds[t] == KIND_W else 0.0
            best_ref[e, t] = -1
            pooled[e, t, 0] = np.nan
            pooled[e, t, 1] = np.nan
            pooled[e, t, 2] = np.nan
            if k_refs == 0:
                out[e, t, 0] = 0.0
                out[e, t, 1] = 0.0
                out[e, t, 2] = 0.0
                continue
            if rule == RULE_POOLED or rule == RULE_BEST_RECALL:
                if rule == RULE_POOLED:
                    mc = counts[first, t, C_MODEL]
                    pc = counts[first, t, C_PEER]
                    hit = counts[first, t, C_HIT]
                    for rr in range(first + 1, last):
                        mc = mc + counts[rr, t, C_MODEL]
                        pc = pc + counts[rr, t, C_PEER]
                        hit = hit + counts[rr, t, C_HIT]
                else:
                    best = first
                    best_key = 0.0
                    for rr in range(first, last):
                        h = counts[rr, t, C_HIT]
                        if kinds[t] == KIND_W:
                            b = counts[rr, t, C_BASE]
                            key = (h / b) ** (1.0 / weights[t]) if b != 0.0 else 0.0
                        else:
                            key = _ratio(h, counts[rr, t, C_MODEL], 0.0)
                            if rounded and (kinds[t] == KIND_N or kinds[t] == KIND_S):
                                key = round5(key)
                        if rr == first or key > best_key:
                            best = rr
                            best_key = key
                    mc = counts[best, t, C_MODEL]
                    pc = counts[best, t, C_PEER]
                    hit = counts[best, t, C_HIT]
                    best_ref[e, t] = best - first
                p, r, f = _scores_of(mc, pc, hit, w, alpha, rounded, rs_f)
                pooled[e, t, 0] = mc
                pooled[e, t, 1] = pc
                pooled[e, t, 2] = hit
            elif rule == RULE_MAX_F:
                p = 0.0
                r = 0.0
                f = -1.0
                for rr in range(first, last):
                    pp, rq, ff = _scores_of(counts[rr, t, C_MODEL], counts[rr, t, C_PEER],
                                            counts[rr, t, C_HIT], w, alpha, rounded, rs_f)
                    if ff > f or ff != ff:
                        p = pp
                        r = rq
                        f = ff
                        best_ref[e, t] = rr - first
                        if ff != ff:
                            break
            else:
                p = 0.0
                r = 0.0
                f = 0.0
                for rr in range(first, last):
                    pp, rq, ff = _scores_of(counts[rr, t, C_MODEL], counts[rr, t, C_PEER],
                                            counts[rr, t, C_HIT], w, alpha, rounded, rs_f)
                    p += pp
                    r += rq
                    f += ff
                p = p / k_refs
                r = r / k_refs
                f = f / k_refs
            out[e, t, 0] = p
            out[e, t, 1] = r
            out[e, t, 2] = f


