"""Small files of layout ``records`` packed into units by size: the units follow the sorted
listing, and a pack reads exactly the rows, row positions and quarantine reasons that its
files read one unit each, with cross-unit duplicates resolved the same way."""
from __future__ import annotations

import dataclasses
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.io import readers, records
from pipeline.io.readers import find_duplicates, plan_units, read_unit, unit_keys
from pipeline.io.input_spec import InputSpec


def _rec(i, system="A"):
    return {"id": f"d{i}", "system": system, "candidate": f"cand {i} the cat", "references": [f"ref {i} a cat"]}


def _corpus(root):
    """Twelve small JSONL files (clean ones that take the fast path, one with bad lines, duplicate ids
    within a file, across neighbouring files and far apart), a Parquet file in the middle."""
    root.mkdir()
    for k in range(12):
        rows = [json.dumps(_rec(3 * k + j)) for j in range(3)]
        if k == 4:
            rows += ["{not json", json.dumps(_rec(12)), json.dumps({"id": "x", "candidate": None, "references": "r"})]
        if k == 5:
            rows.append(json.dumps(_rec(14)))       # d14 is in file 4 too: the neighbour's duplicate
        if k == 11:
            rows.append(json.dumps(_rec(0)))        # the first file's id, far away
        (root / f"s{k:02d}.jsonl").write_text("\n".join(rows) + "\n")
        if k == 6:
            pq.write_table(pa.Table.from_pylist([_rec(100), _rec(101), _rec(2)]), root / f"s{k:02d}b.parquet")
    return str(root / "s*")


def _read_resolved(spec, units):
    """What the driver makes of ``units``: read, cross-unit duplicates found, read again."""
    keys = [unit_keys(read_unit(spec, u)[0], u) for u in units]
    drops = find_duplicates(units, keys)
    units = [dataclasses.replace(u, drop_rows=drops.get(k, ())) for k, u in enumerate(units)]
    tables = [read_unit(spec, u) for u in units]
    return pa.concat_tables(t for t, _ in tables), pa.concat_tables(q for _, q in tables)


def test_small_files_are_packed_in_listing_order_up_to_the_byte_target(tmp_path, monkeypatch):
    spec = InputSpec.from_config({"paths": _corpus(tmp_path / "in")})
    files = sorted(tmp_path.glob("in/s*"))
    size = {str(p): p.stat().st_size for p in files}
    monkeypatch.setattr(records, "PACK_BYTES", 3 * max(size.values()))
    units = plan_units(spec)
    assert [u.index for u in units] == list(range(len(units)))
    listed = [f for u in units for f in (u.files or (u.file,))]
    assert [f.removeprefix("file://") for f in listed] == [str(p) for p in files]  # every file once, in order
    assert any(len(u.files) > 1 for u in units) and len(units) < len(files)
    for u in units:
        members = [f.removeprefix("file://") for f in (u.files or (u.file,))]
        assert u.file == (u.files or (u.file,))[0]
        assert sum(size[f] for f in members) <= records.PACK_BYTES
        assert u.n_bytes == sum(size[f] for f in members)
        assert {f.rsplit(".", 1)[1] for f in members} == {u.format}   # one format per unit
    assert plan_units(spec) == units
    monkeypatch.setattr(records, "PACK_BYTES", 10 * sum(size.values()))
    assert [len(u.files or (u.file,)) for u in plan_units(spec)] == [7, 1, 5]  # the Parquet file breaks the run
    # target_rows asks for row slices of each file: no packing
    assert all(not u.files for u in plan_units(spec, target_rows=2))


