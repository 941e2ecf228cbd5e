"""The per-example text digest (``text_digest`` in the scores): which candidate and references
were scored, so that a reader shows an example's texts only when they are still these.

Definition (:func:`text_digest`, the readable specification): with ``h(x)`` the BLAKE2b digest of
8 bytes of the UTF-8 bytes of ``x``, an example's digest is ``h(h(candidate) + h(reference 1) +
... + h(reference n))``, the 8 bytes read as a little-endian uint64.  Every inner digest is 8
bytes, so the concatenation names the list unambiguously (no text can run into the next; one
reference ``"a b"`` is not two references ``"a"``, ``"b"``).  :func:`text_digests` computes it
for Arrow columns from their buffers (the statistics' compiled BLAKE2b-64, no str per text).
"""
from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa

from pipeline.columns import utf8_buffers
from pipeline.stats.poisson import key_hashes_utf8


def _h(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=8).digest()


def text_digest(candidate: str | None, references) -> int:
    """The digest of one example (``None`` texts count as ``""``), as a Python int < 2**64."""
    inner = _h((candidate or "").encode("utf-8")) + b"".join(_h((r or "").encode("utf-8")) for r in references)
    return int.from_bytes(_h(inner), "little")


def _one(col):
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def _hashes(strings) -> np.ndarray:
    return key_hashes_utf8(*utf8_buffers(strings))


def text_digests(candidates, references) -> np.ndarray:
    """:func:`text_digest` of every row of a string column and a list-of-strings column (Arrow,
    chunked or not), as uint64: the inner digests of every text at once, laid out row by row
    (candidate, then its references) as 8-byte words, then the outer digest of each row's words."""
    cand, refs = _one(candidates), _one(references)
    n = len(cand)
    loffs = np.asarray(refs.offsets, dtype=np.int64)  # a sliced list array's own offsets
    flat = refs.values.slice(int(loffs[0]), int(loffs[-1] - loffs[0]))
    loffs = loffs - loffs[0]
    starts = loffs[:-1] + np.arange(n, dtype=np.int64)   # row i's first word: its candidate's digest
    words = np.empty(n + len(flat), dtype="<u8")
    is_cand = np.zeros(len(words), dtype=bool)
    is_cand[starts] = True
    words[is_cand] = _hashes(cand)
    words[~is_cand] = _hashes(flat)
    offs = np.append(starts, len(words)) * 8
    return key_hashes_utf8(words.view(np.uint8), offs)
