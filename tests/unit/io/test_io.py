"""pipeline.io: every input layout -> canonical table + quarantine; atomic writers."""
from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import pickle
import subprocess
import sys
from pathlib import Path

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.io import readers
from pipeline.io.readers import plan_units, read_unit
from pipeline.io.input_spec import InputSpec, WorkUnit
from pipeline.io.writers import escape_system, unescape_system, write_json_atomic, write_parquet_atomic
from pipeline.runfolder import is_complete, mark_success, part_name, partition_path

from support.records import read_all, recs
from support.shared import DATA, needs_data


# --------------------------------------------------------------------------- helpers
def write_jsonl(path: Path, records, opener=open):
    path.parent.mkdir(parents=True, exist_ok=True)
    with opener(path, "wb") as f:
        for r in records:
            f.write((r if isinstance(r, (str, bytes)) else json.dumps(r)).encode() if not isinstance(r, bytes)
                    else r)
            f.write(b"\n")
    return path




def reasons(q):
    return q.column("reason").to_pylist()


# --------------------------------------------------------------------------- records
def test_records_sharded_jsonl_glob(tmp_path):
    write_jsonl(tmp_path / "in" / "shard-0.jsonl", recs(3, 0, "A"))
    write_jsonl(tmp_path / "in" / "shard-1.jsonl", recs(2, 3, "A"))
    units, t, q = read_all({"layout": "records", "paths": f"file://{tmp_path}/in/*.jsonl"})
    # two small shards: one unit that packs them, in listing order (tests/unit/io/test_packing.py)
    assert [u.index for u in units] == [0]
    assert units[0].files[0].endswith("shard-0.jsonl") and units[0].files[1].endswith("shard-1.jsonl")
    assert t.column("id").to_pylist() == [f"d{i}" for i in range(5)]
    assert t.column("system").to_pylist() == ["A"] * 5
    assert t.column("references").to_pylist()[4] == ["ref 4 a", "ref 4 b"]
    assert t.column("row").to_pylist() == [0, 1, 2, 0, 1]
    assert t.column("source").null_count == 5
    assert q.num_rows == 0
    # deterministic and picklable
    assert plan_units(InputSpec.from_config({"paths": f"{tmp_path}/in/*.jsonl"})) == \
        plan_units(InputSpec.from_config({"paths": f"{tmp_path}/in/*.jsonl"}))
    assert pickle.loads(pickle.dumps(units)) == units


def test_records_folder_and_plain_path(tmp_path):
    write_jsonl(tmp_path / "in" / "a.jsonl", recs(2))
    (tmp_path / "in" / "_SUCCESS").write_text("")
    _, t, _ = read_all({"paths": str(tmp_path / "in")})
    assert t.num_rows == 2
    _, t, _ = read_all({"paths": [str(tmp_path / "in" / "a.jsonl")]})
    assert t.num_rows == 2


@pytest.mark.parametrize("ext,opener", [(".gz", gzip.open), (".bz2", bz2.open), (".xz", lzma.open)])
def test_records_compressed_jsonl(tmp_path, ext, opener):
    write_jsonl(tmp_path / f"a.jsonl{ext}", recs(7, system="S"), opener)
    units, t, q = read_all({"paths": f"{tmp_path}/*.jsonl{ext}"})
    assert t.column("id").to_pylist() == [f"d{i}" for i in range(7)] and q.num_rows == 0
    # row slices of a compressed file are read by streaming (no byte ranges)
    units, t2, _ = read_all({"paths": f"{tmp_path}/*.jsonl{ext}"}, target_rows=3)
    assert len(units) == 3 and all(u.byte_start is None for u in units)
    assert t2.equals(t)


def test_zstd(tmp_path):
    zstd = pytest.importorskip("zstandard")
    (tmp_path / "a.jsonl.zst").write_bytes(zstd.ZstdCompressor().compress(
        b"".join(json.dumps(r).encode() + b"\n" for r in recs(3))))
    _, t, _ = read_all({"paths": f"{tmp_path}/a.jsonl.zst"})
    assert t.num_rows == 3


