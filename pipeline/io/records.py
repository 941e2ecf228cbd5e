"""Layout ``records`` (JSONL or Parquet files whose records hold id, candidate and references)
and the record formats that layout ``paired`` reads too: JSONL lines parsed one by one or, for a
clean unit, by Arrow's JSON reader (:func:`_records_fast`, same table), Parquet row groups.
"""
from __future__ import annotations

import dataclasses
import difflib
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
import pyarrow.parquet as pq
from numba import njit

from pipeline.io.canonical import (BadRecord, BadText, Out, get_id, get_refs, get_str, get_system, json_lines,
                                   location)
from pipeline.io.paths import compression_of, expand, infer_format, listed_size
from pipeline.io.linedigest import line_digest, line_digests
from pipeline.io.input_spec import CANONICAL_SCHEMA, ROW_KEY_BITS, InputSpec, UnreadableFileError, WorkUnit
from pipeline.io.streams import (changed_since_planning, check_range, iter_lines, lines_of, open_input, open_input_as,
                                 read_pooled, reading, row_ranges, scan_lines, size_of)
from pipeline.stats.keys import KEY_SEPARATOR, example_keys
from pipeline.text.intrinsics import HIGH, load_u64

# Small files are packed into units of about this many (listed) bytes: a unit costs a task and a
# result on the scheduler and the client whatever its size, so thousands of tiny shards would
# cost more there than their pairs cost to score.  Bigger files are units of their own.
PACK_BYTES = 8 << 20


def _column_to_pylist(col: pa.ChunkedArray) -> list:
    try:
        return col.to_pylist()
    except (UnicodeDecodeError, pa.ArrowInvalid):
        pass
    # Invalid UTF-8 inside a string column: decode value by value.
    t = col.type

    def dec(b):
        if b is None:
            return None
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError as e:
            return BadText(f"at byte {e.start}")

    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return [dec(b) for b in col.cast(pa.binary()).to_pylist()]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        raw = col.cast(pa.list_(pa.binary())).to_pylist()
        return [None if v is None else [dec(b) for b in v] for v in raw]
    raise ValueError(f"cannot read a column of type {t} as Python values")


def read_parquet(url: str, so: dict, columns: list[str], row_start: int = 0,
                  row_stop: int | None = None, size: int | None = None) -> tuple[pa.Table, list[str]]:
    """Rows ``[row_start, row_stop)`` of a Parquet file (``size``: its size when planned; a file
    that no longer has the planned rows raises :class:`~pipeline.errors.InputChangedError`)."""
    with reading(url, parquet=True), open_input(url, so, size=size) as f:
        pf = pq.ParquetFile(f)
        names = pf.schema_arrow.names
        cols = [c for c in dict.fromkeys(columns) if c in names]
        n = pf.metadata.num_rows
        if row_stop is not None and row_stop > n:
            raise changed_since_planning(url, f"rows {row_start}-{row_stop} planned, it has {n} now")
        stop = n if row_stop is None else min(row_stop, n)
        if row_start == 0 and stop == n:
            return pf.read(columns=cols), names
        groups, offset, first = [], 0, None
        for g in range(pf.metadata.num_row_groups):
            g_rows = pf.metadata.row_group(g).num_rows
            if offset + g_rows > row_start and offset < stop:
                groups.append(g)
                if first is None:
                    first = offset
            offset += g_rows
        if not groups:
            return pf.schema_arrow.empty_table().select(cols), names
        t = pf.read_row_groups(groups, columns=cols)
        return t.slice(row_start - first, stop - row_start), names


def require_columns(url: str, names: list[str], required: list[tuple[str, str]]) -> None:
    for key, col in required:
        if col not in names:
            close = difflib.get_close_matches(col, names, n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]!r} (set input.columns.{key})?" if close else ""
            raise ValueError(f"{url}: no column {col!r} for {key} (columns: {', '.join(names)}){hint}")


