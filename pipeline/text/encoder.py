"""Batch encoder: many texts in, flat token-id arrays (CSR) out.

The default rouge-score tokenizer runs here as a compiled scan, so a batch of
texts costs one ``str.join`` and a few numba calls:

1. Texts are joined, and the joined str is scanned in its own 1-, 2- or 4-byte buffer
   (:func:`~pipeline.text.scan.scan_str`: no UTF-8 copy).  Arrow columns are read in their
   own UTF-8 buffers (:func:`~pipeline.text.scan.scan_tokens`), as are the references of a
   list the cache holds or that repeat (converted to UTF-8 once: the cache keeps bytes).
2. Pass 1 reads eight units at a time while they are ASCII: one 64-bit word is lowercased
   and classified without a branch per byte (SWAR), and token starts and ends and the token
   after each newline (a sentence start) come from its 8-bit masks.  Other units go one at
   a time and map the two code points whose lowercase is ASCII alphanumeric
   (U+0130 -> ``i`` + a break, U+212A -> ``k``); every other non-ASCII code point separates.  That is exactly
   ``str.lower`` followed by rouge-score's ``[^a-z0-9]+`` substitution.  Pass 2 maps each
   token to a dense id through open-addressing tables keyed by the token's own bytes (read
   as whole words), verified byte for byte above 16 bytes, so no collision can merge two
   tokens.
3. Python only sees tokens it has never seen before: it stems them once (nltk
   Porter, as rouge-score) and extends the raw-id -> stem-id map.
4. References (:meth:`DefaultEncoder.encode_examples`, :meth:`DefaultEncoder.encode_arrow`) go
   through the encoder's :class:`~pipeline.text.textcache.TextCache`: a text repeated in the
   batch is scanned once, and a text the cache keeps (every text seen in an earlier batch, task
   or call: every system of a corpus has the same references) is not scanned again, its ids,
   stemmed, are copied from the cache straight into the batch (one copy, no stem map).
   References are looked up by their UTF-8 bytes (a Python list's are converted once, from the
   str joined for the scan); a list whose references are all new (none repeats, none is held)
   is then scanned as one stream with the candidates, in the strs' own buffers, as without a
   cache, and kept from there.  A call of a few short references skips the cache.  A
   whole column of references the cache holds as consecutive entries, in order (the next
   system's column, the same texts in the same order) is found by one comparison of the
   column (its bytes; a list's strs) and copied as one slice: no text is looked up or converted.
   The batch comes out in the block layout: every candidate, then every reference, in order.

The parts live in their own modules: :mod:`~pipeline.text.intrinsics` (unaligned loads,
UTF-8 writes), :mod:`~pipeline.text.scan` (pass 1), :mod:`~pipeline.text.vocabulary`
(pass 2 and the stem map) and :mod:`~pipeline.text.csr` (:class:`EncodedDocs` and the
operations on it); this module puts them together.

Ids are local to a process and to a :class:`Vocabulary`; scores never depend on
them, so a vocabulary may be reset between batches to bound memory.
Custom tokenizers go through :func:`encode_with_tokenizer`, which builds the
same arrays from Python token lists (batch tokenizers: :func:`encode_marked`; the unicode
profile has its own scan, :mod:`pipeline.text.unicode_scan`).
"""
from __future__ import annotations

import threading
from typing import Callable, Sequence

import numpy as np

from pipeline.columns import list_values, utf8_buffers
from pipeline.text.csr import (BREAK, DOC_MARK, END, LINE_MARK, EncodedDocs, append_run, check_reference_counts,
                               compact_texts, concat_parts, drop_negative, empty_docs, gather, gather_layout,
                               map_ids, runs, split_marked, text_groups)
from pipeline.text.intrinsics import get_code_point, str_to_utf8
from pipeline.text.scan import Scratch, scan_str, scan_tokens
from pipeline.text.textcache import TextCache
from pipeline.text.vocabulary import Vocabulary