def test_zstd_missing_is_a_clear_error(tmp_path, monkeypatch):
    import fsspec as _f

    # as on a machine without zstandard (it is a test dependency here)
    available = [c for c in _f.available_compressions() if c != "zstd"]
    monkeypatch.setattr(_f, "available_compressions", lambda: available)
    (tmp_path / "a.jsonl.zst").write_bytes(b"")
    with pytest.raises(ValueError, match="zstandard"):
        plan_units(InputSpec.from_config({"paths": f"{tmp_path}/a.jsonl.zst"}))


def test_target_rows_byte_ranges_equal_whole_file(tmp_path):
    lines = recs(10, system="S")
    lines.insert(4, "")            # a blank line is not a record
    write_jsonl(tmp_path / "a.jsonl", lines)
    with open(tmp_path / "a.jsonl", "ab") as f:   # last line without a newline
        f.write(json.dumps(recs(1, 10, "S")[0]).encode())
    _, whole, _ = read_all({"paths": str(tmp_path / "a.jsonl")})
    units, split, q = read_all({"paths": str(tmp_path / "a.jsonl")}, target_rows=4)
    assert len(units) == 3 and units[1].byte_start is not None
    assert split.equals(whole) and whole.num_rows == 11 and q.num_rows == 0
    assert whole.column("row").to_pylist()[4:6] == [5, 6]


def test_records_parquet_sharded_with_row_groups(tmp_path):
    (tmp_path / "pq").mkdir()
    for k in range(2):
        rows = recs(5, 5 * k, "S")
        t = pa.table({"id": [r["id"] for r in rows], "candidate": [r["candidate"] for r in rows],
                      "references": [r["references"] for r in rows], "system": ["S"] * 5,
                      "source": ["doc"] * 5, "extra": list(range(5))})
        pq.write_table(t, tmp_path / "pq" / f"part-{k}.parquet", row_group_size=2)
    _, whole, q = read_all({"paths": f"{tmp_path}/pq/*.parquet"})
    assert whole.num_rows == 10 and q.num_rows == 0
    assert whole.column("source").to_pylist() == ["doc"] * 10
    units, split, _ = read_all({"paths": f"{tmp_path}/pq/*.parquet"}, target_rows=3)
    assert [(u.row_start, u.row_stop) for u in units] == [(0, 3), (3, 5)] * 2
    assert split.equals(whole)


def test_column_mapping_jsonl_and_parquet(tmp_path):
    rows = [{"doc_id": i, "summary": f"s{i}", "refs": f"r{i}", "model": "m1", "article": "a"} for i in range(3)]
    write_jsonl(tmp_path / "a.jsonl", rows)
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "b.parquet")
    cols = {"id": "doc_id", "candidate": "summary", "references": "refs", "system": "model", "source": "article"}
    for name in ("a.jsonl", "b.parquet"):
        _, t, q = read_all({"paths": str(tmp_path / name), "columns": cols})
        assert q.num_rows == 0
        assert t.column("id").to_pylist() == ["0", "1", "2"]          # integer ids -> strings
        assert t.column("references").to_pylist() == [["r0"], ["r1"], ["r2"]]
        assert t.column("system").to_pylist() == ["m1"] * 3
        assert t.column("source").to_pylist() == ["a"] * 3


def test_missing_parquet_column_is_a_config_error(tmp_path):
    pq.write_table(pa.table({"id": ["a"], "summary": ["x"], "references": [["r"]]}), tmp_path / "a.parquet")
    spec = InputSpec.from_config({"paths": str(tmp_path / "a.parquet")})
    with pytest.raises(ValueError, match=r"no column 'candidate'.*a\.parquet|a\.parquet.*no column 'candidate'"):
        read_unit(spec, plan_units(spec)[0])


