"""Batch encoder: many texts in, flat token-id arrays (CSR) out.

The default rouge-score tokenizer runs here as a compiled scan, so a batch of
texts costs one ``str.join`` and a few numba calls:

1. Texts are joined; an ASCII batch is its own UTF-8 (encoding it is one copy), any other
   is encoded once and its document offsets converted to bytes.  Arrow columns are read
   in their own UTF-8 buffers.
2. Pass 1 reads eight bytes at a time while they are ASCII: one 64-bit word is lowercased
   and classified without a branch per byte (SWAR), and token starts and ends, newlines
   and sentence starts come from its 8-bit masks.  Other bytes go one at a time and map
   the two code points whose lowercase is ASCII alphanumeric (U+0130 -> ``i`` + a break,
   U+212A -> ``k``); every other non-ASCII code point separates.  That is exactly
   ``str.lower`` followed by rouge-score's ``[^a-z0-9]+`` substitution.  Pass 2 maps each
   token to a dense id through open-addressing tables keyed by the token's own bytes (read
   as whole words), verified byte for byte above 16 bytes, so no collision can merge two
   tokens.
3. Python only sees tokens it has never seen before: it stems them once (nltk
   Porter, as rouge-score) and extends the raw-id -> stem-id map.

Ids are local to a process and to a :class:`Vocabulary`; scores never depend on
them, so a vocabulary may be reset between batches to bound memory.
Custom tokenizers go through :func:`encode_with_tokenizer`, which builds the
same arrays from Python token lists (batch tokenizers: :func:`encode_marked`; the unicode
profile has its own scan, :mod:`pipeline.text.unicode_scan`).
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

try:  # numba's own code-point read: the scan reads Python's str buffer in place
    from numba.cpython.unicode import _get_code_point
except ImportError:  # pragma: no cover - numba moved it: scan UTF-8 bytes instead
    _get_code_point = None

from pipeline.columns import utf8_buffers
from pipeline.text.stemming import porter_stem

_VALID_TOKEN = re.compile(r"^[a-z0-9]+$")

# code point < 128 -> lowercase token byte, or 0 (separator), 1 (newline: sentence end).
# Every code point >= 0x80 separates except the two whose lowercase is ASCII
# alphanumeric, which the scan maps itself.
_BYTE_CLASS = np.zeros(256, dtype=np.uint8)
for _b in b"abcdefghijklmnopqrstuvwxyz0123456789":
    _BYTE_CLASS[_b] = _b
for _b in b"ABCDEFGHIJKLMNOPQRSTUVWXYZ":
    _BYTE_CLASS[_b] = _b + 32
_BYTE_CLASS[ord("\n")] = 1

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_GOLD = np.uint64(0x9E3779B97F4A7C15)
_GOLD2 = np.uint64(0xC2B2AE3D27D4EB4F)
_LONG = np.uint64(1) << np.uint64(63)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


_ONES = np.uint64(0x0101010101010101)
_HIGH = np.uint64(0x8080808080808080)
_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_GATHER = np.uint64(0x0102040810204080)  # byte k's lowest bit -> bit 56 + k of the product
_CTZ8 = np.array([0] + [(k & -k).bit_length() - 1 for k in range(1, 256)], dtype=np.int64)


@njit(cache=True, nogil=True, inline="always")
def _ge(x, c):
    """High bit of every byte of ``x`` (all bytes < 0x80) set iff that byte is >= ``c``."""
    return x + (_ONES * np.uint64(0x80 - c))


@intrinsic
def _load_u64(typingctx, arr, i):
    """Bytes ``arr[i:i+8]`` of a uint8 array as one unaligned little-endian load (numba has
    no such load; eight byte loads are not merged and cost more than the classification).
    The caller guarantees ``i + 8 <= arr.shape[0]``."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.uint8 and isinstance(i, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        a = context.make_array(sig.args[0])(context, builder, args[0])
        ptr = builder.bitcast(builder.gep(a.data, [args[1]]), ir.IntType(64).as_pointer())
        return builder.load(ptr, align=1)
    return types.uint64(arr, i), codegen


