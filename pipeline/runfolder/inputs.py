"""The inputs a run folder records: where they may be, and what identifies their versions.

* **Inputs and the output never overlap** (:func:`check_output_vs_inputs`, at config time):
  no input inside the run folder (``--overwrite`` would delete it), no run folder inside an
  input folder, no input glob that matches the run's own files.
* **Input fingerprints** (:func:`list_inputs`): every input file's size and version
  (ETag / generation / modification time, whatever the file system's listing gives; a content
  hash only where it gives neither) from the listing, recorded in the plan, compared on
  resume and again before ``_SUCCESS``.
"""
from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re

from fsspec.core import split_protocol
from fsspec.utils import glob_translate

from pipeline.io.paths import expand, get_fs, has_glob, list_folder
from pipeline.runfolder.names import SAMPLE_FILES

_CANONICAL = {"s3a": "s3", "gcs": "gs", "local": "file", "az": "abfs", "abfss": "abfs"}


def normalise(url: str) -> tuple[str, str]:
    """``(protocol, path)`` of ``url`` without a trailing slash: local paths absolute with
    symlinks resolved; ``s3a``/``gcs``/``local``/``az`` under their usual names."""
    protocol, rest = split_protocol(url)
    protocol = _CANONICAL.get((protocol or "file").lower(), (protocol or "file").lower())
    if protocol == "file":
        path = os.path.realpath(os.path.expanduser(rest))
        return protocol, path.replace(os.sep, "/").rstrip("/") or "/"
    path = rest.split("?", 1)[0]
    return protocol, posixpath.normpath("/" + path.strip("/")).lstrip("/")


def glob_prefix(path: str) -> str:
    """The folder of a glob before its first segment with a glob character."""
    head = []
    for seg in path.split("/"):
        if has_glob(seg):
            break
        head.append(seg)
    return "/".join(head)


def _under(child: str, parent: str) -> bool:
    return child == parent or child.startswith(parent.rstrip("/") + "/")


def check_output_vs_inputs(output: str, inputs) -> None:
    """Refuse an output that is an input, contains an input, lies inside an input folder, or
    whose files an input glob would match (``ValueError`` naming both)."""
    o_proto, o_path = normalise(output)
    for inp in inputs:
        i_proto, i_path = normalise(inp)
        if i_proto != o_proto:
            continue
        prefix = glob_prefix(i_path) if has_glob(i_path) else i_path
        if _under(prefix, o_path):
            raise ValueError(f"output.url {output!r} contains the input {inp!r}: a run folder must not "
                             "hold its inputs (--overwrite would delete them); choose another output")
        if not _under(o_path, prefix):
            continue
        if not has_glob(i_path):
            raise ValueError(f"output.url {output!r} is inside the input folder {inp!r}: a later run would "
                             "read this run's files as input; choose an output outside it")
        rx = re.compile(glob_translate(i_path))
        hit = next((s for s in SAMPLE_FILES if rx.match(f"{o_path}/{s}")), None)
        if hit is not None:
            raise ValueError(f"output.url {output!r}: the input glob {inp!r} would match this run's own "
                             f"files (e.g. {hit}); choose an output the glob cannot match")


# --------------------------------------------------------------------------- input fingerprints
_VERSION_KEYS = ("ETag", "etag", "generation")
TIME_KEYS = _TIME_KEYS = ("mtime", "LastModified", "last_modified", "updated")
HASH_BLOCK = 1 << 20


def fingerprint(info: dict, fs=None, path: str | None = None) -> dict:
    """What identifies one version of a file, from its listing entry: the size and the
    object's version (ETag / generation) or modification time (and inode and ctime on a local disk);
    a SHA-256 of the content only where the listing gives neither."""
    fp = {"size": info.get("size")}
    for k in _VERSION_KEYS:
        if info.get(k) is not None:
            fp["version"] = str(info[k])
            break
    for k in _TIME_KEYS:
        if info.get(k) is not None:
            fp["time"] = str(info[k])
            break
    if info.get("ino") is not None:
        fp["ino"] = int(info["ino"])
        if info.get("created") is not None:   # the inode's ctime: a write moves it, `utime` cannot put it back
            fp["ctime"] = str(info["created"])
    if "version" not in fp and "time" not in fp and fs is not None and path is not None:
        h = hashlib.sha256()
        with fs.open(path, "rb") as f:
            for block in iter(lambda: f.read(HASH_BLOCK), b""):  # never the whole file in memory
                h.update(block)
        fp["sha256"] = h.hexdigest()
    return fp


def _folder_listing(url: str, so: dict) -> dict:
    """The fingerprints of the files a ``folders``-layout folder holds (the files its reader reads)."""
    fs, _ = get_fs(url, so)
    return {u: fingerprint(info, fs, info["name"]) for _, u, info in list_folder(url, so, "input")}


def input_urls(spec) -> list[str]:
    """The URLs / globs / folders an input spec reads."""
    return list(spec.paths) + list(spec.candidates) + list(spec.references)


def list_inputs(spec) -> dict[str, dict]:
    """``{file URL: fingerprint}`` of every input file of ``spec`` (raises, naming the pattern,
    for a missing input: called before anything is created in the output)."""
    so = spec.storage_options
    out: dict[str, dict] = {}
    for url in input_urls(spec):  # a listing cached by an earlier run in this process is stale
        try:
            get_fs(url, so)[0].invalidate_cache()
        except Exception:  # noqa: BLE001 - not every file system caches
            pass
    if spec.layout == "folders":
        for url in input_urls(spec):
            out.update(_folder_listing(url, so))
        return dict(sorted(out.items()))
    for field, urls in (("paths", spec.paths), ("candidates", spec.candidates), ("references", spec.references)):
        if not urls:
            continue
        info: dict = {}
        files = expand(urls, so, f"input.{field}", info=info)
        for u in files:
            fs, path = get_fs(u, so)
            out[u] = fingerprint(info.get(u) or fs.info(path), fs, path)
    return dict(sorted(out.items()))


def changed_inputs(before: dict, now: dict) -> list[str]:
    """The files added, removed or changed between two :func:`list_inputs`, each marked."""
    out = []
    for u in sorted(set(before) | set(now)):
        if u not in now:
            out.append(f"{u} (removed)")
        elif u not in before:
            out.append(f"{u} (new)")
        elif before[u] != now[u]:
            out.append(f"{u} (changed)")
    return out


def plan_id(config_hash: str, settings: dict, inputs: dict) -> str:
    """The plan's identity: the settings and every input file's fingerprint (markers carry it,
    so a resume accepts only the markers of its own plan)."""
    blob = json.dumps([config_hash, settings, inputs], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]
