"""The run folder's files: what a run writes there, reads back, checks and removes
(fsspec only; never Dask).  Names: :mod:`pipeline.runfolder.names`.

* **What is ours.** :func:`names.is_run_file` names every file the run format writes;
  ``--overwrite`` deletes only those, and refuses a folder that holds anything else
  (:func:`foreign_files`), a folder without a run record (``_run.json``) and a regular file.
* **Every file a task writes has a deterministic name** and is written atomically, so a
  retried or repeated task overwrites its own files and never duplicates rows; its marker,
  written last, lets a rerun skip it (:func:`read_done_slice` reads it back with its parts, from
  which :func:`pipeline.job.resume.load_done` reduces the same statistics).
* **``_SUCCESS`` last**, after :func:`verify_parts`; readers (:mod:`pipeline.runfolder.read`)
  trust only folders where it is.
"""
from __future__ import annotations

import datetime
import json
import os
import posixpath
import time

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.errors import OldLayoutError, RunFolderError
from pipeline.io import writers
from pipeline.io.paths import get_fs, is_local
from pipeline.runfolder import names, whole
from pipeline.runfolder.inputs import changed_inputs
from pipeline.runfolder.names import (
    DONE, EXACT_JSON, EXACT_PARQUET, LAYOUT, LEASE, MARKER_FORMAT, META_CONFIG_HASH, META_SIGNATURE,
    PLAN, QUARANTINE, RUN_FORMAT, RUN_INFO, SCORES, STATS_JSON, STATS_PARQUET, SUCCESS, SUMMARY, SYSTEM_PREFIX,
    describe, is_run_file, marker_url, url,
)


# --------------------------------------------------------------------------- listing, removing
def folder_files(fs, path: str) -> list[str]:
    """Every file below ``path``, relative to it (hidden ones too)."""
    root = path.rstrip("/")
    try:
        fs.invalidate_cache(root)
    except Exception:  # noqa: BLE001 - not every file system caches
        pass
    out = []
    for p in fs.find(root, withdirs=False):
        p = p.rstrip("/")
        if p.startswith(root + "/"):
            out.append(p[len(root) + 1:])
    return sorted(out)


def foreign_files(rels) -> list[str]:
    return [r for r in rels if not is_run_file(r)]


def remove_run_files(fs, path: str, rels, keep=(LEASE,)) -> int:
    """Delete the run-format files ``rels`` below ``path`` (not ``keep``); the caller has checked
    that every file there is ours.  Returns how many were deleted."""
    root = path.rstrip("/")
    doomed = [f"{root}/{r}" for r in rels if is_run_file(r) and r not in keep]
    if doomed:
        fs.rm(doomed)
    if is_local(fs):  # empty folders of ours (object stores have none)
        for sub in sorted({posixpath.dirname(r) for r in rels if "/" in r}, key=len, reverse=True):
            for d in (sub, posixpath.dirname(sub)):
                try:
                    os.rmdir(f"{root}/{d}") if d else None
                except OSError:
                    pass
    fs.invalidate_cache()
    return len(doomed)


# TEST HOOK (tests only): "<step>:<file>" pauses the run at ``step`` (see pause_point) until
# ``file`` exists, after creating ``<file>.reached``; step "task>=K" pauses every task with index >= K.
TEST_PAUSE_ENV = "ROUGE_PIPELINE_TEST_PAUSE"


def pause_point(step: str, index: int | None = None) -> None:
    spec = os.environ.get(TEST_PAUSE_ENV)
    if not spec:
        return
    name, _, path = spec.partition(":")
    if index is not None and name.startswith(f"{step}>="):
        if index < int(name[len(step) + 2:]):
            return
    elif name != step:
        return
    with open(path + ".reached", "w"):
        pass
    deadline = time.monotonic() + 120
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise RuntimeError(f"test pause at {step}: {path} never appeared")
        time.sleep(0.01)


def done_slices(files) -> dict[int, frozenset[int]]:
    """``{unit: its slices}`` whose markers (of this format's names) are among ``files`` (a
    :func:`folder_files` listing)."""
    out: dict[int, set[int]] = {}
    for rel in files:
        d, _, base = rel.partition("/")
        if d == DONE:
            us = names.parse_marker(base)
            if us is not None:
                out.setdefault(us[0], set()).add(us[1])
    return {u: frozenset(k) for u, k in out.items()}


