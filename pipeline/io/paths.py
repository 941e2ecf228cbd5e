"""fsspec URL utilities: schemes, globs, formats and compression (no Dask here).

Every URL (a local path, ``file://``, ``s3://``, ``gs://``, ``memory://`` in tests) is
opened through :func:`fsspec.core.url_to_fs` with the run's ``storage_options``.
Expanded file names are kept as full URLs (``fs.unstrip_protocol``), so a work unit
can be opened on any worker without knowing how it was planned.
"""
from __future__ import annotations

import importlib.util
import posixpath
from typing import Iterable

import fsspec
from fsspec.core import url_to_fs

# Schemes we accept for inputs and outputs.  "" is a plain local path.
ALLOWED_SCHEMES = ("", "file", "local", "s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "memory")

_GLOB_CHARS = set("*?[")

# extension -> fsspec compression name
_COMPRESSION_EXT = {
    ".gz": "gzip",
    ".gzip": "gzip",
    ".bz2": "bz2",
    ".xz": "xz",
    ".zst": "zstd",
    ".zstd": "zstd",
}

FORMAT_EXT = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".txt": "text",
    ".text": "text",
}
FORMATS = ("jsonl", "parquet", "text")


def url_scheme(url: str) -> str:
    """The scheme of ``url`` ("" for a plain path; Windows drive letters count as local)."""
    if "://" not in url:
        return ""
    scheme = url.split("://", 1)[0].lower()
    return "" if len(scheme) == 1 else scheme


def check_scheme(url: str, field: str = "url") -> None:
    if not isinstance(url, str) or not url:
        raise ValueError(f"{field}: expected a non-empty URL string, got {url!r}")
    scheme = url_scheme(url)
    if scheme not in ALLOWED_SCHEMES:
        raise ValueError(
            f"{field}: unsupported URL scheme {scheme!r} in {url!r} "
            f"(supported: a local path, {', '.join(s + '://' for s in ALLOWED_SCHEMES if s)})"
        )
    _check_implementation(scheme, field)


# the package behind an object store's scheme, and the extra of ours that installs it
_IMPLEMENTATIONS = {"s3": ("s3fs", "s3"), "s3a": ("s3fs", "s3"), "gs": ("gcsfs", "gcs"), "gcs": ("gcsfs", "gcs"),
                    "az": ("adlfs", None), "abfs": ("adlfs", None), "abfss": ("adlfs", None)}


def _check_implementation(scheme: str, field: str) -> None:
    """A scheme whose fsspec implementation is not installed: a configuration error naming the
    package to install, when the URL is read (not a storage error retried at the first write)."""
    package, extra = _IMPLEMENTATIONS.get(scheme, (None, None))
    if package is None or scheme in fsspec.registry:   # registered: imported already
        return
    if importlib.util.find_spec(package) is None:
        how = f"pip install 'rouge-pipeline[{extra}]'" if extra else f"pip install {package}"
        raise ValueError(f"{field}: {scheme}:// needs the {package} package, which is not installed ({how})")


def get_fs(url: str, storage_options: dict | None = None):
    """``(filesystem, path)`` for ``url``."""
    return url_to_fs(url, **(storage_options or {}))


def is_local(fs) -> bool:
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return protocol in ("file", "local")


def has_glob(path: str) -> bool:
    return any(c in _GLOB_CHARS for c in path)


def _hidden(path: str) -> bool:
    base = posixpath.basename(path.rstrip("/"))
    return base.startswith(".") or base.startswith("_")


def _no_bucket(fs, path: str) -> str:
    """`` (bucket does not exist: b)`` when ``path``'s object-store bucket is missing, else ``""``."""
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    if protocol not in ("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl"):
        return ""
    bucket = path.lstrip("/").split("/", 1)[0]
    try:
        return "" if fs.exists(bucket) else f" ({protocol} bucket does not exist: {bucket})"
    except Exception:  # noqa: BLE001 - only a hint
        return ""


def listed_size(info: dict, url: str) -> int | None:
    """The size in bytes of ``url``'s entry in an :func:`expand` ``info`` dict (None: not listed)."""
    return (info.get(url) or {}).get("size")


