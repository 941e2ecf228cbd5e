"""The line digest is XXH64 (seed 0) of each line's bytes without its newline, whichever reader
path reads the line (the xxhash package is the oracle)."""
from __future__ import annotations

import json
import random

import numpy as np
import pytest
import xxhash

from pipeline.io import readers
from pipeline.io.linedigest import line_digest, line_digests


def _lines(seed: int, n: int) -> list[bytes]:
    rng = random.Random(seed)
    # every length around XXH64's 4-, 8- and 32-byte steps, and longer ones
    lengths = list(range(0, 70)) + [rng.randrange(70, 3000) for _ in range(n)]
    return [bytes(rng.randrange(256) for _ in range(k)).replace(b"\n", b"\x00") for k in lengths]


@pytest.mark.parametrize("last_newline", [True, False])
def test_line_digests_are_xxh64_of_each_line(last_newline):
    lines = _lines(5, 200)
    buf = b"\n".join(lines) + (b"\n" if last_newline else b"")
    starts, digests = line_digests(np.frombuffer(buf, dtype=np.uint8), len(lines))
    assert [int(d) for d in digests] == [xxhash.xxh64_intdigest(x) for x in lines]
    assert [buf[starts[i]:starts[i + 1] - 1] for i in range(len(lines))] == lines
    assert [line_digest(x) for x in lines[:80]] == [xxhash.xxh64_intdigest(x) for x in lines[:80]]


def test_a_line_count_that_is_not_the_buffers_is_refused():
    with pytest.raises(ValueError):
        line_digests(np.frombuffer(b"a\nb\n", dtype=np.uint8), 3)


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
    want = [xxhash.xxh64_intdigest(x) for x in lines]
    assert fast.column("line_digest").to_pylist() == want
    assert slow.column("line_digest").to_pylist() == want
    assert slow.column("id").to_pylist() == fast.column("id").to_pylist()


def test_a_row_not_read_from_a_jsonl_line_has_no_line_digest(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": ["a", "b"], "candidate": ["x y", "z"], "references": [["x"], ["z"]]}),
                   tmp_path / "in.parquet")
    assert _unit_table(tmp_path / "in.parquet").column("line_digest").to_pylist() == [None, None]
