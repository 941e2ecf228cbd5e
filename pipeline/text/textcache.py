"""Encoded reference texts kept across batches: a text seen before is not scanned again.

A multi-system corpus scores every system against the same references, usually in different
batches and tasks of one worker process.  :class:`TextCache` keeps, per encoder, each reference
text's UTF-8 bytes and its token ids as the encoder returns them (stemmed when it stems), with
its sentence bounds, in one CSR stream, found through an open-addressing table keyed by a 64-bit
hash of all the text's bytes.  A hit is trusted only after the stored bytes are compared with
the text's byte for byte, so two texts that share a hash can never share tokens.

A text is kept the first time it is seen while the kept texts' UTF-8 bytes stay within
:attr:`TextCache.FIRST_SIGHT_BYTES` (1 MiB: about 3,000 references of 300 bytes), and the second
time after that (in an earlier batch, or twice in one: the first time only its hash is
recorded, in a set of hashes).  So the references of a multi-system corpus are scanned for its
first system only (those past the first MiB, for its first two), and a corpus whose references
never repeat copies at most that MiB into the cache (again once the entries are forgotten: a
vocabulary rebuild, the bound), and then pays a hash-set insert per reference (copying every
reference of such a corpus into a cache of tens of megabytes costs ~5-10% of a short pair, in
memory traffic).

A column of references (one call's, in order) whose texts are consecutive entries, in order, is
recorded as a run (:meth:`TextCache.note_run`): the next system's column, the same texts in the
same order, is then found by one comparison (:meth:`TextCache.run_of`: every length and byte of the
column; :meth:`TextCache.run_of_list`: a Python list equal to the one recorded, strs by value) and
copied as one slice, with no lookup per text.  A run is recorded only from entries of the current
epoch (emptying the cache starts a new one) and is forgotten with them.

The ids are those of one vocabulary generation (:attr:`Vocabulary.generation`): the entries are
forgotten when the vocabulary is rebuilt.  Memory is bounded: the entries' arrays never total
more than :attr:`TextCache.MAX_BYTES` (64 MiB) and the set of hashes :attr:`TextCache.MAX_SEEN`
slots (8 MiB); when a batch's new texts would not fit, the entries are forgotten first
(clear-when-full), a batch whose new texts alone exceed the bound is not kept, and the set is
emptied when half full.  Apart from those, the runs: at most :attr:`TextCache.MAX_RUNS` keys (forgotten
all at once past that), and the strs of the last :attr:`TextCache.LIST_RUNS` Python lists recorded
(of at most :attr:`TextCache.LIST_RUN_BYTES` UTF-8 bytes each) kept alive.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from pipeline.text.csr import text_hash
from pipeline.text.intrinsics import load_u64, store_u64


@njit(cache=True, nogil=True, inline="always")
def _equal_bytes(a, a0, b, b0, length):
    """``a[a0:a0+length] == b[b0:b0+length]``, eight bytes at a time."""
    q = 0
    while q + 8 <= length:
        if load_u64(a, a0 + q) != load_u64(b, b0 + q):
            return False
        q += 8
    while q < length:
        if a[a0 + q] != b[b0 + q]:
            return False
        q += 1
    return True


@njit(cache=True, nogil=True)
def run_matches(buf, offs, arena, text_off, w0):
    """Whether the texts ``buf[offs[d]:offs[d+1]]`` are the entries ``w0, w0+1, ...`` in order:
    every length, then all the bytes compared."""
    n = offs.shape[0] - 1
    b0 = offs[0]
    a0 = text_off[w0]
    for d in range(1, n + 1):
        if offs[d] - b0 != text_off[w0 + d] - a0:
            return False
    return _equal_bytes(arena, a0, buf, b0, offs[n] - b0)


@njit(cache=True, nogil=True)
def probe_texts(buf, offs, slots, arena, text_off, n_entries, where, miss_at, miss_hash, miss_count):
    """Texts ``buf[offs[d]:offs[d+1]]`` looked up: ``where[d]`` is the cache entry holding the
    same bytes, or ``-(k+1)`` where ``k`` numbers the distinct texts the cache lacks in order of
    first occurrence (``miss_at[k]``: that occurrence, ``miss_hash[k]``: its hash,
    ``miss_count[k]``: its occurrences).  ``slots``: (hash, entry) pairs, entry -1 where empty.
    Returns the number of distinct misses."""
    n = offs.shape[0] - 1
    cap = 16
    while cap < 2 * n:
        cap *= 2
    local = np.full(cap, -1, dtype=np.int64)  # misses of this batch, by the same hash
    lmask = cap - 1
    mask = (slots.shape[0] >> 1) - 1
    n_miss = 0
    for d in range(n):
        s = offs[d]
        length = offs[d + 1] - s
        h = text_hash(buf, s, length)
        found = -1
        if n_entries > 0:
            slot = np.int64(h >> np.uint64(32)) & mask
            while True:
                e = slots[2 * slot + 1]
                if e < 0:
                    break
                if (np.uint64(slots[2 * slot]) == h and text_off[e + 1] - text_off[e] == length
                        and _equal_bytes(arena, text_off[e], buf, s, length)):
                    found = e
                    break
                slot = (slot + 1) & mask
        if found >= 0:
            where[d] = found
            continue
        slot = np.int64(h >> np.uint64(32)) & lmask
        while True:
            k = local[slot]
            if k < 0:
                local[slot] = n_miss
                miss_at[n_miss] = d
                miss_hash[n_miss] = h
                miss_count[n_miss] = 1
                where[d] = -(n_miss + 1)
                n_miss += 1
                break
            o = miss_at[k]
            if miss_hash[k] == h and offs[o + 1] - offs[o] == length and _equal_bytes(buf, offs[o], buf, s, length):
                where[d] = -(k + 1)
                miss_count[k] += 1
                break
            slot = (slot + 1) & lmask
    return n_miss


@njit(cache=True, nogil=True)
def admit_misses(miss_hash, miss_count, seen, admit):
    """Which missed texts to keep: those seen before (their hash in ``seen``, an open-addressing
    set of hashes, 0 where empty) or more than once in this batch; the hashes of the others are
    added to ``seen``.  A hash only decides what is kept, never what a text's tokens are.
    Returns the number of hashes added."""
    added = 0
    for k in range(miss_hash.shape[0]):
        found = _set_add(seen, miss_hash[k] | np.uint64(1))  # never 0 (empty)
        admit[k] = found or miss_count[k] > 1
        if not found:
            added += 1
    return added


@njit(cache=True, nogil=True, inline="always")
def _set_add(seen, h):
    """Whether the hash ``h`` (not 0: 0 marks a free slot) is in the open-addressing set ``seen``
    already; added if not."""
    mask = seen.shape[0] - 1
    slot = np.int64(h >> np.uint64(32)) & mask
    while True:
        x = seen[slot]
        if x == h:
            return True
        if x == 0:
            seen[slot] = h
            return False
        slot = (slot + 1) & mask


@njit(cache=True, nogil=True)
def _insert(buf, offs, miss_at, miss_hash, new_doc, slots, arena, text_off, n_entries,
            new_tok, new_doc_tok, new_doc_sent, new_sent_tok, tokens, doc_tok, doc_sent, sent_tok):
    """The missed texts (bytes, their table entry, their tokens and sentences: document
    ``new_doc[k]`` of ``new`` for miss ``k``) appended as entries ``n_entries ..``; every array
    has room (the caller grew them)."""
    mask = (slots.shape[0] >> 1) - 1
    t = doc_tok[n_entries]
    ns = doc_sent[n_entries]
    for k in range(miss_at.shape[0]):
        e = n_entries + k
        d = miss_at[k]
        s = offs[d]
        length = offs[d + 1] - s
        o = text_off[e]
        q = 0
        while q + 8 <= length:  # eight bytes at a time: a uint8 slice assignment copies ~3x slower
            store_u64(arena, o + q, load_u64(buf, s + q))
            q += 8
        while q < length:
            arena[o + q] = buf[s + q]
            q += 1
        text_off[e + 1] = o + length
        h = miss_hash[k]
        slot = np.int64(h >> np.uint64(32)) & mask
        while slots[2 * slot + 1] >= 0:
            slot = (slot + 1) & mask
        slots[2 * slot] = np.int64(h)
        slots[2 * slot + 1] = e
        w = new_doc[k]
        for x in range(new_doc_sent[w], new_doc_sent[w + 1]):
            sent_tok[ns] = t + new_sent_tok[x] - new_doc_tok[w]
            ns += 1
        m = new_doc_tok[w + 1] - new_doc_tok[w]
        tokens[t:t + m] = new_tok[new_doc_tok[w]:new_doc_tok[w + 1]]
        t += m
        doc_tok[e + 1] = t
        doc_sent[e + 1] = ns
    sent_tok[ns] = t


@njit(cache=True, nogil=True)
def _rehash(old, new):
    """Every (hash, entry) pair of the table ``old`` moved to the larger ``new`` (entries -1)."""
    mask = (new.shape[0] >> 1) - 1
    for s in range(old.shape[0] >> 1):
        e = old[2 * s + 1]
        if e >= 0:
            slot = np.int64(np.uint64(old[2 * s]) >> np.uint64(32)) & mask
            while new[2 * slot + 1] >= 0:
                slot = (slot + 1) & mask
            new[2 * slot] = old[2 * s]
            new[2 * slot + 1] = e


def _grown_set(seen: np.ndarray, size: int) -> np.ndarray:
    """The hash set ``seen`` in ``size`` slots."""
    out = np.zeros(size, dtype=np.uint64)
    _rehash_set(seen, out)
    return out


@njit(cache=True, nogil=True)
def _rehash_set(old, new):
    mask = new.shape[0] - 1
    for s in range(old.shape[0]):
        h = old[s]
        if h != 0:
            slot = np.int64(h >> np.uint64(32)) & mask
            while new[slot] != 0:
                slot = (slot + 1) & mask
            new[slot] = h


def _same_strs(held: list, texts: list) -> bool:
    """Whether every item of ``texts`` is a str of the value of the one at its place in ``held``
    (strs).  ``==`` alone would also take an object that merely compares equal to a str (a
    UserString, which the encoder cannot read) or a str subclass whose ``==`` is not by value."""
    if held != texts:
        return False
    if list(map(type, texts)).count(str) == len(texts):  # plain strs (the usual case): == compared values
        return True
    try:
        return all(map(str.__eq__, texts, held))  # by value whatever the class; TypeError for a non-str
    except TypeError:
        return False


class TextCache:
    """Texts -> the encoder's token ids of one vocabulary generation, across batches (see module
    docstring).

    Entry ``e``'s bytes are ``arena[text_off[e]:text_off[e+1]]`` and its tokens, sentences and
    bounds are document ``e`` of the CSR stream (``tokens``, ``doc_tok``, ``doc_sent``,
    ``sent_tok``), as :meth:`pipeline.text.encoder.DefaultEncoder._stemmed` returns them."""

    # The bound on the bytes of the arrays of entries (a worker process has one cache per
    # stemming mode): about 30,000 references of 1 KB each.  0: nothing is kept.
    MAX_BYTES = 64 << 20
    # Texts are kept at first sight while the kept ones total at most this (module docstring).
    FIRST_SIGHT_BYTES = 1 << 20
    # The most slots of the set of texts seen once (8 bytes each: 8 MiB); emptied when half full.
    MAX_SEEN = 1 << 20
    # Python lists of references held as runs (their strs kept alive, to be compared with a
    # list seen again): the most recent few, of at most this many UTF-8 bytes each.
    LIST_RUNS = 4
    LIST_RUN_BYTES = 4 << 20
    # The most runs recorded by their (count, bytes) key; past it they are forgotten (a run found
    # again is recorded again).
    MAX_RUNS = 4096

    def __init__(self, max_bytes: int | None = None):
        self.max_bytes = self.MAX_BYTES if max_bytes is None else max_bytes
        self.generation = None
        self.epoch = 0  # counts the times every entry was forgotten: entry numbers of an older epoch are void
        self._allocate()
        self._first_nbytes = self.nbytes
        self.seen = np.zeros(1 << 12, dtype=np.uint64)  # hashes of texts seen once (admit_misses)
        self._n_seen = 0

    def _allocate(self) -> None:
        """No entry, in arrays of their first (small) sizes; they grow by doubling within the bound."""
        self._no_entries()
        self.slots = np.full(2 * 1024, -1, dtype=np.int64)
        self.arena = np.zeros(1 << 14, dtype=np.uint8)
        self.text_off = np.zeros(512, dtype=np.int64)
        self.tokens = np.zeros(1 << 12, dtype=np.int32)
        self.doc_tok = np.zeros(512, dtype=np.int64)
        self.doc_sent = np.zeros(512, dtype=np.int64)
        self.sent_tok = np.zeros(512, dtype=np.int64)

    def clear(self) -> None:
        """Forget every entry and every text seen."""
        self._forget_entries()
        self.seen.fill(0)
        self._n_seen = 0

    def _forget_entries(self) -> None:
        """Forget every entry.  The arrays are kept (they are within the bound): refilling them
        touches no fresh page (a fresh page costs a fault on its first write)."""
        self._no_entries()
        self.slots.fill(-1)

    def _no_entries(self) -> None:
        """No entry, a new epoch, no run: the only place entries are forgotten, so a run never
        names an entry that is gone."""
        self.n_entries = 0
        self.epoch += 1
        # runs: columns of references held as consecutive entries, in order (see note_run)
        self._runs: dict[tuple[int, int], int] = {}
        self._list_runs: list[tuple[list, int]] = []

    @property
    def nbytes(self) -> int:
        """The bytes of the entries' arrays (at most :attr:`max_bytes` after every call; the set
        of hashes seen once is apart: at most :attr:`MAX_SEEN` slots of 8 bytes)."""
        return sum(a.nbytes for a in (self.slots, self.arena, self.text_off, self.tokens, self.doc_tok,
                                      self.doc_sent, self.sent_tok))

    def check_generation(self, generation: int) -> None:
        """Empty the cache if its ids belong to another vocabulary generation."""
        if generation != self.generation:
            if self.n_entries:
                self._forget_entries()
            self.generation = generation

    def probe(self, buf: np.ndarray, offs: np.ndarray):
        """Texts ``buf[offs[d]:offs[d+1]]`` looked up: (where, miss_at, miss_hash) of
        :func:`probe_texts`, and which misses to keep: in order, those whose bytes fit in
        :attr:`FIRST_SIGHT_BYTES` with the kept texts' bytes, and of the others those
        :func:`admit_misses` admits (seen before, or twice in this batch)."""
        n = offs.shape[0] - 1
        where = np.empty(n, dtype=np.int64)
        miss_at = np.empty(n, dtype=np.int64)
        miss_hash = np.empty(n, dtype=np.uint64)
        miss_count = np.empty(n, dtype=np.int64)
        n_miss = probe_texts(buf, offs, self.slots, self.arena, self.text_off, self.n_entries, where, miss_at,
                             miss_hash, miss_count)
        miss_at, miss_hash = miss_at[:n_miss], miss_hash[:n_miss]
        if n_miss == 0 or self.max_bytes <= 0:
            return where, miss_at, miss_hash, np.zeros(n_miss, dtype=np.bool_)
        room = self.FIRST_SIGHT_BYTES - int(self.text_off[self.n_entries])
        admit = np.cumsum(offs[miss_at + 1] - offs[miss_at]) <= room  # kept at first sight
        rest = np.flatnonzero(~admit)
        if rest.shape[0]:
            self._room_in_seen(rest.shape[0])
            seen_before = np.zeros(rest.shape[0], dtype=np.bool_)
            self._n_seen += admit_misses(miss_hash[rest], miss_count[rest], self.seen, seen_before)
            admit[rest] = seen_before
        return where, miss_at, miss_hash, admit

    def _room_in_seen(self, k: int) -> None:
        """The set of hashes seen once made ready for ``k`` more at half load at most: grown by
        doubling up to :attr:`MAX_SEEN` slots, emptied when that is not enough."""
        need = 2 * (self._n_seen + k)
        if need <= self.seen.shape[0]:
            return
        size = self.seen.shape[0]
        while need > size and size < self.MAX_SEEN:
            size *= 2
        if need > size:
            self.seen.fill(0)
            self._n_seen = 0
        else:
            self.seen = _grown_set(self.seen, size)

    def run_of(self, buf: np.ndarray, offs: np.ndarray) -> int:
        """The first of the consecutive entries that hold the texts ``buf[offs[d]:offs[d+1]]`` in
        order (a run :meth:`note_run` recorded; every byte compared), or -1."""
        n = offs.shape[0] - 1
        w0 = self._runs.get((n, int(offs[n] - offs[0])), -1)
        return w0 if w0 >= 0 and run_matches(buf, offs, self.arena, self.text_off, w0) else -1

    def run_of_list(self, texts: list) -> int:
        """:meth:`run_of` for a Python list of strs: a list recorded with its run, its strs equal
        to those of ``texts`` by value."""
        for held, w0 in self._list_runs:
            if len(held) == len(texts) and _same_strs(held, texts):
                return w0
        return -1

    def note_run(self, where: np.ndarray, first_new: int, texts: list | None = None) -> None:
        """Record a column of texts if its entries are consecutive, in order: text ``d`` is entry
        ``where[d]``, or, if that is ``-(k+1)``, entry ``first_new + k`` (miss ``k``, just kept).
        ``texts``: the column as a Python list, recorded too (:meth:`run_of_list`)."""
        n = where.shape[0]
        if n == 0:
            return
        if where[0] < 0 and where[n - 1] == -n:  # every text a new one, in order: no entry to check
            w0 = first_new
        else:
            entries = np.where(where >= 0, where, first_new - 1 - where)
            if entries[-1] - entries[0] != n - 1 or (n > 1 and not (np.diff(entries) == 1).all()):
                return
            w0 = int(entries[0])
        nbytes = int(self.text_off[w0 + n] - self.text_off[w0])
        if len(self._runs) >= self.MAX_RUNS:
            self._runs.clear()
        self._runs[(n, nbytes)] = w0
        if texts is not None and nbytes <= self.LIST_RUN_BYTES and self.run_of_list(texts) < 0:
            self._list_runs = [(list(texts), w0)] + self._list_runs[: self.LIST_RUNS - 1]

    def stream(self):
        """The entries' (tokens, doc_tok, doc_sent, sent_tok)."""
        return self.tokens, self.doc_tok, self.doc_sent, self.sent_tok

    def add(self, buf, offs, miss_at, miss_hash, new, new_doc=None) -> bool:
        """Keep the texts ``miss_at`` of ``buf``/``offs`` (hashes ``miss_hash``) and their
        encoding: document ``new_doc[k]`` (``k`` if None) of ``new`` (tokens, doc_tok, doc_sent,
        sent_tok) is text ``miss_at[k]``.  When they do not fit in the bound, the cache is emptied
        first; False if they do not fit at all."""
        k = miss_at.shape[0]
        if k == 0 or self.max_bytes <= 0:
            return k == 0
        new_tok, new_doc_tok, new_doc_sent, new_sent_tok = new
        docs = np.arange(k) if new_doc is None else new_doc
        grow = (k, int((offs[miss_at + 1] - offs[miss_at]).sum()), int((new_doc_tok[docs + 1] - new_doc_tok[docs]).sum()),
                int((new_doc_sent[docs + 1] - new_doc_sent[docs]).sum()))
        caps = self._fitting(*grow)
        if caps is None and self.n_entries:
            self._forget_entries()
            caps = self._fitting(*grow)
        if caps is None and self.nbytes > self._first_nbytes:  # arrays grown for other texts: start again
            self._allocate()
            caps = self._fitting(*grow)
        if caps is None:
            return False
        for name, items in caps.items():
            arr = getattr(self, name)
            if items != arr.shape[0]:
                if name == "slots":
                    grown = np.full(items, -1, dtype=np.int64)
                    _rehash(arr, grown)
                else:
                    grown = np.zeros(items, dtype=arr.dtype)
                    grown[: arr.shape[0]] = arr
                setattr(self, name, grown)
        _insert(buf, offs, miss_at, miss_hash, docs, self.slots, self.arena, self.text_off, self.n_entries,
                new_tok, new_doc_tok, new_doc_sent, new_sent_tok, self.tokens, self.doc_tok, self.doc_sent,
                self.sent_tok)
        self.n_entries += k
        return True

    def _fitting(self, k: int, text_bytes: int, n_tok: int, n_sent: int) -> dict[str, int] | None:
        """Each array's length to hold ``k`` more entries of these sizes within the bound (grown
        by doubling, else to what is needed), or None if they do not fit."""
        e = self.n_entries + k
        need = {"arena": int(self.text_off[self.n_entries]) + text_bytes, "text_off": e + 1,
                "tokens": int(self.doc_tok[self.n_entries]) + n_tok, "doc_tok": e + 1, "doc_sent": e + 1,
                "sent_tok": int(self.doc_sent[self.n_entries]) + n_sent + 1}
        slots = self.slots.shape[0] >> 1
        while 2 * e > slots:  # the table at half load at most
            slots *= 2
        for exact in (False, True):
            caps = {"slots": 2 * slots}
            for name, items in need.items():
                cap = getattr(self, name).shape[0]
                caps[name] = cap if items <= cap else (items if exact else max(items, 2 * cap))
            if sum(n * getattr(self, name).itemsize for name, n in caps.items()) <= self.max_bytes:
                return caps
        return None
