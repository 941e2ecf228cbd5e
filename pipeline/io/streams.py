"""Opening input files: decompression by file extension (gzip, bz2, xz, zstd) or, for a name
without one, by the magic bytes the file starts with (:func:`sniff_compression`), lines of a
file or of a byte range of it, line counts for planning, and the one error of a file that
cannot be decoded at all (:class:`~pipeline.io.input_spec.UnreadableFileError`).  Storage errors
stay ``OSError`` so that callers can retry them.
"""
from __future__ import annotations

import gzip
import importlib
import lzma
import re
import zlib
from contextlib import contextmanager
from typing import Iterator

import fsspec
import numpy as np
import pyarrow as pa

from pipeline.errors import InputChangedError
from pipeline.io import paths as _paths
from pipeline.io.paths import compression_of
from pipeline.io.input_spec import UnreadableFileError


_CORRUPT = (EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile, pa.ArrowInvalid, IsADirectoryError,
            NotADirectoryError)


_CORRUPT_PARQUET = re.compile(r"thrift|parquet|magic bytes|footer|corrupt", re.IGNORECASE)


@contextmanager
def reading(url: str, parquet: bool = False):
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


class ZstdReader:
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


# Compressed content whatever the file's name (checked when the name has no compression
# extension).  None of these starts valid UTF-8 text but bz2's ("BZh91AY&SY"-like), whose
# whole 10-byte header is checked.
_MAGIC = ((b"\x1f\x8b", "gzip"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd"))
_BZ2_MAGIC = re.compile(rb"BZh[1-9]\x31\x41\x59\x26\x53\x59")


def sniff_compression(head: bytes) -> str | None:
    """The compression whose magic bytes ``head`` (a file's first bytes) starts with, else None."""
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    return "bz2" if _BZ2_MAGIC.match(head) else None


# The pool keeps what it held for a worker's next unit: reads larger than this take a ``bytes``,
# given back to the system when the unit is done.
POOLED_MAX = 256 << 20


def read_pooled(f, n: int | None = None):
    """The next ``n`` bytes of the raw (undecoded) stream ``f`` (fewer at its end; all the rest
    when ``n`` is None) in a buffer of Arrow's memory pool.  The pool reuses its memory between
    units; a new ``bytes`` of a shard's size is page-faulted in afresh by every read, which cost
    more than the read itself.  A stream that cannot seek, or more than :data:`POOLED_MAX` bytes,
    is read as it is."""
    if n is None and not f.seekable():
        return f.read()
    if n is None:   # the end from tell(): some streams' seek returns None (paramiko's SFTP files)
        at = f.tell()
        f.seek(0, 2)
        n = max(0, f.tell() - at)
        f.seek(at)
    if n > POOLED_MAX:
        return f.read(n)
    buf = pa.allocate_buffer(n)
    view, got = memoryview(buf).cast("B"), 0   # unsigned bytes: a readinto may assign ``bytes`` to it
    while got < n:
        k = f.readinto(view[got:])
        if not k:
            break
        got += k
    view.release()
    return buf if got == n else buf.slice(0, got)


def changed_since_planning(url: str, what: str) -> InputChangedError:
    """The one error of an input file that is not what planning saw (``what``: how it differs)."""
    return InputChangedError(f"{url}: the file changed since planning ({what}); run again to score it as it is now")


def check_size(url: str, raw, size: int | None) -> None:
    """``raw`` (``url`` opened, not decoded) still has the size planning listed (``size``; None:
    not known).  The size comes with the open file (fsspec's local files seek to their end,
    object stores' files hold their HEAD's length): no request of its own."""
    now = getattr(raw, "size", None)
    if size is not None and isinstance(now, int) and now != size:
        raise changed_since_planning(url, f"{size} bytes when planned, {now} now")


def check_range(url: str, data, row_start: int, row_stop: int | None, byte_start: int, byte_stop: int | None,
                size: int | None, n_lines: int | None = None) -> None:
    """The bytes read of a planned byte range (``data``; ``n_lines``: its lines, if counted) are
    still the rows ``[row_start, row_stop)``: as many bytes and lines as planned, ending with a
    newline unless the range ended the file (planning cut every other range after a newline).
    A line moved across the range's end, or a file cut short, would otherwise lose or split
    records with no word."""
    buf = memoryview(data).cast("B")   # bytes or an Arrow buffer, not copied
    open_end = len(buf) > 0 and buf[-1] != 10   # a last line without its newline
    if byte_stop is not None and len(buf) != byte_stop - byte_start:
        raise changed_since_planning(url, f"bytes {byte_start}-{byte_stop} planned, it ends at byte "
                                          f"{byte_start + len(buf)}")
    if n_lines is None:
        n_lines = int(np.count_nonzero(np.frombuffer(buf, dtype=np.uint8) == 10)) + open_end  # no copy of the bytes
    if row_stop is not None and n_lines != row_stop - row_start:
        raise changed_since_planning(url, f"rows {row_start}-{row_stop} planned in bytes {byte_start}-{byte_stop}, "
                                          f"{n_lines} lines there now")
    if open_end and size is not None and byte_stop != size:
        raise changed_since_planning(url, f"a line no longer ends at byte {byte_stop}")


def check_rows(url: str, row_start: int, row_stop: int | None, end: int) -> None:
    """A planned row range ``[row_start, row_stop)`` was read whole (``end``: the file's lines,
    when the read stopped before ``row_stop``)."""
    if row_stop is not None and end < row_stop:
        raise changed_since_planning(url, f"rows {row_start}-{row_stop} planned, it has {end} now")


@contextmanager
def open_input(url: str, so: dict, compression: str | None = None, size: int | None = None):
    """``url`` opened for binary reading, decompressed by ``compression`` (or by its content
    when that is None: :func:`open_input_as`)."""
    with open_input_as(url, so, compression, size) as (f, _):
        yield f


@contextmanager
def open_input_as(url: str, so: dict, compression: str | None = None, size: int | None = None):
    """``(stream, compression)``: ``url`` opened for binary reading and decompressed by
    ``compression`` (from the extension) or, when that is None, by the magic bytes it starts
    with (:func:`sniff_compression`; the compression found is the second item).  Every decoder
    fails on a stream that ends early (gzip, bz2 and xz raise ``EOFError`` themselves; zstd
    through :class:`ZstdReader`), so a truncated file is never read as a shorter one.  ``size``:
    the file's size when planned (:func:`check_size`)."""
    if compression is not None:
        with _decoded(url, so, compression, size) as f:
            yield f, compression
        return
    with fsspec.open(url, "rb", **so) as raw:
        check_size(url, raw, size)
        found = sniff_compression(raw.read(10)) if raw.seekable() else None
        if raw.seekable():
            raw.seek(0)
        if found is None:
            yield raw, None
            return
        if found not in fsspec.available_compressions():
            raise UnreadableFileError(f"{url}: {found}-compressed content, and {found} is not available "
                                      "in this environment" + (" (pip install zstandard)" if found == "zstd" else ""))
        if found == "zstd" and _has_zstandard():
            yield ZstdReader(raw), found
            return
        from fsspec.compression import compr

        with compr[found](raw, mode="rb") as f:
            yield f, found


@contextmanager
def _decoded(url: str, so: dict, compression: str, size: int | None = None):
    """What ``fsspec.open(url, compression=...)`` opens, its file's size checked first."""
    with fsspec.open(url, "rb", **so) as raw:
        check_size(url, raw, size)
        if compression == "zstd" and _has_zstandard():
            yield ZstdReader(raw)
            return
        from fsspec.compression import compr

        with compr[compression](raw, mode="rb") as f:
            yield f


def _has_zstandard() -> bool:
    try:
        importlib.import_module("zstandard")   # whether it imports (ZstdReader imports it itself)
    except ImportError:
        return False  # fsspec's own zstd (Python 3.14's compression.zstd) raises EOFError itself
    return True


def iter_lines(url: str, so: dict, row_start: int = 0, row_stop: int | None = None,
                byte_start: int | None = None, byte_stop: int | None = None,
                size: int | None = None, planned: bool = False) -> Iterator[tuple[int, bytes]]:
    """``(row, line bytes without the newline)`` for rows ``[row_start, row_stop)`` (fewer where
    the file ends first, unless ``planned``); ``size``: the file's size when planned.  A file that
    no longer holds the planned rows (or bytes, or size) raises
    :class:`~pipeline.errors.InputChangedError` rather than read as other rows."""
    end = 0
    with reading(url), open_input_as(url, so, compression_of(url), size) as (f, comp):
        if byte_start is not None and comp is None:
            f.seek(byte_start)
            data = f.read(byte_stop - byte_start) if byte_stop is not None else f.read()
            check_range(url, data, row_start, row_stop, byte_start, byte_stop, size)
            yield from lines_of(data, row_start, row_stop)
            return
        for row, line in enumerate(f if comp is None else _chunked_lines(f)):
            end = row + 1
            if row < row_start:
                continue
            if row_stop is not None and row >= row_stop:
                break
            if line.endswith(b"\n"):
                line = line[:-1]
            if line.endswith(b"\r"):
                line = line[:-1]
            yield row, line
    if planned:
        check_rows(url, row_start, row_stop, end)


def lines_of(data: bytes, row_start: int = 0, row_stop: int | None = None) -> Iterator[tuple[int, bytes]]:
    """:func:`iter_lines` of bytes already read (``data`` starts at row ``row_start``)."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for i, line in enumerate(lines):
        row = row_start + i
        if row_stop is not None and row >= row_stop:
            break
        yield row, line[:-1] if line.endswith(b"\r") else line


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


def scan_lines(url: str, so: dict, every: int | None = None) -> tuple[int, list[int] | None]:
    """Number of lines and, for uncompressed files, the byte offset of every ``every``-th line."""
    starts = [0]
    n_nl = pos = 0
    last = 10
    with reading(url), open_input_as(url, so, compression_of(url)) as (f, comp):
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


def row_ranges(n_rows: int, target_rows: int | None) -> list[tuple[int, int]]:
    if not target_rows or n_rows <= target_rows:
        return [(0, n_rows)]
    return [(s, min(s + target_rows, n_rows)) for s in range(0, n_rows, target_rows)]


def size_of(url: str, so: dict) -> int | None:
    try:
        fs, path = _paths.get_fs(url, so)
        return fs.size(path)
    except Exception:  # noqa: BLE001 - an estimate only
        return None