__all__ = ["DOC_MARK", "LINE_MARK", "DefaultEncoder", "EncodedDocs", "Vocabulary", "check_reference_counts",
           "encode_marked", "encode_with_tokenizer", "gather", "text_groups"]


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
        self._scratch = Scratch()
        self._lock = threading.Lock()
        # references seen before, kept across batches: a multi-system corpus scores every system
        # against the same references (bounded: TextCache.MAX_BYTES)
        self.cache = TextCache()

    # Texts are scanned in groups of about this many code units, so that the scan's working
    # arrays are reused (fresh large allocations cost a page fault per 4 KiB on first touch) and
    # bounded, and the joined str stays within tens of megabytes; a 5,000-pair batch of short
    # texts is one group (fewer calls and no concatenation).
    GROUP_UNITS = 1 << 22
    # Calls whose references are at most this many texts of this many code units in all skip the
    # reference cache (scanning ~4,000 units costs about what looking them up and keeping them does).
    FEW_REFERENCES = 16
    FEW_UNITS = 4096

    def encode(self, texts: Sequence[str]) -> EncodedDocs:
        texts = texts if isinstance(texts, list) else list(texts)
        if not texts:
            return empty_docs()
        with self._lock:
            self._check_size()
            return self._finish(*self._encode_strs(texts))

    def encode_examples(self, candidates: list[str], references: list[str], n_refs: np.ndarray) -> EncodedDocs:
        """Examples in the block layout (every candidate, then every reference): candidate ``e``
        has the next ``n_refs[e]`` texts of ``references``, which are taken from the cache of texts
        seen before (:mod:`pipeline.text.textcache`) when it holds them."""
        check_reference_counts(n_refs, len(candidates))
        if int(n_refs.sum()) != len(references):  # else the kernel would read past the batch
            raise ValueError(f"the reference counts add up to {int(n_refs.sum())}, not {len(references)} references")
        if not candidates:
            return empty_docs()
        with self._lock:
            self._check_size()
            if len(references) <= self.FEW_REFERENCES and sum(map(len, references)) <= self.FEW_UNITS:
                # a call of a few short texts (score(), a small batch): scanning them costs less
                # than the cache's lookups and bookkeeping
                return self._finish(*self._encode_strs(candidates + references))
            self.cache.check_generation(self.vocab.generation)
            w0 = self.cache.run_of_list(references)
            if w0 >= 0:  # the same references as a column seen before: its entries, in one copy
                c = self._stemmed(*self._encode_strs(candidates))
                return self._docs(*append_run(*c, *self.cache.stream(), w0, len(references)))
            layout = candidates + references
            nc = len(candidates)
            ends, groups = text_groups(layout, self.GROUP_UNITS)
            # one group (the usual batch): joined once, for the references' UTF-8 and for the scan
            joined = "".join(layout) if len(groups) == 1 and get_code_point is not None else None
            if joined is not None:
                buf, offs = _utf8(joined, ends[nc:])
            else:
                buf, offs = _utf8_groups(references, *text_groups(references, self.GROUP_UNITS))
            found = self.cache.probe(buf, offs)
            where, miss_at, _, admit = found
            if miss_at.shape[0] == where.shape[0]:  # none held, none repeats: scanned once, with the
                # candidates, in the strs' own buffers; those to keep are kept from there
                if not admit.any():
                    del buf, offs, found  # not held through the scan
                    return self._finish(*self._encode_strs(layout, ends, groups, joined))
                out = self._stemmed(*self._encode_strs(layout, ends, groups, joined))
                self._keep(buf, offs, found, out, nc + np.arange(where.shape[0]), references)
                return self._docs(*out)
            cands = (self._encode_units(joined, ends[:nc + 1], scan_str) if joined is not None
                     else self._encode_strs(candidates))
            return self._docs(*self._gather(self._stemmed(*cands), buf, offs, found, references))

    def _encode_strs(self, texts: list[str], ends=None, groups=None, joined=None):
        """(tokens, doc_tok, doc_sent, sent_tok) of ``texts``, each group of them joined and
        scanned in the str's own buffer (no UTF-8 copy); ``ends``, ``groups``: their
        :func:`text_groups`, and ``joined``: the one group joined, if the caller has them; under
        the lock."""
        if ends is None:
            ends, groups = text_groups(texts, self.GROUP_UNITS)
        if get_code_point is None:  # NUMBA_DISABLE_JIT, or numba moved its str accessor: UTF-8 bytes
            return self._encode_bytes(*_utf8("".join(texts), ends))
        if joined is not None:
            return self._encode_units(joined, ends, scan_str)
        parts = [self._encode_units("".join(texts[a:b]), ends[a:b + 1] - ends[a], scan_str) for a, b in groups]
        return parts[0] if len(parts) == 1 else concat_parts(parts)

    def encode_arrow(self, candidates, references) -> tuple[EncodedDocs, np.ndarray]:
        """Arrow columns in (``candidates``: strings; ``references``: strings or lists of
        strings, no nulls), documents in the block layout (every candidate, then every
        reference) and the reference counts out.  The UTF-8 buffers are scanned where they are:
        no Python str is made per text."""
        import pyarrow as pa  # only Arrow callers pay for loading it (cold start)

        cands = _string_array(candidates)
        refs = references.combine_chunks() if isinstance(references, pa.ChunkedArray) else references
        if pa.types.is_list(refs.type) or pa.types.is_large_list(refs.type):
            ro, flat = _list_offsets(refs)
        else:
            ro = np.arange(len(refs) + 1, dtype=np.int64)
            flat = _string_array(refs)
        n_refs = ro[1:] - ro[:-1]
        check_reference_counts(n_refs, len(cands))
        if len(cands) == 0:
            return empty_docs(), n_refs
        with self._lock:
            self._check_size()
            c = self._stemmed(*self._encode_units(*utf8_buffers(cands)))
            buf, offs = utf8_buffers(flat)
            self.cache.check_generation(self.vocab.generation)
            w0 = self.cache.run_of(buf, offs)
            if w0 >= 0:  # the same references as a column seen before: its entries, in one copy
                return self._docs(*append_run(*c, *self.cache.stream(), w0, offs.shape[0] - 1)), n_refs
            return self._docs(*self._gather(c, buf, offs, self.cache.probe(buf, offs))), n_refs

    def _check_size(self) -> None:
        if self.vocab.n_ids > Vocabulary.MAX_IDS:
            self.vocab.reset()

    def _finish(self, tokens, doc_tok, doc_sent, sent_tok) -> EncodedDocs:
        """Raw ids -> :class:`EncodedDocs` of the final ids (:meth:`_stemmed`); under the lock."""
        return self._docs(*self._stemmed(tokens, doc_tok, doc_sent, sent_tok))

    def _stemmed(self, tokens, doc_tok, doc_sent, sent_tok):
        """Raw ids -> stemmed ids (tokens whose stem is no valid token dropped), as (tokens,
        doc_tok, doc_sent, sent_tok); under the lock."""
        if self.use_stemmer:
            stemmed = np.empty_like(tokens)
            if map_ids(tokens, self.vocab.stem_map(), stemmed):
                ntok, nsent, doc_tok, doc_sent, sent_tok = drop_negative(stemmed, doc_tok, doc_sent, sent_tok)
                stemmed = stemmed[:ntok]
                sent_tok = sent_tok[: nsent + 1]
            tokens = stemmed
        return tokens, doc_tok, doc_sent, sent_tok

    def _docs(self, tokens, doc_tok, doc_sent, sent_tok) -> EncodedDocs:
        """The final ids as :class:`EncodedDocs`; the scan's scratch released; under the lock."""
        self._scratch.release()
        return EncodedDocs(tokens, doc_tok, tokens, sent_tok, doc_sent, self.vocab.generation)

    def _gather(self, cands, buf, offs, found, texts=None):
        """Candidates' stream ``cands`` (final ids) and the references of ``buf``/``offs`` in the
        block layout: each reference the cache holds copied from it, every other distinct one
        scanned once and kept if :meth:`TextCache.probe`'s ``found`` admits it (``texts``: the
        references as a Python list, if they are one); under the lock."""
        where, miss_at = found[:2]
        if miss_at.shape[0] == where.shape[0]:  # all new and distinct: scanned where they are, in order
            new = self._encode_bytes(buf, offs)
        else:
            new = self._encode_bytes(*_read_only(*compact_texts(buf, offs, miss_at))) if miss_at.shape[0] else _NO_DOCS
        new = self._stemmed(*new)
        out = gather_layout(*cands, *self.cache.stream(), *new, where)
        # after the copy: it may empty the cache
        self._keep(buf, offs, found, new, np.arange(miss_at.shape[0]), texts)
        return out

    def _keep(self, buf, offs, found, new, new_doc, texts=None) -> None:
        """The admitted misses of :meth:`TextCache.probe`'s ``found`` added to the cache: miss ``k``
        is document ``new_doc[k]`` of the stream ``new`` (final ids); and the column recorded as a
        run if its texts are now consecutive entries (``texts``: it as a Python list, if it is
        one); under the lock."""
        where, miss_at, miss_hash, admit = found
        ks = np.flatnonzero(admit)
        if ks.shape[0] < admit.shape[0]:  # some not kept: the column is no run
            self.cache.add(buf, offs, miss_at[ks], miss_hash[ks], new, new_doc[ks])
            return
        epoch = self.cache.epoch
        if self.cache.add(buf, offs, miss_at, miss_hash, new, new_doc) and (
                self.cache.epoch == epoch or ks.shape[0] == where.shape[0]):  # no entry it names forgotten
            self.cache.note_run(where, self.cache.n_entries - ks.shape[0], texts)

    def _encode_bytes(self, buf, offs):
        """:meth:`_encode_units` of UTF-8 documents, in groups of about :attr:`GROUP_UNITS` bytes."""
        if int(offs[-1] - offs[0]) <= self.GROUP_UNITS:
            return self._encode_units(buf, offs)
        return concat_parts([self._encode_units(buf, offs[a:b + 1]) for a, b in runs(offs, self.GROUP_UNITS)])

    def _encode_units(self, buf, offs, scan=scan_tokens):
        """Raw token ids and (doc_tok, doc_sent, sent_tok) of documents ``buf[offs[d]:offs[d+1]]``
        (UTF-8 bytes; with ``scan=scan_str``, a str's code points); under the lock."""
        n_docs = offs.shape[0] - 1
        start, stop = int(offs[0]), int(offs[-1])
        low, tstart, tend, nl_tok, sent_tok = self._scratch.get(stop - start, n_docs, scan is scan_str)
        doc_tok = np.zeros(n_docs + 1, dtype=np.int64)
        doc_sent = np.zeros(n_docs + 1, dtype=np.int64)
        ntok, nsent = scan(buf, np.asarray(offs, dtype=np.int64), not self.ascii_only, low,
                           tstart, tend, nl_tok, doc_tok, doc_sent, sent_tok)
        tokens = self.vocab.ids(low, tstart[:ntok], tend[:ntok])
        return tokens, doc_tok, doc_sent, sent_tok[: nsent + 1].copy()