def test_glob_matching_nothing(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nothing-\*\.jsonl"):
        plan_units(InputSpec.from_config({"paths": f"{tmp_path}/nothing-*.jsonl"}))
    write_jsonl(tmp_path / "c.jsonl", recs(1))
    with pytest.raises(FileNotFoundError, match="no-such-refs"):
        plan_units(InputSpec.from_config({"layout": "paired", "candidates": f"{tmp_path}/*.jsonl",
                                          "references": f"{tmp_path}/no-such-refs*.jsonl"}))


def test_bad_records_become_quarantine_rows(tmp_path):
    good = {"id": "ok1", "candidate": "c", "references": ["r"]}
    lines = [
        json.dumps(good),                                                        # line 1 ok
        '{"id": "x1", "candidate": "c", "references": ["r"',                     # 2 malformed JSON
        json.dumps({"id": "x2", "candidate": 5, "references": ["r"]}),           # 3 wrong type
        json.dumps({"id": "x3", "candidate": None, "references": ["r"]}),        # 4 null candidate
        json.dumps({"id": "x4", "references": ["r"]}),                           # 5 missing candidate
        json.dumps({"id": "x5", "candidate": "c", "references": ["r", None]}),   # 6 null reference
        json.dumps({"id": "x6", "candidate": "c", "references": []}),            # 7 empty list
        json.dumps({"id": "x7", "candidate": "c"}),                              # 8 missing references
        json.dumps({"id": "x8", "candidate": "c", "references": {"a": 1}}),      # 9 wrong type
        b'{"id": "x9", "candidate": "\xff\xfe", "references": ["r"]}',           # 10 invalid UTF-8
        json.dumps(good),                                                        # 11 duplicate id
        json.dumps([1, 2]),                                                      # 12 not an object
        json.dumps({"candidate": "c", "references": ["r"]}),                     # 13 missing id
        json.dumps({"id": "x10", "candidate": "c", "references": "r", "system": 3.5}),  # 14 wrong system
        '{"id": "x11", "candidate": "\\ud800", "references": ["r"]}',            # 15 lone surrogate
        json.dumps({"id": "ok2", "candidate": "c", "references": "r"}),         # 16 ok
    ]
    f = write_jsonl(tmp_path / "bad.jsonl", lines)
    _, t, q = read_all({"paths": str(f)})
    assert t.column("id").to_pylist() == ["ok1", "ok2"]
    assert t.column("row").to_pylist() == [0, 15]
    rs = reasons(q)
    assert q.column("row").to_pylist() == list(range(1, 15))
    assert all(r.startswith(f"file://{f} line ") for r in rs)
    expect = ["malformed JSON", "candidate must be a string, got int", "null candidate",
              "missing candidate field 'candidate'", "null reference at index 1", "empty reference list",
              "missing references field", "references must be a string or a list of strings, got dict",
              "invalid UTF-8", "duplicate id 'ok1' (first at", "expected a JSON object, got list",
              "missing id field 'id'", "system must be a string, got float", "lone surrogate"]
    for line, (r, e) in enumerate(zip(rs, expect), start=2):
        assert f" line {line}: " in r and e in r, (line, r)
    assert q.column("id").to_pylist()[:3] == [None, "x2", "x3"]


def test_parquet_bad_records(tmp_path):
    t = pa.table({"id": ["a", "b", None, "d", "a"], "candidate": ["c", None, "c", "c", "c"],
                  "references": [["r"], ["r"], ["r"], [], ["r"]]})
    pq.write_table(t, tmp_path / "a.parquet")
    _, out, q = read_all({"paths": str(tmp_path / "a.parquet")})
    assert out.column("id").to_pylist() == ["a"]
    rs = reasons(q)
    assert [r.split(": ", 1)[1].split(" (")[0] for r in rs] == \
        ["null candidate", "null id", "empty reference list", "duplicate id 'a'"]
    assert all(" row " in r and "a.parquet" in r for r in rs)


# --------------------------------------------------------------------------- paired
def _paired_fixture(tmp_path):
    # candidates: 2 systems, sharded in 2 files; references: 3 shards, different sharding, parquet
    cands = []
    for sysname in ("A", "B"):
        for i in range(6):
            cands.append({"doc": f"d{i}", "summary": f"{sysname} says {i}", "model": sysname})
    cands.append({"doc": "orphan-cand", "summary": "x", "model": "A"})
    write_jsonl(tmp_path / "cands" / "c-0.jsonl", cands[:7])
    write_jsonl(tmp_path / "cands" / "c-1.jsonl", cands[7:])
    (tmp_path / "refs").mkdir()
    ref_rows = [{"doc": f"d{i}", "text": [f"gold {i}"], "article": f"article {i}"} for i in range(6)]
    ref_rows.append({"doc": "orphan-ref", "text": ["y"], "article": None})
    ref_rows.append({"doc": "d0", "text": ["gold 0 second"], "article": None})   # 2nd row for d0
    for k, chunk in enumerate((ref_rows[:2], ref_rows[2:5], ref_rows[5:])):
        pq.write_table(pa.Table.from_pylist(chunk), tmp_path / "refs" / f"r-{k}.parquet")
    return {"layout": "paired", "candidates": f"{tmp_path}/cands/*.jsonl",
            "references": f"{tmp_path}/refs/*.parquet",
            "columns": {"id": "doc", "candidate": "summary", "references": "text", "system": "model",
                        "source": "article"}}


def test_paired_join_and_mismatched_ids(tmp_path):
    spec = _paired_fixture(tmp_path)
    units, t, q = read_all(spec)
    assert len(units) == 2
    got = {(s, i): (c, r, src) for s, i, c, r, src in zip(*(t.column(n).to_pylist() for n in
           ("system", "id", "candidate", "references", "source")))}
    assert len(got) == 12
    assert got[("B", "d3")] == ("B says 3", ["gold 3"], "article 3")
    assert got[("A", "d0")][1] == ["gold 0", "gold 0 second"]       # rows of one id are concatenated
    rs = sorted(reasons(q))
    assert len(rs) == 2
    assert "no references for id 'orphan-cand'" in rs[0] and "c-1.jsonl line 6" in rs[0]
    assert "no candidate for id 'orphan-ref'" in rs[1] and "r-2.parquet row 1" in rs[1]
    # a unit carries only the reference rows it needs
    assert all(len(u.ref_ranges) >= 1 for u in units)
    assert pickle.loads(pickle.dumps(units)) == units


def test_paired_target_rows_same_result(tmp_path):
    spec = _paired_fixture(tmp_path)
    _, whole, qw = read_all(spec)
    units, split, qs = read_all(spec, target_rows=2)
    assert len(units) == 4 + 3
    key = lambda tb: sorted(zip(*(tb.column(n).to_pylist() for n in ("system", "id", "candidate", "references"))))
    assert key(split) == key(whole)
    assert sorted(reasons(qs)) == sorted(reasons(qw))


def test_paired_bad_rows_on_both_sides(tmp_path):
    write_jsonl(tmp_path / "c.jsonl", [
        {"id": "a", "candidate": "ca"}, {"id": "b", "candidate": None}, "{oops", {"id": "c", "candidate": "cc"},
        {"id": "a", "candidate": "again"}])
    write_jsonl(tmp_path / "r.jsonl", [
        {"id": "a", "references": "ra"}, {"id": "c", "references": []}, "not json", {"references": "x"}])
    _, t, q = read_all({"layout": "paired", "candidates": str(tmp_path / "c.jsonl"),
                        "references": str(tmp_path / "r.jsonl")})
    assert t.column("id").to_pylist() == ["a"] and t.column("references").to_pylist() == [["ra"]]
    rs = reasons(q)
    assert len(rs) == 7   # the bad reference row of c is a row of its own, and c's candidate one
    joined = "\n".join(rs)
    for piece in ("r.jsonl line 3: references side: malformed JSON",
                  "r.jsonl line 2: references side: empty reference list",
                  "r.jsonl line 4: references side: missing id field",
                  "c.jsonl line 2: null candidate", "c.jsonl line 3: malformed JSON",
                  "c.jsonl line 4: references side", "empty reference list",
                  "c.jsonl line 5: duplicate id 'a'"):
        assert piece in joined, piece


# --------------------------------------------------------------------------- lines
def test_lines_pairs_sorted_files(tmp_path):
    (tmp_path / "pred").mkdir()
    (tmp_path / "gold").mkdir()
    (tmp_path / "pred" / "p1.txt").write_text("a b\nc d\n")
    (tmp_path / "pred" / "p2.txt").write_text("e f\r\ng")              # CRLF, no final newline
    (tmp_path / "gold" / "t1.txt").write_text("a x\nc y\n")
    (tmp_path / "gold" / "t2.txt").write_text("e z\nq\n")
    _, t, q = read_all({"layout": "lines", "candidates": f"{tmp_path}/pred/*.txt",
                        "references": f"{tmp_path}/gold/*.txt"})
    assert t.column("id").to_pylist() == ["t1:1", "t1:2", "t2:1", "t2:2"]
    assert t.column("candidate").to_pylist() == ["a b", "c d", "e f", "g"]
    assert t.column("references").to_pylist() == [["a x"], ["c y"], ["e z"], ["q"]]
    assert t.column("system").to_pylist() == [""] * 4 and q.num_rows == 0


def test_lines_one_file_or_folder_per_system(tmp_path):
    (tmp_path / "systems").mkdir()
    (tmp_path / "refs.txt").write_text("r1\nr2\nr3\n")
    for s in ("bart", "lead3"):
        (tmp_path / "systems" / f"{s}.txt").write_text(f"{s} 1\n{s} 2\n{s} 3\n")
        (tmp_path / "folders" / s).mkdir(parents=True)
        (tmp_path / "folders" / s / "out.txt").write_text(f"{s} 1\n{s} 2\n{s} 3\n")
    for system_from, pattern in (("stem", "systems/*.txt"), ("folder", "folders/*/out.txt")):
        units, t, q = read_all({"layout": "lines", "candidates": f"{tmp_path}/{pattern}",
                                "references": str(tmp_path / "refs.txt"), "system_from": system_from},
                               target_rows=2)
        assert len(units) == 4 and q.num_rows == 0
        assert t.column("system").to_pylist() == ["bart"] * 3 + ["lead3"] * 3
        assert t.column("id").to_pylist() == ["refs:1", "refs:2", "refs:3"] * 2
        assert t.column("references").to_pylist()[5] == ["r3"]
        assert t.column("candidate").to_pylist()[4] == "lead3 2"


def test_lines_different_line_counts_name_both_files(tmp_path):
    (tmp_path / "c.txt").write_text("a\nb\nc\n")
    (tmp_path / "r.txt").write_text("a\nb\n")
    with pytest.raises(ValueError, match=r"c\.txt has 3 lines but .*r\.txt has 2"):
        plan_units(InputSpec.from_config({"layout": "lines", "candidates": str(tmp_path / "c.txt"),
                                          "references": str(tmp_path / "r.txt")}))


def test_lines_invalid_utf8(tmp_path):
    (tmp_path / "c.txt").write_bytes(b"ok\n\xff bad\nfine\n")
    (tmp_path / "r.txt").write_bytes(b"r\nr\nr\n")
    _, t, q = read_all({"layout": "lines", "candidates": str(tmp_path / "c.txt"),
                        "references": str(tmp_path / "r.txt")})
    assert t.column("id").to_pylist() == ["r:1", "r:3"]
    assert reasons(q)[0].endswith("c.txt line 2: invalid UTF-8 at byte 0")


# --------------------------------------------------------------------------- real data
@needs_data
def test_real_multi_reference_duc2004():
    path = DATA / "duc2004_pyrouge_tests" / "duc2004_pyrouge_tests.jsonl"
    units, t, q = read_all({"paths": str(path)}, target_rows=30)
    assert len(units) == 4 and q.num_rows == 0 and t.num_rows == 100
    assert set(t.column("system").to_pylist()) == {"summaries_1", "summaries_2"}
    assert all(len(r) == 4 for r in t.column("references").to_pylist())
    first = json.loads(path.open().readline())
    assert t.column("candidate")[0].as_py() == first["candidate"]
    assert t.column("references")[0].as_py() == first["references"]


# --------------------------------------------------------------------------- spec
def test_spec_errors():
    with pytest.raises(ValueError, match="did you mean 'paths'"):
        InputSpec.from_config({"pahts": "x.jsonl"})
    with pytest.raises(ValueError, match="did you mean 'candidate'"):
        InputSpec.from_config({"paths": "x.jsonl", "columns": {"candidat": "c"}})
    with pytest.raises(ValueError, match="input.layout"):
        InputSpec.from_config({"layout": "nope", "paths": "x"})
    with pytest.raises(ValueError, match="scheme 'ftp'"):
        InputSpec.from_config({"paths": "ftp://host/x.jsonl"})
    with pytest.raises(ValueError, match="input.references: required"):
        InputSpec.from_config({"layout": "paired", "candidates": "x"})
    with pytest.raises(ValueError, match="target_rows"):
        plan_units({"paths": "x.jsonl"}, target_rows=0)


def test_io_never_imports_dask():
    code = ("import sys, pipeline.io, pipeline.io.readers, pipeline.io.writers, pipeline.config, "
            "pipeline.signature; assert not [m for m in sys.modules if m == 'dask' or m.startswith('dask.')]")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[3])