@pytest.mark.parametrize("pack_bytes", [600, 1000, 1 << 20])
def test_a_pack_reads_what_its_files_read_one_unit_each(tmp_path, monkeypatch, pack_bytes):
    spec = InputSpec.from_config({"paths": _corpus(tmp_path / "in")})
    monkeypatch.setattr(records, "PACK_BYTES", 0)
    one_each = plan_units(spec)
    assert all(not u.files for u in one_each)
    want_rows, want_q = _read_resolved(spec, one_each)
    monkeypatch.setattr(records, "PACK_BYTES", pack_bytes)
    packed = plan_units(spec)
    assert any(u.files for u in packed)
    got_rows, got_q = _read_resolved(spec, packed)
    assert got_rows.to_pylist() == want_rows.to_pylist()
    assert got_q.to_pylist() == want_q.to_pylist()
    reasons = got_q.column("reason").to_pylist()
    assert len(reasons) == 6
    assert any(r.endswith("s04.jsonl line 4: malformed JSON (Expecting property name enclosed in double quotes)")
               for r in reasons)
    assert sum("duplicate id 'd14' for system 'A' (first at" in r and "s04.jsonl line 3)" in r for r in reasons) == 1
    assert sum("s11.jsonl line 4: duplicate id 'd0' for system 'A' (first at" in r and "s00.jsonl line 1)" in r
               for r in reasons) == 1
    assert sum("s06b.parquet row 2: duplicate id 'd2'" in r for r in reasons) == 1


def test_the_fast_path_of_a_pack_defers_to_the_line_reader_on_a_repeated_id(tmp_path, monkeypatch):
    (tmp_path / "a.jsonl").write_text(json.dumps(_rec(1)) + "\n")
    (tmp_path / "b.jsonl").write_text(json.dumps(_rec(2)) + "\n" + json.dumps(_rec(1)) + "\n")
    spec = InputSpec.from_config({"paths": str(tmp_path / "*.jsonl")})
    taken = []
    real = records._records_fast
    monkeypatch.setattr(records, "_records_fast", lambda *a: taken.append(real(*a)) or taken[-1])
    (unit,) = plan_units(spec)
    assert len(unit.files) == 2
    table, q = read_unit(spec, unit)
    assert taken == [True, False]
    assert table.column("id").to_pylist() == ["d1", "d2"] and table.column("row").to_pylist() == [0, 0]
    assert [f.rsplit("/", 1)[1] for f in table.column("file").to_pylist()] == ["a.jsonl", "b.jsonl"]
    (reason,) = q.column("reason").to_pylist()
    assert reason.endswith("b.jsonl line 2: duplicate id 'd1' for system 'A' (first at "
                           f"file://{tmp_path}/a.jsonl line 1)")


def test_row_keys_name_the_file_of_a_pack():
    unit = readers.WorkUnit(index=0, layout="records", file="f/a", format="jsonl", files=("f/a", "f/b", "f/c"))
    table = pa.table({"system": ["", ""], "id": ["1", "2"], "row": [5, 0], "file": ["f/c", "f/a"]})
    keys = unit_keys(table, unit).column("row").to_pylist()
    assert keys == [(2 << 40) + 5, 0] == [unit.row_key("f/c", 5), unit.row_key("f/a", 0)]
    assert [unit.locate(k) for k in keys] == [("f/c", 5), ("f/a", 0)]
    single = readers.WorkUnit(index=0, layout="records", file="f/a", format="jsonl")
    assert unit_keys(table, single).column("row").to_pylist() == [5, 0] and single.locate(5) == ("f/a", 5)