def remove_temp_files(run_url: str, storage_options: dict | None, files) -> int:
    """Delete the temp files our atomic writes left (a killed writer cannot remove its own),
    from ``files`` (a :func:`folder_files` listing): only :func:`pipeline.io.writers.temp_path`
    names, in folders of ours.  Object stores get none (they are written directly)."""
    fs, path = get_fs(run_url, storage_options)
    if writers.is_object_store(fs):
        return 0
    stale = [r for r in files if names.is_temp_file(r)]
    for r in stale:
        try:
            fs.rm_file(f"{path.rstrip('/')}/{r}")
        except FileNotFoundError:
            pass
    return len(stale)


# --------------------------------------------------------------------------- layout and format
def check_layout(run_url: str, run_info: dict | None) -> None:
    """Raise :class:`OldLayoutError` if ``run_info`` (``_run.json``) is of an older layout."""
    if run_info is not None and run_info.get("layout", 1) != LAYOUT:
        raise OldLayoutError(
            f"{run_url} was written by an older rouge-pipeline (layout {run_info.get('layout', 1)}: "
            f"{SCORES}/system=S/ folders; this version writes layout {LAYOUT}: {SCORES}/{SYSTEM_PREFIX}S/); "
            "score it again (--overwrite) or read it with the version that wrote it")


def read_run_info(run_url: str, so: dict | None = None):
    return writers.read_json(url(run_url, RUN_INFO), so)


def mark_success(run_url: str, storage_options: dict | None = None) -> str:
    """Write ``_SUCCESS`` (empty) in ``run_url``; call it after every other file is written."""
    return writers.write_bytes_atomic(b"", url(run_url, SUCCESS), storage_options)


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# --------------------------------------------------------------------------- the run folder's start
def precheck_run_folder(run_url: str, so: dict, overwrite: bool) -> None:
    """Refuse what is not a run folder of this format, before anything is written there: a
    regular file, a folder holding anything but a run (no ``_run.json``; ``--overwrite`` never
    applies), a run of an older format (unless ``overwrite``), a run folder holding files the
    run format does not write (with ``overwrite``: it deletes only a folder that is all ours)."""
    fs, path = get_fs(run_url, so)
    if fs.isfile(path):
        raise RunFolderError(f"{run_url} is a file, not a run folder; choose another output")
    if not fs.isdir(path):
        return
    files = folder_files(fs, path)
    if all(names.is_leftover(f) for f in files):
        return  # empty, or only a lease or temp files left behind
    try:
        run_info = read_run_info(run_url, so)
    except ValueError:
        raise RunFolderError(f"{run_url}: its _run.json is not valid JSON; choose another output") from None
    if not isinstance(run_info, dict):
        raise RunFolderError(f"{run_url} is not empty and is not a rouge-pipeline run folder (no _run.json): "
                             "nothing in it is replaced; choose another output")
    if not overwrite:
        try:
            check_layout(run_url, run_info)
        except OldLayoutError as e:
            raise RunFolderError(str(e)) from None
    fmt = run_info.get("run_format", 1)
    if fmt != RUN_FORMAT and not overwrite:
        raise RunFolderError(f"{run_url} was written by another rouge-pipeline version (run folder format {fmt}, "
                             f"this version writes {RUN_FORMAT}) and is not resumed; choose another "
                             "output or pass --overwrite to replace it")
    foreign = foreign_files(files)
    if foreign and overwrite:
        raise RunFolderError(f"{run_url} holds files rouge-pipeline did not write ({describe(foreign)}); "
                             "--overwrite replaces only a run folder that holds nothing else: move them away "
                             "or choose another output")


