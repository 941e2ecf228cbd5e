"""Pass 1 of the default (rouge-score) tokenizer: UTF-8 bytes (:func:`scan_tokens`) or a
str's code points (:func:`scan_str`) -> lowercased token bytes, token bounds and sentence
starts, eight ASCII units at a time (see :mod:`pipeline.text.encoder` for the whole path).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from pipeline.text.intrinsics import HIGH, get_code_point, load_u64, read8, store_u64

# code point < 128 -> lowercase token byte, or 0 (separator), 1 (newline: sentence end).
# Every code point >= 0x80 separates except the two whose lowercase is ASCII
# alphanumeric, which the scan maps itself.
_BYTE_CLASS = np.zeros(256, dtype=np.uint8)
for _b in b"abcdefghijklmnopqrstuvwxyz0123456789":
    _BYTE_CLASS[_b] = _b
for _b in b"ABCDEFGHIJKLMNOPQRSTUVWXYZ":
    _BYTE_CLASS[_b] = _b + 32
_BYTE_CLASS[ord("\n")] = 1

_ONES = np.uint64(0x0101010101010101)
_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_GATHER = np.uint64(0x0102040810204080)  # byte k's lowest bit -> bit 56 + k of the product
_CTZ8 = np.array([0] + [(k & -k).bit_length() - 1 for k in range(1, 256)], dtype=np.int64)
_POP8 = np.array([bin(k).count("1") for k in range(256)], dtype=np.int64)


@njit(cache=True, nogil=True, inline="always")
def _ge(x, c):
    """High bit of every byte of ``x`` (all bytes < 0x80) set iff that byte is >= ``c``."""
    return x + (_ONES * np.uint64(0x80 - c))


@njit(cache=True, nogil=True)
def scan_tokens(buf, offs, lower_to_ascii, low, tstart, tend, nl_tok, doc_tok, doc_sent, sent_tok):
    """Pass 1 over documents ``buf[offs[d]:offs[d+1]]`` of UTF-8 bytes: every code
    unit's class goes to ``low`` (token byte lowercased, or 0/1), each token's start and end
    in ``low`` to ``tstart``/``tend``, then sentence starts and document ends are recorded.

    ``lower_to_ascii``: map the two code points whose ``str.lower()`` is ASCII alphanumeric
    (rouge-score); False: they separate like every other non-ASCII unit (ROUGE-1.5.5).
    Input is read eight bytes at a time while they are ASCII: the bytes are classified
    and lowercased as one 64-bit word (SWAR), and token starts and ends come from the word's
    8-bit mask of token bytes.  Any other unit goes one at a time, branch-free (token starts
    and ends are counted and stored unconditionally, since a branch per token end
    mispredicts once a word).  ``nl_tok[1:]``: for the newlines, the index of the token that
    follows each (a sentence may start there), increasing (a repeat is not kept), noted while
    scanning so that sentences are found without a pass over the tokens.  Returns (n_tokens,
    n_sentences).
    """
    w = 0
    ntok = 0
    nend = 0
    nl_tok[0] = -1  # so that the first newline's token is kept
    nnl = 1
    for d in range(offs.shape[0] - 1):
        end = offs[d + 1]
        prev = 0
        skip = 0
        i = offs[d]
        while i < end:
            if skip == 0 and i + 8 <= end:
                x = load_u64(buf, i)
                if (x & HIGH) == 0:
                    ntok, nend, prev, nnl = _word(x, w, prev, ntok, nend, nnl, low, tstart, tend, nl_tok)
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
            ntok, nend, prev, nnl = _unit(c, brk, w, prev, ntok, nend, nnl, tstart, tend, nl_tok, low)
            w += 1
            i += 1
        if prev:
            tend[nend] = w
            nend += 1
        doc_tok[d + 1] = ntok
    return ntok, _sentences(ntok, nl_tok, nnl, doc_tok, doc_sent, sent_tok)


@njit(cache=True, nogil=True)
def scan_str(text, offs, lower_to_ascii, low, tstart, tend, nl_tok, doc_tok, doc_sent, sent_tok):
    """:func:`scan_tokens` over the documents ``text[offs[d]:offs[d+1]]`` of a str (offsets in
    code points), read in place from its 1-, 2- or 4-byte buffer: runs of eight ASCII code
    units are packed into one word and classified as in :func:`scan_tokens`, other code
    points go one at a time (``low`` gets one unit per code point)."""
    kind = text._kind
    data = text._data
    w = 0
    ntok = 0
    nend = 0
    nl_tok[0] = -1
    nnl = 1
    for d in range(offs.shape[0] - 1):
        end = offs[d + 1]
        prev = 0
        i = offs[d]
        while i < end:
            if i + 8 <= end:
                ok, x = read8(data, kind, i)
                if ok:
                    ntok, nend, prev, nnl = _word(x, w, prev, ntok, nend, nnl, low, tstart, tend, nl_tok)
                    w += 8
                    i += 8
                    continue
            cp = get_code_point(text, i)
            brk = False
            if cp < 128:
                c = _BYTE_CLASS[cp]
            elif lower_to_ascii and cp == 0x212A:
                c = np.uint8(107)  # KELVIN SIGN lowercases to "k"
            elif lower_to_ascii and cp == 0x130:
                c = np.uint8(105)  # U+0130 lowercases to "i" + U+0307: "i", then the token ends
                brk = True
            else:
                c = np.uint8(0)
            ntok, nend, prev, nnl = _unit(c, brk, w, prev, ntok, nend, nnl, tstart, tend, nl_tok, low)
            w += 1
            i += 1
        if prev:
            tend[nend] = w
            nend += 1
        doc_tok[d + 1] = ntok
    return ntok, _sentences(ntok, nl_tok, nnl, doc_tok, doc_sent, sent_tok)


@njit(cache=True, nogil=True, inline="always")
def _unit(c, brk, w, prev, ntok, nend, nnl, tstart, tend, nl_tok, low):
    """One code unit of class ``c`` at ``low[w]`` (``brk``: a token ends after it): its token
    start and end and a newline recorded, branch-free.  Returns (ntok, nend, prev, nnl)."""
    low[w] = c
    t = np.int64(c > 1)
    tstart[ntok] = w
    ntok += t & (1 - prev)
    nl_tok[nnl] = ntok  # a newline: the next token starts a sentence
    nnl += np.int64(c == 1) & np.int64(ntok > nl_tok[nnl - 1])
    tend[nend] = w
    nend += prev & (1 - t)
    prev = t
    if brk:
        tend[nend] = w + 1
        nend += 1
        prev = 0
    return ntok, nend, prev, nnl


@njit(cache=True, nogil=True, inline="always")
def _word(x, w, prev, ntok, nend, nnl, low, tstart, tend, nl_tok):
    """Eight ASCII units ``x`` at ``low[w:w+8]``: classified, lowercased and stored, their
    token starts and ends and newlines recorded.  Returns (ntok, nend, prev, nnl)."""
    upper = _ge(x, 0x41) & ~_ge(x, 0x5B) & HIGH
    x |= upper >> np.uint64(2)  # A-Z -> a-z
    tok = ((_ge(x, 0x30) & ~_ge(x, 0x3A)) | (_ge(x, 0x61) & ~_ge(x, 0x7B))) & HIGH
    y = x ^ (_ONES * np.uint64(0x0A))  # newline bytes -> 0
    nl = ~((((y & _LOW7) + _LOW7) | y)) & HIGH
    out = (x & ((tok >> np.uint64(7)) * np.uint64(0xFF))) | (nl >> np.uint64(7))
    store_u64(low, w, out)  # w + 8 <= i + 8 - offs[0]: within low
    bm = np.int64((((tok >> np.uint64(7)) * _GATHER) >> np.uint64(56)) & np.uint64(0xFF))
    nlm = np.int64((((nl >> np.uint64(7)) * _GATHER) >> np.uint64(56)) & np.uint64(0xFF))
    before = ((bm << 1) | prev) & 0xFF  # bit k: unit k - 1 is a token byte
    starts = bm & ~before
    ends = before & ~bm
    while nlm:  # the token after each newline: those starting before it in the word come first
        v = ntok + _POP8[starts & ((1 << _CTZ8[nlm]) - 1)]
        nl_tok[nnl] = v
        nnl += np.int64(v > nl_tok[nnl - 1])
        nlm &= nlm - 1
    return (_store_positions(tstart, ntok, w, starts), _store_positions(tend, nend, w, ends), (bm >> 7) & 1,
            nnl)


@njit(cache=True, nogil=True, inline="always")
def _store_positions(out, n, w, bits):
    """``w`` plus each set bit's position in ``bits`` (8 bits) stored at ``out[n:]``; returns the new
    count.  The first two are stored unconditionally, so ``out[n + 1]`` must exist (a loop's exit
    mispredicts about once a word); a third or fourth is rare."""
    k = _POP8[bits]
    out[n] = w + _CTZ8[bits]
    rest = bits & (bits - 1)
    out[n + 1] = w + _CTZ8[rest]
    if k > 2:
        rest &= rest - 1
        q = n + 2
        while rest:
            out[q] = w + _CTZ8[rest]
            q += 1
            rest &= rest - 1
    return n + k


@njit(cache=True, nogil=True, inline="always")
def _sentences(ntok, nl_tok, nnl, doc_tok, doc_sent, sent_tok):
    """Sentence starts; returns the number of sentences.  A token starts a sentence when it is
    its document's first or a newline lies between it and the token before: the tokens after
    newlines (``nl_tok[1:nnl]``, increasing) that fall inside a document after its first."""
    nsent = 0
    j = 1
    for d in range(doc_tok.shape[0] - 1):
        t0 = doc_tok[d]
        t1 = doc_tok[d + 1]
        if t0 < t1:
            sent_tok[nsent] = t0
            nsent += 1
            while j < nnl and nl_tok[j] <= t0:
                j += 1
            while j < nnl and nl_tok[j] < t1:
                sent_tok[nsent] = nl_tok[j]
                nsent += 1
                j += 1
        doc_sent[d + 1] = nsent
    sent_tok[nsent] = ntok
    return nsent


class Scratch:
    """Working arrays of the two passes, kept between batches: fresh multi-megabyte
    arrays cost a page fault per 4 KiB on first touch, which measured as much as the
    scan itself.  Arrays for batches over ``KEEP_UNITS`` code units are dropped after
    the batch (only the pages a batch touches are resident: about 3-4 bytes per unit)."""

    KEEP_UNITS = 16 << 20

    def __init__(self):
        self._n = -1
        self._cap = -1
        self._arrays = None

    def get(self, n: int, n_docs: int, per_unit: bool = False):
        """(low, tstart, tend, nl_tok, sent_tok) for ``n`` code units in ``n_docs`` documents: a
        document of k UTF-8 bytes holds at most (k + 1) // 2 tokens (and sentences); of k str
        units (``per_unit``) at most k, since U+0130 is one unit and a whole token ("i", then a
        break).  Two more slots: the scan stores a word's second start and end unconditionally."""
        per = 1 if per_unit else 2  # units a token takes at least
        cap = n // per + n_docs + 2
        if n > self._n or cap > self._cap:
            n_alloc = max(n, min(int(1.25 * self._n), self.KEEP_UNITS))
            cap = max(cap, n_alloc // per + n_docs + 2)
            # low is padded to whole words (plus one) for the vocabulary's two aligned reads per token
            low = np.zeros(((n_alloc + 7) >> 3) + 2, dtype=np.uint64).view(np.uint8)
            self._arrays = (low, np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64),
                            np.empty(cap + 1, dtype=np.int64), np.empty(cap + 1, dtype=np.int64))
            self._n = n_alloc
            self._cap = cap
        return self._arrays

    def release(self) -> None:
        if self._n > self.KEEP_UNITS:
            self.__init__()
