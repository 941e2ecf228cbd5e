"""The ``unicode`` profile's compiled batch path: :class:`UnicodeTokenizer`'s tokens, as ids.

:class:`~pipeline.text.unicode.UnicodeTokenizer` (``normalize`` then one ``regex``
pattern) is the specification; this module gives the same tokens for a whole batch of
texts without a Python object per token or per character:

1. The texts are joined with NUL (a NUL inside a text becomes a space first, as in the
   specification's batch form), and :func:`_scan_unicode`, a numba kernel, reads that
   str's own buffer once.
2. **Normalization** (NFKC, tr/az casing, case folding) happens in the kernel through
   per-code-point tables computed from Python's own ``unicodedata`` and ``str.casefold``
   (:func:`scan_tables`).  NFKC is context-free except around code points that can
   combine with what precedes them (nonzero combining class, or the second part of a
   canonical composition: ``UNSAFE``).  So the batch splits before every other code
   point, each one-code-point piece becomes its table entry, and the rare longer pieces
   (a letter followed by combining marks, e.g. a decomposed ``i̇``) are found by
   :func:`_find_chunks` and normalized by ``unicodedata`` itself in one call.  Case
   folding is per code point; the tr/az removal of U+0307 after ``i`` is done on the
   kernel's output stream, as ``str.replace`` would.
3. **Splitting**: the class of every code point (word, CJK, Thai-script, newline, NUL,
   separator) comes from the ``regex`` module applied to the specification's own
   character sets (:func:`class_table`), so membership cannot drift from the pattern's.
   Runs of word code points are tokens, a CJK code point is a token by itself,
   everything else separates: outside Thai, Lao, Khmer and Myanmar that is exactly what
   the specification's pattern matches.  Token code points are written as UTF-8 into a
   byte buffer, with token bounds, sentence starts (a newline since the last token) and
   document ends in :mod:`pipeline.text.csr`'s layout.
4. **Ids**: token bytes -> dense ids by the default encoder's tables
   (:class:`pipeline.text.vocabulary.Vocabulary`, verified byte for byte past 16 bytes);
   with stemming each distinct new token is decoded and stemmed once (``Vocabulary.stem_map``).

A text holding a Thai, Lao, Khmer or Myanmar letter or mark needs UAX #29 grapheme
clusters (``\\X``), which the kernel does not implement: it flags the text and drops
its tokens, the text is tokenized by the specification's pattern, and its tokens get
ids from the same vocabulary and are put back in order.
"""
from __future__ import annotations

import threading
import unicodedata
from functools import lru_cache

import numpy as np
import regex
from numba import njit

from pipeline.text import csr, unicode_rules
from pipeline.text.csr import (EncodedDocs, concat_parts, drop_negative, empty_docs, gather_two, map_ids,
                               split_marked, text_groups)
from pipeline.text.intrinsics import get_code_point, put_utf8
from pipeline.text.unicode_rules import MARKED_PATTERN, fold
from pipeline.text.vocabulary import Vocabulary

# code point classes (low three bits of a table entry); a class >= WORD is part of a token
SEP, LINE, END, SEA, WORD, CJK = 0, 1, 2, 3, 4, 5
CLASS_MASK = 7
MAPPED = 8  # normalizes to something else (map_keys / map_offs / map_seq)
UNSAFE = 16  # NFKC may combine it with the code points before it
N_CODE_POINTS = 0x110000
_BLOCK = 256

_MARKS = {"\n": csr.BREAK, "\x00": csr.END}  # the pattern's line and text marks -> split_marked's

AVAILABLE = get_code_point is not None  # the scan reads str buffers through numba's accessor