# no documents, as (tokens, doc_tok, doc_sent, sent_tok)
_NO_DOCS = (np.zeros(0, dtype=np.int32), np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64),
            np.zeros(1, dtype=np.int64))


def _utf8(joined: str, ends: np.ndarray):
    """(UTF-8 bytes, byte offsets) of the documents ``joined[ends[d]:ends[d+1]]``
    (``surrogatepass``, as ``str.encode``; the offsets may start past 0, and the bytes then
    hold the str's start too)."""
    if joined.isascii():  # its own UTF-8: one copy
        return np.frombuffer(joined.encode("ascii"), dtype=np.uint8), ends
    if get_code_point is not None:  # read in place, no 2- or 4-byte str.encode
        return _read_only(*str_to_utf8(joined, ends))
    return _utf8_per_text(joined, ends)


def _read_only(buf: np.ndarray, offs: np.ndarray):
    """``buf`` made read-only, as Arrow's buffers and ``bytes`` are: the scan, probe and cache kernels
    are then compiled for one array type, not two (a new user's first calls compile fewer)."""
    buf.flags.writeable = False
    return buf, offs


def _utf8_groups(texts: list[str], ends: np.ndarray, groups: list[tuple[int, int]]):
    """:func:`_utf8` of ``texts``, joined and converted a group at a time (a joined str stays
    within tens of megabytes, as in the scan)."""
    if len(groups) <= 1:
        return _utf8("".join(texts), ends)
    bufs, offs, base = [], [np.zeros(1, dtype=np.int64)], 0
    for a, b in groups:
        buf, o = _utf8("".join(texts[a:b]), ends[a:b + 1] - ends[a])
        bufs.append(buf)
        offs.append(o[1:] + base)
        base += int(o[-1])
    return _read_only(np.concatenate(bufs), np.concatenate(offs))


