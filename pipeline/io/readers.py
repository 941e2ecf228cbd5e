"""Every input layout -> the canonical example table (fsspec + Arrow; never Dask).

Layouts (``InputSpec.layout``):

``records``
    One dataset (``paths``: URLs, globs or folders) whose records hold ``id``,
    ``candidate``, ``references`` (a string or a list of strings) and optionally
    ``system`` and ``source``.  JSONL (plain, .gz, .bz2, .xz, .zst when
    ``zstandard`` is installed) or Parquet.  Column names are mapped with ``columns``.

``paired``
    ``candidates`` and ``references`` are separate datasets joined by id (the
    references side's id column is ``columns["reference_id"]``, default
    ``columns["id"]``).  References are shared by every system of the candidate side.
    A references-side id that occurs on several rows contributes all of them, in
    (file, row) order: one-reference-per-row datasets work as they are.
    **Join strategy**: :func:`plan_units` reads the id column of both sides once
    (only that column for Parquet; JSONL lines must be parsed), builds an
    ``id -> (file, row)`` index of the references side and makes one unit per
    candidate shard (or row slice of it, with ``target_rows``).  Each unit carries the
    exact row ranges of the reference rows it needs (run-length encoded, so an aligned
    sharding costs one range per unit), and :func:`read_unit` reads only those.  The
    index lives in the planner's memory only (about 100 bytes per reference row).
    Ids present on one side only are reported as quarantine rows:
    ``no references for id`` (by the unit reading that candidate row) and
    ``no candidate for id`` (planned, emitted by one deterministic unit).  A reference row
    with a good id but bad references or source is a quarantine row of its own, emitted by
    the first unit that reads it (``WorkUnit.ref_report``), also when its id has good rows.

``lines``
    The rouge-score CLI layout: plain text files, one example per line.  Candidate
    files and reference files are sorted and paired by position (as rouge-score's
    ``glob`` + ``sorted``), within each system.  ``system_from``: ``None`` (no
    system), ``"stem"`` (each candidate file is one system, named by its file stem)
    or ``"folder"`` (system = the candidate file's folder name).  Line ``k`` of the
    candidate file pairs with line ``k`` of the reference file; the id is
    ``"<reference file stem>:<k>"`` with ``k`` 1-based (the reference name, so the
    same example has the same id in every system); where two reference files share a
    stem, their path relative to the folder holding every reference file replaces the
    stem (``testA/ref:3``, :func:`line_id_prefixes`).  Different line counts are an
    error naming both files, raised at plan time.  Lines are split on ``"\\n"``
    (a trailing ``"\\r"`` is removed, as Python's text mode does); a final newline
    does not start a record.

``folders``
    ROUGE-1.5.5 / pyrouge folders: ``candidates`` (system summary folders) and one
    ``references`` folder, files matched by ``system_filename_pattern`` and
    ``model_filename_pattern`` (``#ID#``), one sentence per line: :mod:`pipeline.io.folders`.

Rows: ``row`` is the 0-based row index in its file (for JSONL and text the line
number is ``row + 1``; messages say ``line N``).  Blank JSONL lines are skipped (they
are not records).  Bad records (malformed JSON, wrong types, null/missing candidate or
references, empty reference list, invalid UTF-8, duplicate ``(system, id)`` within the
unit: the later rows) become quarantine rows whose reason names the file and line,
never a crash.  Duplicates *across* units (shards, or row slices of one shard) are
found by the driver's plan pass (:func:`find_duplicates`), which keeps the first
occurrence in (file, row) order and passes the later rows to their unit as
``WorkUnit.drop_rows``.  Integer ids (and systems) are accepted and converted to strings.
Configuration errors (unknown column, missing Parquet column, glob matching nothing,
different line counts) raise, as do files that cannot be decoded at all (corrupt or
truncated compression, not Parquet, a folder where a file is expected):
:class:`UnreadableFileError` (a ``ValueError`` naming the file).  Storage errors stay
``OSError`` so that callers can retry them.
"""
from __future__ import annotations

import bisect
import collections
import gzip
import itertools
import json
import lzma
import posixpath
import re
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from numba import njit

from pipeline.io import paths as _paths
from pipeline.io.paths import check_keys, check_scheme, compression_of, expand, file_stem, infer_format, parent_name

LAYOUTS = ("records", "paired", "lines", "folders")
SYSTEM_FROM = (None, "stem", "folder")
COLUMN_KEYS = ("id", "candidate", "references", "system", "source", "reference_id")

CANONICAL_SCHEMA = pa.schema([
    pa.field("id", pa.string(), nullable=False),
    pa.field("system", pa.string(), nullable=False),
    pa.field("candidate", pa.string(), nullable=False),
    pa.field("references", pa.list_(pa.string()), nullable=False),
    pa.field("source", pa.string(), nullable=True),
    pa.field("row", pa.int64(), nullable=False),
    pa.field("file", pa.string(), nullable=False),
])

QUARANTINE_SCHEMA = pa.schema([
    pa.field("id", pa.string(), nullable=True),
    pa.field("system", pa.string(), nullable=True),
    pa.field("file", pa.string(), nullable=False),
    pa.field("row", pa.int64(), nullable=True),
    pa.field("reason", pa.string(), nullable=False),
])

_SPEC_KEYS = ("layout", "paths", "candidates", "references", "format", "reference_format",
              "columns", "storage_options", "system_from", "system_filename_pattern", "model_filename_pattern")


def _as_tuple(v, field_name: str) -> tuple[str, ...]:
    if v is None:
        return ()
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, (list, tuple)) or not all(isinstance(x, str) and x for x in v):
        raise ValueError(f"input.{field_name}: expected a URL/glob or a list of them, got {v!r}")
    return tuple(v)


