"""The digest of each line of a JSONL unit: XXH64 (seed 0) of the line's bytes, without its newline.

A scored row read from one clean JSONL line carries it (``line_digest`` in the scores), with the
planner's cost estimate of the example (``cost``): a later run given that run (``--reuse``) finds
an unchanged line by its digest and copies the row without parsing the line
(:mod:`pipeline.job.reuse`).  XXH64 is the published xxHash algorithm (the ``xxhash`` package is
the tests' oracle), here one compiled pass over the unit's bytes: several GB/s, where the
BLAKE2b of ``text_digest`` reads a few hundred MB/s.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from pipeline.text.intrinsics import load_u64

_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)
_P5 = np.uint64(0x27D4EB2F165667C5)


@njit(cache=True, nogil=True, inline="always")
def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@njit(cache=True, nogil=True, inline="always")
def _round(acc, lane):
    return _rotl(acc + lane * _P2, 31) * _P1


@njit(cache=True, nogil=True, inline="always")
def _merge(h, v):
    return (h ^ _round(np.uint64(0), v)) * _P1 + _P4


@njit(cache=True, nogil=True)
def xxh64(buf, start, stop):
    """XXH64 of ``buf[start:stop]`` (a uint8 array), seed 0."""
    p = start
    length = stop - start
    if length >= 32:
        v1 = _P1 + _P2
        v2 = _P2
        v3 = np.uint64(0)
        v4 = np.uint64(0) - _P1
        while p + 32 <= stop:
            v1 = _round(v1, load_u64(buf, p))
            v2 = _round(v2, load_u64(buf, p + 8))
            v3 = _round(v3, load_u64(buf, p + 16))
            v4 = _round(v4, load_u64(buf, p + 24))
            p += 32
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        h = _merge(h, v1)
        h = _merge(h, v2)
        h = _merge(h, v3)
        h = _merge(h, v4)
    else:
        h = _P5
    h += np.uint64(length)
    while p + 8 <= stop:
        h = _rotl(h ^ _round(np.uint64(0), load_u64(buf, p)), 27) * _P1 + _P4
        p += 8
    if p + 4 <= stop:
        w = (np.uint64(buf[p]) | (np.uint64(buf[p + 1]) << np.uint64(8)) | (np.uint64(buf[p + 2]) << np.uint64(16))
             | (np.uint64(buf[p + 3]) << np.uint64(24)))
        h = _rotl(h ^ (w * _P1), 23) * _P2 + _P3
        p += 4
    while p < stop:
        h = _rotl(h ^ (np.uint64(buf[p]) * _P5), 11) * _P1
        p += 1
    h ^= h >> np.uint64(33)
    h *= _P2
    h ^= h >> np.uint64(29)
    h *= _P3
    h ^= h >> np.uint64(32)
    return h


@njit(cache=True, nogil=True)
def _lines(buf, n_lines, starts, digests):
    line = 0
    s = 0
    n = buf.shape[0]
    for i in range(n):
        if buf[i] == 10:
            if line == n_lines:
                return -1
            starts[line] = s
            digests[line] = xxh64(buf, s, i)
            line += 1
            s = i + 1
    if s < n:  # a last line without a newline
        if line == n_lines:
            return -1
        starts[line] = s
        digests[line] = xxh64(buf, s, n)
        line += 1
    starts[line] = n + 1 if s < n else n
    return line


def line_digests(buf: np.ndarray, n_lines: int) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, digests)`` of the ``n_lines`` lines of ``buf`` (uint8; every line ends with a
    newline but perhaps the last): line ``i`` is ``buf[starts[i]:starts[i + 1] - 1]``."""
    starts = np.empty(n_lines + 1, dtype=np.int64)
    digests = np.empty(n_lines, dtype=np.uint64)
    if _lines(buf, n_lines, starts, digests) != n_lines:
        raise ValueError("the buffer holds another number of lines")
    return starts, digests


def line_digest(line: bytes) -> int:
    """XXH64 of one line's bytes (without its newline), as a Python int."""
    return int(xxh64(np.frombuffer(line, dtype=np.uint8), 0, len(line)))
