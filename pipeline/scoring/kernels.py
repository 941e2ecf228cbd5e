"""Compiled ROUGE kernels over flat token-id arrays: one call scores a whole batch.

Semantics are those of :mod:`pipeline.scoring.spec` (rouge-score 0.1.2), which the
tests hold these kernels to, bit for bit.  What makes them fast:

* n-grams: per pair, tokens get dense local ids once, shared by every type: from
  a direct map when the batch's token ids are small, else a small open-addressing
  table; an n-gram's id is looked up from (id of its (n-1)-gram prefix, id of
  its last token), a key packed exactly into 64 bits, so any n is exact.
* LCS length (rougeL): Hyyrö's bit-parallel algorithm, bits over the shorter
  text; ``V - U == V & ~U`` because ``U`` is a subset of ``V``, so only the
  addition carries across words.  O(m*n/64) time, O(m/64) memory.
* union LCS (rougeLsum): bits over each reference sentence and the bit vectors
  ``V_j`` of every candidate column kept, so rouge-score's backtracking
  (match -> diagonal; else up when ``t[i-1][j] >= t[i][j-1]``; else left) becomes
  "jump to the highest set bit of ``M_j | ~V_j`` below i" (``t[i-1][j] == t[i][j]``
  exactly when bit i-1 of ``V_j`` is set).  A reference of at most 64 tokens holds all
  its sentences in one word, a lane each, with a lane-wise addition: one column pass per
  candidate sentence serves every reference sentence; candidate tokens absent from the
  reference leave the column unchanged, so a run of them is one backtracking step there.
* one line each: when each text has at most one sentence with tokens (and they are
  its whole-text tokens), rougeLsum is rougeL, copied instead of backtracked.
* clipping: a union token is a hit while both whole-summary counts are positive;
  the reference count never binds (union positions are distinct reference
  positions), so hits = sum over tokens of min(union count, candidate count).

``P = hits / max(n, 1)`` etc. and ``F = 2*p*r/(p+r)`` are computed in float64 in
rouge-score's operation order; no fastmath anywhere.
"""
from __future__ import annotations

import numpy as np
from numba import config, njit
from numba.cpython.unsafe.numbers import leading_zeros

KIND_N, KIND_L, KIND_LSUM = 0, 1, 2
_GOLD = np.uint64(0x9E3779B97F4A7C15)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit(cache=True, nogil=True, inline="always")
def _fmeasure(p, r):
    if p + r > 0:
        return 2 * p * r / (p + r)
    return 0.0


@njit(cache=True, nogil=True)
def _new_table(n):
    """An empty local id table (keys, ids, used slots) for at most ``n`` distinct keys (half load)."""
    cap = 16
    while cap < 2 * n:
        cap *= 2
    return np.full(cap, -1, dtype=np.int64), np.empty(cap, dtype=np.int32), np.empty(cap, dtype=np.int64)


@njit(cache=True, nogil=True, inline="always")
def _lookup(keys, vals, used, n_used, key, next_id):
    """Dense id of ``key`` in a local table; returns (id, n_used, next_id)."""
    mask = keys.shape[0] - 1
    slot = np.int64((np.uint64(key) * _GOLD) >> np.uint64(32)) & mask
    while True:
        k = keys[slot]
        if k == key:
            return vals[slot], n_used, next_id
        if k < 0:
            keys[slot] = key
            vals[slot] = next_id
            used[n_used] = slot
            return next_id, n_used + 1, next_id + 1
        slot = (slot + 1) & mask


@njit(cache=True, nogil=True, inline="always")
def _pair_ids(keys, vals, used, a, a0, m, b, b0, n, lid):
    """Dense local ids of ``a[a0:a0+m]`` then ``b[b0:b0+n]`` into ``lid[0:m+n]``; returns
    (number of distinct tokens, slots used).  The caller clears the table with :func:`_clear`."""
    n_used = 0
    next_id = 0
    for i in range(m):
        got, n_used, next_id = _lookup(keys, vals, used, n_used, np.int64(a[a0 + i]), next_id)
        lid[i] = got
    for j in range(n):
        got, n_used, next_id = _lookup(keys, vals, used, n_used, np.int64(b[b0 + j]), next_id)
        lid[m + j] = got
    return next_id, n_used


