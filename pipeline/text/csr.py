"""The CSR layout of tokenized documents (:class:`EncodedDocs`) and the compiled operations
on it that every encoder shares: gathering, concatenating, id mapping, dropping tokens,
and splitting a marked token stream into documents and sentences.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from pipeline.text.intrinsics import load_u64

_GOLD = np.uint64(0x9E3779B97F4A7C15)
_PRIME = np.uint64(0xC2B2AE3D27D4EB4F)  # odd: multiplying mixes every bit upward


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


# a batch tokenizer's (``tokenize_batch``) marks: after every line, after every text
LINE_MARK, DOC_MARK = "\n", "\x00"
BREAK, END = -3, -4


@njit(cache=True, nogil=True, inline="always")
def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@njit(cache=True, nogil=True, inline="always")
def text_hash(buf, s, length):
    """A 64-bit hash of all the bytes ``buf[s:s+length]`` (equal texts, equal hashes; a match is
    confirmed byte for byte by every caller).  Four independent lanes of 8 bytes: one lane's
    multiply chain would bound the speed."""
    h0 = np.uint64(length) * _GOLD
    h1 = h0 ^ np.uint64(0x243F6A8885A308D3)
    h2 = h0 ^ np.uint64(0x13198A2E03707344)
    h3 = h0 ^ np.uint64(0xA4093822299F31D0)
    q = s
    end = s + length
    while q + 32 <= end:
        h0 = (h0 ^ load_u64(buf, q)) * _PRIME
        h1 = (h1 ^ load_u64(buf, q + 8)) * _PRIME
        h2 = (h2 ^ load_u64(buf, q + 16)) * _PRIME
        h3 = (h3 ^ load_u64(buf, q + 24)) * _PRIME
        h0 ^= h0 >> np.uint64(29)
        h1 ^= h1 >> np.uint64(29)
        h2 ^= h2 >> np.uint64(29)
        h3 ^= h3 >> np.uint64(29)
        q += 32
    h = (h0 ^ _rotl(h1, 17) ^ _rotl(h2, 31) ^ _rotl(h3, 47)) * _PRIME
    while q + 8 <= end:
        h = (h ^ load_u64(buf, q)) * _PRIME
        h ^= h >> np.uint64(29)
        q += 8
    while q < end:
        h = (h ^ np.uint64(buf[q])) * _PRIME
        q += 1
    return h ^ (h >> np.uint64(32))


@njit(cache=True, nogil=True)
def compact_texts(buf, offs, keep):
    """Texts ``keep`` of ``buf``/``offs`` copied next to each other: (bytes, offsets)."""
    total = 0
    for k in keep:
        total += offs[k + 1] - offs[k]
    out = np.empty(max(total, 1), dtype=np.uint8)
    out_offs = np.zeros(keep.shape[0] + 1, dtype=np.int64)
    o = 0
    for i in range(keep.shape[0]):
        k = keep[i]
        for q in range(offs[k], offs[k + 1]):
            out[o] = buf[q]
            o += 1
        out_offs[i + 1] = o
    return out, out_offs


@njit(cache=True, nogil=True, inline="always")
def _new_stream(n_docs, n_tok, n_sent):
    """Empty (tokens, doc_tok, doc_sent, sent_tok) for ``n_docs`` documents of ``n_tok`` tokens and
    ``n_sent`` sentences."""
    return (np.empty(n_tok, dtype=np.int32), np.zeros(n_docs + 1, dtype=np.int64),
            np.zeros(n_docs + 1, dtype=np.int64), np.empty(n_sent + 1, dtype=np.int64))


@njit(cache=True, nogil=True, inline="always")
def _copy_doc(tok, dt, ds, st, k, tokens, sent_tok, t, ns):
    """Document ``k`` of a stream appended at token ``t`` and sentence ``ns``; returns the next (t, ns)."""
    base = t - dt[k]
    for s in range(ds[k], ds[k + 1]):
        sent_tok[ns] = st[s] + base
        ns += 1
    m = dt[k + 1] - dt[k]
    tokens[t:t + m] = tok[dt[k]:dt[k + 1]]
    return t + m, ns


@njit(cache=True, nogil=True)
def gather_docs(tok, doc_tok, sent_toks, sent_tok, doc_sent, same_stream, index):
    """Documents ``index[d]`` of a CSR stream, in that order (a document may repeat): (tokens,
    doc_tok, sentence tokens, sent_tok, doc_sent); with ``same_stream`` the sentences index the
    tokens and the sentence tokens returned are empty."""
    # each document's bounds in the stream its sentences index
    sdoc_tok = doc_tok if same_stream else sent_tok[doc_sent]
    n = index.shape[0]
    n_tok = 0
    n_sent = 0
    n_stok = 0
    for d in range(n):
        k = index[d]
        n_tok += doc_tok[k + 1] - doc_tok[k]
        n_sent += doc_sent[k + 1] - doc_sent[k]
        if not same_stream:
            n_stok += sdoc_tok[k + 1] - sdoc_tok[k]
    tokens, out_doc_tok, out_doc_sent, out_sent_tok = _new_stream(n, n_tok, n_sent)
    stokens = np.empty(n_stok, dtype=np.int32)
    t = 0
    st = 0
    ns = 0
    for d in range(n):
        k = index[d]
        if same_stream:
            t, ns = _copy_doc(tok, doc_tok, doc_sent, sent_tok, k, tokens, out_sent_tok, t, ns)
        else:  # the sentences copied with their own tokens, then the document's tokens
            st, ns = _copy_doc(sent_toks, sdoc_tok, doc_sent, sent_tok, k, stokens, out_sent_tok, st, ns)
            for q in range(doc_tok[k], doc_tok[k + 1]):
                tokens[t] = tok[q]
                t += 1
        out_doc_tok[d + 1] = t
        out_doc_sent[d + 1] = ns
    out_sent_tok[ns] = t if same_stream else st
    return tokens, out_doc_tok, stokens, out_sent_tok, out_doc_sent


def gather(enc: EncodedDocs, index: np.ndarray) -> EncodedDocs:
    """Documents ``index[d]`` of ``enc`` as a new :class:`EncodedDocs` (documents may repeat)."""
    same = enc.same_stream
    tokens, doc_tok, stokens, sent_tok, doc_sent = gather_docs(
        enc.tokens, enc.doc_tok, enc.sent_tokens, enc.sent_tok, enc.doc_sent, same,
        np.asarray(index, dtype=np.int64))
    return EncodedDocs(tokens, doc_tok, tokens if same else stokens, sent_tok, doc_sent, enc.generation)


@njit(cache=True, nogil=True, inline="always")
def _size_of(a_doc_tok, a_doc_sent, b_doc_tok, b_doc_sent, w):
    """(tokens, sentences) of document ``w`` of stream ``a`` if ``w >= 0``, else ``-w-1`` of ``b``."""
    if w >= 0:
        return a_doc_tok[w + 1] - a_doc_tok[w], a_doc_sent[w + 1] - a_doc_sent[w]
    w = -w - 1
    return b_doc_tok[w + 1] - b_doc_tok[w], b_doc_sent[w + 1] - b_doc_sent[w]


@njit(cache=True, nogil=True, inline="always")
def _start_blocks(c_tok, c_doc_tok, c_doc_sent, c_sent_tok, n_refs, n_tok, n_sent):
    """The block layout's arrays for the candidates of stream ``c`` and ``n_refs`` references of
    ``n_tok`` tokens and ``n_sent`` sentences, the candidates copied in: (tokens, doc_tok,
    doc_sent, sent_tok, tokens written, sentences written)."""
    n = c_doc_tok.shape[0] - 1
    ct = c_doc_tok[n] - c_doc_tok[0]
    cs = c_doc_sent[n] - c_doc_sent[0]
    tokens, doc_tok, doc_sent, sent_tok = _new_stream(n + n_refs, ct + n_tok, cs + n_sent)
    tokens[:ct] = c_tok[c_doc_tok[0]:c_doc_tok[n]]
    for d in range(n + 1):
        doc_tok[d] = c_doc_tok[d] - c_doc_tok[0]
        doc_sent[d] = c_doc_sent[d] - c_doc_sent[0]
    for s in range(cs):
        sent_tok[s] = c_sent_tok[c_doc_sent[0] + s] - c_doc_tok[0]
    return tokens, doc_tok, doc_sent, sent_tok, ct, cs


@njit(cache=True, nogil=True)
def gather_layout(c_tok, c_doc_tok, c_doc_sent, c_sent_tok, a_tok, a_doc_tok, a_doc_sent, a_sent_tok,
                  b_tok, b_doc_tok, b_doc_sent, b_sent_tok, where):
    """The block layout (every candidate, then every reference) in one pass: the candidates are
    the documents of stream ``c``, and reference ``k`` is document ``where[k]`` of stream ``a``
    (the cache) if it is >= 0, else document ``-where[k]-1`` of stream ``b`` (texts scanned in
    this batch).  Returns (tokens, doc_tok, doc_sent, sent_tok)."""
    n = c_doc_tok.shape[0] - 1
    n_tok = 0
    n_sent = 0
    for k in range(where.shape[0]):
        dt, dsn = _size_of(a_doc_tok, a_doc_sent, b_doc_tok, b_doc_sent, where[k])
        n_tok += dt
        n_sent += dsn
    tokens, doc_tok, doc_sent, sent_tok, t, ns = _start_blocks(c_tok, c_doc_tok, c_doc_sent, c_sent_tok,
                                                               where.shape[0], n_tok, n_sent)
    d = n
    for k in range(where.shape[0]):
        # the branch here, not in a helper: an inlined helper choosing the stream compiles to a
        # loop twice as slow
        w = where[k]
        if w >= 0:
            t, ns = _copy_doc(a_tok, a_doc_tok, a_doc_sent, a_sent_tok, w, tokens, sent_tok, t, ns)
        else:
            t, ns = _copy_doc(b_tok, b_doc_tok, b_doc_sent, b_sent_tok, -w - 1, tokens, sent_tok, t, ns)
        d += 1
        doc_tok[d] = t
        doc_sent[d] = ns
    sent_tok[ns] = t
    return tokens, doc_tok, doc_sent, sent_tok


@njit(cache=True, nogil=True)
def append_run(c_tok, c_doc_tok, c_doc_sent, c_sent_tok, a_tok, a_doc_tok, a_doc_sent, a_sent_tok, w0, n_refs):
    """The block layout of the candidates of stream ``c`` and references that are the consecutive
    documents ``w0 .. w0+n_refs-1`` of stream ``a`` (the cache): two slice copies and the offsets
    shifted.  Returns (tokens, doc_tok, doc_sent, sent_tok)."""
    w1 = w0 + n_refs
    t0 = a_doc_tok[w0]
    s0 = a_doc_sent[w0]
    n_tok = a_doc_tok[w1] - t0
    n_sent = a_doc_sent[w1] - s0
    tokens, doc_tok, doc_sent, sent_tok, t, ns = _start_blocks(c_tok, c_doc_tok, c_doc_sent, c_sent_tok,
                                                               n_refs, n_tok, n_sent)
    tokens[t:t + n_tok] = a_tok[t0:t0 + n_tok]
    n = c_doc_tok.shape[0] - 1
    for k in range(1, n_refs + 1):
        doc_tok[n + k] = a_doc_tok[w0 + k] - t0 + t
        doc_sent[n + k] = a_doc_sent[w0 + k] - s0 + ns
    for s in range(n_sent):
        sent_tok[ns + s] = a_sent_tok[s0 + s] - t0 + t
    sent_tok[ns + n_sent] = t + n_tok
    return tokens, doc_tok, doc_sent, sent_tok


@njit(cache=True, nogil=True)
def gather_two(a_tok, a_doc_tok, a_doc_sent, a_sent_tok, b_tok, b_doc_tok, b_doc_sent, b_sent_tok, where):
    """Document ``d``: document ``where[d]`` of stream ``a`` if it is >= 0, else document
    ``-where[d]-1`` of stream ``b`` (documents may repeat; sentences index the tokens).
    Returns (tokens, doc_tok, doc_sent, sent_tok)."""
    n = where.shape[0]
    n_tok = 0
    n_sent = 0
    for d in range(n):
        dt, dsn = _size_of(a_doc_tok, a_doc_sent, b_doc_tok, b_doc_sent, where[d])
        n_tok += dt
        n_sent += dsn
    tokens, doc_tok, doc_sent, sent_tok = _new_stream(n, n_tok, n_sent)
    t = 0
    ns = 0
    for d in range(n):
        w = where[d]
        if w >= 0:
            t, ns = _copy_doc(a_tok, a_doc_tok, a_doc_sent, a_sent_tok, w, tokens, sent_tok, t, ns)
        else:
            t, ns = _copy_doc(b_tok, b_doc_tok, b_doc_sent, b_sent_tok, -w - 1, tokens, sent_tok, t, ns)
        doc_tok[d + 1] = t
        doc_sent[d + 1] = ns
    sent_tok[ns] = t
    return tokens, doc_tok, doc_sent, sent_tok


@njit(cache=True, nogil=True)
def map_ids(tokens, id_map, out):
    """out[i] = id_map[tokens[i]]; returns how many mapped to -1 (invalid tokens)."""
    dropped = 0
    for i in range(tokens.shape[0]):
        v = id_map[tokens[i]]
        out[i] = v
        if v < 0:
            dropped += 1
    return dropped


@njit(cache=True, nogil=True)
def drop_negative(tokens, doc_tok, doc_sent, sent_tok):
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


def text_groups(texts: list[str], units: int) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """(``ends``: code-point offsets of the texts joined, :func:`runs` of them)."""
    n = len(texts)
    ends = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=n), out=ends[1:])
    return ends, ([(0, n)] if 0 < n and ends[n] <= units else runs(ends, units))  # one group: no search


def runs(ends: np.ndarray, units: int) -> list[tuple[int, int]]:
    """``[(a, b), ...]``: runs of documents ``a:b`` (document ``d`` spans ``ends[d]:ends[d+1]``)
    of about ``units`` units each, a longer document alone."""
    n = ends.shape[0] - 1
    groups = []
    a = 0
    while a < n:
        b = max(int(np.searchsorted(ends, ends[a] + units, side="right")) - 1, a + 1)
        groups.append((a, b))
        a = b
    return groups


def check_reference_counts(n_refs: np.ndarray, n_candidates: int) -> None:
    """ValueError unless there is one reference count per candidate, each at least one."""
    if len(n_refs) != n_candidates:
        raise ValueError(f"{len(n_refs)} references for {n_candidates} candidates")
    if len(n_refs) and n_refs.min() < 1:
        raise ValueError(f"example {int(np.argmin(n_refs))} has no reference")


def empty_docs() -> EncodedDocs:
    empty = np.zeros(0, dtype=np.int32)
    zero = np.zeros(1, dtype=np.int64)
    return EncodedDocs(empty, zero, empty, zero.copy(), zero.copy())


def concat_parts(parts):
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


@njit(cache=True, nogil=True)
def split_marked(flat, doc_raw):
    """Flat ids with ``BREAK`` at line ends -> (tokens, doc_tok, sent_tok, doc_sent); document
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
            elif flat[i] == BREAK and run > 0:
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
            elif v == BREAK and run > 0:
                s += 1
                sent_tok[s] = k
                run = 0
        if run > 0:
            s += 1
            sent_tok[s] = k
    doc_tok[n_docs] = k
    doc_sent[n_docs] = s
    return tokens, doc_tok, sent_tok, doc_sent