def iter_records(url: str, fmt: str, so: dict, columns: list[str], required: list[tuple[str, str]],
                  row_start: int = 0, row_stop: int | None = None, byte_start: int | None = None,
                  byte_stop: int | None = None, data: bytes | None = None, digests: dict | None = None,
                  size: int | None = None) -> Iterator[tuple[int, dict | None, str | None]]:
    """``(row, record, None)`` or ``(row, None, reason)`` for each record of a file slice
    (of a whole JSONL file: from ``data``, its bytes already read and decompressed, if given).

    A JSONL file that is one JSON array of records (``[{...}, ...]``, on one line or
    pretty-printed) is refused as a whole (:class:`UnreadableFileError` "a JSON array, not
    JSONL"; :func:`json_array_start`): read line by line it would be one quarantined record,
    or a quarantined fragment per line.  Convert it (``jq -c '.[]'``).  ``digests``: a dict
    given by the caller gets each JSONL row's line digest (:mod:`pipeline.io.linedigest`).
    ``size``: the file's size when planned; a file that no longer holds the planned rows raises
    :class:`~pipeline.errors.InputChangedError` (:func:`pipeline.io.streams.iter_lines`)."""
    if fmt == "jsonl":
        first = row_start == 0 and not byte_start
        lines = (iter_lines(url, so, row_start, row_stop, byte_start, byte_stop, size, planned=True) if data is None
                 else lines_of(data))
        if digests is not None:
            lines = _digested(lines, digests)
        yield from json_lines(lines, url, first, UnreadableFileError)
    elif fmt == "parquet":
        table, names = read_parquet(url, so, columns, row_start, row_stop, size)
        require_columns(url, names, required)
        lists = {c: _column_to_pylist(table.column(c)) for c in table.column_names}
        for i in range(table.num_rows):
            yield row_start + i, {c: v[i] for c, v in lists.items()}, None
    else:
        raise ValueError(f"{url}: format {fmt!r} is not a record format (jsonl, parquet)")


def _digested(lines, digests: dict):
    for row, raw in lines:
        digests[row] = line_digest(raw)
        yield row, raw


def parquet_rows(url: str, so: dict) -> int:
    with reading(url, parquet=True), open_input(url, so) as f:
        return pq.ParquetFile(f).metadata.num_rows


def shard_units(url: str, fmt: str, so: dict, target_rows: int | None, n_rows: int | None = None):
    """Row (and byte) slices of one record file: ``[(row_start, row_stop, byte_start, byte_stop, n_rows)]``."""
    if fmt == "parquet":
        if not target_rows:
            return [(0, None, None, None, None)]
        n = parquet_rows(url, so) if n_rows is None else n_rows
        return [(a, b, None, None, b - a) for a, b in row_ranges(n, target_rows)]
    if not target_rows:
        return [(0, None, None, None, n_rows)]
    n, starts = scan_lines(url, so, target_rows)
    if n <= target_rows:  # one unit: the whole file, which the Arrow fast path reads (a row slice is not)
        return [(0, None, None, None, n)]
    out = []
    for k, (a, b) in enumerate(row_ranges(n, target_rows)):
        if starts is not None:
            out.append((a, b, starts[k], starts[k + 1], b - a))
        else:
            out.append((a, b, None, None, b - a))
    return out


def plan_records(spec: InputSpec, target_rows):
    """One unit per file (or row slice of it, with ``target_rows``); without ``target_rows``,
    runs of small files of one format, in listing order, are packed into units of up to
    :data:`PACK_BYTES` (:attr:`WorkUnit.files`).  The sizes come from the listing."""
    so = spec.storage_options
    units: list[WorkUnit] = []
    pack: list[tuple[str, int]] = []   # (url, size) of the small files of the unit being packed

    def close_pack():
        if len(pack) == 1:
            units.append(WorkUnit(index=len(units), layout="records", file=pack[0][0], format=pack_fmt,
                                  n_bytes=pack[0][1]))
        elif pack:
            units.append(WorkUnit(index=len(units), layout="records", file=pack[0][0], format=pack_fmt,
                                  files=tuple(u for u, _ in pack), n_bytes=sum(n for _, n in pack),
                                  file_sizes=tuple(n for _, n in pack)))
        pack.clear()

    info: dict = {}
    pack_fmt = None
    for url in expand(spec.paths, so, "input.paths", info=info):
        fmt = infer_format(url, spec.format)
        if fmt not in ("jsonl", "parquet"):
            raise ValueError(f"{url}: layout 'records' reads jsonl or parquet, not {fmt}")
        compression_of(url)
        size = listed_size(info, url)
        if pack and (fmt != pack_fmt or size is None or sum(n for _, n in pack) + size >= PACK_BYTES):
            close_pack()
        if target_rows is None and size is not None and size < PACK_BYTES:
            pack.append((url, size))
            pack_fmt = fmt
            continue
        if size is None:
            size = size_of(url, so)
        for a, b, ba, bb, n in shard_units(url, fmt, so, target_rows):
            units.append(WorkUnit(index=len(units), layout="records", file=url, format=fmt, row_start=a,
                                  row_stop=b, byte_start=ba, byte_stop=bb, n_rows=n, n_bytes=size))
    close_pack()
    return units