@pytest.mark.parametrize("mixed_id_types", [False, True])
def test_a_clean_pack_is_read_as_one_buffer_with_the_rows_of_its_files(tmp_path, monkeypatch, mixed_id_types):
    import gzip

    files = {"a.jsonl": [{"id": 1, "candidate": "x y", "references": ["x"], "source": "s x"},
                         {"id": 2, "candidate": "y", "references": ["y z"]}],
             "b.jsonl.gz": [{"id": "3" if mixed_id_types else 3, "system": "S", "candidate": "z", "references": ["z"]}],
             "c.jsonl": [],
             "d.jsonl": [{"id": 4, "system": None, "candidate": "w", "references": ["w", "v"]}] * 1
                        + [{"id": 5, "candidate": "v", "references": ["v"]}]}
    for name, recs in files.items():
        text = "".join(json.dumps(r) + "\n" for r in recs)
        if name == "d.jsonl":
            text = text.rstrip("\n")            # no final newline
        (tmp_path / name).write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    spec = InputSpec.from_config({"paths": str(tmp_path / "*.jsonl*")})
    (unit,) = plan_units(spec)
    assert len(unit.files) == 4
    taken = []
    real = records._pack_fast
    monkeypatch.setattr(records, "_pack_fast", lambda *a: taken.append(real(*a)) or taken[-1])
    whole, q = read_unit(spec, unit)
    assert taken == [not mixed_id_types] and q.num_rows == 0
    monkeypatch.setattr(records, "_pack_fast", lambda *a: False)
    one_by_one, _ = read_unit(spec, unit)
    assert whole.schema == one_by_one.schema and whole.to_pylist() == one_by_one.to_pylist()
    assert [(f.rsplit("/", 1)[1], r) for f, r in zip(whole.column("file").to_pylist(), whole.column("row").to_pylist())] \
        == [("a.jsonl", 0), ("a.jsonl", 1), ("b.jsonl.gz", 0), ("d.jsonl", 0), ("d.jsonl", 1)]
    assert whole.column("id").to_pylist() == ["1", "2", "3", "4", "5"]
    assert whole.column("system").to_pylist() == ["", "", "S", "", ""]
    assert whole.column("source").to_pylist() == ["s x", None, None, None, None]
    assert whole.column("references").to_pylist() == [["x"], ["y z"], ["z"], ["w", "v"], ["v"]]


def test_units_follow_the_listing_when_empty_files_precede_a_file_of_the_pack_size(tmp_path, monkeypatch):
    for name in ("a", "b"):
        (tmp_path / f"{name}.jsonl").write_text("")
    (tmp_path / "c.jsonl").write_text(json.dumps(_rec(1)) + "\n")
    monkeypatch.setattr(records, "PACK_BYTES", (tmp_path / "c.jsonl").stat().st_size)
    units = plan_units(InputSpec.from_config({"paths": str(tmp_path / "*.jsonl")}))
    listed = [f.rsplit("/", 1)[1] for u in units for f in (u.files or (u.file,))]
    assert listed == ["a.jsonl", "b.jsonl", "c.jsonl"]


def test_a_plan_time_duplicate_slows_only_the_file_that_holds_it(tmp_path, monkeypatch):
    (tmp_path / "a.jsonl").write_text(json.dumps(_rec(1)) + "\n")
    (tmp_path / "b.jsonl").write_text(json.dumps(_rec(2)) + "\n")
    (tmp_path / "c.jsonl").write_text(json.dumps(_rec(3)) + "\n")
    spec = InputSpec.from_config({"paths": str(tmp_path / "*.jsonl")})
    (unit,) = plan_units(spec)
    first_b = 1 << 40   # row 0 of the pack's second file: a duplicate of an earlier unit's row
    unit = dataclasses.replace(unit, drop_rows=((first_b, "elsewhere line 1"),))
    taken = []
    real = records._records_fast
    monkeypatch.setattr(records, "_records_fast", lambda *a: taken.append(real(*a)) or taken[-1])
    table, q = read_unit(spec, unit)
    assert taken == [True, False, True]   # a.jsonl and c.jsonl keep the fast path
    assert table.column("id").to_pylist() == ["d1", "d3"]
    (reason,) = q.column("reason").to_pylist()
    assert "b.jsonl line 1: duplicate id 'd2'" in reason and reason.endswith("(first at elsewhere line 1)")


