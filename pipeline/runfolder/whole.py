"""What makes a run folder whole, checked twice: by the run before ``_SUCCESS``
(:func:`pipeline.runfolder.folder.verify_parts`, against the markers its slices wrote) and by every
reader after it (:func:`pipeline.runfolder.read.open_run`, against the parts ``_summary.json``
lists).  docs/run-folder.md, "What a reader checks".

* **No file the run did not write** in the run's own folders (``scores/``, ``quarantine/``,
  ``_done/``, ``stats/``: :data:`names.RUN_FOLDERS`): only :func:`names.is_run_file` names (a
  ``backup.parquet`` next to the parts would be read by pandas as more rows).  Files at the folder's top are not looked at (a
  gate's own files, a user's notes).
* **The parts the run wrote, all of them, and no other**: ``_summary.json`` ``parts`` maps each
  part file to ``[rows, bytes]`` (from the footers the run read in ``verify_parts``); a run
  written before it (same format) is held to the files its markers name.  ``part_hashes`` maps
  each to the BLAKE2b-128 of its bytes (:func:`content_hash`, as the task wrote them, carried by
  its marker): a reader that copies rows out of a part (``--reuse``) checks it, so an edit that
  keeps the size is not taken for the run's.
* **The rows**: each part's rows as listed, their sum the summary's ``rows`` and
  ``quarantined``; no ``(system, id)`` twice (where the scores are read).
"""
from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.errors import RunFolderError
from pipeline.runfolder import names
from pipeline.runfolder.names import QUARANTINE, SCORES, describe

# _summary.json: {part file: [rows, bytes]} of every part the run wrote (scores and quarantine)
PARTS_KEY = "parts"
# _summary.json and each marker ("hashes"): {part file: content_hash of its bytes}
PART_HASHES_KEY = "part_hashes"


def content_hash(data: bytes) -> str:
    """A part file's content hash as the run records it: BLAKE2b-128 of its bytes, hex."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def listing(fs, root: str) -> dict[str, int | None]:
    """``{file relative to root: its size}`` of every file below ``root`` (one listing)."""
    root = root.rstrip("/")
    try:
        fs.invalidate_cache(root)
    except Exception:  # noqa: BLE001 - not every file system caches
        pass
    out = {}
    for p, info in fs.find(root, withdirs=False, detail=True).items():
        p = p.rstrip("/")
        if p.startswith(root + "/"):
            size = info.get("size") if isinstance(info, dict) else None
            out[p[len(root) + 1:]] = size if isinstance(size, int) else None
    return dict(sorted(out.items()))


def strays(files) -> list[str]:
    """The files in the run's own folders that no run writes (not a run-format name; temp
    files of killed writes are the run's)."""
    return [rel for rel in files if "/" in rel and rel.split("/", 1)[0] in names.RUN_FOLDERS
            and not names.is_run_file(rel)]


def part_files(files) -> list[str]:
    """The part files among ``files`` (what is not a stray or a temp file in ``scores/`` and
    ``quarantine/``), of this format or an older one."""
    return [rel for rel in files if rel.split("/", 1)[0] in (SCORES, QUARANTINE) and names.is_run_file(rel)
            and not names.is_temp_file(rel)]


def _pool(fn, items: list) -> list:
    with ThreadPoolExecutor(max_workers=min(16, max(1, len(items)))) as pool:
        return list(pool.map(fn, items))


def footers(fs, root: str, rels: list[str]) -> dict[str, tuple[int, str]]:
    """``{part: (rows, config hash)}`` from the parts' Parquet footers (read in parallel)."""
    def one(rel):
        with fs.open(f"{root}/{rel}", "rb") as f:
            md = pq.read_metadata(f)
        return md.num_rows, (md.metadata or {}).get(names.META_CONFIG_HASH.encode(), b"").decode()

    return dict(zip(rels, _pool(one, rels)))


def _marker_docs(fs, root: str, rels: list[str]) -> dict[str, tuple[list, dict] | None]:
    """``{marker: (the files it names, their content hashes)}`` (None: missing or not valid JSON)."""
    def one(rel):
        try:
            with fs.open(f"{root}/{rel}", "rb") as f:
                doc = json.loads(f.read())
        except (FileNotFoundError, ValueError, UnicodeDecodeError):
            return None
        files = doc.get("files") if isinstance(doc, dict) else None
        if not isinstance(files, list):
            return None
        hashes = doc.get("hashes")
        hashes = {k: v for k, v in hashes.items() if isinstance(v, str)} if isinstance(hashes, dict) else {}
        return [f for f in files if isinstance(f, str)], hashes

    return dict(zip(rels, _pool(one, rels)))


def _marker_files(fs, root: str, rels: list[str]) -> dict[str, list | None]:
    """``{marker: the files it names}`` (None: missing or not valid JSON)."""
    return {m: None if d is None else d[0] for m, d in _marker_docs(fs, root, rels).items()}