# --------------------------------------------------------------------------- writers
def test_part_name():
    # named by (unit, slice): zero-padded, so name order is input order below 100,000 units
    assert part_name(7) == "part-00007-0000.parquet" and part_name(7, 12) == "part-00007-0012.parquet"
    assert part_name(123456, 3) == "part-123456-0003.parquet"
    for bad in (-1, 1.0, True):
        with pytest.raises(ValueError):
            part_name(bad)
        with pytest.raises(ValueError):
            part_name(0, bad)


@pytest.mark.parametrize("system", ["../x", "..", ".", "/", "a/b", "\\", "a\\..\\b", "\x00", "a\x00b",
                                    "%2F", "~", "", " ", "système", "a" * 500, "../" * 100, ".hidden"])
def test_partition_path_escaping(tmp_path, system):
    p = partition_path(str(tmp_path / "run"), "scores", system)
    prefix = f"{tmp_path}/run/scores/system-"
    assert p.startswith(prefix) and p.endswith("/")
    seg = p[len(prefix):-1]
    assert "/" not in seg and "\\" not in seg and "\x00" not in seg
    assert seg not in (".", "..") and not seg.startswith(".")
    assert len(seg) <= 96
    os.makedirs(p, exist_ok=True)       # the folder really is inside the run folder
    assert os.path.realpath(p).startswith(os.path.realpath(tmp_path / "run" / "scores") + os.sep)
    if "~" not in seg:
        assert unescape_system(seg) == system