def _utf8_per_text(joined: str, ends: np.ndarray):  # NUMBA_DISABLE_JIT (tests/integration/test_nojit.py)
    raw = [joined[a:b].encode("utf-8", "surrogatepass") for a, b in zip(ends[:-1].tolist(), ends[1:].tolist())]
    offs = np.zeros(len(raw) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, raw), dtype=np.int64, count=len(raw)), out=offs[1:])
    return np.frombuffer(b"".join(raw), dtype=np.uint8), offs


def _list_offsets(refs):
    """(int64 offsets from 0, the strings) of an Arrow list array (:func:`pipeline.columns.list_values`).
    A null list has no reference: ValueError."""
    if refs.null_count:  # a null list's slots may even hold values: never read them
        raise ValueError(f"example {refs.is_null().to_pylist().index(True)} has no reference")
    ro, flat = list_values(refs)
    return ro, _string_array(flat)


def _string_array(arr):
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        raise TypeError(f"expected strings, got {arr.type}")
    if arr.null_count:
        raise ValueError("null text in an Arrow column")
    return arr


def encode_marked(tokens: list[str], raw_index: dict, index: dict, token_map=None) -> EncodedDocs:
    """A batch's tokens with :data:`LINE_MARK` after each line and :data:`DOC_MARK` after each
    text -> EncodedDocs (sentences: the lines with tokens).  ``raw_index`` maps each raw
    token to the id of its form (``token_map(token)``, e.g. its stem; the token itself by
    default) in ``index``, so the per-token work is dict lookups in C."""
    raw_index.setdefault(LINE_MARK, BREAK)
    raw_index.setdefault(DOC_MARK, END)
    ids = list(map(raw_index.get, tokens))
    if None in ids:
        for t in set(tokens).difference(raw_index):
            form = token_map(t) if token_map is not None else t
            raw_index[t] = index.setdefault(form, len(index))
        ids = list(map(raw_index.get, tokens))
    flat = np.array(ids, dtype=np.int32) if ids else np.zeros(0, dtype=np.int32)
    ends = np.flatnonzero(flat == END)
    doc_raw = np.zeros(ends.shape[0] + 1, dtype=np.int64)
    doc_raw[1:] = ends + 1
    tok, doc_tok, sent_tok, doc_sent = split_marked(flat, doc_raw)
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