def _every_code_point() -> str:
    return np.arange(N_CODE_POINTS, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")


@lru_cache(maxsize=None)
def class_table() -> np.ndarray:
    """Class of every code point (uint8, read-only), from the specification's sets by the
    ``regex`` module itself."""
    every = _every_code_point()
    table = np.zeros(N_CODE_POINTS, dtype=np.uint8)
    # later classes win: the pattern tries a CJK character first, then a Thai-script grapheme,
    # then a word (the sets are disjoint today; the order keeps that precedence if they were not)
    for cls, pattern in ((WORD, unicode_rules.WORD), (SEA, rf"[{unicode_rules.SEA}]+"),
                         (CJK, rf"[{unicode_rules.CJK}]+")):
        for m in regex.finditer(rf"(?V1){pattern}", every):
            table[m.start():m.end()] = cls
    table[ord("\n")] = LINE
    table[0] = END
    table.flags.writeable = False
    return table


@lru_cache(maxsize=2)
def scan_tables(turkic: bool):
    """(table, map_keys, map_offs, map_seq) for :func:`_scan_unicode`: ``table[cp]`` is the
    class of ``cp`` plus the MAPPED and UNSAFE bits; a MAPPED ``cp`` is ``map_keys[j]`` and
    stands for ``map_seq[map_offs[j]:map_offs[j + 1]]`` (``fold(chr(cp), turkic)``).

    Only 256-code-point blocks where NFKD or folding changes something are looked at one
    code point at a time: a block equal to its own NFKD has no decomposition in it, and one
    equal to its own fold has no code point that folds to another."""
    every = _every_code_point()
    table = class_table().copy()
    ccc = np.fromiter(map(unicodedata.combining, every), dtype=np.uint8, count=N_CODE_POINTS)
    odd = []
    for b in range(0, N_CODE_POINTS, _BLOCK):
        block = every[b:b + _BLOCK]
        if unicodedata.normalize("NFKD", block) != block or fold(block, turkic) != block:
            odd.extend(range(b, b + _BLOCK))
    # second parts of canonical pairs (they compose with the code point before), and the
    # Hangul vowel and final jamo, which compose algorithmically
    second = set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))
    for cp in odd:
        parts = unicodedata.decomposition(every[cp]).split()
        if len(parts) == 2 and not parts[0].startswith("<"):
            second.add(int(parts[1], 16))
    keys, seqs = [], []
    for cp in odd:
        c = every[cp]
        f = fold(c, turkic)
        if f != c:
            keys.append(cp)
            seqs.append(f)
        # NFKC may combine a code point with what precedes it only through the first code
        # point of its decomposition: a non-starter, or the second part of a composition
        first = ord(unicodedata.normalize("NFKD", c)[0])
        if ccc[first] or first in second:
            table[cp] |= UNSAFE
    table[ccc != 0] |= UNSAFE
    table[sorted(second)] |= UNSAFE
    table[keys] |= MAPPED
    lengths = np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs))
    offs = np.zeros(len(seqs) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offs[1:])
    seq = np.frombuffer("".join(seqs).encode("utf-32-le", "surrogatepass"), dtype="<i4").astype(np.int32)
    table.flags.writeable = False
    return table, np.asarray(keys, dtype=np.int32), offs, seq


@njit(cache=True, nogil=True)
def _find_chunks(buf, table, starts, ends):
    """Spans of ``buf`` that NFKC must see whole: a code point followed by UNSAFE ones (or
    UNSAFE ones opening a document).  NFKC splits before any other code point and after a
    NUL (a starter that composes with nothing).  Capacity: len(buf) // 2 + 1.  Returns the
    number of spans."""
    k = 0
    begin = 0
    for i in range(len(buf)):
        cp = np.int64(get_code_point(buf, i))
        if table[cp] & UNSAFE:
            if i > begin:
                if k == 0 or starts[k - 1] != begin:
                    starts[k] = begin
                    k += 1
                ends[k - 1] = i + 1
        elif cp == 0:
            begin = i + 1
        else:
            begin = i
    return k