def test_escape_is_injective_and_long_names_hashed():
    names = ["a", "A", "a b", "a%20b", "a/b", "a%2Fb", "", "..", "%2E%2E", "x" * 200, "x" * 199 + "y"]
    escaped = [escape_system(n) for n in names]
    assert len(set(escaped)) == len(names)
    assert escape_system("x" * 200) == escape_system("x" * 200)
    assert "~" in escape_system("x" * 200)
    with pytest.raises(ValueError):
        partition_path("file:///r", "../x", "s")
    with pytest.raises(ValueError):
        unescape_system(escape_system("x" * 200))


def test_columns_unique_per_row_are_written_without_a_dictionary(tmp_path):
    """The ids and digests (one value a row: a dictionary only grows the file); the others keep one."""
    n = 5000
    t = pa.table({"id": [f"ex-{i}" for i in range(n)], "text_digest": pa.array(range(n), pa.uint64()),
                  "line_digest": pa.array(range(7, n + 7), pa.uint64()), "status": ["ok"] * n})
    path = tmp_path / "p.parquet"
    write_parquet_atomic(t, str(path))
    chunks = pq.ParquetFile(path).metadata.row_group(0)
    dictionary = {chunks.column(i).path_in_schema: "RLE_DICTIONARY" in chunks.column(i).encodings
                  for i in range(chunks.num_columns)}
    assert dictionary == {"id": False, "text_digest": False, "line_digest": False, "status": True}
    assert pq.read_table(path).equals(t)


