"""Record fields checked one by one, and :class:`Out`, which collects a unit's canonical rows
and quarantine rows.  A bad field raises :class:`BadRecord`; the layout readers turn it into a
quarantine row whose reason names the file and line (:func:`location`).
"""
from __future__ import annotations

import json

import pyarrow as pa

from pipeline.io.input_spec import CANONICAL_SCHEMA, QUARANTINE_SCHEMA, ROW_KEY_BITS
from pipeline.stats.keys import KEY_SEPARATOR


class BadRecord(Exception):
    def __init__(self, reason: str, id_: str | None = None, system: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.id = id_
        self.system = system


class BadText:
    """Placeholder for a Parquet string that is not valid UTF-8."""

    def __init__(self, err: str):
        self.err = err


_MISSING = object()


def parse_json_line(raw: bytes, row: int):
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


def json_array_start(first_line: bytes) -> bool:
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


def location(url: str, row: int, fmt: str) -> str:
    return f"{url} row {row}" if fmt == "parquet" else f"{url} line {row + 1}"


def _check_text(v: str, what: str) -> str:
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        raise BadRecord(f"{what} is not valid Unicode (lone surrogate)") from None
    return v


def get_id(rec: dict, col: str, what: str = "id") -> str:
    v = rec.get(col, _MISSING)
    if v is _MISSING:
        raise BadRecord(f"missing {what} field {col!r}")
    if v is None:
        raise BadRecord(f"null {what}")
    if isinstance(v, bool):
        raise BadRecord(f"{what} must be a string or integer, got bool")
    if isinstance(v, int):
        return str(v)
    if isinstance(v, BadText):
        raise BadRecord(f"{what} is not valid UTF-8 ({v.err})")
    if not isinstance(v, str):
        raise BadRecord(f"{what} must be a string or integer, got {type(v).__name__}")
    if not v:
        raise BadRecord(f"empty {what}")
    return _check_text(v, what)


def get_system(rec: dict, col: str) -> str:
    v = rec.get(col)
    if v is None:
        return ""
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    if isinstance(v, BadText):
        raise BadRecord(f"system is not valid UTF-8 ({v.err})")
    if not isinstance(v, str):
        raise BadRecord(f"system must be a string, got {type(v).__name__}")
    return _check_text(v, "system")


def get_str(rec: dict, col: str, what: str, required: bool) -> str | None:
    v = rec.get(col, _MISSING)
    if v is _MISSING or v is None:
        if required:
            raise BadRecord(f"{'missing' if v is _MISSING else 'null'} {what}"
                       + (f" field {col!r}" if v is _MISSING else ""))
        return None
    if isinstance(v, BadText):
        raise BadRecord(f"{what} is not valid UTF-8 ({v.err})")
    if not isinstance(v, str):
        raise BadRecord(f"{what} must be a string, got {type(v).__name__}")
    return _check_text(v, what)


def get_refs(rec: dict, col: str) -> list[str]:
    v = rec.get(col, _MISSING)
    if v is _MISSING:
        raise BadRecord(f"missing references field {col!r}")
    if v is None:
        raise BadRecord("null references")
    if isinstance(v, str):
        return [_check_text(v, "reference")]
    if isinstance(v, BadText):
        raise BadRecord(f"reference is not valid UTF-8 ({v.err})")
    if not isinstance(v, (list, tuple)):
        raise BadRecord(f"references must be a string or a list of strings, got {type(v).__name__}")
    if len(v) == 0:
        raise BadRecord("empty reference list")
    out = []
    for i, r in enumerate(v):
        if r is None:
            raise BadRecord(f"null reference at index {i}")
        if isinstance(r, BadText):
            raise BadRecord(f"reference {i} is not valid UTF-8 ({r.err})")
        if not isinstance(r, str):
            raise BadRecord(f"reference {i} must be a string, got {type(r).__name__}")
        out.append(_check_text(r, f"reference {i}"))
    return out


class Out:
    """A unit's rows, in reading order: canonical rows added one by one (:meth:`add`) or as
    whole tables (:meth:`add_table`, the fast JSONL path), and quarantine rows.  ``files``:
    a pack's files (:attr:`WorkUnit.files`), whose positions key ``drop_rows``."""

    def __init__(self, drop_rows=(), files: tuple[str, ...] = ()):
        self.cols: dict[str, list] = {n: [] for n in CANONICAL_SCHEMA.names}
        self.q: dict[str, list] = {n: [] for n in QUARANTINE_SCHEMA.names}
        # (system, id) -> where its first row is: the text, or (file, row, format) for rows of a
        # whole table (worded only for a duplicate); :meth:`first_seen` reads it
        self.seen: dict[tuple[str, str], str | tuple] = {}
        # whole tables of a pack whose keys are not in ``seen`` yet: most packs are read as one
        # table and nothing looks a key up after it
        self.unindexed: list[tuple[pa.Table, str]] = []
        self.drop: dict[int, str] = {int(r): str(w) for r, w in drop_rows}
        self.pack = {f: k for k, f in enumerate(files)}
        self.parts: list[pa.Table] = []

    def quarantine(self, id_, system, file, row, reason):
        for k, v in zip(QUARANTINE_SCHEMA.names, (id_, system, file, row, reason)):
            self.q[k].append(v)

    def add(self, id_, system, candidate, refs, source, row, file, where, line_digest=None):
        if KEY_SEPARATOR in system:
            # f"{system}\x1f{id}" keys the bootstrap weights: with the separator inside a system
            # name, two different (system, id) pairs could share one key
            self.quarantine(id_, system, file, row, f"{where}: the system {system!r} contains U+001F, "
                                                    "which separates system and id in example keys")
            return
        key = (system, id_)
        row_key = self.pack[file] << ROW_KEY_BITS | row if self.pack else row
        seen = self.first_seen()
        if self.drop and row_key in self.drop:
            # A duplicate of an earlier unit's row (found across units, wave 2): later rows of
            # this unit with the same key are duplicates of that first occurrence too.
            seen[key] = self.drop[row_key]
        first = seen.get(key)
        if first is not None:
            if not isinstance(first, str):
                first = location(*first)
            self.quarantine(id_, system, file, row,
                            f"{where}: duplicate id {id_!r}" + (f" for system {system!r}" if system else "")
                            + f" (first at {first})")
            return
        seen[key] = where
        for k, v in zip(CANONICAL_SCHEMA.names, (id_, system, candidate, refs, source, row, file, line_digest)):
            self.cols[k].append(v)

    fast: pa.Table | None = None  # the last table added whole by the fast JSONL path

    def add_table(self, table: pa.Table, fmt: str) -> None:
        """Canonical rows read whole (their keys are new to this unit: the caller checked)."""
        self._flush()
        if self.pack:  # a later file of the pack may repeat these keys
            self.unindexed.append((table, fmt))
        self.parts.append(table)
        self.fast = table

    def first_seen(self) -> dict[tuple[str, str], str | tuple]:
        """``seen`` with the keys of every table added so far (indexed on the first look-up)."""
        for table, fmt in self.unindexed:
            for key, file, row in zip(zip(table.column("system").to_pylist(), table.column("id").to_pylist()),
                                      table.column("file").to_pylist(), table.column("row").to_pylist()):
                self.seen[key] = (file, row, fmt)
        self.unindexed.clear()
        return self.seen

    def _flush(self) -> None:
        if self.cols["id"]:
            self.parts.append(pa.table(self.cols, schema=CANONICAL_SCHEMA))
            self.cols = {n: [] for n in CANONICAL_SCHEMA.names}

    def tables(self) -> tuple[pa.Table, pa.Table]:
        self._flush()
        if not self.parts:
            rows = pa.table(self.cols, schema=CANONICAL_SCHEMA)
        elif len(self.parts) == 1:
            rows = self.parts[0]
        else:
            rows = pa.concat_tables(self.parts).combine_chunks()
        return rows, pa.table(self.q, schema=QUARANTINE_SCHEMA)


def json_lines(lines, where: str, first: bool, error: type[Exception]):
    """``(row, record, None)`` or ``(row, None, reason)`` for each non-blank line of ``lines``
    (``(row, bytes)`` pairs).  A JSONL file that is one JSON array of records (``first``: these
    lines start the file) raises ``error`` as a whole: read line by line it would be one bad
    record, or a bad fragment per line."""
    for row, raw in lines:
        if first and raw.strip():
            first = False
            if json_array_start(raw):
                raise error(f"{where}: a JSON array, not JSONL (one JSON object per line); "
                            "convert it, e.g. jq -c '.[]' FILE > FILE.jsonl")
        rec, err = parse_json_line(raw, row)
        if rec is not None or err is not None:
            yield row, rec, err
