"""Token bytes <-> dense ids (pass 2 of the compiled scans): open-addressing tables keyed by
a token's own bytes, verified byte for byte past 16 bytes, plus the raw-id -> mapped-id
(e.g. Porter stem) map.
"""
from __future__ import annotations

import re
from typing import Callable

import numpy as np
from numba import njit

from pipeline.text.intrinsics import prefetch
from pipeline.text.porter import porter_stem

_VALID_TOKEN = re.compile(r"^[a-z0-9]+$")

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_GOLD = np.uint64(0x9E3779B97F4A7C15)
_GOLD2 = np.uint64(0xC2B2AE3D27D4EB4F)
_LONG = np.uint64(1) << np.uint64(63)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
# tokens ahead whose table slot is prefetched: enough to cover a miss to L3, few enough to stay cached
_AHEAD = 16


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
    n_tok = tstart.shape[0]
    for t in range(first, n_tok):
        if t + _AHEAD < n_tok:  # the first slot a later token probes (a token over 16 bytes: any slot)
            sp = tstart[t + _AHEAD]
            lp = tend[t + _AHEAD] - sp
            if lp <= 8:
                kp = _load(low64, sp, lp)
                prefetch(short_tab, 2 * (np.int64((kp * _GOLD) >> np.uint64(32)) & mask_a))
            else:
                kp1 = _load(low64, sp, 8)
                kp2 = _load(low64, sp + 8, min(lp, 16) - 8)
                prefetch(long_tab, 4 * (np.int64(((kp1 * _GOLD) ^ (kp2 * _GOLD2)) >> np.uint64(32)) & mask_b))
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

    def mapped_forms(self) -> list[str]:
        """Each mapped id's form (e.g. its stem), by id; maps every raw id first."""
        self.stem_map()
        out = [""] * len(self._stem_index)
        for form, i in self._stem_index.items():
            out[i] = form
        return out

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