def prepare_run_folder(cfg, run_url: str, so: dict, signature: str, config_hash: str, plan: dict,
                       overwrite: bool, log, inputs: dict | None = None, plan_id: str = "") -> set[int]:
    """Under the lease: refuse a folder made with other settings (unless ``overwrite``, which
    deletes the run's own files only); on resume, score again from scratch when the inputs
    changed since the plan (``inputs``: :func:`inputs.list_inputs`); write ``_run.json``.
    Returns the slices an earlier run finished (``{unit: slices}``, from their markers; one
    listing of the folder)."""
    precheck_run_folder(run_url, so, overwrite)
    fs, path = get_fs(run_url, so)
    files = folder_files(fs, path) if fs.isdir(path) else []
    run_info = read_run_info(run_url, so)
    if run_info is not None:
        if overwrite:
            log(f"--overwrite: removing the run files of {run_url}")
            remove_run_files(fs, path, files)
            run_info = None
        elif run_info.get("config_hash") != config_hash:
            raise RunFolderError(
                f"{run_url} holds a run made with other settings (config hash {run_info.get('config_hash')}, "
                f"this run {config_hash}; signature there: {run_info.get('signature')}); "
                "choose another output or pass --overwrite")
        elif run_info.get("plan") != plan:
            raise RunFolderError(
                f"{run_url} was planned with {run_info.get('plan')}, this run uses {plan}; "
                "choose another output or pass --overwrite")
        else:
            try:
                stored = read_plan(run_url, so)
            except ValueError:
                stored = None
            if isinstance(stored, dict) and stored.get("plan_id") == plan_id:
                # Same settings and inputs: resume.  _SUCCESS is rewritten at the end.
                if SUCCESS in files:
                    fs.rm(f"{path.rstrip('/')}/{SUCCESS}")
                return done_slices(files)
            if isinstance(stored, dict):
                changed = changed_inputs(stored.get("inputs") or {}, inputs or {})
                log(f"the inputs changed since {run_url} was planned ({describe(changed)}): "
                    "scoring them again")
            # no plan of these inputs: nothing there can be kept (its markers name another plan)
            remove_run_files(fs, path, files, keep=(RUN_INFO, LEASE))
            return {}
    # cwd: what relative input paths are relative to, for readers of the run (compare's movers)
    writers.write_json_atomic({"config": cfg.to_dict(redact=True), "signature": signature,
                               "config_hash": config_hash, "plan": plan, "layout": LAYOUT,
                               "run_format": RUN_FORMAT,
                               "version": cfg.hashed_settings()["version"], "cwd": os.getcwd(),
                               "started_at": utc_now()},
                              url(run_url, RUN_INFO), so)
    return {}


def read_plan(run_url: str, so: dict | None = None) -> dict | None:
    """``_plan.json``, or None when there is none or it is not valid JSON."""
    try:
        stored = writers.read_json(url(run_url, PLAN), so)
    except ValueError:
        return None
    return stored if isinstance(stored, dict) else None


def write_plan(run_url: str, plan_doc: dict, so: dict | None = None) -> None:
    writers.write_json_atomic(plan_doc, url(run_url, PLAN), so)


def write_summary(run_url: str, summary: dict, so: dict | None = None) -> None:
    writers.write_json_atomic(summary, url(run_url, SUMMARY), so)


# --------------------------------------------------------------------------- a slice's files
class RunStopped(RuntimeError):
    """The run was stopped (another task failed, or the user asked): a task that sees it writes
    nothing more."""


def check_stop(ctx) -> None:
    """Raise :class:`RunStopped` if the run's stop flag (``ctx.stop``: anything with an
    ``is_set()``, e.g. a ``distributed.Event``) is set: checked before each write."""
    stop = getattr(ctx, "stop", None)
    if stop is not None and stop.is_set():
        raise RunStopped(f"the run writing {ctx.run_url} was stopped")


def write_task_files(prepared: dict, unit_index: int, slice_index: int, n_slices: int, ctx) -> dict:
    """Write a slice's encoded output (:func:`pipeline.job.task.encode_outputs`) under its names,
    then its completion marker; returns the slice's result.  ``prepared["held"]``: the key
    hashes of rows it scored away (too long), kept in the marker for a rerun's duplicate search."""
    so = ctx.storage_options
    run = ctx.run_url.rstrip("/")
    files, hashes = [], {}
    written = [(names.score_part_url(run, system, unit_index, slice_index), data) for system, data in prepared["parts"]]
    if prepared["quarantine"] is not None:
        written.append((names.quarantine_part_url(run, unit_index, slice_index), prepared["quarantine"]))
    for u, data in written:
        check_stop(ctx)
        writers.write_bytes_atomic(data, u, so)
        files.append(u[len(run) + 1:])
        hashes[files[-1]] = whole.content_hash(data)
    result = {"unit": unit_index, "slice": slice_index, "slices": n_slices, "tasks": 1, "files": files,
              **{k: prepared[k] for k in ("rows", "quarantined", "quarantine_reasons", "systems",
                                          "cand_tokens", "ref_tokens")}}
    # No statistics in the marker: they are a function of the part files (job.resume.load_done), and
    # packing them (~0.6 MB of JSON per 12,500 examples) cost about a third of what a task
    # adds to scoring.
    check_stop(ctx)
    writers.write_json_atomic({**result, "marker": MARKER_FORMAT, "plan": ctx.plan_id,
                               "config_hash": ctx.metadata.get(META_CONFIG_HASH, ""),
                               "held": [int(h) for h in prepared.get("held", ())], "hashes": hashes},
                              marker_url(run, unit_index, slice_index), so)
    result["stats"] = prepared["stats"]
    result["skipped"] = 0
    return result