@njit(cache=True, nogil=True, inline="always")
def _pair_ids_direct(dmap, first_of, a, a0, m, b, b0, n, lid):
    """:func:`_pair_ids` through a direct map (``dmap[token]``: local id, or -1) when the
    batch's token ids are small: one load a token, no hashing; the same ids in the same
    order.  Returns the number of distinct tokens; ``dmap`` is restored before returning
    (``first_of``: scratch, the token of each local id)."""
    # branch-free: whether a token is new is unpredictable, a mispredicted branch costs
    # more than the stores made unconditionally
    next_id = np.int32(0)
    for i in range(m + n):
        g = a[a0 + i] if i < m else b[b0 + i - m]
        x = dmap[g]
        new = x < 0
        x = next_id if new else x
        dmap[g] = x
        first_of[next_id] = g
        next_id += np.int32(new)
        lid[i] = x
    for u in range(next_id):
        dmap[first_of[u]] = -1
    return next_id


@njit(cache=True, nogil=True, inline="always")
def _clear(keys, used, n_used):
    for u in range(n_used):
        keys[used[u]] = -1


@njit(cache=True, nogil=True, inline="always")
def _highest_bit(x):
    # x != 0
    return 63 - np.int64(leading_zeros(x))


if config.DISABLE_JIT:  # pragma: no cover - NUMBA_DISABLE_JIT=1: numba's intrinsic cannot run uncompiled
    def _highest_bit(x):
        return int(x).bit_length() - 1