@dataclass(frozen=True)
class InputSpec:
    layout: str = "records"
    paths: tuple[str, ...] = ()
    candidates: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    format: str = "auto"
    reference_format: str = "auto"
    columns: dict = field(default_factory=dict)
    storage_options: dict = field(default_factory=dict, repr=False)  # Dask logs a failed task's args
    system_from: str | None = None
    system_filename_pattern: str | None = None  # layout folders (pipeline.io.folders)
    model_filename_pattern: str | None = None

    @classmethod
    def from_config(cls, d: dict | "InputSpec") -> "InputSpec":
        if isinstance(d, InputSpec):
            return d
        check_keys(d, _SPEC_KEYS, "input")
        layout = d.get("layout", "records")
        if layout not in LAYOUTS:
            raise ValueError(f"input.layout: expected one of {', '.join(LAYOUTS)}, got {layout!r}")
        paths = _as_tuple(d.get("paths"), "paths")
        cands = _as_tuple(d.get("candidates"), "candidates")
        refs = _as_tuple(d.get("references"), "references")
        if layout == "records":
            if not paths:
                raise ValueError("input.paths: required for layout 'records'")
            if cands or refs:
                raise ValueError("input.candidates/input.references: only for layouts 'paired' and 'lines' "
                                 "(layout 'records' uses input.paths)")
        else:
            if paths:
                raise ValueError(f"input.paths: not used by layout {layout!r}; "
                                 "give input.candidates and input.references")
            if not cands:
                raise ValueError(f"input.candidates: required for layout {layout!r}")
            if not refs:
                raise ValueError(f"input.references: required for layout {layout!r}")
        for name, urls in (("paths", paths), ("candidates", cands), ("references", refs)):
            for u in urls:
                check_scheme(u, f"input.{name}")
        allowed_formats = ("auto", "text") if layout in ("lines", "folders") else ("auto", "jsonl", "parquet")
        fmt = d.get("format", "auto")
        ref_fmt = d.get("reference_format", "auto")
        for name, v in (("format", fmt), ("reference_format", ref_fmt)):
            if v not in allowed_formats:
                raise ValueError(f"input.{name}: expected one of {', '.join(allowed_formats)} "
                                 f"for layout {layout!r}, got {v!r}")
        columns = d.get("columns") or {}
        check_keys(columns, COLUMN_KEYS, "input.columns")
        for k, v in columns.items():
            if not isinstance(v, str) or not v:
                raise ValueError(f"input.columns.{k}: expected a column name, got {v!r}")
        if columns and layout in ("lines", "folders"):
            raise ValueError(f"input.columns: not used by layout {layout!r} (plain text has no columns)")
        patterns = {k: d.get(k) for k in ("system_filename_pattern", "model_filename_pattern")}
        if layout == "folders":
            from pipeline.io import folders

            patterns["system_filename_pattern"] = patterns["system_filename_pattern"] or folders.DEFAULT_SYSTEM_PATTERN
            patterns["model_filename_pattern"] = patterns["model_filename_pattern"] or folders.DEFAULT_MODEL_PATTERN
            folders.check_patterns(*patterns.values())
        elif any(v is not None for v in patterns.values()):
            raise ValueError("input.system_filename_pattern/model_filename_pattern: only for layout 'folders'")
        so = d.get("storage_options") or {}
        if not isinstance(so, dict):
            raise ValueError(f"input.storage_options: expected a mapping, got {type(so).__name__}")
        system_from = d.get("system_from")
        if system_from == "none":
            system_from = None
        if system_from not in SYSTEM_FROM:
            raise ValueError(f"input.system_from: expected null, 'stem' or 'folder', got {system_from!r}")
        if system_from is not None and layout not in ("lines", "folders"):
            raise ValueError("input.system_from: only for layouts 'lines' and 'folders' "
                             "(other layouts take the system from a column)")
        return cls(layout=layout, paths=paths, candidates=cands, references=refs, format=fmt,
                   reference_format=ref_fmt, columns=dict(columns), storage_options=dict(so),
                   system_from=system_from, **patterns)

    def col(self, key: str) -> str:
        if key == "reference_id":
            return self.columns.get("reference_id", self.columns.get("id", "id"))
        return self.columns.get(key, key)

    def to_dict(self) -> dict:
        """Plain, JSON-able form (storage options included: redact before logging)."""
        out: dict[str, Any] = {"layout": self.layout, "format": self.format}
        if self.layout == "records":
            out["paths"] = list(self.paths)
        else:
            out["candidates"] = list(self.candidates)
            out["references"] = list(self.references)
        if self.layout == "paired":
            out["reference_format"] = self.reference_format
        if self.columns:
            out["columns"] = dict(self.columns)
        if self.system_from is not None:
            out["system_from"] = self.system_from
        if self.layout == "folders":
            out["system_filename_pattern"] = self.system_filename_pattern
            out["model_filename_pattern"] = self.model_filename_pattern
        out["storage_options"] = dict(self.storage_options)
        return out


@dataclass(frozen=True)
class WorkUnit:
    """A small, picklable description of one task's input.

    ``row_start``/``row_stop`` select rows ``[start, stop)`` of ``file`` (``None``: to
    the end).  ``byte_start``/``byte_stop`` are set for uncompressed line files split
    with ``target_rows``.  ``ref_files``/``ref_ranges`` hold the references side
    (``paired``: ``(ref file index, start row, stop row)`` runs; ``lines``: the one
    reference file and the same row range, ``ref_bytes`` its byte range).
    ``extra_quarantine`` holds rows found bad at plan time (emitted by this unit).
    ``drop_rows`` holds ``(row, where the first occurrence is)`` for the rows of ``file``
    whose ``(system, id)`` already occurs in an earlier unit (found by the driver's plan
    pass, which sees every id): they become ``duplicate id`` quarantine rows.
    ``ref_report`` (``paired``) holds the reference rows whose bad records this unit reports
    as quarantine rows; ``id_prefix`` (``lines``) the ids' prefix.
    """

    index: int
    layout: str
    file: str
    format: str
    row_start: int = 0
    row_stop: int | None = None
    byte_start: int | None = None
    byte_stop: int | None = None
    ref_files: tuple[str, ...] = ()
    ref_format: str | None = None
    ref_ranges: tuple[tuple[int, int, int], ...] = ()
    ref_bytes: tuple[int, int] | None = None
    system: str = ""
    extra_quarantine: tuple[tuple, ...] = ()
    n_rows: int | None = None
    n_bytes: int | None = None
    drop_rows: tuple[tuple[int, str], ...] = ()
    # paired: the reference rows (runs as in ref_ranges) whose bad records this unit reports
    # (each is reported by the first unit that reads it, so once)
    ref_report: tuple[tuple[int, int, int], ...] = ()
    # lines: ids are f"{id_prefix}:{k}" (None: the reference file's stem)
    id_prefix: str | None = None

    @property
    def key(self) -> str:
        """A stable, human-readable name (for task keys and logs)."""
        stop = "" if self.row_stop is None else self.row_stop
        return f"{self.index:05d}:{self.file}[{self.row_start}:{stop}]"