@njit(cache=True, nogil=True)
def _scan_unicode(buf, n_docs, table, turkic, map_keys, map_offs, map_seq, ch_start, ch_end, ch_offs, ch_seq,
                  slack, out, tstart, tend, sent_tok, doc_tok, doc_sent, flagged):
    """Normalizes and tokenizes the raw documents ``buf`` (a str, NUL between documents).

    Each code point is replaced by its normalized form (itself, ``map_seq`` for MAPPED ones,
    or for the spans ``ch_start[k]:ch_end[k]`` their normalization ``ch_seq[ch_offs[k]:
    ch_offs[k + 1] - 1]``); those code points are tokenized.  Writes each token's UTF-8 bytes
    to ``out`` (back to back), its byte bounds to ``tstart``/``tend``, the first token of each
    sentence (a line with tokens) to ``sent_tok`` and per-document token and sentence ends
    to ``doc_tok``/``doc_sent`` (``[0]`` = 0 set by the caller).  A document holding an SEA
    code point gets ``flagged[d] = 1`` and no tokens.

    Capacity: ``len(buf) + slack`` normalized code points (``out``: 4 bytes each,
    ``tstart``/``tend``: one each, ``sent_tok``: one more).  Returns (n_tokens, n_sentences);
    (-2, -2) when normalization outgrows ``slack``, (-1, -1) when ``buf`` does not hold
    ``n_docs`` documents.
    """
    n = len(buf)
    n_keys = map_keys.shape[0]
    n_chunks = ch_start.shape[0]
    w = 0
    ntok = 0
    nsent = 0
    d = 0
    in_word = False
    new_sent = True
    sea = False
    d_w = 0  # where the current document's output began, to drop it if it is flagged
    d_tok = 0
    d_sent = 0
    prev = np.int64(-1)  # the previous normalized code point (tr/az: U+0307 after "i")
    i = 0
    k = 0
    q = 0  # pending normalized code points: map_seq or ch_seq [q:q_end]
    q_end = 0
    from_chunk = False
    last = False
    while True:
        if q < q_end:
            cp = np.int64(ch_seq[q]) if from_chunk else np.int64(map_seq[q])
            q += 1
        elif i < n:
            cp = np.int64(get_code_point(buf, i))
            if k < n_chunks and i == ch_start[k]:
                q = ch_offs[k]
                q_end = ch_offs[k + 1] - 1
                slack -= (q_end - q) - (ch_end[k] - i)
                if slack < 0:
                    return -2, -2
                from_chunk = True
                i = ch_end[k]
                k += 1
                continue
            i += 1
            if table[cp] & MAPPED:
                lo = 0
                hi = n_keys
                while lo < hi:
                    mid = (lo + hi) >> 1
                    if map_keys[mid] < cp:
                        lo = mid + 1
                    else:
                        hi = mid
                q = map_offs[lo]
                q_end = map_offs[lo + 1]
                slack -= q_end - q - 1
                if slack < 0:
                    return -2, -2
                from_chunk = False
                continue
        else:  # the end of the buffer ends the last document
            cp = np.int64(0)
            last = True
        if turkic:
            if cp == 0x307 and prev == 0x69:
                prev = cp
                continue
            prev = cp
        c = table[cp] & CLASS_MASK
        if c >= WORD:
            if c == CJK or not in_word:
                if in_word:
                    tend[ntok] = w
                    ntok += 1
                tstart[ntok] = w
                if new_sent:
                    sent_tok[nsent] = ntok
                    nsent += 1
                    new_sent = False
                in_word = True
            w = put_utf8(out, w, cp)
            if c == CJK:  # a CJK character is a token by itself
                tend[ntok] = w
                ntok += 1
                in_word = False
            continue
        if in_word:
            tend[ntok] = w
            ntok += 1
            in_word = False
        if c == LINE:
            new_sent = True
        elif c == SEA:
            sea = True
        elif c == END:
            if d >= n_docs:
                return -1, -1
            if sea:  # graphemes needed: the caller tokenizes this document by the pattern
                flagged[d] = 1
                w, ntok, nsent = d_w, d_tok, d_sent
                sea = False
            doc_tok[d + 1] = ntok
            doc_sent[d + 1] = nsent
            d += 1
            new_sent = True
            d_w, d_tok, d_sent = w, ntok, nsent
            if last:
                break
    if d != n_docs:
        return -1, -1
    sent_tok[nsent] = ntok
    return ntok, nsent