@intrinsic
def _store_u64(typingctx, arr, i, value):
    """``arr[i:i+8] = value``'s little-endian bytes, one unaligned store; ``i + 8 <= arr.shape[0]``."""
    if not (isinstance(arr, types.Array) and arr.dtype == types.uint8 and isinstance(i, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        a = context.make_array(sig.args[0])(context, builder, args[0])
        ptr = builder.bitcast(builder.gep(a.data, [args[1]]), ir.IntType(64).as_pointer())
        builder.store(args[2], ptr, align=1)
        return context.get_dummy_value()
    return types.void(arr, i, types.uint64), codegen


@intrinsic
def _load_u64_ptr(typingctx, data, offset):
    """Eight bytes at ``data + offset`` (a str's buffer, numba's ``voidptr``) as one unaligned
    load; the caller keeps ``offset + 8`` within the buffer."""
    if not (data == types.voidptr and isinstance(offset, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        base = builder.bitcast(args[0], ir.IntType(8).as_pointer())
        ptr = builder.bitcast(builder.gep(base, [args[1]]), ir.IntType(64).as_pointer())
        return builder.load(ptr, align=1)
    return types.uint64(types.voidptr, offset), codegen


_HIGH16 = np.uint64(0xFF80FF80FF80FF80)  # a UCS-2 unit >= 0x80


@njit(cache=True, nogil=True, inline="always")
def _pack_ucs2(x):
    """Four UCS-2 units, each < 0x80, as four bytes (the low half of the result)."""
    y = x | (x >> np.uint64(8))
    return (y & np.uint64(0xFFFF)) | ((y >> np.uint64(16)) & np.uint64(0xFFFF0000))


@njit(cache=True, nogil=True, inline="always")
def _put_utf8(out, o, cp):
    """Code point ``cp``'s UTF-8 bytes at ``out[o:]`` (a surrogate as three bytes, as
    ``surrogatepass``); returns the next position."""
    if cp < 0x80:
        out[o] = cp
        return o + 1
    if cp < 0x800:
        out[o] = 0xC0 | (cp >> 6)
        out[o + 1] = 0x80 | (cp & 0x3F)
        return o + 2
    if cp < 0x10000:
        out[o] = 0xE0 | (cp >> 12)
        out[o + 1] = 0x80 | ((cp >> 6) & 0x3F)
        out[o + 2] = 0x80 | (cp & 0x3F)
        return o + 3
    out[o] = 0xF0 | (cp >> 18)
    out[o + 1] = 0x80 | ((cp >> 12) & 0x3F)
    out[o + 2] = 0x80 | ((cp >> 6) & 0x3F)
    out[o + 3] = 0x80 | (cp & 0x3F)
    return o + 4


@njit(cache=True, nogil=True)
def _str_to_utf8(text, offs):
    """A str's documents ``text[offs[d]:offs[d+1]]`` (code points) -> (UTF-8 bytes, byte
    offsets), ``surrogatepass`` as ``str.encode``: read in place, runs of ASCII eight code
    units at a time from 1- and 2-byte str buffers (``str.encode`` of a 2-byte str costs
    more than the whole scan)."""
    kind = text._kind
    n = len(text)
    out = np.empty(n * (2 if kind == 1 else (3 if kind == 2 else 4)) + 8, dtype=np.uint8)
    out_offs = np.empty_like(offs)
    out_offs[0] = 0
    data = text._data
    o = 0
    for d in range(offs.shape[0] - 1):
        i = offs[d]
        end = offs[d + 1]
        while i < end:
            if i + 8 <= end:
                if kind == 1:
                    x = _load_u64_ptr(data, i)
                    if (x & _HIGH) == 0:
                        _store_u64(out, o, x)
                        o += 8
                        i += 8
                        continue
                elif kind == 2:
                    x = _load_u64_ptr(data, 2 * i)
                    z = _load_u64_ptr(data, 2 * i + 8)
                    if ((x | z) & _HIGH16) == 0:
                        _store_u64(out, o, _pack_ucs2(x) | (_pack_ucs2(z) << np.uint64(32)))
                        o += 8
                        i += 8
                        continue
            o = _put_utf8(out, o, _get_code_point(text, i))
            i += 1
        out_offs[d + 1] = o
    return out[:o], out_offs


@njit(cache=True, nogil=True)
def _scan(buf, offs, lower_to_ascii, low, tstart, tend, tnl, doc_tok, doc_sent, sent_tok):
    """Pass 1 over documents ``buf[offs[d]:offs[d+1]]`` of UTF-8 bytes: every code
    unit's class goes to ``low`` (token byte lowercased, or 0/1), each token's start and end
    in ``low`` to ``tstart``/``tend``, then sentence starts and document ends are recorded.

    ``lower_to_ascii``: map the two code points whose ``str.lower()`` is ASCII alphanumeric
    (rouge-score); False: they separate like every other non-ASCII unit (ROUGE-1.5.5).
    Input is read eight bytes at a time while they are ASCII: the bytes are classified
    and lowercased as one 64-bit word (SWAR), and token starts and ends come from the word's
    8-bit mask of token bytes.  Any other unit goes one at a time, branch-free (token starts
    and ends are counted and stored unconditionally, since a branch per token end
    mispredicts once a word).  ``tnl[t]``: a newline lies between token ``t`` and the one
    before (so ``t`` starts a sentence), noted while scanning so that sentences are found
    from the tokens alone.  Returns (n_tokens, n_sentences).
    """
    w = 0
    ntok = 0
    nend = 0
    for d in range(offs.shape[0] - 1):
        end = offs[d + 1]
        prev = 0
        skip = 0
        pending = 0  # a newline since the last token start
        i = offs[d]
        while i < end:
            if skip == 0 and i + 8 <= end:
                x = _load_u64(buf, i)
                if (x & _HIGH) == 0:
                    upper = _ge(x, 0x41) & ~_ge(x, 0x5B) & _HIGH
                    x |= upper >> np.uint64(2)  # A-Z -> a-z
                    tok = ((_ge(x, 0x30) & ~_ge(x, 0x3A)) | (_ge(x, 0x61) & ~_ge(x, 0x7B))) & _HIGH
                    y = x ^ (_ONES * np.uint64(0x0A))  # newline bytes -> 0
                    nl = ~((((y & _LOW7) + _LOW7) | y)) & _HIGH
                    out = (x & ((tok >> np.uint64(7)) * np.uint64(0xFF))) | (nl >> np.uint64(7))
                    _store_u64(low, w, out)  # w + 8 <= i + 8 - offs[0]: within low
                    bm = np.int64((((tok >> np.uint64(7)) * _GATHER) >> np.uint64(56)) & np.uint64(0xFF))
                    nlm = np.int64((((nl >> np.uint64(7)) * _GATHER) >> np.uint64(56)) & np.uint64(0xFF))
                    before = ((bm << 1) | prev) & 0xFF  # bit k: unit k - 1 is a token byte
                    starts = bm & ~before
                    ends = before & ~bm
                    while starts:
                        k = _CTZ8[starts]
                        below = (1 << k) - 1
                        tstart[ntok] = w + k
                        tnl[ntok] = np.uint8(pending | np.int64((nlm & below) != 0))
                        ntok += 1
                        pending = 0
                        nlm &= ~below
                        starts &= starts - 1
                    pending |= np.int64(nlm != 0)
                    while ends:
                        tend[nend] = w + _CTZ8[ends]
                        nend += 1
                        ends &= ends - 1
                    prev = (bm >> 7) & 1
                    w += 8
                    i += 8
                    continue
            if skip:  # the rest of a multi-byte code point already classified
                skip -= 1
                i += 1
                continue
            cp = buf[i]
            brk = False
            if cp < 128:
                c = _BYTE_CLASS[cp]
            elif not lower_to_ascii:
                c = np.uint8(0)
            elif cp == 0xE2 and i + 2 < end and buf[i + 1] == 0x84 and buf[i + 2] == 0xAA:
                c = np.uint8(107)  # U+212A KELVIN SIGN lowercases to "k": one unit for three bytes
                skip = 2
            elif cp == 0xC4 and i + 1 < end and buf[i + 1] == 0xB0:
                c = np.uint8(105)  # U+0130 lowercases to "i" + U+0307: "i", then the token ends
                skip = 1
                brk = True
            else:  # the bytes of every other code point separate
                c = np.uint8(0)
            low[w] = c
            t = np.int64(c > 1)
            start = t & (1 - prev)
            tstart[ntok] = w
            tnl[ntok] = np.uint8(pending)
            ntok += start
            pending = (pending | np.int64(c == 1)) & (1 - start)
            tend[nend] = w
            nend += prev & (1 - t)
            prev = t
            w += 1
            i += 1
            if brk:
                tend[nend] = w
                nend += 1
                prev = 0
        if prev:
            tend[nend] = w
            nend += 1
        doc_tok[d + 1] = ntok
    # A token starts a sentence when it is its document's first or a newline lies between
    # it and the token before.
    nsent = 0
    t = 0
    for d in range(offs.shape[0] - 1):
        first = 1
        while t < doc_tok[d + 1]:
            sent_tok[nsent] = t
            nsent += first | tnl[t]
            first = 0
            t += 1
        doc_sent[d + 1] = nsent
    sent_tok[nsent] = ntok
    return ntok, nsent


@njit(cache=True, nogil=True)
def _take_docs(a_tok, a_doc_tok, a_doc_sent, a_sent_tok, b_tok, b_doc_tok, b_doc_sent, b_sent_tok, from_b, index):
    """Documents gathered from two CSR streams: output document ``d`` is document ``index[d]``
    of stream ``b`` if ``from_b[d]`` else of stream ``a`` (each used at most once)."""
    n_docs = index.shape[0]
    tokens = np.empty(a_tok.shape[0] + b_tok.shape[0], dtype=np.int32)
    sent_tok = np.empty(a_sent_tok.shape[0] + b_sent_tok.shape[0] - 1, dtype=np.int64)
    doc_tok = np.zeros(n_docs + 1, dtype=np.int64)
    doc_sent = np.zeros(n_docs + 1, dtype=np.int64)
    t = 0
    ns = 0
    for d in range(n_docs):
        k = index[d]
        if from_b[d]:
            tok, dt, ds, st = b_tok, b_doc_tok, b_doc_sent, b_sent_tok
        else:
            tok, dt, ds, st = a_tok, a_doc_tok, a_doc_sent, a_sent_tok
        base = t - dt[k]
        for s in range(ds[k], ds[k + 1]):
            sent_tok[ns] = st[s] + base
            ns += 1
        for q in range(dt[k], dt[k + 1]):
            tokens[t] = tok[q]
            t += 1
        doc_tok[d + 1] = t
        doc_sent[d + 1] = ns
    sent_tok[ns] = t
    return tokens, doc_tok, doc_sent, sent_tok[: ns + 1]


def _interleave(c_tok, c_doc_tok, c_doc_sent, c_sent_tok, r_tok, r_doc_tok, r_doc_sent, r_sent_tok, ref_off):
    """Candidates' and references' streams merged in the batch layout (cand, refs..., cand, ...)."""
    n = c_doc_tok.shape[0] - 1
    n_out = n + int(ref_off[-1])
    from_ref = np.ones(n_out, dtype=np.bool_)
    index = np.empty(n_out, dtype=np.int64)
    cand_at = np.arange(n, dtype=np.int64) + ref_off[:-1]  # candidate e sits after e earlier examples' refs
    from_ref[cand_at] = False
    index[cand_at] = np.arange(n, dtype=np.int64)
    index[from_ref] = np.arange(n_out - n, dtype=np.int64)
    return _take_docs(c_tok, c_doc_tok, c_doc_sent, c_sent_tok, r_tok, r_doc_tok, r_doc_sent, r_sent_tok,
                      from_ref, index)


@njit(cache=True, nogil=True, inline="always")
def _load(low64, s, length):
    """Bytes ``s .. s+length-1`` (1 <= length <= 8) of the classified buffer as a
    little-endian word: two aligned loads, no byte loop."""
    w = s >> 3
    sh = np.uint64((s & 7) * 8)
    # (x << 1) << (63 - sh) is x << (64 - sh) without the undefined shift by 64 when sh == 0
    x = (low64[w] >> sh) | ((low64[w + 1] << np.uint64(1)) << (np.uint64(63) - sh))
    return x & (_ALL >> np.uint64(64 - 8 * length))


@njit(cache=True, nogil=True, inline="always")
def _add(low, s, length, offs, arena, counts, n_ids, tab, stride, slot, a, b):
    """Token ``low[s:s+length]`` as id ``n_ids`` in ``tab`` (stride 2: key, id; stride 4: key1,
    key2, id, -) at ``slot``; False (nothing changed) when ``offs``, the arena or the table
    (at half load) is full."""
    which = 1 if stride == 2 else 2
    if (n_ids + 2 >= offs.shape[0] or offs[n_ids] + length > arena.shape[0]
            or 2 * (counts[which] + 1) > tab.shape[0] // stride):
        return False
    o = offs[n_ids]
    for q in range(length):
        arena[o + q] = low[s + q]
    offs[n_ids + 1] = o + length
    tab[stride * slot] = a
    if stride == 4:
        tab[stride * slot + 1] = b
    tab[stride * slot + which] = n_ids
    counts[which] += 1
    return True


@njit(cache=True, nogil=True)
def _lookup_ids(low, low64, tstart, tend, first, short_tab, long_tab, offs, arena, counts, out):
    """Pass 2: tokens -> dense ids, inserting new tokens; returns (status, next token).

    A token of at most 8 bytes is its own key (table ``short_tab``: key, id); one of
    9-16 bytes is its own pair of keys (``long_tab``: key1, key2, id, -); a longer one
    is keyed by its first 8 bytes and its FNV-1a hash (top bit set) and verified byte
    for byte against the arena, so no collision can merge two tokens.
    ``counts``: [ids, entries in short_tab, entries in long_tab], updated in place.
    status 1: a table, ``offs`` or the arena is full at token ``next``; the caller
    grows them and calls again from there.
    """
    mask_a = (short_tab.shape[0] >> 1) - 1
    mask_b = (long_tab.shape[0] >> 2) - 1
    n_ids = counts[0]
    for t in range(first, tstart.shape[0]):
        s = tstart[t]
        length = tend[t] - s
        if length <= 8:
            k = np.int64(_load(low64, s, length))
            slot = np.int64((np.uint64(k) * _GOLD) >> np.uint64(32)) & mask_a
            while True:
                kk = short_tab[2 * slot]
                if kk == k:
                    out[t] = short_tab[2 * slot + 1]
                    break
                if kk == 0:
                    if not _add(low, s, length, offs, arena, counts, n_ids, short_tab, 2, slot, k, k):
                        counts[0] = n_ids
                        return 1, t
                    out[t] = n_ids
                    n_ids += 1
                    break
                slot = (slot + 1) & mask_a
        else:
            k1 = _load(low64, s, 8)
            if length <= 16:
                k2 = _load(low64, s + 8, length - 8)
            else:
                h = _FNV_OFFSET
                for q in range(s, s + length):
                    h = (h ^ np.uint64(low[q])) * _FNV_PRIME
                k2 = h | _LONG
            a = np.int64(k1)
            b = np.int64(k2)
            slot = np.int64(((k1 * _GOLD) ^ (k2 * _GOLD2)) >> np.uint64(32)) & mask_b
            while True:
                kk = long_tab[4 * slot]
                if kk == a and long_tab[4 * slot + 1] == b:
                    cand = long_tab[4 * slot + 2]
                    if b >= 0:  # 9-16 bytes: the keys are the bytes
                        out[t] = cand
                        break
                    o = offs[cand]
                    if offs[cand + 1] - o == length:
                        same = True
                        for q in range(length):
                            if arena[o + q] != low[s + q]:
                                same = False
                                break
                        if same:
                            out[t] = cand
                            break
                elif kk == 0:
                    if not _add(low, s, length, offs, arena, counts, n_ids, long_tab, 4, slot, a, b):
                        counts[0] = n_ids
                        return 1, t
                    out[t] = n_ids
                    n_ids += 1
                    break
                slot = (slot + 1) & mask_b
    counts[0] = n_ids
    return 0, tstart.shape[0]


@njit(cache=True, nogil=True)
def _rehash(old, new, stride):
    """Move every entry of an open-addressing table (``stride`` int64 per slot) to ``new``."""
    mask = (new.shape[0] // stride) - 1
    for s in range(old.shape[0] // stride):
        k = old[stride * s]
        if k != 0:
            if stride == 2:
                slot = np.int64((np.uint64(k) * _GOLD) >> np.uint64(32)) & mask
            else:
                slot = np.int64(((np.uint64(k) * _GOLD) ^ (np.uint64(old[stride * s + 1]) * _GOLD2))
                                >> np.uint64(32)) & mask
            while new[stride * slot] != 0:
                slot = (slot + 1) & mask
            for q in range(stride):
                new[stride * slot + q] = old[stride * s + q]


@njit(cache=True, nogil=True)
def _map_ids(tokens, id_map, out):
    """out[i] = id_map[tokens[i]]; returns how many mapped to -1 (invalid tokens)."""
    dropped = 0
    for i in range(tokens.shape[0]):
        v = id_map[tokens[i]]
        out[i] = v
        if v < 0:
            dropped += 1
    return dropped


@njit(cache=True, nogil=True)
def _drop_negative(tokens, doc_tok, doc_sent, sent_tok):
    """Remove tokens < 0 in place and fix every offset array (sentences left empty are removed)."""
    n_docs = doc_tok.shape[0] - 1
    out_tok = 0
    out_sent = 0
    new_doc_tok = np.empty_like(doc_tok)
    new_doc_sent = np.empty_like(doc_sent)
    new_sent_tok = np.empty_like(sent_tok)
    new_doc_tok[0] = 0
    new_doc_sent[0] = 0
    for d in range(n_docs):
        for s in range(doc_sent[d], doc_sent[d + 1]):
            begin = out_tok
            for t in range(sent_tok[s], sent_tok[s + 1]):
                if tokens[t] >= 0:
                    tokens[out_tok] = tokens[t]
                    out_tok += 1
            if out_tok > begin:
                new_sent_tok[out_sent] = begin
                out_sent += 1
        new_doc_tok[d + 1] = out_tok
        new_doc_sent[d + 1] = out_sent
    new_sent_tok[out_sent] = out_tok
    return out_tok, out_sent, new_doc_tok, new_doc_sent, new_sent_tok


@dataclass
class EncodedDocs:
    """Token ids of many documents in CSR form.

    Document ``d`` is ``tokens[doc_tok[d]:doc_tok[d+1]]`` (the whole-text tokens,
    for rougeN and rougeL).  Its sentences (rougeLsum) are
    ``sent_tokens[sent_tok[s]:sent_tok[s+1]]`` for ``s`` in
    ``range(doc_sent[d], doc_sent[d+1])``; sentences without tokens are left out.
    With the default tokenizer the sentence stream *is* the token stream.
    """

    tokens: np.ndarray  # int32
    doc_tok: np.ndarray  # int64, n_docs + 1
    sent_tokens: np.ndarray  # int32
    sent_tok: np.ndarray  # int64, n_sents + 1
    doc_sent: np.ndarray  # int64, n_docs + 1
    # the vocabulary generation the ids belong to (Vocabulary.generation): ids of two
    # encodings are comparable only when their generations are equal
    generation: int = 0

    @property
    def same_stream(self) -> bool:
        return self.sent_tokens is self.tokens

    def doc_lengths(self) -> np.ndarray:
        return np.diff(self.doc_tok)


class Vocabulary:
    """Token bytes <-> dense ids, plus the raw-id -> stemmed-id map."""

    # Past this many ids the vocabulary is rebuilt at the next batch (ids need only
    # be consistent within a batch), so a long-lived worker's memory stays bounded.
    MAX_IDS = 4_000_000

    def __init__(self, capacity: int = 1 << 16, token_map: Callable[[str], str | None] | None = None,
                 valid_token: Callable[[str], object] | None = _VALID_TOKEN.match):
        self._token_map, self._valid_token = token_map or porter_stem, valid_token  # None: any form
        self.counts = np.zeros(3, dtype=np.int64)  # ids, short_tab entries, long_tab entries
        # tables start small (cache-resident) and double at half load
        self.short_tab = np.zeros(2 * 4096, dtype=np.int64)
        self.long_tab = np.zeros(4 * 4096, dtype=np.int64)
        self.offs = np.zeros(capacity + 1, dtype=np.int64)
        self.arena = np.zeros(capacity * 8, dtype=np.uint8)
        self._stem_map = np.full(0, -1, dtype=np.int32)
        self._stem_index: dict[str, int] = {}
        self._stem_done = 0
        self.generation = 0

    @property
    def n_ids(self) -> int:
        return int(self.counts[0])

    @property
    def n_mapped(self) -> int:
        """How many distinct mapped ids :meth:`stem_map` has given out."""
        return len(self._stem_index)

    def reset(self) -> None:
        """A new, empty vocabulary: ids given out before are meaningless from here on, which
        :attr:`generation` (one more at every reset) lets a caller holding some detect."""
        generation = self.generation
        self.__init__(token_map=self._token_map, valid_token=self._valid_token)
        self.generation = generation + 1

    def grow(self, token_bytes: int) -> None:
        """Make room for one more token of ``token_bytes`` bytes (whatever is short of it)."""
        n_ids, n_short, n_long = (int(x) for x in self.counts)
        if n_ids + 2 >= self.offs.shape[0]:
            offs = np.zeros(2 * self.offs.shape[0], dtype=np.int64)
            offs[: self.offs.shape[0]] = self.offs
            self.offs = offs
        used = int(self.offs[n_ids])
        if used + token_bytes > self.arena.shape[0]:
            arena = np.zeros(max(2 * self.arena.shape[0], used + token_bytes), dtype=np.uint8)
            arena[:used] = self.arena[:used]
            self.arena = arena
        for name, stride, n in (("short_tab", 2, n_short), ("long_tab", 4, n_long)):
            old = getattr(self, name)
            if 2 * (n + 1) > old.shape[0] // stride:
                new = np.zeros(2 * old.shape[0], dtype=np.int64)
                _rehash(old, new, stride)
                setattr(self, name, new)

    def ids(self, low: np.ndarray, tstart: np.ndarray, tend: np.ndarray) -> np.ndarray:
        """Raw ids (int32) of the tokens ``low[tstart[t]:tend[t]]`` (bytes; ``low`` padded to
        whole words plus one), new tokens added; the tables grow as needed."""
        tokens = np.empty(tstart.shape[0], dtype=np.int32)
        low64 = low.view(np.uint64)
        first = 0
        while True:
            status, first = _lookup_ids(low, low64, tstart, tend, first, self.short_tab, self.long_tab,
                                        self.offs, self.arena, self.counts, tokens)
            if status == 0:
                return tokens
            self.grow(int(tend[first] - tstart[first]))

    def token(self, tid: int) -> str:
        return self.arena[self.offs[tid]:self.offs[tid + 1]].tobytes().decode("utf-8")

    def stem_map(self) -> np.ndarray:
        """raw id -> id of its mapped form (by default its Porter stem, rouge-score's rule),
        -1 if the map drops it or its form is not a valid token."""
        if self._stem_done < self.n_ids:
            if self._stem_map.shape[0] < self.n_ids:
                grown = np.full(max(self.n_ids, 2 * self._stem_map.shape[0]), -1, dtype=np.int32)
                grown[: self._stem_map.shape[0]] = self._stem_map
                self._stem_map = grown
            index = self._stem_index
            token_map, valid = self._token_map, self._valid_token
            for tid in range(self._stem_done, self.n_ids):
                stem = token_map(self.token(tid))
                if stem is not None and (valid is None or valid(stem)):
                    self._stem_map[tid] = index.setdefault(stem, len(index))
            self._stem_done = self.n_ids
        return self._stem_map


class DefaultEncoder:
    """rouge-score's default tokenizer over whole batches (see module docstring).

    ``ascii_only``: every non-ASCII code point separates, U+0130 and U+212A included
    (ROUGE-1.5.5's byte-wise Perl tokenizer).  ``token_map``: each distinct raw token's
    processed form, or None to drop it; applied when given (instead of rouge-score's
    Porter rule, which ``use_stemmer`` selects)."""

    def __init__(self, use_stemmer: bool = False, *, ascii_only: bool = False,
                 token_map: Callable[[str], str | None] | None = None):
        self.use_stemmer = use_stemmer or token_map is not None
        self.ascii_only = ascii_only
        self.vocab = Vocabulary(token_map=token_map)
        self._scratch = _Scratch()
        self._lock = threading.Lock()

    # Texts are scanned in groups of about this many code units, so that the scan's
    # working arrays stay in cache and are reused and no multi-megabyte str is built
    # (fresh large allocations cost a page fault per 4 KiB on first touch).
    GROUP_UNITS = 1 << 20

    def encode(self, texts: Sequence[str]) -> EncodedDocs:
        texts = texts if isinstance(texts, list) else list(texts)
        n_docs = len(texts)
        if n_docs == 0:
            return _empty_docs()
        ends, groups = text_groups(texts, self.GROUP_UNITS)
        parts = []
        with self._lock:
            self._check_size()
            for a, b in groups:
                group = texts[a:b]
                joined = "".join(group)
                offs = ends[a:b + 1] - ends[a]
                # scanned as UTF-8, which _scan reads eight ASCII bytes at a time; ASCII text is
                # its own UTF-8 (encoding it is a copy), other text is converted in one kernel call
                if joined.isascii():
                    buf = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
                elif _get_code_point is not None:
                    buf, offs = _str_to_utf8(joined, offs)
                else:  # pragma: no cover - UTF-8 bytes
                    raw = [t.encode("utf-8", "surrogatepass") for t in group]
                    buf = np.frombuffer(b"".join(raw), dtype=np.uint8)
                    offs = np.zeros(len(raw) + 1, dtype=np.int64)
                    np.cumsum(np.fromiter(map(len, raw), dtype=np.int64, count=len(raw)), out=offs[1:])
                parts.append(self._encode_units(buf, offs))
            tokens, doc_tok, doc_sent, sent_tok = parts[0] if len(parts) == 1 else _concat_parts(parts)
            return self._finish(tokens, doc_tok, doc_sent, sent_tok)

    def encode_arrow(self, candidates, references) -> tuple[EncodedDocs, np.ndarray]:
        """Arrow columns in (``candidates``: strings; ``references``: strings or lists of
        strings, no nulls), documents in the batch layout (cand, refs..., ...) and the
        reference counts out.  The UTF-8 buffers are scanned where they are: no Python str
        is made per text."""
        import pyarrow as pa

        cands = _string_array(candidates)
        refs = references.combine_chunks() if isinstance(references, pa.ChunkedArray) else references
        if pa.types.is_list(refs.type) or pa.types.is_large_list(refs.type):
            ro = np.asarray(refs.offsets, dtype=np.int64)
            ro = ro - ro[0]
            flat = _string_array(refs.flatten())
        else:
            ro = np.arange(len(refs) + 1, dtype=np.int64)
            flat = _string_array(refs)
        n_refs = np.diff(ro)  # a null reference list has none
        check_reference_counts(n_refs, len(cands))
        if len(cands) == 0:
            return _empty_docs(), n_refs
        with self._lock:
            self._check_size()
            c = self._encode_units(*utf8_buffers(cands))
            r = self._encode_units(*utf8_buffers(flat))
            tokens, doc_tok, doc_sent, sent_tok = _interleave(*c, *r, ro)
            return self._finish(tokens, doc_tok, doc_sent, sent_tok), n_refs

    def _check_size(self) -> None:
        if self.vocab.n_ids > Vocabulary.MAX_IDS:
            self.vocab.reset()

    def _finish(self, tokens, doc_tok, doc_sent, sent_tok) -> EncodedDocs:
        """Raw ids -> stemmed ids (tokens whose stem is no valid token dropped); under the lock."""
        self._scratch.release()
        if self.use_stemmer:
            stemmed = np.empty_like(tokens)
            if _map_ids(tokens, self.vocab.stem_map(), stemmed):
                ntok, nsent, doc_tok, doc_sent, sent_tok = _drop_negative(stemmed, doc_tok, doc_sent, sent_tok)
                stemmed = stemmed[:ntok]
                sent_tok = sent_tok[: nsent + 1]
            tokens = stemmed
        return EncodedDocs(tokens, doc_tok, tokens, sent_tok, doc_sent, self.vocab.generation)

    def _encode_units(self, buf, offs):
        """Raw token ids and (doc_tok, doc_sent, sent_tok) of documents ``buf[offs[d]:offs[d+1]]``
        (UTF-8 bytes); under the lock."""
        n_docs = offs.shape[0] - 1
        start, stop = int(offs[0]), int(offs[-1])
        low, tstart, tend, tnl, sent_tok = self._scratch.get(stop - start, n_docs)
        doc_tok = np.zeros(n_docs + 1, dtype=np.int64)
        doc_sent = np.zeros(n_docs + 1, dtype=np.int64)
        ntok, nsent = _scan(buf, np.asarray(offs, dtype=np.int64), not self.ascii_only, low,
                            tstart, tend, tnl, doc_tok, doc_sent, sent_tok)
        tokens = self.vocab.ids(low, tstart[:ntok], tend[:ntok])
        return tokens, doc_tok, doc_sent, sent_tok[: nsent + 1].copy()


def text_groups(texts: list[str], units: int) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """(``ends``: code-point offsets of the texts joined, ``[(a, b), ...]``: runs of texts
    ``texts[a:b]`` of about ``units`` code units each, a longer text alone)."""
    n = len(texts)
    ends = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=n), out=ends[1:])
    groups = []
    a = 0
    while a < n:
        b = max(int(np.searchsorted(ends, ends[a] + units, side="right")) - 1, a + 1)
        groups.append((a, b))
        a = b
    return ends, groups


def check_reference_counts(n_refs: np.ndarray, n_candidates: int) -> None:
    """ValueError unless there is one reference count per candidate, each at least one."""
    if len(n_refs) != n_candidates:
        raise ValueError(f"{len(n_refs)} references for {n_candidates} candidates")
    if len(n_refs) and n_refs.min() == 0:
        raise ValueError(f"example {int(np.argmin(n_refs))} has no reference")


def _empty_docs() -> EncodedDocs:
    empty = np.zeros(0, dtype=np.int32)
    zero = np.zeros(1, dtype=np.int64)
    return EncodedDocs(empty, zero, empty, zero.copy(), zero.copy())


def _string_array(arr):
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        raise TypeError(f"expected strings, got {arr.type}")
    if arr.null_count:
        raise ValueError("null text in an Arrow column")
    return arr


def _concat_parts(parts):
    """Join groups' (tokens, doc_tok, doc_sent, sent_tok), shifting their offsets."""
    n_tok = np.cumsum([0] + [p[0].shape[0] for p in parts])
    n_sent = np.cumsum([0] + [p[3].shape[0] - 1 for p in parts])
    tokens = np.concatenate([p[0] for p in parts])
    zero = np.zeros(1, dtype=np.int64)
    doc_tok = np.concatenate([zero] + [p[1][1:] + n_tok[i] for i, p in enumerate(parts)])
    doc_sent = np.concatenate([zero] + [p[2][1:] + n_sent[i] for i, p in enumerate(parts)])
    sent_tok = np.concatenate([p[3][:-1] + n_tok[i] for i, p in enumerate(parts)]
                              + [np.array([n_tok[-1]], dtype=np.int64)])
    return tokens, doc_tok, doc_sent, sent_tok


class _Scratch:
    """Working arrays of the two passes, kept between batches: fresh multi-megabyte
    arrays cost a page fault per 4 KiB on first touch, which measured as much as the
    scan itself.  Arrays for batches over ``KEEP_UNITS`` code units are dropped after
    the batch (only the pages a batch touches are resident: about 3-4 bytes per unit)."""

    KEEP_UNITS = 16 << 20

    def __init__(self):
        self._n = -1
        self._cap = -1
        self._arrays = None

    def get(self, n: int, n_docs: int):
        """(low, tstart, tend, tnl, sent_tok) for ``n`` code units in ``n_docs`` documents: a
        document of k units holds at most (k + 1) // 2 tokens (and sentences)."""
        cap = n // 2 + n_docs + 2
        if n > self._n or cap > self._cap:
            n_alloc = max(n, min(int(1.25 * self._n), self.KEEP_UNITS))
            cap = max(cap, n_alloc // 2 + n_docs + 2)
            # low is padded to whole words (plus one) for _load's two aligned reads
            low = np.zeros(((n_alloc + 7) >> 3) + 2, dtype=np.uint64).view(np.uint8)
            self._arrays = (low, np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64),
                            np.empty(cap, dtype=np.uint8), np.empty(cap + 1, dtype=np.int64))
            self._n = n_alloc
            self._cap = cap
        return self._arrays

    def release(self) -> None:
        if self._n > self.KEEP_UNITS:
            self.__init__()


# a batch tokenizer's (``tokenize_batch``) marks: after every line, after every text
LINE_MARK, DOC_MARK = "\n", "\x00"
_BREAK, _END = -3, -4


@njit(cache=True, nogil=True)
def _split_marked(flat, doc_raw):
    """Flat ids with ``_BREAK`` at line ends -> (tokens, doc_tok, sent_tok, doc_sent); document
    ``d`` is ``flat[doc_raw[d]:doc_raw[d+1]]``.  Sentences are the lines with at least one
    token (empty sentences change no count); other negative ids are skipped."""
    n_docs = doc_raw.shape[0] - 1
    n_tok = 0
    n_sent = 0
    for d in range(n_docs):
        run = 0
        for i in range(doc_raw[d], doc_raw[d + 1]):
            if flat[i] >= 0:
                n_tok += 1
                run += 1
            elif flat[i] == _BREAK and run > 0:
                n_sent += 1
                run = 0
        if run > 0:
            n_sent += 1
    tokens = np.empty(n_tok, dtype=np.int32)
    doc_tok = np.empty(n_docs + 1, dtype=np.int64)
    sent_tok = np.empty(n_sent + 1, dtype=np.int64)
    doc_sent = np.empty(n_docs + 1, dtype=np.int64)
    k = 0
    s = 0
    sent_tok[0] = 0
    for d in range(n_docs):
        doc_tok[d] = k
        doc_sent[d] = s
        run = 0
        for i in range(doc_raw[d], doc_raw[d + 1]):
            v = flat[i]
            if v >= 0:
                tokens[k] = v
                k += 1
                run += 1
            elif v == _BREAK and run > 0:
                s += 1
                sent_tok[s] = k
                run = 0
        if run > 0:
            s += 1
            sent_tok[s] = k
    doc_tok[n_docs] = k
    doc_sent[n_docs] = s
    return tokens, doc_tok, sent_tok, doc_sent


def encode_marked(tokens: list[str], raw_index: dict, index: dict, token_map=None) -> EncodedDocs:
    """A batch's tokens with :data:`LINE_MARK` after each line and :data:`DOC_MARK` after each
    text -> EncodedDocs (sentences: the lines with tokens).  ``raw_index`` maps each raw
    token to the id of its form (``token_map(token)``, e.g. its stem; the token itself by
    default) in ``index``, so the per-token work is dict lookups in C."""
    raw_index.setdefault(LINE_MARK, _BREAK)
    raw_index.setdefault(DOC_MARK, _END)
    ids = list(map(raw_index.get, tokens))
    if None in ids:
        for t in set(tokens).difference(raw_index):
            form = token_map(t) if token_map is not None else t
            raw_index[t] = index.setdefault(form, len(index))
        ids = list(map(raw_index.get, tokens))
    flat = np.array(ids, dtype=np.int32) if ids else np.zeros(0, dtype=np.int32)
    ends = np.flatnonzero(flat == _END)
    doc_raw = np.zeros(ends.shape[0] + 1, dtype=np.int64)
    doc_raw[1:] = ends + 1
    tok, doc_tok, sent_tok, doc_sent = _split_marked(flat, doc_raw)
    return EncodedDocs(tok, doc_tok, tok, sent_tok, doc_sent)


def encode_with_tokenizer(
    texts: Sequence[str],
    tokenize: Callable[[str], list],
    split_sentences: Callable[[str], list[str]] | None,
    index: dict | None = None,
    compose_lines: bool = False,
) -> EncodedDocs:
    """Any tokenizer: whole-text tokens, and (when ``split_sentences`` is given) the
    tokens of each sentence tokenized on its own, as rouge-score does for rougeLsum.

    ``compose_lines``: the sentences are the text's lines and the tokenizer's tokens
    never span a newline (it declares ``tokens_never_span_newlines``), so the whole
    text's tokens are the lines' tokens in order and each text is tokenized once.
    """
    index = {} if index is None else index
    n = len(texts)
    doc_tok = np.zeros(n + 1, dtype=np.int64)
    if split_sentences is not None and compose_lines:
        flat: list[int] = []
        sent_tok = [0]
        doc_sent = np.zeros(n + 1, dtype=np.int64)
        get = index.get
        for d, text in enumerate(texts):
            for sent in split_sentences(text):
                toks = tokenize(sent)
                if toks:
                    ids = [get(t) for t in toks]
                    if None in ids:
                        ids = [index.setdefault(t, len(index)) for t in toks]
                    flat.extend(ids)
                    sent_tok.append(len(flat))
            doc_tok[d + 1] = len(flat)
            doc_sent[d + 1] = len(sent_tok) - 1
        tokens = np.asarray(flat, dtype=np.int32)
        return EncodedDocs(tokens, doc_tok, tokens, np.asarray(sent_tok, dtype=np.int64), doc_sent)
    flat = []
    for d, text in enumerate(texts):
        flat.extend(index.setdefault(t, len(index)) for t in tokenize(text))
        doc_tok[d + 1] = len(flat)
    tokens = np.asarray(flat, dtype=np.int32)
    if split_sentences is None:
        return EncodedDocs(tokens, doc_tok, tokens, np.zeros(1, np.int64), np.zeros(n + 1, np.int64))
    sflat: list[int] = []
    sent_tok = [0]
    doc_sent = np.zeros(n + 1, dtype=np.int64)
    for d, text in enumerate(texts):
        for sent in split_sentences(text):
            toks = tokenize(sent)
            if toks:
                sflat.extend(index.setdefault(t, len(index)) for t in toks)
                sent_tok.append(len(sflat))
        doc_sent[d + 1] = len(sent_tok) - 1
    return EncodedDocs(tokens, doc_tok, np.asarray(sflat, dtype=np.int32),
                       np.asarray(sent_tok, dtype=np.int64), doc_sent)
