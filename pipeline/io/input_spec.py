"""The input specification and the types every layout shares: :class:`InputSpec` (the
``input`` section of a config, validated), :class:`WorkUnit` (one task's input), the canonical
and quarantine table schemas, and :class:`UnreadableFileError` (from :mod:`pipeline.errors`).  No
reading happens here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from pipeline.errors import UnreadableFileError  # noqa: F401 - the readers' error, importable from here
from pipeline.io.paths import check_keys, check_scheme


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
    # BLAKE2b-64 of the JSONL line the row was read from whole (pipeline.io.linedigest); null otherwise
    pa.field("line_digest", pa.uint64(), nullable=True),
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


# layout folders (pipeline.io.folders): pyrouge's defaults
DEFAULT_SYSTEM_PATTERN = r"(\d+).txt"
DEFAULT_MODEL_PATTERN = r"#ID#.[A-Z].txt"


def _as_tuple(v, field_name: str) -> tuple[str, ...]:
    if v is None:
        return ()
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, (list, tuple)) or not all(isinstance(x, str) and x for x in v):
        raise ValueError(f"input.{field_name}: expected a URL/glob or a list of them, got {v!r}")
    return tuple(v)


def check_patterns(system_pattern: str, model_pattern: str) -> None:
    for name, p in (("system_filename_pattern", system_pattern), ("model_filename_pattern", model_pattern)):
        if not isinstance(p, str) or not p:
            raise ValueError(f"input.{name}: expected a regular expression, got {p!r}")
        try:
            re.compile(p.replace("#ID#", "x"))
        except re.error as e:
            raise ValueError(f"input.{name}: not a valid regular expression ({e})") from None
    if "#ID#" not in model_pattern:
        raise ValueError("input.model_filename_pattern: must contain #ID# (where the id goes)")


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
            patterns["system_filename_pattern"] = patterns["system_filename_pattern"] or DEFAULT_SYSTEM_PATTERN
            patterns["model_filename_pattern"] = patterns["model_filename_pattern"] or DEFAULT_MODEL_PATTERN
            check_patterns(*patterns.values())
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
    ``files`` (``records``) makes the unit a *pack*: several small whole files of one format,
    read in this order as one table (``file`` is the first of them).
    ``drop_rows`` holds ``(row key, where the first occurrence is)`` for the rows whose
    ``(system, id)`` already occurs in an earlier unit (found across units from wave 1's key
    hashes and confirmed on the ids: :mod:`pipeline.job.dedup`): they become ``duplicate id``
    quarantine rows.  The row key of row ``r`` is ``r`` in a unit of one file,
    ``k << ROW_KEY_BITS | r`` in the ``k``-th file of a pack (:meth:`row_key`, :meth:`locate`).
    ``ref_report`` (``paired``) holds the reference rows whose bad records this unit reports
    as quarantine rows; ``id_prefix`` (``lines``) the ids' prefix.
    ``n_rows`` is the number of rows planned (None: not counted); ``n_bytes`` the listed size of
    ``file`` when planned (a pack: of its files together), ``file_sizes`` those of a pack's
    ``files``, ``ref_sizes`` those of ``ref_files`` (None or empty: not known).  A reader that
    finds another size, or other rows in a planned range, raises
    :class:`~pipeline.errors.InputChangedError` rather than read other rows.

    Identity: ``index`` is the unit's position in :func:`pipeline.io.readers.plan_units`'s list,
    which is a function of the sorted input listing and the planning settings only (never of
    the workers), so the same inputs and settings give the same units with the same indexes.
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
    files: tuple[str, ...] = ()
    ref_sizes: tuple[int | None, ...] = ()
    file_sizes: tuple[int | None, ...] = ()

    @property
    def key(self) -> str:
        """A stable, human-readable name (for task keys and logs)."""
        if self.files:
            return f"{self.index:05d}:{self.file}+{len(self.files) - 1}"
        stop = "" if self.row_stop is None else self.row_stop
        return f"{self.index:05d}:{self.file}[{self.row_start}:{stop}]"

    def row_key(self, file: str, row: int) -> int:
        """The key of row ``row`` of ``file`` (one of this unit's files) in ``drop_rows``."""
        return self.files.index(file) << ROW_KEY_BITS | row if self.files else row

    def locate(self, row_key: int) -> tuple[str, int]:
        """``(file, row)`` of a :meth:`row_key`."""
        if not self.files:
            return self.file, row_key
        return self.files[row_key >> ROW_KEY_BITS], row_key & ((1 << ROW_KEY_BITS) - 1)


# a pack's row keys: the file's position in the pack above the row (rows below 2**40 per file)
ROW_KEY_BITS = 40