def remove_slices(unit_index: int, n_slices: int, ctx) -> None:
    """Remove what this run's plan wrote of a unit (each slice's marker, then the parts it
    names): the unit is written again (duplicates across units dropped)."""
    run = ctx.run_url.rstrip("/")
    so = ctx.storage_options
    fs, _ = get_fs(run, so)
    for k in range(n_slices):
        marker = load_marker(run, unit_index, k, so)
        if not isinstance(marker, dict) or marker.get("plan") != ctx.plan_id:
            continue
        mine = [f for f in marker.get("files") or () if isinstance(f, str) and names.PART.match(f)
                and names.PART.match(f).groups() == (f"{unit_index:05d}", f"{k:04d}")]
        check_stop(ctx)
        for rel in [names.marker_url(run, unit_index, k)[len(run) + 1:], *mine]:
            try:
                fs.rm_file(get_fs(f"{run}/{rel}", so)[1])
            except FileNotFoundError:
                pass


def load_marker(run_url: str, unit_index: int, slice_index: int, storage_options: dict) -> dict | None:
    """A slice's marker, or None when there is none or it is not valid JSON (truncated)."""
    try:
        return writers.read_json(marker_url(run_url, unit_index, slice_index), storage_options)
    except (ValueError, UnicodeDecodeError):
        return None


def read_done_slice(unit_index: int, slice_index: int, ctx, schema: pa.Schema) -> tuple[dict, pa.Table] | None:
    """A finished slice read back for a resume (:func:`pipeline.job.resume.load_done`): its
    marker (without its bookkeeping: format, plan id, config hash) and the ``schema`` columns of
    the part files it names, or ``None`` if the marker or a file it names is missing or
    unreadable, of another format, plan, config or slice, or its parts hold other rows than it
    counted: the slice is then scored again."""
    run = ctx.run_url.rstrip("/")
    result = load_marker(run, unit_index, slice_index, ctx.storage_options)
    chash = ctx.metadata.get(META_CONFIG_HASH, "")
    if (not isinstance(result, dict) or result.get("marker") != MARKER_FORMAT
            or result.get("plan") != ctx.plan_id or result.get("config_hash") != chash
            or result.get("unit") != unit_index or result.get("slice") != slice_index
            or not isinstance(result.get("slices"), int) or not 0 <= slice_index < result["slices"]):
        return None  # another format, plan, config or slice: score it again
    fs, _ = get_fs(run, ctx.storage_options)
    parts = []
    try:
        for rel in result.get("files", []):
            _, path = get_fs(f"{run}/{rel}", ctx.storage_options)
            if rel.startswith(f"{SCORES}/"):  # read (a missing one raises FileNotFoundError)
                with fs.open(path, "rb") as f:
                    part = pq.read_table(f, columns=schema.names)
                if (part.schema.metadata or {}).get(META_CONFIG_HASH.encode(), b"").decode() != chash:
                    return None  # a part of another config
                parts.append(part)
            elif not fs.exists(path):
                return None
        scores = pa.concat_tables(parts) if parts else schema.empty_table()
    except (OSError, KeyError, pa.ArrowException):  # a damaged part file: score the slice again
        return None
    if scores.schema != schema or scores.num_rows != result.get("rows"):
        return None
    for k in ("marker", "plan", "config_hash"):
        result.pop(k)
    return result, scores


# --------------------------------------------------------------------------- the run's end
EXACT_SCHEMA = pa.schema([
    pa.field("system", pa.string(), nullable=False), pa.field("type", pa.string(), nullable=False),
    pa.field("stat", pa.string(), nullable=False), pa.field("count", pa.int64(), nullable=False),
    pa.field("low", pa.float64(), nullable=False), pa.field("mid", pa.float64(), nullable=False),
    pa.field("high", pa.float64(), nullable=False), pa.field("n_boot", pa.int64(), nullable=False),
    pa.field("seed", pa.int64(), nullable=False), pa.field("method", pa.string(), nullable=False),
])