# --------------------------------------------------------------------------- bad records
class _Bad(Exception):
    def __init__(self, reason: str, id_: str | None = None, system: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.id = id_
        self.system = system


class _BadText:
    """Placeholder for a Parquet string that is not valid UTF-8."""

    def __init__(self, err: str):
        self.err = err


_MISSING = object()


def _where(url: str, row: int, fmt: str) -> str:
    return f"{url} row {row}" if fmt == "parquet" else f"{url} line {row + 1}"


def _check_text(v: str, what: str) -> str:
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        raise _Bad(f"{what} is not valid Unicode (lone surrogate)") from None
    return v


def _get_id(rec: dict, col: str, what: str = "id") -> str:
    v = rec.get(col, _MISSING)
    if v is _MISSING:
        raise _Bad(f"missing {what} field {col!r}")
    if v is None:
        raise _Bad(f"null {what}")
    if isinstance(v, bool):
        raise _Bad(f"{what} must be a string or integer, got bool")
    if isinstance(v, int):
        return str(v)
    if isinstance(v, _BadText):
        raise _Bad(f"{what} is not valid UTF-8 ({v.err})")
    if not isinstance(v, str):
        raise _Bad(f"{what} must be a string or integer, got {type(v).__name__}")
    if not v:
        raise _Bad(f"empty {what}")
    return _check_text(v, what)


def _get_system(rec: dict, col: str) -> str:
    v = rec.get(col)
    if v is None:
        return ""
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    if isinstance(v, _BadText):
        raise _Bad(f"system is not valid UTF-8 ({v.err})")
    if not isinstance(v, str):
        raise _Bad(f"system must be a string, got {type(v).__name__}")
    return _check_text(v, "system")


def _get_str(rec: dict, col: str, what: str, required: bool) -> str | None:
    v = rec.get(col, _MISSING)
    if v is _MISSING or v is None:
        if required:
            raise _Bad(f"{'missing' if v is _MISSING else 'null'} {what}"
                       + (f" field {col!r}" if v is _MISSING else ""))
        return None
    if isinstance(v, _BadText):
        raise _Bad(f"{what} is not valid UTF-8 ({v.err})")
    if not isinstance(v, str):
        raise _Bad(f"{what} must be a string, got {type(v).__name__}")
    return _check_text(v, what)


def _get_refs(rec: dict, col: str) -> list[str]:
    v = rec.get(col, _MISSING)
    if v is _MISSING:
        raise _Bad(f"missing references field {col!r}")
    if v is None:
        raise _Bad("null references")
    if isinstance(v, str):
        return [_check_text(v, "reference")]
    if isinstance(v, _BadText):
        raise _Bad(f"reference is not valid UTF-8 ({v.err})")
    if not isinstance(v, (list, tuple)):
        raise _Bad(f"references must be a string or a list of strings, got {type(v).__name__}")
    if len(v) == 0:
        raise _Bad("empty reference list")
    out = []
    for i, r in enumerate(v):
        if r is None:
            raise _Bad(f"null reference at index {i}")
        if isinstance(r, _BadText):
            raise _Bad(f"reference {i} is not valid UTF-8 ({r.err})")
        if not isinstance(r, str):
            raise _Bad(f"reference {i} must be a string, got {type(r).__name__}")
        out.append(_check_text(r, f"reference {i}"))
    return out


# --------------------------------------------------------------------------- raw reading
class UnreadableFileError(ValueError):
    """An input file that cannot be decoded at all (corrupt or truncated compression, not
    Parquet, a folder where a file is expected).  The message names the file.  A
    ``ValueError``: retrying cannot help (transient storage errors stay ``OSError``)."""


_CORRUPT = (EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile, pa.ArrowInvalid, IsADirectoryError,
            NotADirectoryError)


_CORRUPT_PARQUET = re.compile(r"thrift|parquet|magic bytes|footer|corrupt", re.IGNORECASE)


@contextmanager
def _reading(url: str, parquet: bool = False):
    try:
        yield
    except UnreadableFileError:
        raise
    except _CORRUPT as e:
        raise UnreadableFileError(f"{url}: cannot read the file ({type(e).__name__}: {e})") from e
    except OSError as e:
        # Arrow reports undecodable Parquet metadata as OSError; storage errors keep theirs.
        if parquet and _CORRUPT_PARQUET.search(str(e)) and not isinstance(e, (TimeoutError, ConnectionError)):
            raise UnreadableFileError(f"{url}: cannot read the file ({type(e).__name__}: {e})") from e
        raise
    except Exception as e:  # zstandard.ZstdError and other decoder errors, by name
        if type(e).__name__ in ("ZstdError", "BadZipFile"):
            raise UnreadableFileError(f"{url}: cannot read the file ({type(e).__name__}: {e})") from e
        raise


class _ZstdReader:
    """The zstd frames of a binary stream, decompressed, in order (concatenated frames too, as
    the zstd tool reads them).  ``EOFError`` when the stream ends inside a frame: zstandard's
    ``stream_reader`` (fsspec's zstd) returns what it has of a truncated frame as if it were all."""

    def __init__(self, raw, chunk: int = 1 << 20):
        import zstandard

        self._raw, self._chunk = raw, chunk
        self._dctx, self._error = zstandard.ZstdDecompressor(), zstandard.ZstdError
        self._obj = None          # the frame being decompressed
        self._pending, self._ppos = b"", 0  # compressed bytes not decoded yet: self._pending[self._ppos:]
        self._out, self._pos = b"", 0  # decompressed bytes not yet returned: self._out[self._pos:]
        self._n_in = self._n_out = 0   # compressed bytes read, decompressed bytes made

    def _more(self, size: int) -> bytes:
        """The next decompressed bytes (from ``size`` compressed bytes at a time); ``b""`` at the
        end of the stream."""
        while True:
            if self._ppos < len(self._pending):
                data = self._pending[self._ppos:self._ppos + size]
                self._ppos += len(data)
            else:
                data = self._raw.read(size)
                self._n_in += len(data)
                if not data:
                    if self._obj is not None and not self._obj.eof:
                        raise EOFError("the zstd stream ends inside a frame (truncated file)")
                    return b""
            if self._obj is None or self._obj.eof:
                self._obj = self._dctx.decompressobj(write_size=1 << 20)
            out = self._obj.decompress(data)
            self._n_out += len(out)
            if self._obj.eof:
                self._pending, self._ppos = self._obj.unused_data + self._pending[self._ppos:], 0
            if out:
                return out

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            if self._obj is None and not self._out:  # the whole stream at once (the fast JSONL path)
                data = self._raw.read()
                try:
                    # one frame with its size in the header: one allocation (~30% faster); anything
                    # else (no size, more frames, truncated, corrupt) is left to the frame loop
                    return self._dctx.decompress(data, allow_extra_data=False)
                except self._error:
                    self._pending, self._ppos = data, 0
            parts = [self._out[self._pos:]]
            self._out, self._pos = b"", 0
            while chunk := self._more(1 << 16):   # small pieces: zstd is slow to grow one huge output
                parts.append(chunk)
            return b"".join(p for p in parts if p)
        while len(self._out) - self._pos < size:
            # about as many compressed bytes as make `size` (the ratio so far): a highly compressed
            # stream is not decoded far ahead into one big buffer
            want = 1 << 14 if not self._n_out else max(1 << 12, min(self._chunk, size * self._n_in // self._n_out))
            chunk = self._more(want)
            if not chunk:
                break
            self._out, self._pos = self._out[self._pos:] + chunk, 0
        out = self._out[self._pos:self._pos + size]
        self._pos += len(out)
        return out

    def readable(self) -> bool:
        return True


@contextmanager
def _open(url: str, so: dict, compression: str | None = None):
    """``url`` opened for binary reading, decompressed by ``compression``.  Every decoder fails
    on a stream that ends early (gzip, bz2 and xz raise ``EOFError`` themselves; zstd through
    :class:`_ZstdReader`), so a truncated file is never read as a shorter one."""
    if compression == "zstd" and _has_zstandard():
        with fsspec.open(url, "rb", **so) as raw:
            yield _ZstdReader(raw)
        return
    with fsspec.open(url, "rb", compression=compression, **so) as f:
        yield f


def _has_zstandard() -> bool:
    try:
        import zstandard  # noqa: F401
    except ImportError:
        return False  # fsspec's own zstd (Python 3.14's compression.zstd) raises EOFError itself
    return True


def _iter_lines(url: str, so: dict, row_start: int = 0, row_stop: int | None = None,
                byte_start: int | None = None, byte_stop: int | None = None) -> Iterator[tuple[int, bytes]]:
    """``(row, line bytes without the newline)`` for rows ``[row_start, row_stop)``."""
    comp = compression_of(url)
    with _reading(url), _open(url, so, comp) as f:
        if byte_start is not None and comp is None:
            f.seek(byte_start)
            data = f.read(byte_stop - byte_start) if byte_stop is not None else f.read()
            lines = data.split(b"\n")
            if lines and lines[-1] == b"":
                lines.pop()
            for i, line in enumerate(lines):
                row = row_start + i
                if row_stop is not None and row >= row_stop:
                    break
                yield row, line[:-1] if line.endswith(b"\r") else line
            return
        for row, line in enumerate(f if comp is None else _chunked_lines(f)):
            if row < row_start:
                continue
            if row_stop is not None and row >= row_stop:
                break
            if line.endswith(b"\n"):
                line = line[:-1]
            if line.endswith(b"\r"):
                line = line[:-1]
            yield row, line


def _chunked_lines(f, size: int = 1 << 20):
    """Lines (with their ``\n``) of a binary stream that only supports ``read`` (zstd's
    ``stream_reader`` cannot be iterated)."""
    rest = b""
    while True:
        chunk = f.read(size)
        if not chunk:
            break
        parts = (rest + chunk).split(b"\n")
        rest = parts.pop()
        for p in parts:
            yield p + b"\n"
    if rest:
        yield rest


def _parse_json_line(raw: bytes, row: int):
    """``(record, None)`` or ``(None, reason)``; ``(None, None)`` for a blank line."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return None, f"invalid UTF-8 at byte {e.start}"
    if row == 0 and text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        return None, None
    try:
        rec = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        msg = e.msg if isinstance(e, json.JSONDecodeError) else "too deeply nested"
        return None, f"malformed JSON ({msg})"
    if not isinstance(rec, dict):
        return None, f"expected a JSON object, got {type(rec).__name__}"
    return rec, None


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
            return _BadText(f"at byte {e.start}")

    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return [dec(b) for b in col.cast(pa.binary()).to_pylist()]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        raw = col.cast(pa.list_(pa.binary())).to_pylist()
        return [None if v is None else [dec(b) for b in v] for v in raw]
    raise ValueError(f"cannot read a column of type {t} as Python values")


def _read_parquet(url: str, so: dict, columns: list[str], row_start: int = 0,
                  row_stop: int | None = None) -> tuple[pa.Table, list[str]]:
    with _reading(url, parquet=True), _open(url, so) as f:
        pf = pq.ParquetFile(f)
        names = pf.schema_arrow.names
        cols = [c for c in dict.fromkeys(columns) if c in names]
        n = pf.metadata.num_rows
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


def _require_columns(url: str, names: list[str], required: list[tuple[str, str]]) -> None:
    import difflib

    for key, col in required:
        if col not in names:
            close = difflib.get_close_matches(col, names, n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]!r} (set input.columns.{key})?" if close else ""
            raise ValueError(f"{url}: no column {col!r} for {key} (columns: {', '.join(names)}){hint}")


def _json_array_start(first_line: bytes) -> bool:
    """Does a JSONL file whose first non-blank line is this start a JSON array of records?  The
    line starts with ``[`` and does not parse on its own (the array goes on over the next
    lines), or is a list holding an object.  ``[]`` or ``[1, 2]`` alone is a record (quarantined)."""
    s = first_line.lstrip(b"\xef\xbb\xbf \t").rstrip()
    if not s.startswith(b"["):
        return False
    try:
        v = json.loads(s)
    except (ValueError, RecursionError):
        return True
    return isinstance(v, list) and any(isinstance(x, dict) for x in v)


def _iter_records(url: str, fmt: str, so: dict, columns: list[str], required: list[tuple[str, str]],
                  row_start: int = 0, row_stop: int | None = None, byte_start: int | None = None,
                  byte_stop: int | None = None) -> Iterator[tuple[int, dict | None, str | None]]:
    """``(row, record, None)`` or ``(row, None, reason)`` for each record of a file slice.

    A JSONL file that is one JSON array of records (``[{...}, ...]``, on one line or
    pretty-printed) is refused as a whole (:class:`UnreadableFileError` "a JSON array, not
    JSONL"; :func:`_json_array_start`): read line by line it would be one quarantined record,
    or a quarantined fragment per line.  Convert it (``jq -c '.[]'``)."""
    if fmt == "jsonl":
        first = row_start == 0 and not byte_start
        for row, raw in _iter_lines(url, so, row_start, row_stop, byte_start, byte_stop):
            if first and raw.strip():
                first = False
                if _json_array_start(raw):
                    raise UnreadableFileError(f"{url}: a JSON array, not JSONL (one JSON object per line); "
                                              "convert it, e.g. jq -c '.[]' FILE > FILE.jsonl")
            rec, err = _parse_json_line(raw, row)
            if rec is None and err is None:
                continue
            yield row, rec, err
    elif fmt == "parquet":
        table, names = _read_parquet(url, so, columns, row_start, row_stop)
        _require_columns(url, names, required)
        lists = {c: _column_to_pylist(table.column(c)) for c in table.column_names}
        for i in range(table.num_rows):
            yield row_start + i, {c: v[i] for c, v in lists.items()}, None
    else:
        raise ValueError(f"{url}: format {fmt!r} is not a record format (jsonl, parquet)")


# --------------------------------------------------------------------------- planning
def _scan_lines(url: str, so: dict, every: int | None = None) -> tuple[int, list[int] | None]:
    """Number of lines and, for uncompressed files, the byte offset of every ``every``-th line."""
    comp = compression_of(url)
    starts = [0]
    n_nl = pos = 0
    last = 10
    with _reading(url), _open(url, so, comp) as f:
        while True:
            chunk = f.read(1 << 22)
            if not chunk:
                break
            nl = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == 10)
            if every:
                line_idx = n_nl + np.arange(1, len(nl) + 1)
                starts.extend((pos + nl[line_idx % every == 0] + 1).tolist())
            n_nl += len(nl)
            pos += len(chunk)
            last = chunk[-1]
    n_lines = n_nl + (1 if pos and last != 10 else 0)
    if comp is not None or not every:
        return n_lines, None
    starts = [s for i, s in enumerate(starts) if i * every < n_lines]
    starts.append(pos)
    return n_lines, starts


def _ranges(n_rows: int, target_rows: int | None) -> list[tuple[int, int]]:
    if not target_rows or n_rows <= target_rows:
        return [(0, n_rows)]
    return [(s, min(s + target_rows, n_rows)) for s in range(0, n_rows, target_rows)]


def _size(url: str, so: dict) -> int | None:
    try:
        fs, path = _paths.get_fs(url, so)
        return fs.size(path)
    except Exception:  # noqa: BLE001 - an estimate only
        return None


def _parquet_rows(url: str, so: dict) -> int:
    with _reading(url, parquet=True), _open(url, so) as f:
        return pq.ParquetFile(f).metadata.num_rows


def _shard_units(url: str, fmt: str, so: dict, target_rows: int | None, n_rows: int | None = None):
    """Row (and byte) slices of one record file: ``[(row_start, row_stop, byte_start, byte_stop, n_rows)]``."""
    if fmt == "parquet":
        if not target_rows:
            return [(0, None, None, None, None)]
        n = _parquet_rows(url, so) if n_rows is None else n_rows
        return [(a, b, None, None, b - a) for a, b in _ranges(n, target_rows)]
    if not target_rows:
        return [(0, None, None, None, n_rows)]
    n, starts = _scan_lines(url, so, target_rows)
    out = []
    for k, (a, b) in enumerate(_ranges(n, target_rows)):
        if starts is not None and n > target_rows:
            out.append((a, b, starts[k], starts[k + 1], b - a))
        else:
            out.append((a, b, None, None, b - a))
    return out


def _check_target_rows(target_rows):
    if target_rows is not None and (isinstance(target_rows, bool) or not isinstance(target_rows, int)
                                    or target_rows <= 0):
        raise ValueError(f"target_rows: expected a positive integer or None, got {target_rows!r}")


def plan_units(spec: InputSpec | dict, target_rows: int | None = None) -> list["WorkUnit"]:
    """Deterministic list of work units for ``spec`` (see the module docstring)."""
    spec = InputSpec.from_config(spec)
    _check_target_rows(target_rows)
    if spec.layout == "records":
        return _plan_records(spec, target_rows)
    if spec.layout == "paired":
        return _plan_paired(spec, target_rows)
    if spec.layout == "folders":
        from pipeline.io.folders import plan_folders

        return plan_folders(spec, target_rows)
    return _plan_lines(spec, target_rows)


def _plan_records(spec: InputSpec, target_rows):
    so = spec.storage_options
    units = []
    for url in expand(spec.paths, so, "input.paths"):
        fmt = infer_format(url, spec.format)
        if fmt not in ("jsonl", "parquet"):
            raise ValueError(f"{url}: layout 'records' reads jsonl or parquet, not {fmt}")
        compression_of(url)
        size = _size(url, so)
        for a, b, ba, bb, n in _shard_units(url, fmt, so, target_rows):
            units.append(WorkUnit(index=len(units), layout="records", file=url, format=fmt, row_start=a,
                                  row_stop=b, byte_start=ba, byte_stop=bb, n_rows=n,
                                  n_bytes=size if b is None else None))
    return units


def _runs(positions: list[tuple[int, int]]) -> tuple[tuple[int, int, int], ...]:
    """Sorted ``(file, row)`` positions -> ``(file, start, stop)`` runs."""
    out: list[list[int]] = []
    for fi, row in sorted(set(positions)):
        if out and out[-1][0] == fi and out[-1][2] == row:
            out[-1][2] = row + 1
        else:
            out.append([fi, row, row + 1])
    return tuple(tuple(r) for r in out)


def _plan_paired(spec: InputSpec, target_rows):
    so = spec.storage_options
    cand_files = expand(spec.candidates, so, "input.candidates")
    ref_files = expand(spec.references, so, "input.references")
    id_col, ref_id_col = spec.col("id"), spec.col("reference_id")

    # 1. references side: id -> [(file index, row)]; unreadable rows are reported now.
    ref_index: dict[str, list[tuple[int, int]]] = {}
    extra: list[tuple[int, tuple]] = []   # (ref file index, quarantine row)
    ref_fmts = []
    for fi, url in enumerate(ref_files):
        fmt = infer_format(url, spec.reference_format)
        if fmt not in ("jsonl", "parquet"):
            raise ValueError(f"{url}: layout 'paired' reads jsonl or parquet, not {fmt}")
        ref_fmts.append(fmt)
        for row, rec, err in _iter_records(url, fmt, so, [ref_id_col],
                                           [("reference_id", ref_id_col)]):
            where = _where(url, row, fmt)
            if err is not None:
                extra.append((fi, (None, None, url, row, f"{where}: references side: {err}")))
                continue
            try:
                rid = _get_id(rec, ref_id_col)
            except _Bad as b:
                extra.append((fi, (None, None, url, row, f"{where}: references side: {b.reason}")))
                continue
            ref_index.setdefault(rid, []).append((fi, row))
    if len(set(ref_fmts)) > 1:
        raise ValueError("input.references: mixed formats on the references side "
                         f"({', '.join(sorted(set(ref_fmts)))}); use one format")
    ref_fmt = ref_fmts[0]

    # 2. candidates side: ids per row, sliced into units.
    used: set[str] = set()
    planned = []
    for url in cand_files:
        fmt = infer_format(url, spec.format)
        if fmt not in ("jsonl", "parquet"):
            raise ValueError(f"{url}: layout 'paired' reads jsonl or parquet, not {fmt}")
        ids: list[str | None] = []
        for row, rec, err in _iter_records(url, fmt, so, [id_col], [("id", id_col)]):
            while len(ids) < row:
                ids.append(None)   # blank lines
            rid = None
            if err is None:
                try:
                    rid = _get_id(rec, id_col)
                except _Bad:
                    pass
            ids.append(rid)
        n = len(ids)
        if fmt == "jsonl" and target_rows:
            slices = _shard_units(url, fmt, so, target_rows)
        else:
            slices = [(a, b, None, None, b - a) for a, b in _ranges(n, target_rows)]
        for a, b, ba, bb, n_rows in slices:
            b_eff = n if b is None else b
            need, report = [], []
            for rid in ids[a:b_eff]:
                if rid is not None and rid in ref_index:
                    if rid not in used:
                        used.add(rid)
                        report.extend(ref_index[rid])
                    need.extend(ref_index[rid])
            planned.append(dict(layout="paired", file=url, format=fmt, row_start=a,
                                row_stop=None if (a == 0 and b_eff == n) else b_eff,
                                byte_start=ba, byte_stop=bb, ref_files=tuple(ref_files), ref_format=ref_fmt,
                                ref_ranges=_runs(need), ref_report=_runs(report), n_rows=n_rows if n_rows is not None else b_eff - a))
    # 3. references nobody asks for.
    for rid, positions in ref_index.items():
        if rid not in used:
            for fi, row in positions:
                url = ref_files[fi]
                extra.append((fi, (rid, None, url, row,
                                   f"{_where(url, row, ref_fmt)}: no candidate for id {rid!r}")))
    extras: dict[int, list[tuple]] = {}
    for fi, q in sorted(extra, key=lambda e: (e[0], e[1][3])):
        extras.setdefault(fi % len(planned), []).append(q)
    return [WorkUnit(index=i, extra_quarantine=tuple(extras.get(i, ())), **p) for i, p in enumerate(planned)]


def _plan_lines(spec: InputSpec, target_rows):
    so = spec.storage_options
    cand_files = expand(spec.candidates, so, "input.candidates")
    ref_files = expand(spec.references, so, "input.references")
    groups: dict[str, list[str]] = {}
    for url in cand_files:
        if spec.system_from == "stem":
            system = file_stem(url)
        elif spec.system_from == "folder":
            system = parent_name(url)
        else:
            system = ""
        groups.setdefault(system, []).append(url)
    for url in cand_files + ref_files:
        infer_format(url, spec.format, default="text")
        compression_of(url)
    units = []
    ref_scans: dict[str, tuple[int, list[int] | None]] = {}
    prefixes = line_id_prefixes(ref_files)
    for system in sorted(groups):
        cands = groups[system]
        if len(cands) != len(ref_files):
            raise ValueError(
                f"layout 'lines': {len(cands)} candidate file(s)"
                + (f" for system {system!r}" if spec.system_from is not None else "")
                + f" but {len(ref_files)} reference file(s); they are paired by sorted name "
                f"(candidates: {cands[:3]}{'…' if len(cands) > 3 else ''}; "
                f"references: {ref_files[:3]}{'…' if len(ref_files) > 3 else ''})")
        for c_url, r_url in zip(cands, ref_files):
            n_c, c_starts = _scan_lines(c_url, so, target_rows)
            if r_url not in ref_scans:
                ref_scans[r_url] = _scan_lines(r_url, so, target_rows)
            n_r, r_starts = ref_scans[r_url]
            if n_c != n_r:
                raise ValueError(f"layout 'lines': {c_url} has {n_c} lines but {r_url} has {n_r}; "
                                 "line k of the candidates must pair with line k of the references")
            for k, (a, b) in enumerate(_ranges(n_c, target_rows)):
                split = target_rows is not None and n_c > target_rows
                units.append(WorkUnit(
                    index=len(units), layout="lines", file=c_url, format="text", row_start=a,
                    row_stop=b if split else None,
                    byte_start=c_starts[k] if split and c_starts else None,
                    byte_stop=c_starts[k + 1] if split and c_starts else None,
                    ref_files=(r_url,), ref_format="text", ref_ranges=((0, a, b),),
                    ref_bytes=(r_starts[k], r_starts[k + 1]) if split and r_starts else None,
                    system=system, n_rows=b - a, id_prefix=prefixes[r_url]))
    return units


def line_id_prefixes(ref_files: list[str]) -> dict[str, str]:
    """The id prefix of each reference file of layout ``lines``: its stem where no other
    reference file has that stem, else its path relative to the folder that holds every
    reference file (``testA/ref``; with the extensions where even that is ambiguous), so
    ids stay unique when two test sets' reference files share a name."""
    stems = {u: file_stem(u) for u in ref_files}
    count = collections.Counter(stems.values())
    clash = [u for u in ref_files if count[stems[u]] > 1]
    if not clash:
        return stems
    root = posixpath.commonpath([posixpath.dirname(u.split("://", 1)[-1]) for u in ref_files])

    def rel(u: str) -> str:
        return posixpath.relpath(u.split("://", 1)[-1], root)

    def no_ext(u: str) -> str:
        r = rel(u)
        return posixpath.join(posixpath.dirname(r), stems[u])

    short = collections.Counter(no_ext(u) for u in clash)
    out = dict(stems)
    for u in clash:
        out[u] = no_ext(u) if short[no_ext(u)] == 1 else rel(u)
    return out


# The separator of the statistics' example keys f"{system}\x1f{id}": not allowed in a system name
# (an id may hold it: the first separator of a key always ends its system).
KEY_SEPARATOR = "\x1f"


# --------------------------------------------------------------------------- duplicates across units
def unit_keys(table: pa.Table) -> pa.Table:
    """The ``(system, id, row)`` columns of a canonical table (what the plan pass sends back)."""
    return table.select(["system", "id", "row"])


def find_duplicates(units: list["WorkUnit"], keys: list[pa.Table]) -> dict[int, tuple[tuple[int, str], ...]]:
    """Cross-unit duplicate ``(system, id)``: ``{unit index: ((row, where the first is), ...)}``.

    ``keys[k]`` is :func:`unit_keys` of unit ``k``'s canonical table (within-unit duplicates
    are already gone).  The first occurrence in (unit order = file order, row order) is
    kept; every later one is listed for its unit.  Deterministic: depends on the data only.
    Memory: the ids of the whole corpus, as Arrow columns (no Python object per row).
    """
    if len(units) != len(keys):
        raise ValueError(f"{len(units)} units but {len(keys)} key tables")
    if not keys:
        return {}
    parts = []
    for k, t in enumerate(keys):
        t = t.select(["system", "id", "row"]).cast(pa.schema([("system", pa.string()), ("id", pa.string()),
                                                             ("row", pa.int64())]))
        parts.append(t.append_column("unit", pa.array(np.full(t.num_rows, k, dtype=np.int64))))
    allk = pa.concat_tables(parts).combine_chunks()
    if allk.num_rows < 2:
        return {}
    allk = allk.append_column("pos", pa.array(np.arange(allk.num_rows, dtype=np.int64)))
    groups = allk.group_by(["system", "id"], use_threads=False).aggregate([("pos", "min"), ("pos", "count")])
    dup = groups.filter(pc.greater(groups.column("pos_count"), 1))
    if dup.num_rows == 0:
        return {}
    joined = allk.join(dup.select(["system", "id", "pos_min"]), keys=["system", "id"], use_threads=False)
    later = joined.filter(pc.not_equal(joined.column("pos"), joined.column("pos_min")))
    unit_col = allk.column("unit").to_numpy()
    row_col = allk.column("row").to_numpy()
    out: dict[int, list[tuple[int, str]]] = {}
    for u, row, first in sorted(zip(later.column("unit").to_pylist(), later.column("row").to_pylist(),
                                    later.column("pos_min").to_pylist())):
        fu = units[int(unit_col[first])]
        out.setdefault(int(u), []).append((int(row), _where(fu.file, int(row_col[first]), fu.format)))
    return {u: tuple(v) for u, v in out.items()}


# --------------------------------------------------------------------------- reading
class _Out:
    def __init__(self, drop_rows=()):
        self.cols: dict[str, list] = {n: [] for n in CANONICAL_SCHEMA.names}
        self.q: dict[str, list] = {n: [] for n in QUARANTINE_SCHEMA.names}
        self.seen: dict[tuple[str, str], str] = {}
        self.drop: dict[int, str] = {int(r): str(w) for r, w in drop_rows}

    def quarantine(self, id_, system, file, row, reason):
        for k, v in zip(QUARANTINE_SCHEMA.names, (id_, system, file, row, reason)):
            self.q[k].append(v)

    def add(self, id_, system, candidate, refs, source, row, file, where):
        if KEY_SEPARATOR in system:
            # f"{system}\x1f{id}" keys the bootstrap weights: with the separator inside a system
            # name, two different (system, id) pairs could share one key
            self.quarantine(id_, system, file, row, f"{where}: the system {system!r} contains U+001F, "
                                                    "which separates system and id in example keys")
            return
        key = (system, id_)
        if self.drop and row in self.drop:
            # A duplicate of an earlier unit's row (plan time): later rows of this unit with
            # the same key are duplicates of that first occurrence too.
            self.seen[key] = self.drop[row]
        first = self.seen.get(key)
        if first is not None:
            self.quarantine(id_, system, file, row,
                            f"{where}: duplicate id {id_!r}" + (f" for system {system!r}" if system else "")
                            + f" (first at {first})")
            return
        self.seen[key] = where
        for k, v in zip(CANONICAL_SCHEMA.names, (id_, system, candidate, refs, source, row, file)):
            self.cols[k].append(v)

    fast: pa.Table | None = None  # a whole unit read by the fast JSONL path

    def tables(self) -> tuple[pa.Table, pa.Table]:
        rows = self.fast if self.fast is not None else pa.table(self.cols, schema=CANONICAL_SCHEMA)
        return rows, pa.table(self.q, schema=QUARANTINE_SCHEMA)


def read_unit(spec: InputSpec | dict, unit: WorkUnit) -> tuple[pa.Table, pa.Table]:
    """``(canonical table, quarantine table)`` for one work unit."""
    spec = InputSpec.from_config(spec)
    out = _Out(unit.drop_rows)
    for q in unit.extra_quarantine:
        out.quarantine(*q)
    if unit.layout == "records":
        _read_records(spec, unit, out)
    elif unit.layout == "paired":
        _read_paired(spec, unit, out)
    elif unit.layout == "lines":
        _read_lines(spec, unit, out)
    elif unit.layout == "folders":
        from pipeline.io.folders import read_folders

        read_folders(spec, unit, out)
    else:
        raise ValueError(f"unknown unit layout {unit.layout!r}")
    return out.tables()


@njit(cache=True, nogil=True)
def _jsonl_shape(buf):
    """One pass over a JSONL unit's bytes: (newlines, newlines followed by ``{``, a CR,
    a ``\\u`` escape of a UTF-16 surrogate (``\\u[dD][89a-fA-F]``, as a regex would find it)).
    One compiled pass instead of four ``bytes`` scans (~3 us/pair of the fast reader)."""
    n = buf.shape[0]
    nl = 0
    nl_brace = 0
    cr = False
    sur = False
    for i in range(n):
        b = buf[i]
        if b == 10:
            nl += 1
            if i + 1 < n and buf[i + 1] == 123:
                nl_brace += 1
        elif b == 13:
            cr = True
        elif b == 92 and i + 3 < n and buf[i + 1] == 117 and (buf[i + 2] == 100 or buf[i + 2] == 68):
            c = buf[i + 3]
            if c == 56 or c == 57 or 97 <= c <= 102 or 65 <= c <= 70:
                sur = True
    return nl, nl_brace, cr, sur


def _records_fast(spec: InputSpec, unit: WorkUnit, out: _Out) -> bool:
    """A clean JSONL unit parsed by Arrow's C++ reader and checked column by column.

    Returns False (nothing added) whenever anything is unusual (a blank or CRLF line, a BOM,
    invalid UTF-8, a surrogate escape, a parse error, an unexpected type, a null, an empty id
    or reference list, a duplicate, a plan-time duplicate): the line-by-line reader then
    handles the unit and words every problem as a quarantine row.  Both give the same table.
    """
    import pyarrow.compute as pc
    import pyarrow.json as pj

    if unit.format != "jsonl" or unit.drop_rows or (unit.byte_start is None and (unit.row_start or unit.row_stop)):
        return False
    url, so = unit.file, spec.storage_options
    comp = compression_of(url)
    with _reading(url), _open(url, so, comp) as f:
        if unit.byte_start is not None and comp is None:
            f.seek(unit.byte_start)
            data = f.read(unit.byte_stop - unit.byte_start) if unit.byte_stop is not None else f.read()
        elif unit.byte_start is None:
            data = f.read()
        else:
            return False
    if not data:
        return False
    n_nl, n_nl_brace, has_cr, has_surrogate = _jsonl_shape(np.frombuffer(data, dtype=np.uint8))
    n_lines = n_nl + (0 if data.endswith(b"\n") else 1)
    # every line but the first must follow a newline and open an object (no blank line, and
    # Arrow's reader crashes on a bare `null` line)
    if has_cr or has_surrogate or not data.startswith(b"{") or n_nl_brace != n_lines - 1:
        return False
    if unit.row_stop is not None and unit.row_stop - unit.row_start < n_lines:
        return False
    try:
        table = pj.read_json(pa.BufferReader(data), read_options=pj.ReadOptions(block_size=max(1 << 20, len(data) + 1)))
        # Arrow copies invalid UTF-8 into strings as it is; a full validation finds it
        # (ten times faster than decoding the whole unit in Python first)
        table.validate(full=True)
    except (UnicodeDecodeError, pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False
    if table.num_rows != n_lines:
        return False
    c = {k: spec.col(k) for k in ("id", "candidate", "references", "system", "source")}
    names = set(table.column_names)
    if not {c["id"], c["candidate"], c["references"]} <= names:
        return False

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
        return False
    if c["system"] in names:
        systems = text(c["system"], nullable=True)
        if systems is None:
            return False
        systems = pc.fill_null(systems, "")
    else:
        systems = pa.chunked_array([pa.repeat(pa.scalar("", pa.string()), table.num_rows)])
    sources = pa.chunked_array([pa.nulls(table.num_rows, pa.string())])
    if c["source"] in names:
        sources = text(c["source"], nullable=True)
        if sources is None:
            return False
    refs = table.column(c["references"])
    if refs.null_count:
        return False
    if pa.types.is_string(refs.type):
        refs = pa.chunked_array([pa.ListArray.from_arrays(pa.array(np.arange(len(ch) + 1, dtype=np.int32)), ch)
                                 for ch in refs.chunks], pa.list_(pa.string()))
    elif pa.types.is_list(refs.type) and pa.types.is_string(refs.type.value_type):
        flat = pc.list_flatten(refs)
        if flat.null_count or pc.any(pc.equal(pc.list_value_length(refs), 0)).as_py():
            return False
    else:
        return False
    if pc.any(pc.match_substring(systems, KEY_SEPARATOR)).as_py():
        return False  # quarantined, with the reason, by the line-by-line reader
    keys = pc.binary_join_element_wise(systems, ids, KEY_SEPARATOR)
    if pc.count_distinct(keys).as_py() != table.num_rows:
        return False
    rows = pa.array(np.arange(unit.row_start, unit.row_start + table.num_rows, dtype=np.int64))
    canonical = pa.table([ids, systems, cands, refs.cast(pa.list_(pa.string())), sources, rows,
                          pa.repeat(pa.scalar(url, pa.string()), table.num_rows)], schema=CANONICAL_SCHEMA)
    out.fast = canonical
    return True


def _read_records(spec: InputSpec, unit: WorkUnit, out: _Out) -> None:
    if _records_fast(spec, unit, out):
        return
    c = {k: spec.col(k) for k in ("id", "candidate", "references", "system", "source")}
    required = [(k, c[k]) for k in ("id", "candidate", "references")]
    url, fmt = unit.file, unit.format
    for row, rec, err in _iter_records(url, fmt, spec.storage_options, list(c.values()), required,
                                       unit.row_start, unit.row_stop, unit.byte_start, unit.byte_stop):
        where = _where(url, row, fmt)
        if err is not None:
            out.quarantine(None, None, url, row, f"{where}: {err}")
            continue
        id_ = system = None
        try:
            id_ = _get_id(rec, c["id"])
            system = _get_system(rec, c["system"])
            cand = _get_str(rec, c["candidate"], "candidate", True)
            refs = _get_refs(rec, c["references"])
            source = _get_str(rec, c["source"], "source", False)
        except _Bad as b:
            out.quarantine(id_, system, url, row, f"{where}: {b.reason}")
            continue
        out.add(id_, system, cand, refs, source, row, url, where)


def _read_paired(spec: InputSpec, unit: WorkUnit, out: _Out) -> None:
    so = spec.storage_options
    c = {k: spec.col(k) for k in ("id", "candidate", "references", "system", "source", "reference_id")}
    # references side: only the planned rows
    refs: dict[str, list[str]] = {}
    ref_err: dict[str, str] = {}
    ref_source: dict[str, str | None] = {}
    rfmt = unit.ref_format
    for fi, a, b in unit.ref_ranges:
        r_url = unit.ref_files[fi]
        for row, rec, err in _iter_records(r_url, rfmt, so, [c["reference_id"], c["references"], c["source"]],
                                           [("reference_id", c["reference_id"]), ("references", c["references"])],
                                           a, b):
            if err is not None:
                continue   # reported at plan time
            try:
                rid = _get_id(rec, c["reference_id"])
            except _Bad:
                continue   # reported at plan time
            where = _where(r_url, row, rfmt)
            try:
                r = _get_refs(rec, c["references"])
                src = _get_str(rec, c["source"], "source", False)
            except _Bad as bad:
                ref_err.setdefault(rid, f"references side {where}: {bad.reason}")
                if _in_runs(unit.ref_report, fi, row):
                    out.quarantine(rid, None, r_url, row, f"{where}: references side: {bad.reason}")
                continue
            refs.setdefault(rid, []).extend(r)
            if ref_source.get(rid) is None:
                ref_source[rid] = src
    url, fmt = unit.file, unit.format
    cols = [c[k] for k in ("id", "candidate", "system", "source")]
    for row, rec, err in _iter_records(url, fmt, so, cols, [("id", c["id"]), ("candidate", c["candidate"])],
                                       unit.row_start, unit.row_stop, unit.byte_start, unit.byte_stop):
        where = _where(url, row, fmt)
        if err is not None:
            out.quarantine(None, None, url, row, f"{where}: {err}")
            continue
        id_ = system = None
        try:
            id_ = _get_id(rec, c["id"])
            system = _get_system(rec, c["system"])
            cand = _get_str(rec, c["candidate"], "candidate", True)
            source = _get_str(rec, c["source"], "source", False)
        except _Bad as b:
            out.quarantine(id_, system, url, row, f"{where}: {b.reason}")
            continue
        if id_ in ref_err and id_ not in refs:
            out.quarantine(id_, system, url, row, f"{where}: {ref_err[id_]}")
            continue
        r = refs.get(id_)
        if r is None:
            out.quarantine(id_, system, url, row, f"{where}: no references for id {id_!r}")
            continue
        out.add(id_, system, cand, list(r), source if source is not None else ref_source.get(id_),
                row, url, where)


def _in_runs(runs: tuple[tuple[int, int, int], ...], fi: int, row: int) -> bool:
    """Is ``(fi, row)`` in the sorted ``(file, start, stop)`` runs?"""
    k = bisect.bisect_right(runs, (fi, row, float("inf"))) - 1
    return k >= 0 and runs[k][0] == fi and runs[k][1] <= row < runs[k][2]


def _read_lines(spec: InputSpec, unit: WorkUnit, out: _Out) -> None:
    so = spec.storage_options
    r_url = unit.ref_files[0]
    _, a, b = unit.ref_ranges[0]
    rb = unit.ref_bytes or (None, None)
    c_lines = _iter_lines(unit.file, so, unit.row_start, unit.row_stop, unit.byte_start, unit.byte_stop)
    r_lines = _iter_lines(r_url, so, a, b if unit.row_stop is not None else None, rb[0], rb[1])
    stem = file_stem(r_url) if unit.id_prefix is None else unit.id_prefix
    sentinel = (None, None)
    for (c_row, c_raw), (r_row, r_raw) in itertools.zip_longest(c_lines, r_lines, fillvalue=sentinel):
        if c_row is None or r_row is None:
            raise ValueError(f"layout 'lines': {unit.file} and {r_url} have different line counts "
                             "(changed since planning?)")
        id_ = f"{stem}:{c_row + 1}"
        try:
            cand = c_raw.decode("utf-8")
        except UnicodeDecodeError as e:
            out.quarantine(id_, unit.system, unit.file, c_row,
                           f"{unit.file} line {c_row + 1}: invalid UTF-8 at byte {e.start}")
            continue
        try:
            ref = r_raw.decode("utf-8")
        except UnicodeDecodeError as e:
            out.quarantine(id_, unit.system, unit.file, c_row,
                           f"references {r_url} line {r_row + 1}: invalid UTF-8 at byte {e.start}")
            continue
        out.add(id_, unit.system, cand, [ref], None, c_row, unit.file, f"{unit.file} line {c_row + 1}")


# --------------------------------------------------------------------------- a run that scored nothing
# names a column mapping often has in other datasets (after difflib's close matches)
_COLUMN_SYNONYMS = {
    "id": ("id", "key", "uid", "guid", "example_id", "doc_id", "idx", "index"),
    "candidate": ("candidate", "prediction", "predictions", "pred", "hypothesis", "hyp", "output", "generated",
                  "summary", "generation", "system_output"),
    "references": ("references", "reference", "refs", "ref", "target", "targets", "gold", "highlights",
                   "summary", "summaries", "label", "abstract"),
}


def _first_fields(urls: tuple[str, ...], declared: str, so: dict, n_records: int = 5) -> list[str]:
    """The fields of the first records of the first non-empty file among ``urls`` (best effort)."""
    try:
        files = expand(urls, so)
    except (OSError, ValueError):
        return []
    for url in files[:5]:
        try:
            fmt = infer_format(url, declared)
            if fmt == "parquet":
                with _reading(url, parquet=True), _open(url, so) as f:
                    return list(pq.ParquetFile(f).schema_arrow.names)
            if fmt != "jsonl":
                return []
            fields: dict[str, None] = {}
            seen = 0
            for k, (row, raw) in enumerate(_iter_lines(url, so, 0, 200)):
                rec, _ = _parse_json_line(raw, row)
                if isinstance(rec, dict):
                    fields.update(dict.fromkeys(map(str, rec)))
                    seen += 1
                    if seen >= n_records:
                        break
            if fields:
                return list(fields)
        except (OSError, ValueError):
            continue
    return []


def _did_you_mean(col: str, key: str, fields: list[str]) -> str | None:
    import difflib

    close = difflib.get_close_matches(col, fields, n=1, cutoff=0.6)
    if not close:
        close = [f for f in fields if f.lower() in _COLUMN_SYNONYMS.get(key.replace("reference_id", "id"), ())]
    return close[0] if close else None


def field_hints(spec: InputSpec | dict) -> list[str]:
    """For a run that scored no row: the fields found in the first records of each side and,
    for each column the mapping asks for that is not there, a "did you mean" (difflib, then
    names common in other datasets).  Empty for the text layouts."""
    spec = InputSpec.from_config(spec)
    if spec.layout == "records":
        sides = [("input.paths", spec.paths, spec.format, ("id", "candidate", "references"))]
    elif spec.layout == "paired":
        sides = [("input.candidates", spec.candidates, spec.format, ("id", "candidate")),
                 ("input.references", spec.references, spec.reference_format, ("reference_id", "references"))]
    else:
        return []
    out = []
    for name, urls, declared, keys in sides:
        fields = _first_fields(urls, declared, spec.storage_options)
        if not fields:
            continue
        shown = ", ".join(fields[:12]) + (", …" if len(fields) > 12 else "")
        out.append(f"fields in the first records of {name}: {shown}")
        for key in keys:
            col = spec.col(key)
            if col in fields:
                continue
            guess = _did_you_mean(col, key, [f for f in fields if f != col])
            out.append(f"no field {col!r} for {key}" + (f"; did you mean --set input.columns.{key}={guess}?"
                                                          if guess else ""))
    return out