def test_write_parquet_atomic_and_success(tmp_path):
    run = f"file://{tmp_path}/run"
    t = pa.table({"id": ["a", "b"], "x": [1.0, 2.0]})
    url = partition_path(run, "scores", "sys/1") + part_name(3)
    write_parquet_atomic(t, url, {}, {"signature": "rouge:1|v:0", "counts": {"n": 2}})
    folder = Path(partition_path(str(tmp_path / "run"), "scores", "sys/1"))
    assert os.listdir(folder) == ["part-00003-0000.parquet"]     # no temp file left behind
    back = pq.read_table(folder / "part-00003-0000.parquet")
    assert back.select(["id", "x"]).equals(t)
    assert back.schema.metadata[b"signature"] == b"rouge:1|v:0"
    assert json.loads(back.schema.metadata[b"counts"]) == {"n": 2}
    write_parquet_atomic(t.slice(0, 1), url, {})                  # a retry overwrites its own part
    assert pq.read_table(folder / "part-00003-0000.parquet").num_rows == 1
    assert not is_complete(run)
    write_json_atomic({"b": 1, "a": [1, 2]}, f"{run}/_summary.json")
    assert (tmp_path / "run" / "_summary.json").read_text() == json.dumps({"a": [1, 2], "b": 1}, indent=2,
                                                                         sort_keys=True) + "\n"
    mark_success(run)
    assert is_complete(run) and is_complete(str(tmp_path / "run"))
    assert sorted(os.listdir(tmp_path / "run")) == ["_SUCCESS", "_summary.json", "scores"]