def slice_parts(run_url: str, fs, root: str, slices: dict[int, int]) -> dict[str, str | None]:
    """The part files this run's slices wrote (``slices``: ``{unit: its slice count}``), as
    their markers name them (each marker's own (unit, slice) parts only), with the content hash
    the marker records of each (None: none)."""
    wanted = {names.marker_rel(u, k): (u, k) for u, n in sorted(slices.items()) for k in range(n)}
    found = _marker_docs(fs, root, list(wanted))
    lost = [m for m, doc in found.items() if doc is None]
    if lost:
        raise RunFolderError(f"{run_url}: completion markers of this run are missing or unreadable "
                             f"({describe(lost)}); no _SUCCESS written: rerun to score them again")
    out = {}
    for marker, (files, hashes) in found.items():
        u, k = wanted[marker]
        for rel in files:
            m = names.PART.match(rel)
            if m and (int(m.group(1)), int(m.group(2))) == (u, k):
                out[rel] = hashes.get(rel)
    return out


def _listed_parts(run_url: str, fs, root: str, files, summary: dict) -> dict[str, list]:
    """The parts ``_summary.json`` lists (``{part: [rows, bytes]}``); a run written before the
    summary listed them: the files its markers name (rows and sizes unknown)."""
    parts = summary.get(PARTS_KEY)
    if isinstance(parts, dict):
        return {str(k): list(v) if isinstance(v, list) and len(v) == 2 else [None, None] for k, v in parts.items()}
    markers = [r for r in files if names.is_marker_file(r)]
    named = _marker_files(fs, root, markers)
    lost = [m for m, f in named.items() if f is None]
    if lost:
        raise RunFolderError(f"{run_url}: its completion markers are unreadable ({describe(lost)}); "
                             "the run is not whole: score it again (--overwrite)")
    return {rel: [None, None] for f in named.values() for rel in f}


def check_listing(run_url: str, fs, root: str, summary) -> dict[str, list]:
    """A finished run's folder against its ``_summary.json``, from one listing (no part is
    read): no file the run did not write, every listed part there with its size, no other.
    Returns the parts (``{part: [rows, bytes]}``, in reading order)."""
    if not isinstance(summary, dict) or summary.get("status") != "ok":
        raise RunFolderError(f"{run_url}: its {names.SUMMARY} is missing or not a finished run's; "
                             "the run is not whole: score it again")
    files = listing(fs, root)
    bad = strays(files)
    if bad:
        raise RunFolderError(f"{run_url} holds files the run did not write ({describe(bad)}); "
                             "it is not read: move them out of the run folder")
    parts = _listed_parts(run_url, fs, root, files, summary)
    on_disk = {r: files[r] for r in part_files(files)}
    missing = sorted(set(parts) - set(on_disk), key=names.part_sort_key)
    if missing:
        raise RunFolderError(f"{run_url}: part files the run wrote are missing ({describe(missing)}); "
                             "the run is not whole: score it again")
    extra = sorted(set(on_disk) - set(parts), key=names.part_sort_key)
    changed = [r for r in sorted(parts) if None not in (parts[r][1], on_disk[r]) and parts[r][1] != on_disk[r]]
    if extra or changed:
        what = [*extra, *(f"{r} (changed since the run wrote it)" for r in changed)]
        raise RunFolderError(f"{run_url} holds part files the run did not write ({describe(what)}); "
                             "it is not read: score it again")
    _check_totals(run_url, parts, summary)
    return {r: parts[r] for r in sorted(parts, key=names.part_sort_key)}


def _check_totals(run_url: str, parts: dict, summary: dict) -> None:
    for folder, key, what in ((SCORES, "rows", "scored"), (QUARANTINE, "quarantined", "quarantined")):
        rows = [v[0] for r, v in parts.items() if r.startswith(folder + "/")]
        if None in rows:
            continue
        if sum(rows) != summary.get(key):
            raise RunFolderError(f"{run_url}: its part files hold {sum(rows)} {what} rows, its {names.SUMMARY} "
                                 f"says {summary.get(key)}; the run is not whole: score it again")


def check_rows(run_url: str, rel: str, n: int, parts: dict) -> None:
    """A part read: its rows are the rows the run wrote there."""
    want = (parts.get(rel) or [None])[0]
    if want is not None and n != want:
        raise RunFolderError(f"{run_url}: {rel} holds {n} rows, the run wrote {want}; "
                             "the run is not whole: score it again")


def check_scores(run_url: str, table: pa.Table, summary: dict) -> None:
    """Every system's scores, read: as many rows as the run scored, no ``(system, id)`` twice."""
    if table.num_rows != summary.get("rows"):
        raise RunFolderError(f"{run_url}: its part files hold {table.num_rows} scored rows, its "
                             f"{names.SUMMARY} says {summary.get('rows')}; the run is not whole: score it again")
    if "id" not in table.column_names or "system" not in table.column_names:
        return
    keys = table.select(["system", "id"]).group_by(["system", "id"]).aggregate([([], "count_all")])
    twice = keys.filter(pc.greater(keys["count_all"], 1))
    if twice.num_rows:
        first = twice.slice(0, 1).to_pylist()[0]
        raise RunFolderError(f"{run_url}: {twice.num_rows} (system, id) pair(s) occur more than once "
                             f"(first: system {first['system']!r}, id {first['id']!r}); the run is not "
                             "whole: score it again")
