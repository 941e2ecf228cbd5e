"""The fast JSONL path (Arrow's reader, column checks) gives exactly the line-by-line reader's tables."""
import json

import pyarrow as pa
import pytest

from pipeline.io import canonical, readers, records
from pipeline.io.input_spec import InputSpec


def _both(spec, monkeypatch, expect_fast=None):
    """(tables read as usual, tables read line by line); ``expect_fast``: whether the fast path
    must have taken every unit (True) or none (False), so a comparison is not slow vs slow."""
    taken = []
    real = records._records_fast
    with monkeypatch.context() as m:
        m.setattr(records, "_records_fast", lambda *a: taken.append(real(*a)) or taken[-1])
        fast = [readers.read_unit(spec, u) for u in readers.plan_units(spec)]
    if expect_fast is not None:
        assert taken and all(t == expect_fast for t in taken), taken
    with monkeypatch.context() as m:
        m.setattr(records, "_records_fast", lambda *a: False)
        slow = [readers.read_unit(spec, u) for u in readers.plan_units(spec)]
    return fast, slow


def _same(fast, slow):
    assert len(fast) == len(slow)
    for (ft, fq), (st, sq) in zip(fast, slow):
        assert ft.to_pylist() == st.to_pylist()
        assert ft.schema == st.schema
        assert fq.to_pylist() == sq.to_pylist()


@pytest.mark.parametrize("dataset", ["newsroom", "duc2004_pyrouge_tests", "multi_summeval", "sacrerouge_fixtures"])
def test_real_data(shared_data, dataset, monkeypatch):
    spec = {"layout": "records", "paths": str(shared_data / dataset / f"{dataset}.jsonl"),
            "columns": {"system": "system"}}
    _same(*_both(spec, monkeypatch))


def _write(path, records, raw_lines=()):
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
        for line in raw_lines:
            f.write(line + "\n")


@pytest.mark.parametrize("case", [
    [],                                                     # clean: the fast path reads it
    ['{"id": "m", "candidate": "a", "references": "b"}'],   # a string among reference lists
    ['{"id": "x1", "candidate": "a", "references": []}'],   # empty reference list
    ['{"id": "x2", "candidate": null, "references": "a"}'],  # null candidate
    ['{"id": 7, "candidate": "a", "references": "b"}'],      # integer id among strings
    ['{"id": "dup", "candidate": "a", "references": "b"}'] * 2,  # duplicate ids
    ['not json'],
    [''],                                                   # a blank line
    ['{"id": "s", "candidate": "\\ud800", "references": "b"}'],  # lone surrogate escape
    ['{"id": "S", "candidate": "x\\uDFFF", "references": "b"}'],  # upper case, low surrogate
    ['null'],                                               # a bare null line
    ['{"id": "cr", "candidate": "a", "references": "b"}\r'],  # a CRLF line
    ['{"id": "", "candidate": "a", "references": "b"}'],     # empty id
    ['{"id": "r", "candidate": "a", "references": ["b", null]}'],
])
def test_every_kind_of_line(tmp_path, case, monkeypatch):
    recs = [{"id": f"e{i}", "system": "s" if i % 2 else "t", "candidate": f"cand {i} café",
             "references": [f"ref {i}", "other"] if i % 3 else [f"only {i}"], "source": None if i % 4 else "src"}
            for i in range(30)]
    _write(tmp_path / "a.jsonl", recs, case)
    spec = {"layout": "records", "paths": str(tmp_path / "a.jsonl")}
    # every case but the clean one has a line the fast path must hand to the line-by-line reader
    fast, slow = _both(spec, monkeypatch, expect_fast=not case)
    _same(fast, slow)