def test_failed_write_leaves_nothing(tmp_path):
    class Boom:
        schema = pa.schema([])

        def replace_schema_metadata(self, m):
            return self

    with pytest.raises(Exception):
        write_parquet_atomic(Boom(), str(tmp_path / "out" / "p.parquet"))
    assert os.listdir(tmp_path / "out") == []


def test_writers_on_a_non_local_filesystem():
    url = "memory://rouge-test-run"
    write_parquet_atomic(pa.table({"a": [1]}), f"{url}/scores/system-/part-00000.parquet")
    write_json_atomic({"ok": True}, f"{url}/_summary.json")
    mark_success(url)
    fs = fsspec.filesystem("memory")
    assert is_complete(url)
    assert not [p for p in fs.find("/rouge-test-run") if ".tmp-" in p]
    fs.rm("/rouge-test-run", recursive=True)


def _key_table(pairs):
    return pa.table({"system": [s for s, _ in pairs], "id": [i for _, i in pairs],
                     "row": list(range(len(pairs)))})


def test_find_duplicates_across_units_and_separator_lookalikes():
    units = [WorkUnit(index=k, layout="records", file=f"f{k}.jsonl", format="jsonl") for k in range(3)]
    clean = [_key_table([("a", "1"), ("a", "2")]), _key_table([("b", "1")]), _key_table([("a", "3")])]
    assert readers.find_duplicates(units, clean) == {}
    # joined with the separator, these two different pairs are the same string: the quick
    # distinct-key check must not take them for duplicates (the exact grouping decides)
    lookalike = [_key_table([("a\x1fb", "c")]), _key_table([("a", "b\x1fc")]), _key_table([])]
    assert readers.find_duplicates(units, lookalike) == {}
    dup = [_key_table([("a", "1"), ("a", "2")]), _key_table([("b", "1"), ("a", "2")]),
           _key_table([("a", "1"), ("x\x1fy", "z"), ("x", "y\x1fz")])]
    assert readers.find_duplicates(units, dup) == {1: ((1, "f0.jsonl line 2"),), 2: ((0, "f0.jsonl line 1"),)}


