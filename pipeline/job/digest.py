"""The per-example digest (``text_digest`` in the scores): what determines an example's numbers,
so that a reader shows an example's texts only when they are still these, and a later run copies
the row of an unchanged example instead of scoring it again (``--reuse``, :mod:`pipeline.job.reuse`).

Definition (run format 5; :func:`text_digest`, the readable specification): with ``h(x)`` the
BLAKE2b digest of 8 bytes of the UTF-8 bytes of ``x``, an example's digest is
``h(h(k) + h(candidate) + h(reference 1) + ... + h(reference n) [+ s])``, the 8 bytes read as a
little-endian uint64, where ``k`` is the run's signature (:mod:`pipeline.signature`) followed by
``|source`` when diagnostics are on, and ``s``, only then (the diagnostics read the source), is
``h(source)``, or 8 zero bytes when the example has no source.  Every word is 8 bytes, so the
concatenation names the list unambiguously (no text can run into the next; one reference ``"a b"``
is not two references ``"a"``, ``"b"``; no text's digest is 8 zero bytes but by a 2**-64 chance).
Run format 4 had ``h(h(candidate) + h(reference 1) + ...)`` (:func:`legacy_digest`).
:func:`text_digests` computes it for Arrow columns from their buffers (the statistics' compiled
BLAKE2b-64, no str per text).
"""
from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa

from pipeline.columns import list_values, utf8_buffers
from pipeline.stats.poisson import key_hashes_utf8

SOURCE_SUFFIX = "|source"
_NO_SOURCE = bytes(8)


def _h(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=8).digest()


def key_text(signature: str, with_source: bool) -> str:
    """``k`` of the definition: the signature, and ``|source`` when the diagnostics read the source."""
    return signature + (SOURCE_SUFFIX if with_source else "")


def text_digest(candidate: str | None, references, source: str | None = None, *, signature: str = "",
                with_source: bool = False) -> int:
    """The digest of one example (``None`` candidate or references count as ``""``), as a Python
    int < 2**64; ``signature``: the run's, ``with_source``: diagnostics on."""
    inner = (_h(key_text(signature, with_source).encode("utf-8")) + _h((candidate or "").encode("utf-8"))
             + b"".join(_h((r or "").encode("utf-8")) for r in references))
    if with_source:
        inner += _NO_SOURCE if source is None else _h(source.encode("utf-8"))
    return int.from_bytes(_h(inner), "little")


def legacy_digest(candidate: str | None, references) -> int:
    """Run format 4's digest: the candidate and references only."""
    inner = _h((candidate or "").encode("utf-8")) + b"".join(_h((r or "").encode("utf-8")) for r in references)
    return int.from_bytes(_h(inner), "little")


def run_digest(info: dict, candidate: str | None, references, source: str | None) -> int:
    """An example's digest as the run recorded in ``info`` (its ``_run.json``) computed it."""
    if info.get("run_format", 1) < 5:
        return legacy_digest(candidate, references)
    diagnostics = bool(((info.get("config") or {}).get("scoring") or {}).get("diagnostics", True))
    return text_digest(candidate, references, source, signature=str(info.get("signature") or ""),
                       with_source=diagnostics)


def _one(col):
    if isinstance(col, pa.ChunkedArray):
        # combine_chunks copies even a single chunk (every text of the slice)
        return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    return col


def _hashes(strings) -> np.ndarray:
    return key_hashes_utf8(*utf8_buffers(strings))


def text_digests(candidates, references, sources=None, *, signature: str = "", with_source: bool = False) -> np.ndarray:
    """:func:`text_digest` of every row of a string column, a list-of-strings column and (with
    ``with_source``) a string column of sources (Arrow, chunked or not; None: no source), as
    uint64: the inner digests of every text at once, laid out row by row (the key, the
    candidate, its references, the source) as 8-byte words, then the outer digest of each row's words."""
    cand, refs = _one(candidates), _one(references)
    n = len(cand)
    extra = 3 if with_source else 2
    loffs, flat = list_values(refs)
    starts = loffs[:-1] + np.arange(n, dtype=np.int64) * extra   # row i's first word: the key
    ends = np.append(starts[1:], len(flat) + n * extra)
    words = np.empty(n * extra + len(flat), dtype="<u8")
    kind = np.zeros(len(words), dtype=np.int8)        # 0 a reference, 1 the key, 2 the candidate, 3 the source
    kind[starts] = 1
    kind[starts + 1] = 2
    words[kind == 1] = np.frombuffer(_h(key_text(signature, with_source).encode("utf-8")), dtype="<u8")[0]
    words[kind == 2] = _hashes(cand)
    if with_source:
        kind[ends - 1] = 3
        if sources is None:
            s = np.zeros(n, dtype=np.uint64)
        else:
            src = _one(sources)
            src = src.cast(pa.string()) if src.type != pa.string() else src
            s = _hashes(src)
            s[np.asarray(src.is_null().to_numpy(zero_copy_only=False), dtype=bool)] = 0
        words[kind == 3] = s
    words[kind == 0] = _hashes(flat)
    offs = np.append(starts, len(words)) * 8
    return key_hashes_utf8(words.view(np.uint8), offs)