_ONES = np.uint64(0x0101010101010101)
_NL, _CR, _BACKSLASH = _ONES * np.uint64(10), _ONES * np.uint64(13), _ONES * np.uint64(92)


@njit(cache=True, nogil=True, inline="always")
def _specials(w):
    """Nonzero when one of the eight bytes of ``w`` is a newline, a CR or a backslash (a byte
    equal to ``c`` is a zero byte of ``w ^ c``, found by the borrow of the subtraction)."""
    a, b, c = w ^ _NL, w ^ _CR, w ^ _BACKSLASH
    return (((a - _ONES) & ~a) | ((b - _ONES) & ~b) | ((c - _ONES) & ~c)) & HIGH


@njit(cache=True, nogil=True)
def _jsonl_scan(buf):
    """One pass over a JSONL unit's bytes: (newlines, newlines followed by ``{``, a CR,
    a ``\\u`` escape of a UTF-16 surrogate (``\\u[dD][89a-fA-F]``, as a regex would find it),
    each line's start, the last line's end + 1 last); line ``i`` is ``buf[starts[i]:starts[i+1]-1]``.
    One compiled pass instead of four ``bytes`` scans and a search for the lines; eight bytes
    are skipped at once while none of them is one of the three bytes that matter."""
    n = buf.shape[0]
    nl = 0
    nl_brace = 0
    cr = False
    sur = False
    s = 0
    starts = np.empty(n // 64 + 16, np.int64)
    i = 0
    while i < n:
        while i + 8 <= n and _specials(load_u64(buf, i)) == 0:
            i += 8
        stop = min(i + 8, n)
        for j in range(i, stop):
            b = buf[j]
            if b == 10:
                if nl + 2 >= starts.shape[0]:   # grown by doubling: no counting pass first
                    starts = np.concatenate((starts, np.empty(starts.shape[0], np.int64)))
                starts[nl] = s
                nl += 1
                s = j + 1
                if j + 1 < n and buf[j + 1] == 123:
                    nl_brace += 1
            elif b == 13:
                cr = True
            elif b == 92 and j + 3 < n and buf[j + 1] == 117 and (buf[j + 2] == 100 or buf[j + 2] == 68):
                c = buf[j + 3]
                if c == 56 or c == 57 or 97 <= c <= 102 or 65 <= c <= 70:
                    sur = True
        i = stop
    lines = nl
    if s < n:   # a last line without a newline
        starts[nl] = s
        lines += 1
    starts[lines] = n + 1 if s < n else n
    return nl, nl_brace, cr, sur, starts[:lines + 1].copy()


def _unit_bytes(spec: InputSpec, unit: WorkUnit) -> bytes | pa.Buffer | None:
    """The bytes of a JSONL unit the fast path can take (a whole file, or a byte range of an
    uncompressed one), else None."""
    url, so = unit.file, spec.storage_options
    comp = compression_of(url)
    ranged = unit.byte_start is not None
    if (ranged and comp is not None) or (not ranged and (unit.row_start or unit.row_stop)):
        return None   # a byte range of a compressed file, or a row slice
    n = unit.byte_stop - unit.byte_start if ranged and unit.byte_stop is not None else None
    with reading(url), open_input_as(url, so, comp, unit.n_bytes) as (f, found):
        if ranged:
            f.seek(unit.byte_start)
        if found is not None:   # decoded: seeking to its end (read_pooled's size) would decode it all
            return f.read() if n is None else f.read(n)
        return read_pooled(f, n)


def _records_fast(spec: InputSpec, unit: WorkUnit, out: Out, data: bytes | None = None) -> bool:
    """A clean JSONL unit parsed by Arrow's C++ reader and checked column by column (``data``:
    the bytes of a whole-file unit, already read).

    Returns False (nothing added) whenever anything is unusual (a blank or CRLF line, a BOM,
    invalid UTF-8, a surrogate escape, a parse error, an unexpected type, a null, an empty id
    or reference list, a duplicate, a plan-time duplicate): the line-by-line reader then
    handles the unit and words every problem as a quarantine row.  Both give the same table.
    """
    lines = _file_lines(spec, unit, data)
    if lines is None:
        return False
    columns = _fast_columns(spec, lines.data, len(lines.rows))
    if columns is None:
        return False
    if out.pack:
        seen = out.first_seen()
        if any(k in seen for k in zip(columns[1].to_pylist(), columns[0].to_pylist())):
            return False  # a key of an earlier file of the pack: the line-by-line reader words it
    out.add_table(_canonical(columns, lines), "jsonl")
    return True


@dataclasses.dataclass(frozen=True)
class Lines:
    """A clean JSONL unit's bytes, split in lines (:func:`read_lines`)."""

    data: np.ndarray      # uint8
    starts: np.ndarray    # line i is data[starts[i]:starts[i + 1] - 1]
    digests: np.ndarray   # BLAKE2b-64 of each line (pipeline.io.linedigest)
    files: tuple          # the unit's files (a pack's, or its one file)
    file_of: np.ndarray   # each line's file (an index into files)
    rows: np.ndarray      # each line's row in its file


def _canonical(columns: list, lines: "Lines", which: np.ndarray | None = None) -> pa.Table:
    """The canonical table of ``columns`` (:func:`_fast_columns`) read from ``lines`` (its lines
    ``which``, default all)."""
    file_of, rows, digests = ((lines.file_of, lines.rows, lines.digests) if which is None else
                              (lines.file_of[which], lines.rows[which], lines.digests[which]))
    file_col = pa.array(lines.files, pa.string()).take(pa.array(file_of))
    return pa.table([*columns, pa.array(rows), file_col, pa.array(digests, pa.uint64())], schema=CANONICAL_SCHEMA)


def _file_lines(spec: InputSpec, unit: WorkUnit, data: bytes | None = None) -> Lines | None:
    """The lines of a one-file unit the fast path can take (``data``: its bytes, if read)."""
    if unit.format != "jsonl" or unit.drop_rows:
        return None
    data = _unit_bytes(spec, unit) if data is None else data
    clean = _clean_lines(data) if data is not None and len(data) else None
    if clean is not None and unit.byte_start is not None:   # else the line-by-line reader checks the range
        check_range(unit.file, data, unit.row_start, unit.row_stop, unit.byte_start, unit.byte_stop, unit.n_bytes,
                    clean[0])
    if clean is None or (unit.row_stop is not None and unit.row_stop - unit.row_start < clean[0]):
        return None
    n_lines, starts, digests = clean
    return Lines(np.frombuffer(data, dtype=np.uint8), starts, digests, (unit.file,), np.zeros(n_lines, np.int32),
                 unit.row_start + np.arange(n_lines, dtype=np.int64))


def read_lines(spec: InputSpec, unit: WorkUnit) -> Lines | None:
    """A JSONL unit's lines and their digests, without parsing them, when the fast path can
    take the unit (one file, a byte range or a pack of files, no plan-time drops, clean
    lines); else None: the unit is then read by :func:`read_unit`."""
    return _pack_lines(spec, unit) if unit.files else _file_lines(spec, unit)


def parse_lines(spec: InputSpec, unit: WorkUnit, lines: Lines, which: np.ndarray) -> pa.Table | None:
    """The canonical rows of the unit's lines ``which`` (ascending) as the fast path reads them,
    or None where it would not take them (the unit is then read whole by :func:`read_unit`)."""
    which = np.asarray(which, dtype=np.int64)
    if not len(which):
        return CANONICAL_SCHEMA.empty_table()
    if len(which) == len(lines.rows) and which[-1] == len(which) - 1:   # every line: the bytes as they are
        columns = _fast_columns(spec, lines.data, len(which))
        return None if columns is None else _canonical(columns, lines)
    lo, hi = lines.starts[which], lines.starts[which + 1] - 1
    data = _joined_lines(lines.data, lo, hi)
    columns = _fast_columns(spec, data, len(which))
    if columns is None:
        return None
    return _canonical(columns, lines, which)


def _joined_lines(buf: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> bytes:
    """Lines ``buf[lo[i]:hi[i]]``, each followed by a newline, as one buffer."""
    lengths = hi - lo + 1
    ends = np.cumsum(lengths)
    out = np.full(int(ends[-1]) if len(ends) else 0, 10, dtype=np.uint8)
    for a, b, e in zip(lo.tolist(), hi.tolist(), ends.tolist()):
        out[e - 1 - (b - a):e - 1] = buf[a:b]
    return out.tobytes()


def _clean_lines(data: bytes | pa.Buffer) -> tuple[int, np.ndarray, np.ndarray] | None:
    """``(lines, starts, digests)`` of a JSONL buffer the fast path can take (:func:`_jsonl_scan`),
    else None."""
    if not len(data):
        return None
    buf = np.frombuffer(data, dtype=np.uint8)
    buf.flags.writeable = False   # a pooled buffer too: the kernels' one compiled signature, the warm-up's
    n_nl, n_nl_brace, has_cr, has_surrogate, starts = _jsonl_scan(buf)
    n_lines = n_nl + (0 if buf[-1] == 10 else 1)
    # every line but the first must follow a newline and open an object (no blank line, and
    # Arrow's reader crashes on a bare `null` line)
    if has_cr or has_surrogate or buf[0] != 123 or n_nl_brace != n_lines - 1:
        return None
    return n_lines, starts, line_digests(buf, starts)


def _fast_columns(spec: InputSpec, data: bytes, n_lines: int):
    """``[ids, systems, candidates, references, sources]`` of clean JSONL lines (one key each),
    or None where anything is unusual."""
    try:
        table = pj.read_json(pa.BufferReader(data), read_options=pj.ReadOptions(block_size=max(1 << 20, len(data) + 1)))
        # Arrow copies invalid UTF-8 into strings as it is; a full validation finds it
        # (ten times faster than decoding the whole unit in Python first)
        table.validate(full=True)
    except (UnicodeDecodeError, pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if table.num_rows != n_lines:
        return None
    c = {k: spec.col(k) for k in ("id", "candidate", "references", "system", "source")}
    names = set(table.column_names)
    if not {c["id"], c["candidate"], c["references"]} <= names:
        return None

    def text(col, nullable=False):
        a = table.column(col)
        if pa.types.is_integer(a.type) and col in (c["id"], c["system"]):
            a = pc.cast(a, pa.string())
        if not (pa.types.is_string(a.type) or pa.types.is_large_string(a.type)):
            return None
        if not nullable and a.null_count:
            return None
        return pc.cast(a, pa.string())

    ids = text(c["id"])
    cands = text(c["candidate"])
    if ids is None or cands is None or pc.any(pc.equal(pc.utf8_length(ids), 0)).as_py():
        return None
    if c["system"] in names:
        systems = text(c["system"], nullable=True)
        if systems is None:
            return None
        systems = pc.fill_null(systems, "")
    else:
        systems = pa.chunked_array([pa.repeat(pa.scalar("", pa.string()), table.num_rows)])
    sources = pa.chunked_array([pa.nulls(table.num_rows, pa.string())])
    if c["source"] in names:
        sources = text(c["source"], nullable=True)
        if sources is None:
            return None
    refs = table.column(c["references"])
    if refs.null_count:
        return None
    if pa.types.is_string(refs.type):
        refs = pa.chunked_array([pa.ListArray.from_arrays(pa.array(np.arange(len(ch) + 1, dtype=np.int32)), ch)
                                 for ch in refs.chunks], pa.list_(pa.string()))
    elif pa.types.is_list(refs.type) and pa.types.is_string(refs.type.value_type):
        flat = pc.list_flatten(refs)
        if flat.null_count or pc.any(pc.equal(pc.list_value_length(refs), 0)).as_py():
            return None
    else:
        return None
    if pc.any(pc.match_substring(systems, KEY_SEPARATOR)).as_py():
        return None  # quarantined, with the reason, by the line-by-line reader
    keys = example_keys(systems, ids)
    if pc.count_distinct(keys).as_py() != table.num_rows:
        return None
    return [ids, systems, cands, refs.cast(pa.list_(pa.string())), sources]


def _pack_lines(spec: InputSpec, unit: WorkUnit, read: dict | None = None) -> Lines | None:
    """A pack's files as one buffer of lines (each file ending with a newline), or None where a
    file is not clean JSONL (or the unit has plan-time drops); ``read`` (url -> bytes) gets every
    file read."""
    if unit.format != "jsonl" or unit.drop_rows:
        return None
    so, datas, counts, starts, digests, at = spec.storage_options, [], [], [], [], 0
    for url, size in zip(unit.files, unit.file_sizes or (None,) * len(unit.files)):
        with reading(url), open_input(url, so, compression_of(url), size) as f:
            data = f.read()
        if read is not None:
            read[url] = data
        clean = _clean_lines(data) if data else (0, np.zeros(1, np.int64), np.zeros(0, np.uint64))
        if clean is None:
            return None
        data = data if not data or data.endswith(b"\n") else data + b"\n"
        n, s, d = clean
        starts.append(s[:-1] + at)   # a last line without a newline ends where one was added
        digests.append(d)
        datas.append(data)
        counts.append(n)
        at += len(data)
    counts = np.asarray(counts, dtype=np.int64)
    file_of = np.repeat(np.arange(len(counts), dtype=np.int32), counts)
    rows = np.arange(len(file_of), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    return Lines(np.frombuffer(b"".join(datas), dtype=np.uint8), np.append(np.concatenate(starts), at),
                 np.concatenate(digests), unit.files, file_of, rows)


def _pack_fast(spec: InputSpec, unit: WorkUnit, out: Out, read: dict[str, bytes]) -> bool:
    """A pack of clean JSONL files parsed as one buffer by the fast path (one Arrow read and one
    set of column checks for the pack, not per file), with each row's file and row.  False
    (nothing added) where any file is unusual or an id repeats: the files are then read one by
    one, from the bytes this left in ``read`` (url -> bytes) for those it read."""
    lines = _pack_lines(spec, unit, read)
    columns = _fast_columns(spec, lines.data, len(lines.rows)) if lines is not None and len(lines.rows) else None
    if columns is None:
        return False
    out.add_table(_canonical(columns, lines), "jsonl")
    return True


def read_records(spec: InputSpec, unit: WorkUnit, out: Out) -> None:
    read: dict[str, bytes] = {}
    if unit.files and _pack_fast(spec, unit, out, read):
        return
    for k, url in enumerate(unit.files):  # a pack: its files in order, each as a unit of one whole file
        own = tuple(d for d in unit.drop_rows if int(d[0]) >> ROW_KEY_BITS == k)  # others' keep the fast path
        size = unit.file_sizes[k] if unit.file_sizes else None
        _read_file(spec, dataclasses.replace(unit, file=url, files=(), n_rows=None, n_bytes=size, file_sizes=(),
                                             drop_rows=own), out, read.pop(url, None))
    if not unit.files:
        _read_file(spec, unit, out)


def _read_file(spec: InputSpec, unit: WorkUnit, out: Out, data: bytes | None = None) -> None:
    if _records_fast(spec, unit, out, data):
        return
    digests: dict = {}
    for row, where, id_, system, cand, refs, source in each_record(spec, unit, out, True, data, digests):
        out.add(id_, system, cand, refs, source, row, unit.file, where, digests.pop(row, None))


def each_record(spec: InputSpec, unit: WorkUnit, out: Out, with_refs: bool, data: bytes | None = None,
                digests: dict | None = None):
    """``(row, where, id, system, candidate, references, source)`` of each good record of the
    unit's file slice (references None without ``with_refs``: layout ``paired`` joins them); each
    bad one is quarantined in ``out`` with its reason.  ``digests``: see :func:`iter_records`."""
    keys = ("id", "candidate", "references") if with_refs else ("id", "candidate")
    c = {k: spec.col(k) for k in (*keys, "system", "source")}
    url, fmt = unit.file, unit.format
    for row, rec, err in iter_records(url, fmt, spec.storage_options, list(c.values()), [(k, c[k]) for k in keys],
                                       unit.row_start, unit.row_stop, unit.byte_start, unit.byte_stop, data,
                                       digests, unit.n_bytes):
        where = location(url, row, fmt)
        if err is not None:
            out.quarantine(None, None, url, row, f"{where}: {err}")
            continue
        id_ = system = None
        try:
            id_ = get_id(rec, c["id"])
            system = get_system(rec, c["system"])
            cand = get_str(rec, c["candidate"], "candidate", True)
            refs = get_refs(rec, c["references"]) if with_refs else None
            source = get_str(rec, c["source"], "source", False)
        except BadRecord as b:
            out.quarantine(id_, system, url, row, f"{where}: {b.reason}")
            continue
        yield row, where, id_, system, cand, refs, source
