"""The digest of each line of a JSONL input: BLAKE2b-64 of the line's bytes, without its newline.

A scored row read from one JSONL line carries it (``line_digest`` in the scores), with the
planner's cost estimate of the example (``cost``): a later run given that run (``--reuse``) finds
an unchanged line by its digest and copies the row without parsing the line
(:mod:`pipeline.job.reuse`).  The digest is the row's only proof that the line is the one scored,
so it must resist a crafted collision: BLAKE2b (``hashlib.blake2b(line, digest_size=8)`` read as
a little-endian uint64, the ``text_digest``'s hash), not a fast non-cryptographic hash whose
collisions can be computed in a fraction of a second.
"""
from __future__ import annotations

import hashlib

import numpy as np

from pipeline.stats.blake2b import blake2b64_spans


def line_digests(buf: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The digests of lines ``buf[starts[i]:starts[i + 1] - 1]`` (``buf``: uint8; ``starts``: one
    more than the lines, the last line's end + 1 last)."""
    starts = np.asarray(starts, dtype=np.int64)
    return blake2b64_spans(buf, starts[:-1], starts[1:] - 1)


def line_digest(line: bytes) -> int:
    """The digest of one line's bytes (without its newline), as a Python int."""
    return int.from_bytes(hashlib.blake2b(line, digest_size=8).digest(), "little")
