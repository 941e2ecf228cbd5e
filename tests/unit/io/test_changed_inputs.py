"""An input file that changes between planning and reading (cut short, grown, a line moved across
a unit's end) fails its unit with one line naming the file (InputChangedError, exit 4): its rows
are never read as other rows, or fewer, with no count and no reason."""
from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.cli.main import failure
from pipeline.errors import EXIT_RUN_FOLDER, InputChangedError
from pipeline.io.input_spec import InputSpec
from pipeline.io.readers import plan_units, read_unit
from pipeline.io.streams import check_range, iter_lines

from support.records import recs

CHANGED = "the file changed since planning"


def _lines(n: int, crlf: bool = False, start: int = 0) -> list[bytes]:
    """``n`` JSONL lines (CRLF ends: the fast path declines them, the line-by-line reader reads them)."""
    end = b"\r\n" if crlf else b"\n"
    return [json.dumps(r).encode() + end for r in recs(n, start, "S")]


def _planned(spec: dict | Path, target_rows):
    spec = InputSpec.from_config({"paths": str(spec)} if isinstance(spec, Path) else spec)
    return spec, plan_units(spec, target_rows)


def _read_every_unit(spec, units):
    return sum(t.num_rows + q.num_rows for t, q in (read_unit(spec, u) for u in units))


def _refused(spec, units, path) -> str:
    with pytest.raises(InputChangedError) as e:
        _read_every_unit(spec, units)
    msg = str(e.value)
    assert CHANGED in msg and str(path) in msg and "\n" not in msg
    return msg


@pytest.mark.parametrize("crlf", [False, True], ids=["fast-path", "line-by-line"])
@pytest.mark.parametrize("target_rows", [4, None, 100], ids=["byte-ranges", "whole-file", "within-target-rows"])
@pytest.mark.parametrize("change", ["shrink", "grow"])
def test_a_jsonl_file_cut_short_or_grown_after_planning_fails(tmp_path, crlf, target_rows, change):
    path = tmp_path / "a.jsonl"
    lines = _lines(10, crlf)
    path.write_bytes(b"".join(lines))
    spec, units = _planned(path, target_rows)
    assert _read_every_unit(spec, units) == 10   # as planned: every record read
    path.write_bytes(b"".join(lines[:7]) if change == "shrink" else b"".join(lines + _lines(3, crlf, 10)))
    _refused(spec, units, path)


def _in_three_byte_ranges(tmp_path, crlf):
    """(path, its lines, spec, units): 10 records planned in three byte-range units."""
    path = tmp_path / "a.jsonl"
    lines = _lines(10, crlf)
    path.write_bytes(b"".join(lines))
    spec, units = _planned(path, 4)
    assert len(units) == 3 and units[0].byte_stop is not None
    return path, lines, spec, units


def _rewritten_same_size(path, lines) -> None:
    size = path.stat().st_size
    path.write_bytes(b"".join(lines))
    assert path.stat().st_size == size


@pytest.mark.parametrize("crlf", [False, True], ids=["fast-path", "line-by-line"])
def test_a_line_moved_across_a_units_end_fails_though_the_size_is_the_same(tmp_path, crlf):
    path, lines, spec, units = _in_three_byte_ranges(tmp_path, crlf)
    # row 3 (unit 0's last) loses a byte of its candidate, row 4 (unit 1's first) gains one:
    # the same size, but unit 0's bytes now end inside row 4 and unit 1's start inside it
    lines[3] = lines[3].replace(b'"cand 3"', b'"cnd 3"')
    lines[4] = lines[4].replace(b'"cand 4"', b'"cand 4x"')
    _rewritten_same_size(path, lines)
    _refused(spec, units, path)


@pytest.mark.parametrize("crlf", [False, True], ids=["fast-path", "line-by-line"])
def test_two_lines_of_a_byte_range_made_one_fail_though_the_size_is_the_same(tmp_path, crlf):
    path, lines, spec, units = _in_three_byte_ranges(tmp_path, crlf)
    end = b"\r\n" if crlf else b"\n"
    lines[0] = lines[0][:-len(end)] + b" " * len(end)   # rows 0 and 1 now one line: unit 0 holds 3
    _rewritten_same_size(path, lines)
    assert "rows 0-4 planned in bytes" in _refused(spec, units, path)