def test_row_slices_and_gzip(tmp_path, monkeypatch):
    import gzip

    recs = [{"id": i, "candidate": f"c {i}", "references": [f"r {i}"]} for i in range(100)]
    _write(tmp_path / "a.jsonl", recs)
    with gzip.open(tmp_path / "b.jsonl.gz", "wt") as f:
        for r in recs:
            f.write(json.dumps({**r, "id": f"g{r['id']}"}) + "\n")
    for paths in (str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl.gz")):
        spec = InputSpec.from_config({"layout": "records", "paths": paths})
        units = readers.plan_units(spec, target_rows=30)
        fast = [readers.read_unit(spec, u) for u in units]
        with monkeypatch.context() as m:
            m.setattr(records, "_records_fast", lambda *a: False)
            slow = [readers.read_unit(spec, u) for u in units]
        _same(fast, slow)
        assert sum(t.num_rows for t, _ in fast) == 100


def test_fast_path_is_taken_on_clean_data(tmp_path):
    _write(tmp_path / "a.jsonl", [{"id": "a", "candidate": "x", "references": "y"}])
    spec = InputSpec.from_config({"layout": "records", "paths": str(tmp_path / "a.jsonl")})
    out = canonical.Out()
    assert records._records_fast(spec, readers.plan_units(spec)[0], out)
    assert isinstance(out.fast, pa.Table) and out.fast.num_rows == 1


@pytest.mark.parametrize("seed", range(30))
def test_jsonl_shape_equals_the_bytes_definitions(seed):
    import re

    import numpy as np

    rng = np.random.default_rng(seed)
    # the edges of [dD] and [89a-fA-F]: letters and digits just inside and just outside
    alphabet = [b"\n", b"{", b"\r", b"\\", b"u", b"d", b"D", b"8", b"9", b"a", b"f", b"F", b"g", b"x", b"\\u",
                b"A", b"G", b"7", b"`", b":", b"c", b"C", b"e", b"E"]
    data = b"".join(rng.choice(alphabet, size=int(rng.integers(0, 200))))
    nl, nl_brace, cr, sur = records._jsonl_scan(np.frombuffer(data, dtype=np.uint8))[:4]
    assert nl == data.count(b"\n")
    assert nl_brace == data.count(b"\n{")
    assert cr == (b"\r" in data)
    assert sur == bool(re.search(rb"\\u[dD][89a-fA-F]", data))


def test_a_pooled_unit_is_scanned_as_the_warm_up_s_read_only_bytes(monkeypatch):
    """A unit read into Arrow's pool is a writable buffer: scanned as it is, it compiled the
    kernels again (another signature than the warm-up's read-only bytes) in a run's first task."""
    import io

    from pipeline.io.streams import read_pooled

    seen, real = [], records._jsonl_scan
    monkeypatch.setattr(records, "_jsonl_scan", lambda buf: seen.append(buf.flags.writeable) or real(buf))
    data = read_pooled(io.BytesIO(b'{"id": "a"}\n{"id": "b"}\n'))
    assert records._clean_lines(data)[0] == 2
    assert seen == [False]


def test_jsonl_shape_surrogate_escape_at_every_byte_value():
    import re

    import numpy as np

    for prefix in (b"\\ud", b"\\uD", b"\\ue", b"x\\u"):
        for c in range(256):
            data = prefix + bytes([c])
            sur = records._jsonl_scan(np.frombuffer(data, dtype=np.uint8))[3]
            assert sur == bool(re.search(rb"\\u[dD][89a-fA-F]", data)), data


def test_a_file_within_target_rows_is_one_whole_file_unit_read_by_the_fast_path(tmp_path, monkeypatch):
    """With ``target_rows`` larger than a file, the file is one unit of the whole file (a row slice
    would send it to the line-by-line reader), and the fast path reads it; a larger file is cut."""
    path = tmp_path / "a.jsonl"
    _write(path, [{"id": f"d{i}", "candidate": f"c {i}", "references": [f"r {i}"]} for i in range(30)])
    spec = InputSpec.from_config({"layout": "records", "paths": str(path)})
    (unit,) = readers.plan_units(spec, 100)
    assert unit.row_start == 0 and unit.row_stop is None and unit.byte_start is None
    taken = []
    real = records._records_fast
    monkeypatch.setattr(records, "_records_fast", lambda *a: taken.append(real(*a)) or taken[-1])
    table, _ = readers.read_unit(spec, unit)
    assert taken == [True] and table.num_rows == 30
    assert [u.row_stop for u in readers.plan_units(spec, 10)] == [10, 20, 30]