def test_every_layout_the_spec_accepts_has_one_reader():
    from pipeline.io.input_spec import LAYOUTS
    from pipeline.io.readers import READERS
    assert tuple(READERS) == LAYOUTS


def test_read_pooled_reads_what_the_stream_holds_through_short_reads():
    import io

    from pipeline.io.streams import read_pooled

    class Trickle(io.BytesIO):   # a stream that returns at most 3 bytes a call, as a socket may
        def readinto(self, b):
            return super().readinto(memoryview(b)[:3])

    data = bytes(range(256)) * 4
    f = Trickle(data)
    f.seek(10)
    assert bytes(read_pooled(f, 100)) == data[10:110]
    assert bytes(read_pooled(f)) == data[110:]          # the rest, its size found by seeking
    f.seek(1000)
    assert bytes(read_pooled(f, 500)) == data[1000:]    # a file shorter than asked: what it holds

    class Pipe(Trickle):   # no seeking: read to its end as it is
        def seekable(self):
            return False

        def seek(self, *a):
            raise io.UnsupportedOperation("seek")

    assert bytes(read_pooled(Pipe(data))) == data


def test_a_read_larger_than_the_pool_keeps_is_a_plain_bytes(monkeypatch):
    import io

    import pyarrow as pa

    from pipeline.io import streams

    data = bytes(range(256)) * 4
    assert isinstance(streams.read_pooled(io.BytesIO(data)), pa.Buffer)
    monkeypatch.setattr(streams, "POOLED_MAX", 1000)
    f = io.BytesIO(data)
    assert streams.read_pooled(f, 1000).to_pybytes() == data[:1000]
    assert streams.read_pooled(f).to_pybytes() == data[1000:]   # 24 bytes left
    f.seek(0)
    got = streams.read_pooled(f)
    assert isinstance(got, bytes) and got == data


def test_read_pooled_through_a_readinto_that_assigns_bytes():
    """``readinto`` written as ``b[:n] = data`` (paramiko's SFTP files, urllib3's responses): it
    needs a view of unsigned bytes (Arrow's buffer exports signed chars, which refuse ``bytes``)."""
    import io

    from pipeline.io.streams import read_pooled

    class Assigning(io.RawIOBase):
        def __init__(self, data):
            self.f = io.BytesIO(data)

        def readable(self):
            return True

        def seekable(self):
            return True

        def seek(self, *a):
            return self.f.seek(*a)

        def tell(self):
            return self.f.tell()

        def readinto(self, b):
            data = self.f.read(min(len(b), 7))
            b[:len(data)] = data
            return len(data)

    data = bytes(range(256)) * 2
    assert bytes(read_pooled(Assigning(data), 300)) == data[:300]
    assert bytes(read_pooled(Assigning(data))) == data


def test_read_pooled_to_the_end_of_a_stream_whose_seek_returns_nothing():
    """paramiko's SFTP files (fsspec's sftp) return None from ``seek``: the end is found by ``tell``."""
    import io

    from pipeline.io.streams import read_pooled

    class SeekReturnsNone(io.BytesIO):
        def seek(self, *a):
            super().seek(*a)

    data = bytes(range(256)) * 3
    f = SeekReturnsNone(data)
    f.seek(100)
    assert bytes(read_pooled(f)) == data[100:]