def test_a_range_ending_inside_a_line_is_refused_unless_it_ended_the_file():
    data = b'{"a": 1}\n{"b": 2}'
    with pytest.raises(InputChangedError, match="a line no longer ends at byte 17"):
        check_range("f.jsonl", data, 0, 2, 0, 17, 100)
    check_range("f.jsonl", data, 0, 2, 0, 17, 17)   # the file's last line, planned without a newline


@pytest.mark.parametrize("known_size", [True, False])
def test_a_gzip_file_cut_short_after_planning_fails(tmp_path, known_size):
    path = tmp_path / "a.jsonl.gz"
    lines = _lines(10)
    path.write_bytes(gzip.compress(b"".join(lines)))
    spec, units = _planned(path, 4)
    assert len(units) == 3 and units[-1].byte_start is None and units[-1].row_stop == 10
    if not known_size:
        units = [dataclasses.replace(u, n_bytes=None) for u in units]
    path.write_bytes(gzip.compress(b"".join(lines[:9])))
    msg = _refused(spec, units, path)
    assert known_size or "rows 8-10 planned, it has 9 now" in msg


def test_a_parquet_file_cut_short_after_planning_fails(tmp_path):
    path = tmp_path / "a.parquet"
    pq.write_table(pa.Table.from_pylist(recs(10, 0, "S")), path, row_group_size=4)
    spec, units = _planned(path, 4)
    units = [dataclasses.replace(u, n_bytes=None) for u in units]   # the row count alone tells
    pq.write_table(pa.Table.from_pylist(recs(9, 0, "S")), path, row_group_size=4)
    assert "rows 8-10 planned, it has 9 now" in _refused(spec, units, path)


@pytest.mark.parametrize("known_size", [True, False])
def test_paired_references_cut_short_after_planning_fail(tmp_path, known_size):
    # d0 has two reference rows; losing the second would score d0 against one reference, silently
    cands, refs = tmp_path / "c.jsonl", tmp_path / "r.jsonl"
    cands.write_bytes(b"".join(json.dumps({"id": f"d{i}", "candidate": f"cand {i}"}).encode() + b"\n"
                               for i in range(3)))
    ref_rows = [{"id": "d0", "references": ["r0 a"]}, {"id": "d1", "references": ["r1"]},
                {"id": "d2", "references": ["r2"]}, {"id": "d0", "references": ["r0 b"]}]
    refs.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in ref_rows))
    spec, units = _planned({"layout": "paired", "candidates": str(cands), "references": str(refs)}, None)
    assert [len(read_unit(spec, u)[0].column("references")[0].as_py()) for u in units] == [2]
    if not known_size:
        units = [dataclasses.replace(u, ref_sizes=()) for u in units]
    refs.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in ref_rows[:3]))
    _refused(spec, units, refs)


def test_lines_layout_file_cut_short_is_the_same_error(tmp_path):
    c, r = tmp_path / "c.txt", tmp_path / "r.txt"
    c.write_text("".join(f"cand {i}\n" for i in range(10)))
    r.write_text("".join(f"ref {i}\n" for i in range(10)))
    spec, units = _planned({"layout": "lines", "candidates": str(c), "references": str(r)}, 4)
    r.write_text("".join(f"ref {i}\n" for i in range(9)))
    _refused(spec, units, r)


def test_a_changed_input_exits_4_with_its_one_line():
    assert failure(InputChangedError(f"file:///a.jsonl: {CHANGED} (10 bytes when planned, 5 now)")) == (
        EXIT_RUN_FOLDER, f"file:///a.jsonl: {CHANGED} (10 bytes when planned, 5 now)")


def test_rows_asked_of_a_file_that_has_fewer_are_not_an_error_unless_planned(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"a\nb\n")
    assert [r for r, _ in iter_lines(str(path), {}, 0, 200)] == [0, 1]   # a head of the file (field hints)
    with pytest.raises(InputChangedError, match="rows 0-200 planned, it has 2 now"):
        list(iter_lines(str(path), {}, 0, 200, planned=True))


@pytest.mark.parametrize("crlf", [False, True], ids=["fast-path", "file-by-file"])
def test_a_packed_file_cut_short_after_planning_fails(tmp_path, crlf):
    for k in range(3):
        (tmp_path / f"p{k}.jsonl").write_bytes(b"".join(_lines(4, crlf, 4 * k)))
    spec, units = _planned(tmp_path, None)
    assert len(units) == 1 and len(units[0].files) == 3
    (tmp_path / "p1.jsonl").write_bytes(b"".join(_lines(2, crlf, 4)))
    _refused(spec, units, tmp_path / "p1.jsonl")