def expand(patterns: str | Iterable[str], storage_options: dict | None = None,
           field: str = "paths", info: dict | None = None) -> list[str]:
    """Expand URLs / globs / folders to a sorted list of file URLs.

    * a glob is expanded with ``fs.glob`` (``**`` recurses); a glob matching no file
      raises ``FileNotFoundError`` naming the glob;
    * a folder gives every file below it, except hidden (``.x``) and ``_x`` files
      (``_SUCCESS``, temp files);
    * a plain file must exist.
    The result is sorted and de-duplicated, so the order is deterministic.  ``info``, if
    given, receives each file URL's listing entry (size, ETag / mtime, ...) from the same calls
    (a plain file: its own ``info`` call).
    """
    if isinstance(patterns, str):
        patterns = [patterns]
    out: list[str] = []
    for pattern in patterns:
        check_scheme(pattern, field)
        fs, path = get_fs(pattern, storage_options)
        entries: dict = {}
        if has_glob(path):
            entries = fs.glob(path, detail=True)
            found = [p for p, e in entries.items() if e.get("type") != "directory"]
            if not found:
                raise FileNotFoundError(f"{field}: the glob {pattern!r} matches no file{_no_bucket(fs, path)}")
        elif fs.isdir(path):
            entries = fs.find(path, detail=True)
            found = [p for p in entries if not _hidden(p)]
            if not found:
                raise FileNotFoundError(f"{field}: the folder {pattern!r} holds no file")
        elif fs.exists(path):
            found = [path]
            if info is not None:
                entries = {path: fs.info(path)}
        else:
            raise FileNotFoundError(f"{field}: no such file {pattern!r}")
        for p in sorted(found):
            url = fs.unstrip_protocol(p)
            out.append(url)
            if info is not None and p in entries:
                info[url] = entries[p]
    seen: set[str] = set()
    uniq = []
    for u in out:
        if u not in seen:
            seen.add(u)
            uniq.append(u)
    return uniq


def list_folder(folder: str, storage_options: dict | None, what: str) -> list[tuple[str, str, dict]]:
    """``[(file name, file url, listing entry)]`` of the files directly in ``folder``, sorted by name;
    sub-folders and hidden (``.``/``_``) names are left out, as the ``folders`` layout reads them."""
    fs, path = get_fs(folder, storage_options)
    if not fs.isdir(path):
        raise FileNotFoundError(f"{what}: {folder!r} is not a folder")
    base = folder.rstrip("/")
    out = []
    for p in fs.ls(path, detail=True):
        if p.get("type") == "directory":
            continue
        name = p["name"].rstrip("/").rsplit("/", 1)[-1]
        if not (name.startswith(".") or name.startswith("_")):
            out.append((name, f"{base}/{name}", p))
    out.sort(key=lambda e: e[0])
    return out


def split_compression(url: str) -> tuple[str, str | None]:
    """``("x.jsonl", "gzip")`` for ``"x.jsonl.gz"``; ``(url, None)`` when uncompressed."""
    base = url.rstrip("/")
    for ext, name in _COMPRESSION_EXT.items():
        if base.lower().endswith(ext):
            return base[: -len(ext)], name
    return base, None


def compression_of(url: str) -> str | None:
    """fsspec compression name inferred from the extension; a clear error if unavailable."""
    _, comp = split_compression(url)
    if comp is not None and comp not in fsspec.available_compressions():
        hint = " (pip install zstandard)" if comp == "zstd" else ""
        raise ValueError(f"{url}: compression {comp!r} is not available in this environment{hint}")
    return comp


def infer_format(url: str, declared: str = "auto", default: str | None = None) -> str:
    """``jsonl`` / ``parquet`` / ``text`` from the declared format or the extension."""
    if declared != "auto":
        return declared
    stem, _ = split_compression(url)
    ext = posixpath.splitext(stem)[1].lower()
    fmt = FORMAT_EXT.get(ext, default)
    if fmt is None:
        raise ValueError(
            f"cannot infer the format of {url!r} from its extension "
            f"(known: {', '.join(sorted(FORMAT_EXT))}); set input.format explicitly"
        )
    return fmt


def file_stem(url: str) -> str:
    """File name without folder, compression extension and format extension."""
    stem, _ = split_compression(url)
    base = posixpath.basename(stem)
    root, _ext = posixpath.splitext(base)
    return root or base


def parent_name(url: str) -> str:
    return posixpath.basename(posixpath.dirname(url.rstrip("/")))


def check_keys(d: dict, allowed, where: str) -> None:
    """Refuse unknown keys, naming the key, where it is and the closest allowed key."""
    import difflib

    if not isinstance(d, dict):
        raise ValueError(f"{where}: expected a mapping, got {type(d).__name__}")
    allowed = list(allowed)
    for key in d:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]!r}?" if close else f" (allowed: {', '.join(allowed)})"
            dotted = f"{where}.{key}" if where else str(key)
            raise ValueError(f"unknown key {dotted!r}{hint}")
