"""Batch encoder: many texts in, flat token-id arrays (CSR) out.

The default rouge-score tokenizer runs here as a compiled byte scan, so a batch
of texts costs one ``str.join``, one ``str.encode`` and one numba call:

1. Texts are joined with ``"\\x00"`` (a separator for rouge-score too) and
   encoded to UTF-8 (a memcpy for ASCII text).
2. The compiled scan lowercases ASCII, treats every other code point as a
   separator except the two whose lowercase is ASCII alphanumeric (U+0130 ->
   ``i`` + a break, U+212A -> ``k``), which is exactly ``str.lower`` followed by
   rouge-score's ``[^a-z0-9]+`` substitution; it splits tokens, records newline
   sentence boundaries and document boundaries, and maps each token's bytes to a dense id
   through an open-addressing hash table whose keys are verified byte for byte
   (no collision can merge two tokens).
3. Python only sees tokens it has never seen before: it stems them once (nltk
   Porter, as rouge-score) and extends the raw-id -> stem-id map.

Ids are local to a process and to a :class:`Vocabulary`; scores never depend on
them, so a vocabulary may be reset between batches to bound memory.
Custom tokenizers go through :func:`encode_with_tokenizer`, which builds the
same arrays from Python token lists.
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from numba import njit

from pipeline.text.stemming import porter_stem

_VALID_TOKEN = re.compile(r"^[a-z0-9]+$")
_DOC_SEP = "\x00"

# byte -> lowercase token byte, or 0 (separator), 1 (newline: sentence end), 2 (document end).
# Bytes >= 0x80 (UTF-8 lead and continuation bytes) separate, except the two code points
# whose lowercase is ASCII alphanumeric, handled in the scan: U+0130 (C4 B0) lowercases to
# "i" + U+0307 (so: "i", then a break) and U+212A KELVIN SIGN (E2 84 AA) to "k".
_BYTE_CLASS = np.zeros(256, dtype=np.uint8)
for _b in b"abcdefghijklmnopqrstuvwxyz0123456789":
    _BYTE_CLASS[_b] = _b
for _b in b"ABCDEFGHIJKLMNOPQRSTUVWXYZ":
    _BYTE_CLASS[_b] = _b + 32
_BYTE_CLASS[ord("\n")] = 1
_BYTE_CLASS[0] = 2

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_GOLD = np.uint64(0x9E3779B97F4A7C15)
_LONG = np.uint64(1) << np.uint64(63)


@njit(cache=True, nogil=True)
def _tokenize_bytes(buf, classes, tb, keys, tstart, tlen, doc_tok, doc_sent, sent_tok):
    """Pass 1: split the UTF-8 bytes into tokens; returns (n_tokens, n_sentences).

    Each token's lowercased bytes go to ``tb`` (at ``tstart``, ``tlen`` long) and
    its key to ``keys``: a token of at most 8 bytes is its own key (bytes packed,
    top bit 0) and needs no verification; a longer token's key is its FNV-1a hash
    with the top bit set, verified byte for byte at lookup.
    """
    n = buf.shape[0]
    ntok = 0
    nsent = 0
    doc = 0
    tpos = 0
    in_sent = False
    i = 0
    while i <= n:
        if i == n:
            c = np.uint8(2)
            b = np.uint8(0)
        else:
            b = buf[i]
            c = classes[b]
        if c > 2 or b == 0xC4 or b == 0xE2:
            start = tpos
            while True:
                while i < n:  # the common case: a run of ASCII token bytes
                    ch = classes[buf[i]]
                    if ch <= 2:
                        break
                    tb[tpos] = ch
                    tpos += 1
                    i += 1
                if i < n and buf[i] == 0xE2 and i + 2 < n and buf[i + 1] == 0x84 and buf[i + 2] == 0xAA:
                    tb[tpos] = 107  # KELVIN SIGN -> k, the token goes on
                    tpos += 1
                    i += 3
                    continue
                if i < n and buf[i] == 0xC4 and i + 1 < n and buf[i + 1] == 0xB0:
                    tb[tpos] = 105  # U+0130 -> i, then U+0307 separates
                    tpos += 1
                    i += 2
                break
            length = tpos - start
            if length == 0:  # a lone C4/E2 lead byte: a separator
                i += 1
                continue
            if length > 8:
                h = _FNV_OFFSET
                for q in range(start, tpos):
                    h = (h ^ np.uint64(tb[q])) * _FNV_PRIME
                key = h | _LONG
            else:
                key = np.uint64(0)
                for q in range(length):
                    key |= np.uint64(tb[start + q]) << np.uint64(8 * q)
            if not in_sent:
                sent_tok[nsent] = ntok
                nsent += 1
                in_sent = True
            keys[ntok] = key
            tstart[ntok] = start
            tlen[ntok] = length
            ntok += 1
            continue
        if c == 1:
            in_sent = False
        elif c == 2:
            in_sent = False
            doc += 1
            doc_tok[doc] = ntok
            doc_sent[doc] = nsent
        i += 1
    sent_tok[nsent] = ntok
    return ntok, nsent


@njit(cache=True, nogil=True)
def _lookup_ids(keys, tstart, tlen, tb, first, table, offs, arena, n_ids, out):
    """Pass 2: token keys -> dense ids, inserting new tokens; returns (status, next, n_ids).

    Kept apart from the byte scan so that the loop is short and the CPU overlaps the
    cache misses of consecutive lookups.  status 1: the vocabulary is full; the
    caller grows it and calls again from ``next``.
    """
    mask = (table.shape[0] >> 1) - 1
    for t in range(first, keys.shape[0]):
        key = keys[t]
        k = np.int64(key)
        slot = np.int64((key * _GOLD) >> np.uint64(32)) & mask
        tid = -1
        while True:
            kk = table[2 * slot]
            if kk == 0:
                break
            if kk == k:
                cand = table[2 * slot + 1]
                if k > 0:
                    tid = cand
                    break
                o = offs[cand]
                length = tlen[t]
                if offs[cand + 1] - o == length:
                    s0 = tstart[t]
                    same = True
                    for q in range(length):
                        if arena[o + q] != tb[s0 + q]:
                            same = False
                            break
                    if same:
                        tid = cand
                        break
            slot = (slot + 1) & mask
        if tid < 0:
            length = tlen[t]
            o = offs[n_ids]
            if (n_ids + 1 >= offs.shape[0] - 1 or o + length > arena.shape[0]
                    or 2 * (n_ids + 1) > (mask + 1)):
                return 1, t, n_ids
            s0 = tstart[t]
            for q in range(length):
                arena[o + q] = tb[s0 + q]
            offs[n_ids + 1] = o + length
            table[2 * slot] = k
            table[2 * slot + 1] = n_ids
            tid = n_ids
            n_ids += 1
        out[t] = tid
    return 0, keys.shape[0], n_ids


@njit(cache=True, nogil=True)
def _rehash(old, new):
    mask = (new.shape[0] >> 1) - 1
    for s in range(old.shape[0] >> 1):
        k = old[2 * s]
        if k != 0:
            slot = np.int64((np.uint64(k) * _GOLD) >> np.uint64(32)) & mask
            while new[2 * slot] != 0:
                slot = (slot + 1) & mask
            new[2 * slot] = k
            new[2 * slot + 1] = old[2 * s + 1]


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

    def __init__(self, capacity: int = 1 << 16):
        self._alloc(capacity, capacity * 8)
        self._stem_map = np.full(0, -1, dtype=np.int32)
        self._stem_index: dict[str, int] = {}
        self._stem_done = 0

    def _alloc(self, id_cap: int, arena_cap: int) -> None:
        self.n_ids = 0
        self.table = np.zeros(2 * _pow2(2 * id_cap), dtype=np.int64)
        self.offs = np.zeros(id_cap + 1, dtype=np.int64)
        self.arena = np.zeros(arena_cap, dtype=np.uint8)

    def reset(self) -> None:
        self.__init__(capacity=1 << 16)

    def grow(self) -> None:
        id_cap = 2 * (self.offs.shape[0] - 1)
        offs = np.zeros(id_cap + 1, dtype=np.int64)
        offs[: self.offs.shape[0]] = self.offs
        self.offs = offs
        self.arena = np.concatenate([self.arena, np.zeros(self.arena.shape[0], np.uint8)])
        table = np.zeros(2 * _pow2(2 * id_cap), dtype=np.int64)
        _rehash(self.table, table)
        self.table = table

    def token(self, tid: int) -> str:
        return self.arena[self.offs[tid]:self.offs[tid + 1]].tobytes().decode("ascii")

    def stem_map(self) -> np.ndarray:
        """raw id -> id of its Porter stem (rouge-score's rule), -1 if the stem is not a valid token."""
        if self._stem_done < self.n_ids:
            if self._stem_map.shape[0] < self.n_ids:
                grown = np.full(max(self.n_ids, 2 * self._stem_map.shape[0]), -1, dtype=np.int32)
                grown[: self._stem_map.shape[0]] = self._stem_map
                self._stem_map = grown
            index = self._stem_index
            for tid in range(self._stem_done, self.n_ids):
                stem = porter_stem(self.token(tid))
                if _VALID_TOKEN.match(stem):
                    self._stem_map[tid] = index.setdefault(stem, len(index))
            self._stem_done = self.n_ids
        return self._stem_map


def _pow2(n: int) -> int:
    return 1 << max(4, int(n - 1).bit_length())


class DefaultEncoder:
    """rouge-score's default tokenizer over whole batches (see module docstring)."""

    def __init__(self, use_stemmer: bool = False):
        self.use_stemmer = use_stemmer
        self.vocab = Vocabulary()
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> EncodedDocs:
        joined = _DOC_SEP.join(texts)
        if joined.count(_DOC_SEP) != max(len(texts) - 1, 0):
            # a NUL inside a text is a plain separator for rouge-score
            joined = _DOC_SEP.join(t.replace(_DOC_SEP, " ") for t in texts)
        buf = np.frombuffer(joined.encode("utf-8", "surrogatepass"), dtype=np.uint8)
        n_docs = len(texts)
        cap = buf.shape[0] // 2 + 2
        keys = np.empty(cap, dtype=np.uint64)
        tstart = np.empty(cap, dtype=np.int64)
        tlen = np.empty(cap, dtype=np.int32)
        tb = np.empty(max(buf.shape[0], 1), dtype=np.uint8)
        sent_tok = np.empty(cap + 1, dtype=np.int64)
        doc_tok = np.zeros(n_docs + 1, dtype=np.int64)
        doc_sent = np.zeros(n_docs + 1, dtype=np.int64)
        ntok, nsent = _tokenize_bytes(buf, _BYTE_CLASS, tb, keys, tstart, tlen, doc_tok, doc_sent, sent_tok)
        keys, tstart, tlen = keys[:ntok], tstart[:ntok], tlen[:ntok]
        tokens = np.empty(ntok, dtype=np.int32)
        with self._lock:
            v = self.vocab
            if v.n_ids > Vocabulary.MAX_IDS:
                v.reset()
            first = 0
            while True:
                status, first, v.n_ids = _lookup_ids(keys, tstart, tlen, tb, first, v.table, v.offs,
                                                     v.arena, v.n_ids, tokens)
                if status == 0:
                    break
                v.grow()
            sent_tok = sent_tok[: nsent + 1]
            if self.use_stemmer:
                stemmed = np.empty_like(tokens)
                if _map_ids(tokens, v.stem_map(), stemmed):
                    ntok, nsent, doc_tok, doc_sent, sent_tok = _drop_negative(stemmed, doc_tok, doc_sent, sent_tok)
                    stemmed = stemmed[:ntok]
                    sent_tok = sent_tok[: nsent + 1]
                tokens = stemmed
        return EncodedDocs(tokens, doc_tok, tokens, sent_tok, doc_sent)


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