def _merge_docs(a_tok, a_doc_tok, a_doc_sent, a_sent_tok, b_tok, b_doc_tok, b_doc_sent, b_sent_tok, b_docs):
    """Documents of stream ``a`` with those listed in ``b_docs`` (ascending; empty in ``a``)
    taken from stream ``b`` instead, in order."""
    where = np.arange(a_doc_tok.shape[0] - 1, dtype=np.int64)  # >= 0: from a; -k - 1: document k of b
    b_docs = np.asarray(b_docs, dtype=np.int64)
    where[b_docs] = -1 - np.arange(b_docs.shape[0], dtype=np.int64)
    return gather_two(a_tok, a_doc_tok, a_doc_sent, a_sent_tok, b_tok, b_doc_tok, b_doc_sent, b_sent_tok, where)


def _padded(nbytes: int) -> np.ndarray:
    # whole words plus one: _lookup_ids reads tokens as two aligned 8-byte loads
    return np.zeros(((nbytes + 7) >> 3) + 2, dtype=np.uint64).view(np.uint8)


class _Scratch:
    """The scan's output arrays, kept between batches (fresh multi-megabyte arrays cost a
    page fault per 4 KiB on first touch); dropped after a batch past ``KEEP_UNITS``."""

    KEEP_UNITS = 4 << 20

    def __init__(self):
        self._n = -1
        self._arrays = None

    def get(self, n: int):
        """(out, tstart, tend, sent_tok) for ``n`` normalized code points: each may be a
        token by itself (CJK) of up to 4 UTF-8 bytes."""
        if n > self._n:
            n_alloc = max(n, min(int(1.25 * self._n), self.KEEP_UNITS))
            self._arrays = (_padded(4 * n_alloc), np.empty(n_alloc + 1, dtype=np.int64),
                            np.empty(n_alloc + 1, dtype=np.int64), np.empty(n_alloc + 2, dtype=np.int64))
            self._n = n_alloc
        return self._arrays

    def release(self) -> None:
        if self._n > self.KEEP_UNITS:
            self.__init__()


_NO_CHUNKS = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64),
              np.zeros(0, dtype=np.int32))