def exact_rows_to_arrow(rows: list[dict]) -> pa.Table:
    return pa.table({f.name: pa.array([r[f.name] for r in rows], f.type) for f in EXACT_SCHEMA},
                    schema=EXACT_SCHEMA)


def verify_parts(run_url: str, so: dict, slices: dict[int, int], chash: str, rows: int,
                 quarantined: int) -> tuple[list[str], dict[str, list], dict[str, str]]:
    """Refuse (before ``_SUCCESS``) a run folder whose own folders hold a file the run did not
    write (:func:`whole.strays`), a part no marker of this run's slices names (``slices``:
    ``{unit: its slice count}``: another run's, a slice past a unit's last, a stray quarantine
    part), a part such a marker names that is missing, a part of another config hash, or parts
    that hold other row counts than the run counted.  Returns the folder's files, the parts
    (``{part: [rows, bytes]}``, in reading order) and their content hashes as their markers
    recorded them (``{part: hash}``: :func:`whole.content_hash`) for ``_summary.json``."""
    fs, path = get_fs(run_url, so)
    root = path.rstrip("/")
    sized = whole.listing(fs, root)
    strays = whole.strays(sized)
    if strays:
        raise RunFolderError(f"{run_url} holds files the run did not write ({describe(strays)}); "
                             "no _SUCCESS written: move them out of the run folder")
    expected = whole.slice_parts(run_url, fs, root, slices)
    mine = sorted((r for r in expected if r in sized), key=names.part_sort_key)
    feet = whole.footers(fs, root, mine)
    bad = [r for r in whole.part_files(sized) if r not in expected]
    bad += [f"{r} (config hash {h or 'none'})" for r, (_, h) in feet.items() if h != chash]
    if bad:
        raise RunFolderError(f"{run_url} holds part files that are not this run's ({describe(bad)}); "
                             "no _SUCCESS written: remove them or rerun with --overwrite")
    missing = sorted(set(expected) - set(mine), key=names.part_sort_key)
    if missing:
        raise RunFolderError(f"{run_url}: part files this run wrote are missing ({describe(missing)}); "
                             "no _SUCCESS written: rerun to score them again")
    counts = {SCORES: 0, QUARANTINE: 0}
    for rel, (n, _) in feet.items():
        counts[rel.split("/", 1)[0]] += n
    if counts[SCORES] != rows or counts[QUARANTINE] != quarantined:
        raise RunFolderError(f"{run_url}: its part files hold {counts[SCORES]} scored and {counts[QUARANTINE]} "
                             f"quarantined rows, this run counted {rows} and {quarantined}; no _SUCCESS written")
    return (list(sized), {r: [feet[r][0], sized[r]] for r in mine},
            {r: expected[r] for r in mine if expected[r] is not None})


def write_stats(run_url: str, rows: list[dict], sig: str, chash: str, confidence: float, so: dict) -> None:
    from pipeline.stats import rows_to_arrow  # the statistics' kernels: not for the CLI's checks

    meta = {META_SIGNATURE: sig, META_CONFIG_HASH: chash, "rouge_pipeline.confidence": str(confidence)}
    writers.write_parquet_atomic(rows_to_arrow(rows), url(run_url, STATS_PARQUET), so, meta)
    json.dumps(rows, allow_nan=False)   # refuse NaN before writing
    writers.write_json_atomic({"signature": sig, "config_hash": chash, "confidence": confidence, "rows": rows},
                              url(run_url, STATS_JSON), so)


def write_profile_outputs(run_url: str, docs: dict, declared: tuple, so: dict) -> None:
    """A profile's own files (``docs``: ``{name: JSON document}``, each one of the names it
    ``declared``), written into the run folder as JSON."""
    for name, doc in docs.items():
        if name not in declared or "/" in name or name.startswith("."):
            raise ValueError(f"a profile output {name!r} that the profile did not declare as a file name")
        writers.write_json_atomic(doc, url(run_url, name), so)


def write_exact(run_url: str, rows: list[dict], sig: str, chash: str, so: dict) -> None:
    meta = {META_SIGNATURE: sig, META_CONFIG_HASH: chash}
    writers.write_parquet_atomic(exact_rows_to_arrow(rows), url(run_url, EXACT_PARQUET), so, meta)
    writers.write_json_atomic({"signature": sig, "config_hash": chash, "rows": rows},
                              url(run_url, EXACT_JSON), so)