@pytest.mark.parametrize("unusual", ["repeated id", "blank line", "bad record"])
def test_a_pack_that_falls_back_opens_each_file_once(tmp_path, monkeypatch, unusual):
    """The fast path of a pack reads every file's bytes; where the pack is not clean, the files are
    read one by one from those bytes (not fetched again: a GET each on S3)."""
    import gzip

    import fsspec

    b = [json.dumps(_rec(2)), json.dumps(_rec(1) if unusual == "repeated id" else _rec(3))]
    if unusual == "blank line":
        b.insert(1, "")
    if unusual == "bad record":
        b.append(json.dumps({"id": "x", "candidate": None, "references": "r"}))
    (tmp_path / "a.jsonl").write_text(json.dumps(_rec(1)) + "\n")
    (tmp_path / "b.jsonl.gz").write_bytes(gzip.compress(("\n".join(b) + "\n").encode()))
    (tmp_path / "c.jsonl").write_text(json.dumps(_rec(4)) + "\n")
    spec = InputSpec.from_config({"paths": str(tmp_path / "*.jsonl*")})
    (unit,) = plan_units(spec)
    assert len(unit.files) == 3
    opened = []
    real_open = fsspec.open
    monkeypatch.setattr(fsspec, "open", lambda url, *a, **k: opened.append(url.rsplit("/", 1)[1]) or real_open(url, *a, **k))
    table, q = read_unit(spec, unit)
    assert sorted(opened) == ["a.jsonl", "b.jsonl.gz", "c.jsonl"]
    want = {"repeated id": ["d1", "d2", "d4"], "blank line": ["d1", "d2", "d3", "d4"],
            "bad record": ["d1", "d2", "d3", "d4"]}[unusual]
    assert table.column("id").to_pylist() == want
    reasons = q.column("reason").to_pylist()
    if unusual == "repeated id":
        assert reasons == [f"file://{tmp_path}/b.jsonl.gz line 2: duplicate id 'd1' for system 'A' "
                           f"(first at file://{tmp_path}/a.jsonl line 1)"]
    elif unusual == "bad record":
        assert reasons == [f"file://{tmp_path}/b.jsonl.gz line 3: null candidate"]
    else:
        assert reasons == []
        assert table.column("row").to_pylist() == [0, 0, 2, 0]   # the blank line counts


_BLANK, _BAD = "", json.dumps({"id": "x", "candidate": None, "references": "r"})


@pytest.mark.parametrize("case", ["clean", "repeat in a clean file", "repeat of a slow row", "repeat in a slow file"])
def test_a_pack_keeps_the_first_of_a_repeated_id_and_indexes_keys_only_when_looked_up(tmp_path, case):
    """The first occurrence of an id in a pack is kept and later ones are quarantined, whichever
    path (one table for the pack, a table per file, line by line) read either; the keys of a
    table are indexed only when a later row looks one up, so never those of the last file."""
    d = {i: json.dumps(_rec(i)) for i in range(1, 10)}
    a, b = {"clean": ([d[1]], [d[2]]),
            "repeat in a clean file": ([d[1]], [d[2], d[1]]),          # b: the fast path for one file defers
            "repeat of a slow row": ([d[1], _BLANK, d[9]], [d[2], d[9]]),  # a: line by line
            "repeat in a slow file": ([d[1]], [d[2], _BAD, d[1]])}[case]   # b: line by line, a: a table
    for name, lines in (("a", a), ("b", b), ("c", [d[3]])):
        (tmp_path / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    spec = InputSpec.from_config({"paths": str(tmp_path / "*.jsonl")})
    (unit,) = plan_units(spec)
    out = records.Out(unit.drop_rows, unit.files)
    records.read_records(spec, unit, out)
    table, q = out.tables()
    f = f"file://{tmp_path}"
    want_ids, want_q = {
        "clean": (["d1", "d2", "d3"], []),
        "repeat in a clean file": (["d1", "d2", "d3"],
                                   [f"{f}/b.jsonl line 2: duplicate id 'd1' for system 'A' (first at {f}/a.jsonl line 1)"]),
        "repeat of a slow row": (["d1", "d9", "d2", "d3"],
                                 [f"{f}/b.jsonl line 2: duplicate id 'd9' for system 'A' (first at {f}/a.jsonl line 3)"]),
        "repeat in a slow file": (["d1", "d2", "d3"],
                                  [f"{f}/b.jsonl line 2: null candidate",
                                   f"{f}/b.jsonl line 3: duplicate id 'd1' for system 'A' (first at {f}/a.jsonl line 1)"]),
    }[case]
    assert table.column("id").to_pylist() == want_ids
    assert q.column("reason").to_pylist() == want_q
    assert ("A", "d3") not in out.seen                       # c.jsonl, last: nothing looks its keys up
    if case == "clean":
        assert out.seen == {}                                # one table for the pack: no index at all
