"""The line digest is BLAKE2b-64 of each line's bytes without its newline (hashlib is the oracle),
whichever reader path reads the line."""
from __future__ import annotations

import hashlib
import json
import random

import numpy as np
import pytest

from pipeline.io import readers
from pipeline.io.linedigest import line_digest, line_digests
from pipeline.io.records import _clean_lines


def _h(line: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(line, digest_size=8).digest(), "little")


def _lines(seed: int, n: int) -> list[bytes]:
    rng = random.Random(seed)
    # every length around the 8-byte words and 128-byte blocks, and longer ones
    lengths = list(range(0, 300)) + [rng.randrange(70, 3000) for _ in range(n)]
    # no newline, CR or backslash inside a line (the clean shape the compiled scan accepts)
    raw = [bytes(rng.randrange(256) for _ in range(k)) for k in lengths]
    return [x.replace(b"\n", b"\x00").replace(b"\r", b"\x01").replace(b"\\", b"/") for x in raw]


@pytest.mark.parametrize("last_newline", [True, False])
def test_line_digests_are_blake2b_of_each_line(last_newline):
    lines = [b"{" + x for x in _lines(5, 200)]   # each line opens an object: clean JSONL's shape
    buf = b"\n".join(lines) + (b"\n" if last_newline else b"")
    n_lines, starts, digests = _clean_lines(buf)
    assert n_lines == len(lines)
    assert [int(d) for d in digests] == [_h(x) for x in lines]
    assert [buf[starts[i]:starts[i + 1] - 1] for i in range(len(lines))] == lines
    assert [int(d) for d in line_digests(np.frombuffer(buf, dtype=np.uint8), starts)] == [_h(x) for x in lines]
    assert [line_digest(x) for x in lines[:80]] == [_h(x) for x in lines[:80]]


def _unit_table(path, **spec):
    spec = {"layout": "records", "paths": str(path), **spec}
    units = readers.plan_units(spec)
    assert len(units) == 1
    return readers.read_unit(spec, units[0])[0]


def test_every_reader_path_gives_a_line_its_digest(tmp_path):
    recs = [{"id": f"d{i}", "candidate": f"the cat {i} sat", "references": [f"a cat {i} sat", "é ü"]}
            for i in range(30)]
    lines = [json.dumps(r, ensure_ascii=False).encode("utf-8") for r in recs]
    clean, messy = tmp_path / "clean.jsonl", tmp_path / "messy.jsonl"
    clean.write_bytes(b"\n".join(lines) + b"\n")
    # a blank line and a bad record: the line-by-line reader reads this file
    messy.write_bytes(b"\n".join(lines[:10] + [b"", b"{not json"] + lines[10:]) + b"\n")
    fast, slow = _unit_table(clean), _unit_table(messy)
    want = [_h(x) for x in lines]
    assert fast.column("line_digest").to_pylist() == want
    assert slow.column("line_digest").to_pylist() == want
    assert slow.column("id").to_pylist() == fast.column("id").to_pylist()


def test_a_row_not_read_from_a_jsonl_line_has_no_line_digest(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": ["a", "b"], "candidate": ["x y", "z"], "references": [["x"], ["z"]]}),
                   tmp_path / "in.parquet")
    assert _unit_table(tmp_path / "in.parquet").column("line_digest").to_pylist() == [None, None]
