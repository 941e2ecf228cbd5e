"""The bootstrap's compiled path: the coefficients of :mod:`.coefficients` on a resampled set of
items given as **integer weights** (how many times each item was drawn), never as a copied sample.

A resample that draws item ``i`` ``w[i]`` times is the multiset of the items repeated; every
coefficient is a function of that multiset, computed here from the weights:

* Pearson: the weighted means and (co)variances;
* Spearman: Pearson of the weighted mid-ranks (a tie group of total weight ``W`` starting after
  ``L`` drawn items has rank ``L + (W + 1) / 2``, the average rank its copies get);
* Kendall tau-b: ``S = sum over pairs of copies of sgn(dx) sgn(dy)``, walking the items in ``x``
  order by tie group and querying a Fenwick tree of the weights by ``y`` rank before inserting the
  group (pairs within a group, copies of one item among them, have ``dx = 0``);
  ``n1 = sum over x tie groups W(W-1)/2``, ``n2`` the same in ``y``, ``n0 = N(N-1)/2``,
  ``tau_b = S / sqrt((n0 - n1)(n0 - n2))``; tau-c ``= 2S / (N^2 (m-1)/m)``, ``m`` the fewer
  distinct values with a positive weight.

An item with weight 0 (not drawn, or a NaN on either side) takes no part.  ``_corr`` returns NaN
when fewer than ``MIN_ITEMS`` copies are drawn or fewer than two distinct ``x`` or ``y`` values (a
constant column): the skip rule of :mod:`.levels`.  Counts and ``S`` are integers, exact in float64.  Each replicate is computed by
its own loop from its own weights, so a replicate's number does not depend on the other
replicates computed with it (chunking and workers give identical bytes).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from pipeline.meta.levels import MIN_ITEMS

PEARSON, SPEARMAN, KENDALL_B, KENDALL_C = 0, 1, 2, 3


@njit(cache=True, nogil=True)
def _mid_ranks(v, w, order, out):
    """Weighted mid-ranks of ``v`` (``order``: an argsort of ``v``) into ``out``; returns the number
    of distinct values with a positive weight."""
    n = order.shape[0]
    k = 0
    cum = 0.0
    groups = 0
    while k < n:
        tot = w[order[k]]
        j = k + 1
        while j < n and v[order[j]] == v[order[k]]:   # (a NaN is a group of its own)
            tot += w[order[j]]
            j += 1
        r = cum + (tot + 1.0) / 2.0
        for t in range(k, j):
            out[order[t]] = r
        cum += tot
        if tot > 0:
            groups += 1
        k = j
    return groups


@njit(cache=True, nogil=True)
def _pearson(x, y, w):
    n = x.shape[0]
    sw = 0.0
    sx = 0.0
    sy = 0.0
    for i in range(n):
        if w[i] > 0:
            sw += w[i]
            sx += w[i] * x[i]
            sy += w[i] * y[i]
    mx = sx / sw
    my = sy / sw
    sxx = 0.0
    syy = 0.0
    sxy = 0.0
    for i in range(n):
        if w[i] > 0:
            dx = x[i] - mx
            dy = y[i] - my
            sxx += w[i] * dx * dx
            syy += w[i] * dy * dy
            sxy += w[i] * dx * dy
    r = sxy / np.sqrt(sxx * syy)
    return max(-1.0, min(1.0, r))


@njit(cache=True, nogil=True)
def _kendall(x, y, w, ox, ry, m, variant_c, tree, ysum):
    """``ox``: an argsort of ``x``; ``ry``: each item's dense rank of ``y`` (1..m)."""
    n = ox.shape[0]
    for t in range(m + 1):
        tree[t] = 0.0
        ysum[t] = 0.0
    s = 0.0
    n1 = 0.0
    total = 0.0
    gx = 0
    k = 0
    while k < n:
        j = k + 1
        while j < n and x[ox[j]] == x[ox[k]]:
            j += 1
        for t in range(k, j):                     # pairs with every earlier (smaller x) group
            i = ox[t]
            if w[i] > 0:
                less = 0.0
                q = ry[i] - 1
                while q > 0:
                    less += tree[q]
                    q -= q & (-q)
                upto = 0.0
                q = ry[i]
                while q > 0:
                    upto += tree[q]
                    q -= q & (-q)
                s += w[i] * (less - (total - upto))
        g = 0.0
        for t in range(k, j):
            i = ox[t]
            if w[i] > 0:
                q = ry[i]
                while q <= m:
                    tree[q] += w[i]
                    q += q & (-q)
                g += w[i]
                ysum[ry[i]] += w[i]
        total += g
        n1 += g * (g - 1.0) / 2.0
        if g > 0:
            gx += 1
        k = j
    n2 = 0.0
    gy = 0
    for t in range(1, m + 1):
        n2 += ysum[t] * (ysum[t] - 1.0) / 2.0
        if ysum[t] > 0:
            gy += 1
    if variant_c:
        mm = float(min(gx, gy))
        return 2.0 * s / (total * total * (mm - 1.0) / mm)
    n0 = total * (total - 1.0) / 2.0
    return s / np.sqrt((n0 - n1) * (n0 - n2))


