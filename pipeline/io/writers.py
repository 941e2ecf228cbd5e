"""Atomic, deterministic output files (fsspec + Arrow; never Dask).

* Callers give every file a deterministic name (the run folder's: :mod:`pipeline.runfolder`),
  so a retried task overwrites its own output and never adds a second copy.
* Local (and other non-object-store) file systems: write :func:`temp_path` (``.tmp-<name>-<uuid>``,
  the one temp-name rule: :func:`is_temp_name`) in the same folder, then rename (``os.replace`` on local disks: atomic).  Object stores
  (s3, gcs, azure): a single PUT / CompleteMultipartUpload is atomic, so write directly.
  Temp names start with ``.``, which Arrow/Dask dataset readers skip.
* :func:`escape_system` escapes system names (percent-encoding, plus a short hash for
  very long names), so no system name can leave its folder.
"""
from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.io.paths import check_scheme, get_fs, is_local

_OBJECT_STORES = {"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl"}
_SAFE = re.compile(r"[A-Za-z0-9_\-.]")
MAX_SEGMENT = 96    # escaped system names longer than this are cut and hashed
_KEEP = 64


def escape_system(system: str) -> str:
    """A path segment that can never be ``..``, contain ``/``/``\\``/NUL, or be too long.

    Every character outside ``[A-Za-z0-9_.-]`` is percent-encoded (UTF-8 bytes), as is a
    leading ``.`` (so no hidden files and no ``.``/``..``).  ``%`` itself is encoded, so
    the mapping is injective; :func:`unescape_system` inverts it.  Escaped names longer
    than ``MAX_SEGMENT`` keep their first 64 characters plus ``~`` and 16 hex digits of
    SHA-256 of the name (``~`` never appears otherwise, so these cannot collide with short
    names).  The empty system (input without systems) is the empty segment
    (``system-``).  Note: case-insensitive file systems would still merge ``A`` and ``a``.
    """
    if not isinstance(system, str):
        raise TypeError(f"system must be a string, got {type(system).__name__}")
    parts = []
    for i, ch in enumerate(system):
        if _SAFE.match(ch) and not (i == 0 and ch == "."):
            parts.append(ch)
        else:
            parts.append("".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass")))
    out = "".join(parts)
    if len(out) > MAX_SEGMENT:
        cut = out[:_KEEP]
        pct = cut.rfind("%")
        if pct >= _KEEP - 2:        # do not cut inside a %XX escape
            cut = cut[:pct]
        digest = hashlib.sha256(system.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        out = f"{cut}~{digest}"
    return out


def unescape_system(segment: str) -> str:
    """Inverse of :func:`escape_system` (raises for hashed long names, which are lossy)."""
    if "~" in segment:
        raise ValueError(f"system segment {segment!r} was shortened with a hash; read the name from the data")
    from urllib.parse import unquote_to_bytes

    return unquote_to_bytes(segment).decode("utf-8", "surrogatepass")


def _json_meta(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode("utf-8")


def _protocol(fs) -> str:
    return fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]


TEMP_PREFIX = ".tmp-"
# The temp names temp_path gives: ".tmp-<final name>-<uuid4 hex>" (nothing else matches)
_TEMP_NAME = re.compile(r"^\.tmp-[A-Za-z0-9_.%=~\-]+-[0-9a-f]{32}$")


def temp_path(path: str) -> str:
    """Where an atomic write of ``path`` writes first: a hidden name in the same folder, which
    Arrow/Dask dataset readers skip."""
    parent, name = posixpath.split(path.rstrip("/"))
    return posixpath.join(parent, f"{TEMP_PREFIX}{name}-{uuid.uuid4().hex}")


def is_temp_name(basename: str) -> bool:
    """Whether ``basename`` is one :func:`temp_path` gives (what a killed writer leaves)."""
    return bool(_TEMP_NAME.match(basename))


def is_object_store(fs) -> bool:
    """s3, gcs, azure: one PUT is atomic, so files are written directly (no temp name)."""
    return _protocol(fs) in _OBJECT_STORES


def _write_bytes_atomic(url: str, write, storage_options: dict | None) -> str:
    """Call ``write(file_object)`` so that ``url`` appears complete or not at all."""
    check_scheme(url, "output")
    fs, path = get_fs(url, storage_options)
    if is_object_store(fs):
        with fs.open(path, "wb") as f:   # one PUT (or multipart completion): atomic
            write(f)
        return url
    parent = posixpath.dirname(path.rstrip("/"))
    if parent:
        fs.makedirs(parent, exist_ok=True)
    tmp = temp_path(path)
    try:
        with fs.open(tmp, "wb") as f:
            write(f)
            if is_local(fs):
                f.flush()
                os.fsync(f.fileno())
        if is_local(fs):
            os.replace(tmp, path)
        else:
            fs.mv(tmp, path)
    except BaseException:
        try:
            if fs.exists(tmp):
                fs.rm(tmp)
        except Exception:  # noqa: BLE001 - best effort cleanup
            pass
        raise
    return url


_UNIQUE_PER_ROW = frozenset({"id", "text_digest", "line_digest"})


def _write_parquet(table: pa.Table, metadata: dict | None, sink) -> None:
    """``table`` as Parquet (zstd) into ``sink``; ``metadata`` goes into the Arrow schema metadata
    (values that are not ``str``/``bytes`` are stored as compact, key-sorted JSON)."""
    if metadata:
        meta = dict(table.schema.metadata or {})
        meta.update({str(k).encode("utf-8"): _json_meta(v) for k, v in metadata.items()})
        table = table.replace_schema_metadata(meta)
    # no dictionary for the columns unique per row (the example ids, the digests): a dictionary
    # of them only grows the file and costs its encoding time
    pq.write_table(table, sink, compression="zstd",
                   use_dictionary=[f.name for f in table.schema if f.name not in _UNIQUE_PER_ROW])


def write_parquet_atomic(table: pa.Table, url: str, storage_options: dict | None = None,
                         metadata: dict | None = None) -> str:
    """Write ``table`` to ``url`` atomically (:func:`_write_parquet`)."""
    return _write_bytes_atomic(url, lambda f: _write_parquet(table, metadata, f), storage_options)


def parquet_bytes(table: pa.Table, metadata: dict | None = None) -> bytes:
    """The bytes :func:`write_parquet_atomic` writes for ``table`` (encoded now, written later)."""
    sink = pa.BufferOutputStream()
    _write_parquet(table, metadata, sink)
    return sink.getvalue().to_pybytes()


def write_bytes_atomic(data: bytes, url: str, storage_options: dict | None = None) -> str:
    """Write ``data`` to ``url`` atomically."""
    return _write_bytes_atomic(url, lambda f: f.write(data), storage_options)


def write_json_atomic(obj: Any, url: str, storage_options: dict | None = None) -> str:
    """Deterministic JSON (sorted keys, 2-space indent, final newline), written atomically."""
    data = (json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    return write_bytes_atomic(data, url, storage_options)


def read_json(url: str, storage_options: dict | None = None):
    """The JSON document at ``url``, or None when there is no such file."""
    fs, path = get_fs(url, storage_options)
    if not fs.exists(path):
        return None
    with fs.open(path, "rb") as f:
        return json.loads(f.read())