class UnicodeBatchEncoder:
    """Batches of texts -> :class:`EncodedDocs` with ``tokenizer``'s tokens (``cjk="chars"``);
    the sentences are the lines with tokens.  Thread-safe (one lock); ids are consistent
    within a batch only (the vocabulary is rebuilt past ``Vocabulary.MAX_IDS``)."""

    # texts are scanned in groups of about this many code points, so the working arrays
    # stay bounded and reused
    GROUP_UNITS = 1 << 20

    def __init__(self, tokenizer):
        if tokenizer.cjk != "chars":
            raise ValueError("the compiled path tokenizes cjk='chars' only")
        self._normalize = tokenizer.normalize
        self._turkic = tokenizer.language in ("tr", "az")
        self._stem = tokenizer.stem
        # any stem is a token (as in the per-text path), so nothing is dropped
        self.vocab = Vocabulary(token_map=tokenizer.stem_token, valid_token=None)
        self._tables = scan_tables(self._turkic)
        self._scratch = _Scratch()
        self._lock = threading.Lock()

    def encode(self, texts) -> EncodedDocs:
        texts = texts if isinstance(texts, list) else list(texts)
        n_docs = len(texts)
        if n_docs == 0:
            return empty_docs()
        _, groups = text_groups(texts, self.GROUP_UNITS)
        with self._lock:
            if self.vocab.n_ids > Vocabulary.MAX_IDS:
                self.vocab.reset()
            parts = [self._encode_group(texts[a:b]) for a, b in groups]
            self._scratch.release()
            tokens, doc_tok, doc_sent, sent_tok = parts[0] if len(parts) == 1 else concat_parts(parts)
            if self._stem:
                stemmed = np.empty_like(tokens)
                if map_ids(tokens, self.vocab.stem_map(), stemmed):  # pragma: no cover - no stem is dropped
                    ntok, nsent, doc_tok, doc_sent, sent_tok = drop_negative(stemmed, doc_tok, doc_sent, sent_tok)
                    stemmed, sent_tok = stemmed[:ntok], sent_tok[: nsent + 1]
                tokens = stemmed
            return EncodedDocs(tokens, doc_tok, tokens, sent_tok, doc_sent, self.vocab.generation)

    def forms(self) -> list[str]:
        """Each id's token (its stem with stemming), by id: for tests and debugging."""
        with self._lock:
            if self._stem:
                return self.vocab.mapped_forms()
            return [self.vocab.token(i) for i in range(self.vocab.n_ids)]

    def _encode_group(self, texts: list[str]):
        n_docs = len(texts)
        joined = "\x00".join(texts)
        if joined.count("\x00") != n_docs - 1:  # a NUL inside a text is a separator there
            texts = [t.replace("\x00", " ") for t in texts]
            joined = "\x00".join(texts)
        n = len(joined)
        table, map_keys, map_offs, map_seq = self._tables
        chunks = _NO_CHUNKS
        starts = np.empty(n // 2 + 1, dtype=np.int64)
        ends = np.empty(n // 2 + 1, dtype=np.int64)
        n_chunks = _find_chunks(joined, table, starts, ends)
        if n_chunks:  # spans NFKC must see whole: unicodedata normalizes them, in one call
            starts, ends = starts[:n_chunks], ends[:n_chunks]
            pieces = "\x00".join([joined[a:b] for a, b in zip(starts.tolist(), ends.tolist())]) + "\x00"
            seq = np.frombuffer(fold(pieces, self._turkic).encode("utf-32-le", "surrogatepass"), dtype="<i4")
            offs = np.zeros(n_chunks + 1, dtype=np.int64)
            offs[1:] = np.flatnonzero(seq == 0) + 1
            chunks = (starts, ends, offs, seq.astype(np.int32))
        cap = n + n // 8 + 64  # normalized code points: NFKC and folding expand a few
        while True:
            out, tstart, tend, sent_tok = self._scratch.get(cap)
            doc_tok = np.zeros(n_docs + 1, dtype=np.int64)
            doc_sent = np.zeros(n_docs + 1, dtype=np.int64)
            flagged = np.zeros(n_docs, dtype=np.uint8)
            ntok, nsent = _scan_unicode(joined, n_docs, table, self._turkic, map_keys, map_offs, map_seq, *chunks,
                                        cap - n, out, tstart, tend, sent_tok, doc_tok, doc_sent, flagged)
            if ntok != -2:
                break
            cap *= 2
        if ntok < 0:  # pragma: no cover - the texts were joined with exactly n_docs - 1 NULs
            raise RuntimeError("the joined batch does not hold one document per text")
        tokens = self.vocab.ids(out, tstart[:ntok], tend[:ntok])
        sent_tok = sent_tok[: nsent + 1].copy()
        special = np.flatnonzero(flagged)
        if special.size:
            sub = self._by_pattern([self._normalize(texts[d]) for d in special.tolist()])
            tokens, doc_tok, doc_sent, sent_tok = _merge_docs(tokens, doc_tok, doc_sent, sent_tok, *sub, special)
        return tokens, doc_tok, doc_sent, sent_tok

    def _by_pattern(self, docs: list[str]):
        """Normalized documents tokenized by the specification's pattern (graphemes); (tokens,
        doc_tok, doc_sent, sent_tok) with ids from the same vocabulary.  Python per token:
        only texts in Thai, Lao, Khmer or Myanmar come here."""
        marked = MARKED_PATTERN.findall("\x00".join(docs) + "\x00")
        words = [t.encode("utf-8", "surrogatepass") for t in marked if t != "\n" and t != "\x00"]
        lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        tend = np.cumsum(lengths)
        tstart = tend - lengths
        data = b"".join(words)
        low = _padded(len(data))
        low[: len(data)] = np.frombuffer(data, dtype=np.uint8)
        flat = np.fromiter(map(_MARKS.get, marked, [0] * len(marked)), dtype=np.int32, count=len(marked))
        flat[flat == 0] = self.vocab.ids(low, tstart, tend)
        doc_raw = np.zeros(len(docs) + 1, dtype=np.int64)
        doc_raw[1:] = np.flatnonzero(flat == csr.END) + 1
        tok, doc_tok, sent_tok, doc_sent = split_marked(flat, doc_raw)
        return tok, doc_tok, doc_sent, sent_tok