@njit(cache=True, nogil=True)
def _popcount(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(cache=True, nogil=True, inline="always")
def _assign_rows(lid, start, length, row):
    """Give each distinct local id of ``lid[start:start+length]`` a dense row (match-mask row)."""
    d = 0
    for i in range(length):
        t = lid[start + i]
        if row[t] < 0:
            row[t] = d
            d += 1
    return d


@njit(cache=True, nogil=True, inline="always")
def _release_rows(lid, start, length, row, peq, W):
    for i in range(length):
        t = lid[start + i]
        r = row[t]
        if r >= 0:
            for w in range(W):
                peq[r * W + w] = np.uint64(0)
            row[t] = -1


@njit(cache=True, nogil=True)
def _lcs_length(lid, s0, s_len, l0, l_len, row, peq, V):
    """LCS length of two local-id sequences, bits over the shorter one (``s``).

    ``row`` (all -1) and ``peq`` (all 0, at least rows*W long) are scratch, restored on return.
    """
    W = (s_len + 63) >> 6
    for i in range(s_len):
        r = row[lid[s0 + i]]
        peq[r * W + (i >> 6)] |= np.uint64(1) << np.uint64(i & 63)
    if W == 1:
        v = _ALL
        for j in range(l_len):
            r = row[lid[l0 + j]]
            if r >= 0:
                u = v & peq[r]
                v = (v + u) | (v & ~u)
        V[0] = v
    else:
        for w in range(W):
            V[w] = _ALL
        for j in range(l_len):
            r = row[lid[l0 + j]]
            if r < 0:
                continue
            base = r * W
            carry = np.uint64(0)
            for w in range(W):
                v = V[w]
                u = v & peq[base + w]
                s1 = v + u
                s2 = s1 + carry
                carry = np.uint64(1) if (s1 < v or s2 < s1) else np.uint64(0)
                V[w] = s2 | (v & ~u)
    zeros = 0
    for w in range(W):
        bits = s_len - 64 * w
        v = V[w]
        if bits < 64:
            v |= _ALL << np.uint64(bits)
        zeros += 64 - _popcount(v)
    _release_rows(lid, s0, s_len, row, peq, W)
    return zeros


@njit(cache=True, nogil=True, inline="always")
def _lcs_length_1(lid, s0, s_len, l0, l_len, pm):
    """:func:`_lcs_length` for a shorter side of 1..64 tokens: match masks indexed by local id
    (``pm``, zeros, restored on return), no rows and no branch per token."""
    one = np.uint64(1)
    for i in range(s_len):
        pm[lid[s0 + i]] |= one << np.uint64(i)
    v = _ALL
    for j in range(l_len):
        u = v & pm[lid[l0 + j]]
        v = (v + u) | (v & ~u)
    for i in range(s_len):
        pm[lid[s0 + i]] = np.uint64(0)
    return s_len - _popcount(v & (_ALL >> np.uint64(64 - s_len)))


@njit(cache=True, nogil=True, inline="always")
def _one_sentence_each(same_stream, doc_sent, rdoc, cdoc, m, n, max_cells):
    """rougeLsum equals rougeL for this pair: each text has at most one sentence with tokens,
    and they are its whole-text tokens (one token stream).  rouge-score's union of one LCS of
    the two sentences is that LCS, and no token of an LCS occurs in it more often than in
    either text, so the clipping counts every one: hits = LCS length, over the same m and n.
    Not when the pair is too long to backtrack: it is reported as the general path does."""
    if not same_stream or doc_sent[rdoc + 1] - doc_sent[rdoc] > 1 or doc_sent[cdoc + 1] - doc_sent[cdoc] > 1:
        return False
    return (n + 1) * ((m + 63) >> 6) <= max_cells


@njit(cache=True, nogil=True)
def _sentence_union(lid, r0, mr, sent_tok, cs0, cs1, c_off, row, peq, Vs, um, max_cells):
    """Union of rouge-score's LCS positions of one reference sentence ``lid[r0:r0+mr]`` of more
    than 64 tokens (shorter ones take :func:`_sentence_union_1`) against every candidate
    sentence; the union is left as a bit mask in ``um``.

    Returns (ok, peq, Vs, um); ok is False when one sentence pair would need more
    than ``max_cells`` words of backtracking state (rouge-score would need 64x that
    in DP cells).  ``row`` (-1) and ``peq`` (zeros) are restored on return.
    """
    W = (mr + 63) >> 6
    D = _assign_rows(lid, r0, mr, row)
    if peq.shape[0] < D * W:
        peq = np.zeros(2 * D * W, dtype=np.uint64)
    for i in range(mr):
        peq[row[lid[r0 + i]] * W + (i >> 6)] |= np.uint64(1) << np.uint64(i & 63)
    if um.shape[0] < W:
        um = np.empty(W, dtype=np.uint64)
    for w in range(W):
        um[w] = np.uint64(0)
    for cs in range(cs0, cs1):
        c0 = sent_tok[cs] - c_off
        nc = sent_tok[cs + 1] - c_off - c0
        need = (nc + 1) * W
        if need > max_cells:
            _release_rows(lid, r0, mr, row, peq, W)
            return False, peq, Vs, um
        # The LCS can only pick reference positions whose token occurs in this candidate
        # sentence; if all of those are in the union already, the pair adds nothing.
        adds = False
        for j in range(nc):
            r = row[lid[c0 + j]]
            if r >= 0:
                for w in range(W):
                    if peq[r * W + w] & ~um[w]:
                        adds = True
                        break
                if adds:
                    break
        if not adds:
            continue
        if Vs.shape[0] < need:
            Vs = np.empty(2 * need, dtype=np.uint64)
        any_match = False
        for w in range(W):
            Vs[w] = _ALL
        for j in range(nc):
            r = row[lid[c0 + j]]
            prev = j * W
            cur = prev + W
            if r < 0:
                for w in range(W):
                    Vs[cur + w] = Vs[prev + w]
                continue
            base = r * W
            carry = np.uint64(0)
            for w in range(W):
                v = Vs[prev + w]
                u = v & peq[base + w]
                if u:
                    any_match = True
                s1 = v + u
                s2 = s1 + carry
                carry = np.uint64(1) if (s1 < v or s2 < s1) else np.uint64(0)
                Vs[cur + w] = s2 | (v & ~u)
        if not any_match:
            continue
        # rouge-score's backtracking from (mr, nc), one jump per step
        i = mr
        j = nc
        while i > 0 and j > 0:
            r = row[lid[c0 + j - 1]]
            col = j * W
            w = (i - 1) >> 6
            found = -1
            is_match = False
            while w >= 0:
                m_w = peq[r * W + w] if r >= 0 else np.uint64(0)
                x = m_w | ~Vs[col + w]
                top = i - 64 * w  # bits of this word below row i
                if top < 64:
                    x &= (np.uint64(1) << np.uint64(top)) - np.uint64(1)
                if x:
                    b = _highest_bit(x)
                    found = 64 * w + b
                    is_match = ((m_w >> np.uint64(b)) & np.uint64(1)) == np.uint64(1)
                    break
                w -= 1
            if found < 0:
                break
            if is_match:
                um[found >> 6] |= np.uint64(1) << np.uint64(found & 63)
                i = found
            else:
                i = found + 1
            j -= 1
    _release_rows(lid, r0, mr, row, peq, W)
    return True, peq, Vs, um


@njit(cache=True, nogil=True, inline="always")
def _sentence_union_1(lid, r0, mr, sent_tok, cs0, cs1, c_off, pm, Vs, max_cells):
    """:func:`_sentence_union` for a reference sentence of at most 64 tokens (the
    common case): one word per column, match masks indexed by local id (``pm``,
    zeros, restored on return), no row indirection.  Returns (ok, Vs, union mask).
    """
    one = np.uint64(1)
    for i in range(mr):
        pm[lid[r0 + i]] |= one << np.uint64(i)
    full = _ALL >> np.uint64(64 - mr)
    um = np.uint64(0)
    ok = True
    for cs in range(cs0, cs1):
        if um == full:  # every position is in the union already
            break
        c0 = sent_tok[cs] - c_off
        nc = sent_tok[cs + 1] - c_off - c0
        if nc + 1 > max_cells:
            ok = False
            break
        if Vs.shape[0] < nc + 1:
            Vs = np.empty(2 * (nc + 1), dtype=np.uint64)
        v = _ALL
        Vs[0] = v
        seen = np.uint64(0)
        for j in range(nc):
            mj = pm[lid[c0 + j]]
            seen |= mj
            u = v & mj
            v = (v + u) | (v & ~u)
            Vs[j + 1] = v
        # the LCS only picks positions whose token this sentence has; none new: nothing to add
        if (seen & ~um) == 0:
            continue
        # rouge-score's backtracking from (mr, nc), one jump per step
        i = mr
        j = nc
        while i > 0 and j > 0:
            mj = pm[lid[c0 + j - 1]]
            x = (mj | ~Vs[j]) & (_ALL >> np.uint64(64 - i))
            if x == 0:
                break
            b = _highest_bit(x)
            # a match (diagonal) or not (up): branch-free, the two alternate unpredictably
            hit = (mj >> np.uint64(b)) & one
            um |= hit << np.uint64(b)
            i = b + 1 - np.int64(hit)
            j -= 1
    for i in range(mr):
        pm[lid[r0 + i]] = np.uint64(0)
    return ok, Vs, um


@njit(cache=True, nogil=True, inline="always")
def _union_word(lid, sent_tok, rs0, rs1, r_off, cs0, cs1, c_off, pm, Vs, max_cells):
    """The union masks of every reference sentence at once, when the whole reference has at
    most 64 tokens: sentence ``rs`` owns bits ``[sent_tok[rs] - base, sent_tok[rs + 1] - base)``
    of one word (a lane), and one column pass per candidate sentence serves every lane.  The
    addition is lane-wise (no carry crosses a lane's top bit), which is exactly each sentence's
    own pass modulo its width; each lane is then backtracked as :func:`_sentence_union_1` does.
    Returns (ok, Vs, union mask over the whole reference).
    """
    one = np.uint64(1)
    zero = np.uint64(0)
    base = sent_tok[rs0] - r_off
    ms = sent_tok[rs1] - r_off - base
    tops = zero  # the top bit of every lane
    for rs in range(rs0, rs1):
        tops |= one << np.uint64(sent_tok[rs + 1] - r_off - base - 1)
    low = ~tops
    for i in range(ms):
        pm[lid[base + i]] |= one << np.uint64(i)
    full = _ALL >> np.uint64(64 - ms)
    um = zero
    ok = True
    for cs in range(cs0, cs1):
        if um == full:  # every position is in the union already
            break
        c0 = sent_tok[cs] - c_off
        nc = sent_tok[cs + 1] - c_off - c0
        if nc + 1 > max_cells:
            ok = False
            break
        if Vs.shape[0] < 2 * (nc + 1):
            Vs = np.empty(4 * (nc + 1), dtype=np.uint64)
        v = _ALL
        seen = zero
        k = 0
        in_run = 0
        # as in _sentence_union_1, with a lane-wise v + u, and one step (Vs[2k]: match mask,
        # Vs[2k + 1]: column) per matching token or per run of tokens absent from the reference
        for j in range(nc):
            mj = pm[lid[c0 + j]]
            seen |= mj
            u = v & mj
            v = (((v & low) + (u & low)) ^ ((v ^ u) & tops)) | (v & ~u)
            Vs[2 * k] = mj
            Vs[2 * k + 1] = v
            miss = np.int64(mj == zero)
            k += 1 - (miss & in_run)  # branch-free: matches are unpredictable
            in_run = miss
        new = seen & ~um
        if new == 0:
            continue
        for rs in range(rs0, rs1):
            b0 = sent_tok[rs] - r_off - base
            top = sent_tok[rs + 1] - r_off - base  # one past the lane
            floor = ~((one << np.uint64(b0)) - one)
            if (new & floor & (_ALL >> np.uint64(64 - top))) == 0:
                continue  # this sentence's LCS can add nothing
            i = top
            q = k
            while i > b0 and q > 0:
                q -= 1
                mj = Vs[2 * q]
                x = (mj | ~Vs[2 * q + 1]) & (_ALL >> np.uint64(64 - i)) & floor
                if x == 0:
                    break
                b = _highest_bit(x)
                hit = (mj >> np.uint64(b)) & one
                um |= hit << np.uint64(b)
                i = b + 1 - np.int64(hit)
    for i in range(ms):
        pm[lid[base + i]] = zero
    return ok, Vs, um


# inlined (as _union_word and _sentence_union_1): a call of a compiled function takes a reference
# on each array argument (an atomic increment and decrement), which a short pair pays every time
@njit(cache=True, nogil=True, inline="always")
def _union_lcs_hits(lid, sent_tok, rs0, rs1, r_off, cs0, cs1, c_off, cand_cnt, ucnt, row, peq, pm, Vs, um,
                    max_cells):
    """rougeLsum hits for one pair (see module docstring); returns (hits, peq, Vs, um).

    ``lid``: local ids of the sentence stream; reference sentences are
    ``sent_tok[rs0:rs1+1] - r_off`` (start/end rows into ``lid``), candidate sentences
    ``sent_tok[cs0:cs1+1] - c_off``; ``cand_cnt``: candidate unigram counts by local id;
    ``ucnt`` (zeros): scratch.  hits is -1 when a sentence pair is too long (see
    :func:`_sentence_union`).
    """
    base = sent_tok[rs0] - r_off
    rs_end = rs1
    if rs1 > rs0 + 1 and sent_tok[rs1] - r_off - base <= 64:
        ok, Vs, u1 = _union_word(lid, sent_tok, rs0, rs1, r_off, cs0, cs1, c_off, pm, Vs, max_cells)
        if not ok:
            return -1, peq, Vs, um
        while u1:
            b = _highest_bit(u1)
            ucnt[lid[base + b]] += 1
            u1 ^= np.uint64(1) << np.uint64(b)
        rs_end = rs0  # every sentence done
    for rs in range(rs0, rs_end):
        r0 = sent_tok[rs] - r_off
        mr = sent_tok[rs + 1] - r_off - r0
        if mr <= 64:
            ok, Vs, u1 = _sentence_union_1(lid, r0, mr, sent_tok, cs0, cs1, c_off, pm, Vs, max_cells)
            if not ok:
                return -1, peq, Vs, um
            while u1:
                b = _highest_bit(u1)
                ucnt[lid[r0 + b]] += 1
                u1 ^= np.uint64(1) << np.uint64(b)
            continue
        ok, peq, Vs, um = _sentence_union(lid, r0, mr, sent_tok, cs0, cs1, c_off, row, peq, Vs, um, max_cells)
        if not ok:
            return -1, peq, Vs, um
        for i in range(mr):
            if (um[i >> 6] >> np.uint64(i & 63)) & np.uint64(1):
                ucnt[lid[r0 + i]] += 1
    hits = 0
    for i in range(sent_tok[rs0] - r_off, sent_tok[rs1] - r_off):
        t = lid[i]
        hits += min(ucnt[t], cand_cnt[t])  # 0 where the union has no such token
        ucnt[t] = 0
    return hits, peq, Vs, um


@njit(cache=True, nogil=True)
def union_positions_kernel(sent_tokens, sent_tok, doc_sent, cdoc, rdoc, rs_first, rs_last, max_cells):
    """rougeLsum's union-LCS positions for reference sentences ``rs_first..rs_last-1``
    (numbered within document ``rdoc``) against every sentence of document ``cdoc``.

    Positions count sentence-stream tokens from the start of the reference.  Each
    reference sentence's union is independent of the others, so a long document can
    be scored as blocks of its sentences and the positions merged (see
    :mod:`pipeline.scoring.split`).  Returns (ok, positions).
    """
    rs0 = doc_sent[rdoc]
    cs0 = doc_sent[cdoc]
    cs1 = doc_sent[cdoc + 1]
    r_base = sent_tok[rs0]
    c_base = sent_tok[cs0]
    ms = sent_tok[doc_sent[rdoc + 1]] - r_base
    nsl = sent_tok[cs1] - c_base
    out = np.empty(0, dtype=np.int64)
    if ms == 0 or nsl == 0:
        return True, out
    # local ids: reference sentence stream at [0, ms), candidate at [ms, ms+nsl)
    keys, vals, used = _new_table(ms + nsl)
    lid = np.empty(ms + nsl, dtype=np.int32)
    next_id, _ = _pair_ids(keys, vals, used, sent_tokens, r_base, ms, sent_tokens, c_base, nsl, lid)
    row = np.full(next_id + 1, -1, dtype=np.int64)
    pm = np.zeros(next_id + 1, dtype=np.uint64)
    peq = np.zeros(1024, dtype=np.uint64)
    Vs = np.empty(1024, dtype=np.uint64)
    um = np.empty(16, dtype=np.uint64)
    out = np.empty(ms, dtype=np.int64)
    n_out = 0
    for rs in range(rs0 + rs_first, rs0 + rs_last):
        r0 = sent_tok[rs] - r_base
        mr = sent_tok[rs + 1] - r_base - r0
        if mr <= 64:
            ok, Vs, u1 = _sentence_union_1(lid, r0, mr, sent_tok, cs0, cs1, c_base - ms, pm, Vs, max_cells)
            if not ok:
                return False, out[:0]
            for i in range(mr):
                if (u1 >> np.uint64(i)) & np.uint64(1):
                    out[n_out] = r0 + i
                    n_out += 1
            continue
        ok, peq, Vs, um = _sentence_union(lid, r0, mr, sent_tok, cs0, cs1, c_base - ms, row, peq, Vs, um, max_cells)
        if not ok:
            return False, out[:0]
        for i in range(mr):
            if (um[i >> 6] >> np.uint64(i & 63)) & np.uint64(1):
                out[n_out] = r0 + i
                n_out += 1
    return True, out[:n_out]


@njit(cache=True, nogil=True, inline="always")
def _put(scores, kinds, ns, kind, n, p, r, f):
    """(p, r, f) into every requested type of ``kind`` (and n-gram order ``n`` for KIND_N)."""
    for t in range(kinds.shape[0]):
        if kinds[t] == kind and (kind != KIND_N or ns[t] == n):
            scores[t, 0] = p
            scores[t, 1] = r
            scores[t, 2] = f


@njit(cache=True, nogil=True)
def score_batch_kernel(tokens, doc_tok, sent_tokens, sent_tok, doc_sent, same_stream,
                       cand_doc, ref_lo, ref_hi, kinds, ns, max_cells, out, best_ref, status):
    """Score every example of a batch.

    Example ``e`` has candidate document ``cand_doc[e]`` and reference documents
    ``ref_lo[e] .. ref_hi[e]-1``.  ``kinds[t]``/``ns[t]`` describe type ``t``.
    Writes P/R/F to ``out[e, t, :]``, the chosen reference (rouge-score's
    ``score_multi``: highest F, first on ties) to ``best_ref[e, t]``, and
    ``status[e]``: 0 ok, 1 a rougeLsum sentence pair too large for ``max_cells``
    words of backtracking state (its scores are NaN).
    """
    n_types = kinds.shape[0]
    want_lsum = False
    max_n = 0
    want_l = False
    for t in range(n_types):
        if kinds[t] == KIND_N and ns[t] > max_n:
            max_n = ns[t]
        elif kinds[t] == KIND_L:
            want_l = True
        elif kinds[t] == KIND_LSUM:
            want_lsum = True

    # scratch sized for the largest pair of the batch: O(tokens), never O(m*n)
    max_doc = 1
    max_sdoc = 1
    for d in range(doc_tok.shape[0] - 1):
        max_doc = max(max_doc, doc_tok[d + 1] - doc_tok[d])
        if want_lsum and not same_stream:
            max_sdoc = max(max_sdoc, sent_tok[doc_sent[d + 1]] - sent_tok[doc_sent[d]])
    pair_cap = 2 * max_doc + (2 * max_sdoc if (want_lsum and not same_stream) else 0)
    keys, vals, used = _new_table(pair_cap)
    # token ids below a bound that the batch's size pays for: local ids by direct map
    lo = 0
    hi = -1
    for i in range(tokens.shape[0]):
        lo = min(lo, tokens[i])
        hi = max(hi, tokens[i])
    use_direct = lo >= 0 and hi < max(4096, 8 * tokens.shape[0])
    dmap = np.full(hi + 1 if use_direct else 0, -1, dtype=np.int32)
    first_of = np.empty(pair_cap if use_direct else 0, dtype=np.int32)
    direct = np.zeros((1 << 14) if max_n == 2 else 0, dtype=np.int32)
    lid1 = np.empty(pair_cap, dtype=np.int32)
    cur = np.empty(pair_cap, dtype=np.int32)
    slid = np.empty(pair_cap, dtype=np.int32)
    cnt_c = np.zeros(pair_cap + 1, dtype=np.int64)
    ucnt = np.zeros(pair_cap + 1, dtype=np.int64)
    row = np.full(pair_cap + 1, -1, dtype=np.int64)
    pm = np.zeros(pair_cap + 1, dtype=np.uint64)
    peq = np.zeros(1024, dtype=np.uint64)
    V = np.empty((max_doc + 63) >> 6, dtype=np.uint64)
    Vs = np.empty(1024, dtype=np.uint64)
    um = np.empty(16, dtype=np.uint64)
    scores = np.empty((n_types, 3), dtype=np.float64)

    for e in range(cand_doc.shape[0]):
        cdoc = cand_doc[e]
        c0 = doc_tok[cdoc]
        n = doc_tok[cdoc + 1] - c0
        status[e] = 0
        for t in range(n_types):
            out[e, t, 0] = 0.0
            out[e, t, 1] = 0.0
            out[e, t, 2] = -1.0
            best_ref[e, t] = 0
        for rdoc in range(ref_lo[e], ref_hi[e]):
            r0 = doc_tok[rdoc]
            m = doc_tok[rdoc + 1] - r0
            # level-1 local ids: reference at [0, m), candidate at [m, m+n)
            if use_direct:
                next_id = _pair_ids_direct(dmap, first_of, tokens, r0, m, tokens, c0, n, lid1)
                n_used = 0
            else:
                next_id, n_used = _pair_ids(keys, vals, used, tokens, r0, m, tokens, c0, n, lid1)
            # --- rouge-N, all requested n in one pass over levels
            if max_n > 0:
                n_uni = next_id
                for i in range(m + n):
                    cur[i] = lid1[i]
                for k in range(1, max_n + 1):
                    ref_cnt = max(m - k + 1, 0)
                    cand_cnt = max(n - k + 1, 0)
                    if k == 2 and max_n == 2 and n_uni * n_uni <= direct.shape[0]:
                        # few distinct tokens (short pairs): a bigram is its cell in an
                        # n_uni x n_uni count array, no hashing
                        for j in range(cand_cnt):
                            direct[lid1[m + j] * n_uni + lid1[m + j + 1]] += 1
                        hits = 0
                        for i in range(ref_cnt):
                            g = lid1[i] * n_uni + lid1[i + 1]
                            h = np.int32(direct[g] > 0)
                            direct[g] -= h
                            hits += h
                        for j in range(cand_cnt):
                            direct[lid1[m + j] * n_uni + lid1[m + j + 1]] = 0
                        p = hits / max(cand_cnt, 1)
                        r = hits / max(ref_cnt, 1)
                        _put(scores, kinds, ns, KIND_N, 2, p, r, _fmeasure(p, r))
                        continue
                    if k > 1:
                        _clear(keys, used, n_used)
                        n_used = 0
                        next_id = 0
                        for i in range(ref_cnt):
                            key = (np.int64(cur[i]) << 32) | np.int64(lid1[i + k - 1])
                            got, n_used, next_id = _lookup(keys, vals, used, n_used, key, next_id)
                            cur[i] = got
                        for j in range(cand_cnt):
                            key = (np.int64(cur[m + j]) << 32) | np.int64(lid1[m + j + k - 1])
                            got, n_used, next_id = _lookup(keys, vals, used, n_used, key, next_id)
                            cur[m + j] = got
                    wanted = False
                    for t in range(n_types):
                        if kinds[t] == KIND_N and ns[t] == k:
                            wanted = True
                    if not wanted:
                        continue
                    for j in range(cand_cnt):
                        cnt_c[cur[m + j]] += 1
                    hits = 0
                    for i in range(ref_cnt):
                        g = cur[i]
                        h = np.int64(cnt_c[g] > 0)  # branch-free: a hit is unpredictable
                        cnt_c[g] -= h
                        hits += h
                    for j in range(cand_cnt):
                        cnt_c[cur[m + j]] = 0
                    p = hits / max(cand_cnt, 1)
                    r = hits / max(ref_cnt, 1)
                    f = _fmeasure(p, r)
                    _put(scores, kinds, ns, KIND_N, k, p, r, f)
            _clear(keys, used, n_used)
            # rougeLsum of one sentence (with tokens) against one is rougeL: see _one_sentence_each
            lsum_is_l = want_lsum and _one_sentence_each(same_stream, doc_sent, rdoc, cdoc, m, n, max_cells)
            # --- rougeL
            if want_l or lsum_is_l:
                if m == 0 or n == 0:
                    p = 0.0
                    r = 0.0
                    f = 0.0
                else:
                    if m <= n:
                        s0, s_len, l0, l_len = 0, m, m, n
                    else:
                        s0, s_len, l0, l_len = m, n, 0, m
                    if s_len <= 64:
                        lcs = _lcs_length_1(lid1, s0, s_len, l0, l_len, pm)
                    else:
                        W = (s_len + 63) >> 6
                        D = _assign_rows(lid1, s0, s_len, row)
                        if peq.shape[0] < D * W:
                            peq = np.zeros(2 * D * W, dtype=np.uint64)
                        lcs = _lcs_length(lid1, s0, s_len, l0, l_len, row, peq, V)
                    p = lcs / n
                    r = lcs / m
                    f = _fmeasure(p, r)
                if want_l:
                    _put(scores, kinds, ns, KIND_L, 0, p, r, f)
                if lsum_is_l:
                    _put(scores, kinds, ns, KIND_LSUM, 0, p, r, f)
            # --- rougeLsum
            if want_lsum and not lsum_is_l:
                rs0 = doc_sent[rdoc]
                rs1 = doc_sent[rdoc + 1]
                cs0 = doc_sent[cdoc]
                cs1 = doc_sent[cdoc + 1]
                if same_stream:
                    lid = lid1
                    r_off = r0
                    c_off = c0 - m
                    ms = m
                    nsl = n
                else:
                    sr0 = sent_tok[rs0]
                    ms = sent_tok[rs1] - sr0
                    sc0 = sent_tok[cs0]
                    nsl = sent_tok[cs1] - sc0
                    _, n_used = _pair_ids(keys, vals, used, sent_tokens, sr0, ms, sent_tokens, sc0, nsl, slid)
                    _clear(keys, used, n_used)
                    lid = slid
                    r_off = sr0
                    c_off = sc0 - ms
                if ms == 0 or nsl == 0:
                    p = 0.0
                    r = 0.0
                    f = 0.0
                else:
                    for j in range(nsl):
                        cnt_c[lid[ms + j]] += 1
                    hits, peq, Vs, um = _union_lcs_hits(lid, sent_tok, rs0, rs1, r_off, cs0, cs1, c_off, cnt_c, ucnt,
                                                         row, peq, pm, Vs, um, max_cells)
                    for j in range(nsl):
                        cnt_c[lid[ms + j]] = 0
                    if hits < 0:
                        status[e] = 1
                        for q in range(ms):
                            ucnt[lid[q]] = 0
                        p = np.nan
                        r = np.nan
                        f = np.nan
                    else:
                        p = hits / nsl
                        r = hits / ms
                        f = _fmeasure(p, r)
                _put(scores, kinds, ns, KIND_LSUM, 0, p, r, f)
            for t in range(n_types):
                if scores[t, 2] > out[e, t, 2]:
                    out[e, t, 0] = scores[t, 0]
                    out[e, t, 1] = scores[t, 1]
                    out[e, t, 2] = scores[t, 2]
                    best_ref[e, t] = rdoc - ref_lo[e]
        for t in range(n_types):
            if status[e] != 0:
                out[e, t, 0] = np.nan
                out[e, t, 1] = np.nan
                out[e, t, 2] = np.nan
            elif out[e, t, 2] < 0.0:  # no reference at all
                out[e, t, 2] = 0.0