@njit(cache=True, nogil=True)
def _dense_ranks(v, order, out):
    """1-based dense ranks of ``v`` along ``order`` (an argsort of ``v``); returns their count."""
    r = 0
    for t in range(order.shape[0]):
        if t == 0 or v[order[t]] != v[order[t - 1]]:
            r += 1
        out[order[t]] = r
    return r


@njit(cache=True, nogil=True)
def _corr(x, y, w, ox, oy, coef, rx, rk, tree, ysum, ryi):
    """One coefficient of ``x`` and ``y`` under the weights ``w`` (NaN when either is constant);
    ``ox``/``oy``: argsorts of ``x``/``y``; the rest are scratch buffers."""
    total = 0.0
    for i in range(w.shape[0]):
        total += w[i]
    if total < MIN_ITEMS:
        return np.nan
    gx = _mid_ranks(x, w, ox, rx)
    gy = _mid_ranks(y, w, oy, rk)
    if gx < 2 or gy < 2:
        return np.nan
    if coef == PEARSON:
        return _pearson(x, y, w)
    if coef == SPEARMAN:
        return _pearson(rx, rk, w)
    m = _dense_ranks(y, oy, ryi)
    return _kendall(x, y, w, ox, ryi, m, coef == KENDALL_C, tree, ysum)


@njit(cache=True, nogil=True)
def summary_level(X, H, OK, OX, OY, cs, cd, coef, out):
    """``out[b, k]``: the mean over documents (weights ``cd[b]``) of the correlation across systems
    (weights ``cs[b]``) of column ``k``; documents where it is NaN (constant) are skipped.
    ``X`` (K, D, n), ``H`` (D, n), ``OK`` (K, D, n) bool, ``OX`` (K, D, n), ``OY`` (D, n) argsorts."""
    K, D, n = X.shape
    w = np.empty(n)
    rx = np.empty(n)
    rk = np.empty(n)
    tree = np.empty(n + 1)
    ysum = np.empty(n + 1)
    ryi = np.empty(n, dtype=np.int64)
    for b in range(cs.shape[0]):
        for k in range(K):
            num = 0.0
            den = 0.0
            for d in range(D):
                if cd[b, d] == 0:
                    continue
                for i in range(n):
                    w[i] = cs[b, i] if OK[k, d, i] else 0.0
                r = _corr(X[k, d], H[d], w, OX[k, d], OY[d], coef, rx, rk, tree, ysum, ryi)
                if not np.isnan(r):
                    num += cd[b, d] * r
                    den += cd[b, d]
            out[b, k] = num / den if den > 0 else np.nan


@njit(cache=True, nogil=True)
def items_level(X, H, OK, W, OX, OY, coef, out):
    """``out[b, k]``: the correlation of ``X[b, k]`` and ``H[b, k]`` (items on the last axis) under
    the weights ``W[b] * OK[b, k]`` -- the system level (``X``, ``H``, ``OK``: each replicate's
    system means) and the global level (every (system, document) cell: the same ``X``, ``H``,
    ``OK`` for every replicate, given once with a first axis of 1, with their argsorts ``OX``,
    ``OY`` (K, n), NaN last; empty: sorted here per replicate)."""
    B = W.shape[0]
    _, K, n = X.shape
    w = np.empty(n)
    xv = np.empty(n)
    yv = np.empty(n)
    rx = np.empty(n)
    rk = np.empty(n)
    tree = np.empty(n + 1)
    ysum = np.empty(n + 1)
    ryi = np.empty(n, dtype=np.int64)
    for b in range(B):
        for k in range(K):
            a = b if X.shape[0] > 1 else 0
            for i in range(n):
                w[i] = W[b, i] if OK[a, k, i] else 0.0
            if OX.shape[0] > 0:
                out[b, k] = _corr(X[a, k], H[a, k], w, OX[k], OY[k], coef, rx, rk, tree, ysum, ryi)
                continue
            for i in range(n):   # items without a weight sort last (a NaN would break the order)
                xv[i] = X[a, k, i] if w[i] > 0 else np.inf
                yv[i] = H[a, k, i] if w[i] > 0 else np.inf
            ox = np.argsort(xv, kind="mergesort")
            oy = np.argsort(yv, kind="mergesort")
            out[b, k] = _corr(xv, yv, w, ox, oy, coef, rx, rk, tree, ysum, ryi)


@njit(cache=True, nogil=True)
def system_means(X, H, OK, cd, mx, mh, has):
    """Each replicate's system means (:func:`pipeline.meta.levels.system_means`): over the drawn
    documents in document order, a document drawn ``c`` times added ``c`` times (the sum of the
    resampled row, left to right, as the definition sums it), then divided by the count."""
    K, S, D = X.shape
    for b in range(cd.shape[0]):
        for k in range(K):
            for i in range(S):
                sx = 0.0
                sh = 0.0
                cnt = 0.0
                for j in range(D):
                    if OK[k, i, j]:
                        for _ in range(int(cd[b, j])):
                            sx += X[k, i, j]
                            sh += H[i, j]
                        cnt += cd[b, j]
                has[b, k, i] = cnt > 0
                mx[b, k, i] = sx / cnt if cnt > 0 else 0.0
                mh[b, k, i] = sh / cnt if cnt > 0 else 0.0
