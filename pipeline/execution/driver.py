"""Run a :class:`pipeline.config.RunConfig`: plan, map tasks, retry, resume, reduce, write.

Run folder (any fsspec URL)::

    _run.json                      redacted config, signature, config hash, plan settings (written first)
    _plan.json                     the tasks (units cut by estimated cost), input fingerprints; reused on resume
    _done/unit-XXXXX.json          one completion marker per task: its counts and files
    scores/system-<s>/part-XXXXX.parquet   per-example scores (pinned schema), one file per task and system
                                   (not Hive's system=<s>: the column is in the files; writers.LAYOUT)
    quarantine/part-XXXXX.parquet  records that could not be scored, with a reason
    stats/stats.parquet, stats/stats.json  corpus statistics per system, type and stat
    stats/bootstrap_exact.{parquet,json}   rouge-score's BootstrapAggregator (stats.bootstrap: exact)
    _summary.json                  rows, quarantined by reason, systems, tasks, seconds, pairs/s, signature
    _LEASE.json                    the run holding the folder (pipeline.io.runfolder.Lease; removed at the end)
    _SUCCESS                       written last, after verify_parts (docs/run-folder.md)

Statistics are reduced on the workers as a tree of ``client.submit(merge_results, *chunk)``;
only the root (one accumulator) comes back to the client.  The tasks of units that the plan
pass scored are run by one :func:`pipeline.job.finish_in_place` per worker, submitted with the
plan so they start when it exists; the rest are tasks of their own.

Failures (issue #5):

* The plan pass (:func:`make_plan`) reads every unit once on the workers: estimated costs and
  every ``(system, id)``.  Duplicates *across* units are found there (the first occurrence in
  (file, row) order is kept; later ones go to their unit's ``drop_rows`` and become quarantine
  rows naming where the first is), so each example is scored exactly once whatever
  ``target_rows`` is.  The plan is stored in ``_plan.json`` and reused on resume.  What a
  worker read is kept there (up to a memory budget, for this run only) and the unit's tasks
  prefer that worker, so a unit is usually parsed once (:class:`pipeline.job.UnitTables`).
* Tasks are retried by Dask (``execution.retries``); a worker that dies (OOM, SIGKILL,
  preemption) is restarted by its nanny and its tasks rerun.  Every file a task writes has a
  deterministic name and is written atomically, so reruns overwrite, never duplicate.
* The driver's own storage access (run folder, plan, markers, statistics, ``_SUCCESS``) is
  retried with backoff on transient errors (:func:`with_retries`).
* A task that still fails raises: input/configuration errors as they are (they name the file,
  line or field), anything else as :class:`RunFailedError` naming the task (its file and rows).
  ``_summary.json`` then says ``failed: ...``; no statistics and no ``_SUCCESS`` are written;
  rerunning the same command resumes.  A killed driver is the same: rerun to resume.

Security: outputs, markers and the plan are JSON and Parquet only.  Dask itself pickles task
arguments and results between client, scheduler and workers (that is how ``distributed``
works): use a cluster only on a trusted network; local clusters bind 127.0.0.1.
"""
from __future__ import annotations

import json
import os
import posixpath
import re
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pipeline import job, profiles
from pipeline.io import runfolder, writers
from pipeline.io.paths import compression_of, get_fs
from pipeline.io.runfolder import RunFolderBusyError
from pipeline.io.readers import listed_sizes, plan_units
from pipeline.redaction import HiddenOptions
from pipeline.signature import Signature
from pipeline.stats import rows_to_arrow

FAN_IN = 8
META_SIGNATURE = "rouge_pipeline.signature"
META_CONFIG_HASH = "rouge_pipeline.config_hash"


class RunFolderError(RuntimeError):
    """The run folder holds a run made with other settings or an older format, is not a run
    folder, or holds files that are not this run's (or the inputs changed during the run)."""


class RunFailedError(RuntimeError):
    """A task (or the driver's own storage access) failed after its retries.  Nothing final
    was written for the run (no statistics, no ``_SUCCESS``); rerunning the same command
    resumes it."""


# Errors that retrying cannot fix: reported at once (they name the file, line or field).
PERMANENT_ERRORS = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError, ValueError,
                    TypeError, KeyError, RunFolderError, RunFolderBusyError)


def with_retries(fn, retries: int, what: str, log=None, base_delay: float = 0.2):
    """``fn()``, retried ``retries`` times on transient errors (``OSError`` and the like, not
    :data:`PERMANENT_ERRORS`), with exponential backoff.  The driver's own storage access
    (run folder, plan, markers, statistics) goes through here; tasks are retried by Dask."""
    attempt = 0
    while True:
        try:
            return fn()
        except PERMANENT_ERRORS:
            raise
        except Exception as e:  # noqa: BLE001 - transient storage/network errors
            if attempt >= retries:
                raise RunFailedError(f"{what} failed after {retries} retries: {type(e).__name__}: {e}") from e
            if log is not None:
                log(f"{what}: {type(e).__name__}: {e}; retrying ({attempt + 1}/{retries})")
            time.sleep(base_delay * (2 ** attempt))
            attempt += 1


def _task_error(e: BaseException, what: str, retries: int) -> BaseException:
    """The exception to raise for a task that failed after its retries: input and configuration
    errors as they are (they name the file, line or field), anything else as :class:`RunFailedError`."""
    if isinstance(e, PERMANENT_ERRORS) or isinstance(e, RunFailedError):
        return e
    return RunFailedError(f"{what} failed after {retries} retries: {type(e).__name__}: {e}")


class StrictModeError(RuntimeError):
    """``strict: true`` and some records were quarantined."""

    def __init__(self, message, summary):
        super().__init__(message)
        self.summary = summary


class NoRowsError(RuntimeError):
    """The run scored no row: the input holds no record, or every record was quarantined.
    The message says why (the most common quarantine reasons, the fields of the first
    records, a "did you mean" for the column mapping); no statistics and no ``_SUCCESS``."""

    def __init__(self, message, summary):
        super().__init__(message)
        self.summary = summary


def no_rows_message(spec, final: dict, run_url: str) -> str:
    from pipeline.io.readers import field_hints

    q = final["quarantined"]
    if q:
        top = sorted(final["quarantine_reasons"].items(), key=lambda kv: (-kv[1], kv[0]))[:3]
        why = (f"every record was quarantined ({q}; most common: "
               + "; ".join(f"{k}: {v}" for k, v in top) + f"; see {run_url}/quarantine/)")
    else:
        why = "the input holds no record"
    hints = field_hints(spec)
    return f"{run_url}: {why}" + "".join(f"; {h}" for h in hints)


@dataclass
class RunResult:
    run_url: str
    summary: dict
    rows: list = field(default_factory=list)          # finalised statistics rows
    exact_rows: list = field(default_factory=list)    # stats.bootstrap: exact
    signature: str = ""
    config_hash: str = ""


def _log_default(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _plan_settings(cfg) -> dict:
    return {"target_rows": cfg.execution.target_rows,
            "target_cost": cfg.execution.target_cost or job.DEFAULT_TARGET_COST}


def _utc_now() -> str:
    import datetime

    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


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
    files = runfolder.folder_files(fs, path)
    if all(f == runfolder.LEASE or f.startswith(".tmp-") for f in files):
        return  # empty, or only a lease left behind
    try:
        run_info = writers.read_json(f"{run_url}/_run.json", so)
    except ValueError:
        raise RunFolderError(f"{run_url}: its _run.json is not valid JSON; choose another output") from None
    if not isinstance(run_info, dict):
        raise RunFolderError(f"{run_url} is not empty and is not a rouge-pipeline run folder (no _run.json): "
                             "nothing in it is replaced; choose another output")
    if not overwrite:
        try:
            writers.check_layout(run_url, run_info)
        except writers.OldLayoutError as e:
            raise RunFolderError(str(e)) from None
    fmt = run_info.get("run_format", 1)
    if fmt != runfolder.RUN_FORMAT and not overwrite:
        raise RunFolderError(f"{run_url} was written by another rouge-pipeline version (run folder format {fmt}, "
                             f"this version writes {runfolder.RUN_FORMAT}) and is not resumed; choose another "
                             "output or pass --overwrite to replace it")
    foreign = runfolder.foreign_files(files)
    if foreign and overwrite:
        raise RunFolderError(f"{run_url} holds files rouge-pipeline did not write ({runfolder.describe(foreign)}); "
                             "--overwrite replaces only a run folder that holds nothing else: move them away "
                             "or choose another output")


def prepare_run_folder(cfg, run_url: str, so: dict, signature: str, config_hash: str,
                       overwrite: bool, log=_log_default, inputs: dict | None = None, plan_id: str = "") -> None:
    """Under the lease: refuse a folder made with other settings (unless ``overwrite``, which
    deletes the run's own files only); on resume, score again from scratch when the inputs
    changed since the plan (``inputs``: :func:`runfolder.list_inputs`); write ``_run.json``."""
    precheck_run_folder(run_url, so, overwrite)
    fs, path = get_fs(run_url, so)
    files = runfolder.folder_files(fs, path) if fs.isdir(path) else []
    run_info = writers.read_json(f"{run_url}/_run.json", so)
    plan = _plan_settings(cfg)
    if run_info is not None:
        if overwrite:
            log(f"--overwrite: removing the run files of {run_url}")
            runfolder.remove_run_files(fs, path, files)
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
                stored = writers.read_json(f"{run_url}/_plan.json", so)
            except ValueError:
                stored = None
            if isinstance(stored, dict) and stored.get("plan_id") == plan_id:
                # Same settings and inputs: resume.  _SUCCESS is rewritten at the end.
                if writers.SUCCESS in files:
                    fs.rm(f"{path.rstrip('/')}/{writers.SUCCESS}")
                return
            if isinstance(stored, dict):
                changed = runfolder.changed_inputs(stored.get("inputs") or {}, inputs or {})
                log(f"the inputs changed since {run_url} was planned ({runfolder.describe(changed)}): "
                    "scoring them again")
            # no plan of these inputs: nothing there can be kept (its markers name another plan)
            runfolder.remove_run_files(fs, path, files, keep=("_run.json", runfolder.LEASE))
            return
    # cwd: what relative input paths are relative to, for readers of the run (compare's movers)
    writers.write_json_atomic({"config": cfg.to_dict(redact=True), "signature": signature,
                               "config_hash": config_hash, "plan": plan, "layout": writers.LAYOUT,
                               "run_format": runfolder.RUN_FORMAT,
                               "version": cfg.hashed_settings()["version"], "cwd": os.getcwd(),
                               "started_at": _utc_now()},
                              f"{run_url}/_run.json", so)


class Finishing(NamedTuple):
    """One worker's :func:`job.finish_in_place`, submitted with the plan pass."""

    future: Any        # its Dask future
    units: list        # the unit indices it was given
    # the plan's future, held until the run ends: were it released, a finish result lost with
    # its worker would be recomputed from the plan pass itself (every unit read again)
    plan: Any


class _Sync:
    """Runs everything in this process (``--sync``: no Dask at all)."""

    def map(self, fn, *iterables, **_):
        return [fn(*args) for args in zip(*iterables)]


def make_plan(cfg, spec, run_url: str, so: dict, client, log, ctx: job.UnitContext,
              bar=None, done: frozenset = frozenset(), *, finishing: list,
              inputs: dict | None = None) -> tuple[list[job.Task], dict]:
    """Load ``_plan.json`` or plan: units, per-example costs (on the workers), cost slices.

    The plan pass keeps what it read in the workers for this run's tasks (``ctx.read_token``,
    :class:`pipeline.job.UnitTables`), scored where a unit is one task (:func:`job.plan_unit`);
    ``bar(units)`` makes the progress display of that pass.  Returns (tasks, where): ``where``
    maps each unit whose tables or output were kept on a worker to that worker's address.
    Each worker's :func:`job.finish_in_place` (:class:`Finishing`) is appended to
    ``finishing`` as soon as it is submitted, so the caller, who cancels them if the run fails,
    has them even when the plan does not come back (none without Dask or when the plan comes
    from ``_plan.json``; ``done``: the tasks an earlier run finished)."""
    stored = with_retries(lambda: writers.read_json(f"{run_url}/_plan.json", so), cfg.execution.retries,
                          "reading _plan.json", log)
    settings = _plan_settings(cfg)
    if stored is not None and stored.get("settings") == settings and stored.get("plan_id") == ctx.plan_id:
        tasks = [job.task_from_dict(d) for d in stored["tasks"]]
        log(f"plan: {len(tasks)} tasks (from _plan.json)")
        return tasks, {}
    t0 = time.perf_counter()
    units = with_retries(lambda: plan_units(spec, cfg.execution.target_rows), cfg.execution.retries,
                         "planning the input", log)
    # The plan pass reads every unit once (on the workers): estimated costs, and the ids, so
    # duplicates across units (shards, or row slices of one shard) are found here, where every
    # id is seen.  The first occurrence in (file, row) order is kept.
    progress = bar(len(units)) if bar is not None else None
    try:
        tasks, n_dup, where = _plan_pass(cfg, spec, units, settings, client, log, ctx, progress, done, finishing)
    finally:
        if progress is not None:
            progress.close()
    oversized = sum(t.oversized for t in tasks)
    log(f"plan: {len(units)} units -> {len(tasks)} tasks by estimated cost "
        f"(target {settings['target_cost']:,.0f}; {oversized} oversized single examples; "
        f"{n_dup} duplicate ids across units) in {time.perf_counter() - t0:.2f}s")
    plan_doc = {"settings": settings, "plan_hash": job.plan_hash(tasks), "plan_id": ctx.plan_id,
                "inputs": inputs or {}, "tasks": [job.task_to_dict(t) for t in tasks]}
    with_retries(lambda: writers.write_json_atomic(plan_doc, f"{run_url}/_plan.json", so), cfg.execution.retries,
                 "writing _plan.json", log)
    return tasks, where


def _plan_pass(cfg, spec, units, settings, client, log, ctx, progress, done: frozenset, finishing: list):
    """Every unit's plan task (here or on the workers), then the plan: (tasks, duplicates,
    where); each worker's :func:`job.finish_in_place` goes into ``finishing`` (:func:`make_plan`)."""
    read_token, keep, target = ctx.read_token, cfg.execution.unit_cache_mb, settings["target_cost"]
    if client is None:
        planned = []
        for u in units:
            planned.append(with_retries(lambda u=u: job.plan_unit(spec, u, read_token, keep, ctx, target),
                                        cfg.execution.retries, f"reading {u.file}", log))
            if progress is not None:
                progress.update(0)
        tasks, n_dup, _ = job.plan_tasks(units, target, *planned)
        del planned
        where = {}
    else:
        from distributed import as_completed

        nonce = uuid.uuid4().hex[:8]
        futs = client.map(job.plan_unit, [spec] * len(units), units, [read_token] * len(units),
                          [keep] * len(units), [ctx] * len(units), [target] * len(units),
                          key=[f"rouge-plan-unit-{nonce}-{u.index:05d}" for u in units],
                          retries=cfg.execution.retries, pure=False)
        unit_of = {f.key: u for u, f in zip(units, futs)}
        # Every example's id and cost stay on the workers: one task there finds the
        # duplicates across units and cuts the tasks, so the client's memory does not
        # grow with the corpus.  Submitted now, it starts as soon as the last unit is done.
        plan = client.submit(job.plan_tasks, units, target, *futs, key=f"rouge-plan-{nonce}",
                             retries=cfg.execution.retries, pure=False)
        # The first unit that fails (after its retries) ends the plan pass: the rest is cancelled,
        # so a broken file is named without reading the whole corpus first (with several broken
        # files, the one named is the first to fail).
        for f in as_completed(futs):
            status = f.status
            if status == "finished":
                if progress is not None:
                    progress.update(0)
                continue
            e = f.exception() if status == "error" else None  # before the cancel, which would mask it
            client.cancel([*futs, plan])
            _drain(client, nonce)
            if e is not None:
                raise _task_error(e, f"planning unit {unit_of[f.key].key}", cfg.execution.retries) from e
            raise RunFailedError(f"planning unit {unit_of[f.key].key}: its task was {status} "
                                 "(the scheduler or another client cancelled it, or the connection was lost)")
        # where each unit's tables or output wait, as the workers themselves say (the scheduler's
        # who_has would also list the worker that fetched a copy of the plan results)
        held_by = {}
        for addr, indices in sorted(client.run(job.kept_units, read_token).items(), reverse=True):
            held_by.update(dict.fromkeys(indices, addr))
        del futs
        # Each worker finishes the one-task units it kept as soon as the plan exists, without
        # waiting for this client to fetch it (job.finish_in_place); submitted before the plan
        # is done, so they start when it is.
        by_worker: dict[str, list[int]] = {}
        for i, addr in sorted(held_by.items()):
            by_worker.setdefault(addr, []).append(i)
        finishing.extend(
            Finishing(client.submit(job.finish_in_place, spec, plan, indices, ctx, done,
                                    key=f"rouge-finish-{nonce}-{k:03d}", workers=[addr], allow_other_workers=True,
                                    retries=cfg.execution.retries, pure=False), indices, plan)
            for k, (addr, indices) in enumerate(sorted(by_worker.items())))
        try:
            tasks, n_dup, kept = plan.result()
        except Exception as e:  # noqa: BLE001
            raise _task_error(e, "planning the tasks", cfg.execution.retries) from e
        # a task prefers its unit's worker only where the tables wait for it there: any
        # worker restriction also keeps the scheduler from queuing the task (it goes out at once)
        where = {i: held_by[i] for i in kept if i in held_by}
    return tasks, n_dup, where


def _one_worker_per_host(client) -> list[str]:
    by_host: dict[str, str] = {}
    for addr, info in sorted(client.scheduler_info()["workers"].items()):
        by_host.setdefault(info.get("host") or addr.rsplit(":", 1)[0], addr)
    return sorted(by_host.values())


def _done_indices(run_url: str, so: dict) -> set[int]:
    fs, path = get_fs(f"{run_url}/_done", so)
    try:
        names = fs.ls(path, detail=False, refresh=True) if fs.exists(path) else []
    except TypeError:
        names = fs.ls(path, detail=False)
    out = set()
    for n in names:
        base = n.rsplit("/", 1)[-1]
        if base.startswith("unit-") and base.endswith(".json"):
            try:
                out.add(int(base[5:-5]))
            except ValueError:
                pass
    return out


def run(cfg, client=None, progress: bool | None = True, log=_log_default, stream=None,
        execution: str | None = None) -> RunResult:
    """Run ``cfg`` on ``client`` (``None``: synchronously, in this process), holding the run
    folder's lease (:class:`runfolder.Lease`) throughout; ``execution``: how :func:`run_config`
    chose where (the summary's ``execution``)."""
    t_start = time.perf_counter()
    run_url = cfg.output.url.rstrip("/")
    so = HiddenOptions(cfg.storage_options)
    spec = cfg.input_spec()
    retries = cfg.execution.retries
    # the inputs first: a missing one leaves nothing in the output location
    inputs = with_retries(lambda: runfolder.list_inputs(spec), retries, "listing the inputs", log)
    with_retries(lambda: precheck_run_folder(run_url, so, cfg.output.overwrite), retries,
                 f"inspecting the run folder {run_url}", log)
    lease = runfolder.Lease(run_url, so, log)
    with_retries(lease.acquire, retries, f"taking the lease of {run_url}", log)
    try:
        return _run_held(cfg, client, progress, log, stream, lease, inputs, t_start, execution)
    finally:
        lease.release()


def _run_held(cfg, client, progress, log, stream, lease, inputs: dict, t_start: float,
              execution: str | None) -> RunResult:
    from pipeline.execution.progress import Progress

    run_url = cfg.output.url.rstrip("/")
    so = HiddenOptions(cfg.storage_options)   # task arguments: logged by a worker when one fails
    spec = cfg.input_spec()
    sig = str(Signature.from_config(cfg))
    chash = cfg.config_hash()
    retries = cfg.execution.retries
    pid = runfolder.plan_id(chash, _plan_settings(cfg), inputs)
    with_retries(lambda: prepare_run_folder(cfg, run_url, so, sig, chash, cfg.output.overwrite, log, inputs, pid),
                 retries, f"preparing the run folder {run_url}", log)
    runfolder.pause_point("prepared")
    metadata = {META_SIGNATURE: sig, META_CONFIG_HASH: chash}
    ctx = job.UnitContext(run_url=run_url, scoring=job.ScoringSettings.from_config(cfg.scoring),
                          seed=cfg.stats.seed, n_boot=cfg.stats.n_boot, metadata=metadata, storage_options=so,
                          read_token=uuid.uuid4().hex, plan_id=pid)

    finishing = []
    try:
        if client is not None:
            from pipeline.warmup import warmup

            t0 = time.perf_counter()
            # with this run's settings: a unicode or rouge155 profile builds its tables and loads
            # its kernels here, not inside each worker's first task.  Local workers share this
            # machine's cache, which run_config filled first; on an existing cluster one worker per
            # host goes first, so a host's workers load its cache instead of all compiling at once.
            if cfg.execution.mode == "scheduler":
                firsts = _one_worker_per_host(client)
                client.run(warmup, ctx.scoring, workers=firsts)
                rest = [w for w in client.scheduler_info()["workers"] if w not in firsts]
                if rest:
                    client.run(warmup, ctx.scoring, workers=rest)
            else:
                client.run(warmup, ctx.scoring)
            log(f"workers warm ({len(client.scheduler_info()['workers'])} workers) in "
                f"{time.perf_counter() - t0:.2f}s")
        # the tasks finished by an earlier run: listed before the plan, whose pass already
        # starts finishing this run's tasks (job.finish_in_place)
        done = with_retries(lambda: _done_indices(run_url, so), retries, "listing finished tasks", log)
        t_plan = time.perf_counter()
        tasks, where = make_plan(cfg, spec, run_url, so, client, log, ctx,
                                 bar=lambda n: Progress(n, None, stream=stream, enabled=bool(progress),
                                                        label="plan pass (read, score)", unit="units"),
                                 done=frozenset(done), finishing=finishing, inputs=inputs)
        total_rows = sum(t.n_rows for t in tasks)
        # its rate counts from the plan pass on, which scores most units (its tasks only write)
        bar = Progress(len(tasks), total_rows, stream=stream, enabled=bool(progress), t0=t_plan)
        if done:
            log(f"resume: {len(done & {t.index for t in tasks})} of {len(tasks)} tasks already done")
        target_cost = cfg.execution.target_cost or job.DEFAULT_TARGET_COST
        n_blocks = {t.index: job.split_blocks_for(t, ctx.scoring, target_cost) for t in tasks}
        n_split = sum(1 for b in n_blocks.values() if b > 1)
        if n_split:
            log(f"{n_split} oversized example(s): rougeLsum as {sum(b for b in n_blocks.values() if b > 1)} "
                "blocks of reference sentences")
        if client is None:
            results = []
            for t in tasks:
                r = with_retries(lambda t=t: _run_task_sync(spec, t, ctx, n_blocks[t.index], t.index in done),
                                 retries, f"task {t.key}", log)
                results.append(r)
                bar.update(t.n_rows, skipped=bool(r.get("skipped")))
            final = job.finalize_results(cfg.stats.confidence, *results)
        else:
            final = _run_on_client(client, spec, tasks, ctx, retries, done, bar, n_blocks, where,
                                   cfg.stats.confidence, finishing)
    except BaseException as e:
        # the one place that stops them, whatever failed after they were submitted
        _stop_finishing(client, finishing, drain=isinstance(e, Exception))
        _write_failed_summary(run_url, so, sig, chash, e, t_start, cfg)
        raise
    finally:
        _release_kept(client, ctx.read_token)
    # from the plan pass on: it reads, and scores every unit that is one task
    scoring_seconds = time.perf_counter() - t_plan

    rows = final["stats_rows"]
    summary = {
        "status": "ok",
        "signature": sig,
        "config_hash": chash,
        "rows": final["rows"],
        "quarantined": final["quarantined"],
        "quarantined_by_reason": final["quarantine_reasons"],
        "systems": final["systems"],
        "tasks": final["tasks"],
        "tasks_resumed": final.get("skipped", 0),
        "split_examples": n_split,
        "cand_tokens": final["cand_tokens"],
        "ref_tokens": final.get("ref_tokens", 0),
        "mode": "sync" if client is None else "dask",
        "execution": execution or cfg.execution.mode,
        "workers": 1 if client is None else len(client.scheduler_info()["workers"]),
        "scoring_seconds": round(scoring_seconds, 3),
        "rows_scored": bar.scored_rows,       # by this run (not the resumed tasks')
        "pairs_per_s": round(bar.rate(), 1),  # the bar's rate counts from t_plan too
    }
    if not final["rows"]:  # before strict mode: nothing scored is the bigger problem
        summary["status"] = "failed: no row scored"
        summary["seconds"] = round(time.perf_counter() - t_start, 3)
        with_retries(lambda: writers.write_json_atomic(summary, f"{run_url}/_summary.json", so), retries,
                     "writing _summary.json", log)
        raise NoRowsError(no_rows_message(spec, final, run_url), summary)
    if cfg.strict and final["quarantined"]:
        summary["status"] = "failed: strict mode and quarantined records"
        summary["seconds"] = round(time.perf_counter() - t_start, 3)
        with_retries(lambda: writers.write_json_atomic(summary, f"{run_url}/_summary.json", so), retries,
                     "writing _summary.json", log)
        raise StrictModeError(f"strict: {final['quarantined']} record(s) quarantined "
                              f"({final['quarantine_reasons']}); see {run_url}/quarantine/", summary)

    # every part on disk is this run's and holds what it counted; the inputs are still those planned
    with_retries(lambda: verify_parts(run_url, so, len(tasks), chash, final["rows"], final["quarantined"]),
                 retries, "checking the part files", log)
    changed = runfolder.changed_inputs(inputs, with_retries(lambda: runfolder.list_inputs(spec), retries,
                                                            "listing the inputs again", log))
    if changed:
        raise RunFolderError(f"the inputs changed while this run was running ({runfolder.describe(changed)}); "
                             f"no _SUCCESS written in {run_url}: run again to score them")
    with_retries(lambda: write_stats(run_url, rows, sig, chash, cfg.stats.confidence, so), retries,
                 "writing the statistics", log)
    profile = profiles.get(cfg.scoring.profile)
    if profile.outputs:  # the profile's own files (rouge155: ROUGE-1.5.5's printed averages)
        def read(system, columns):
            return job.read_scores(run_url, system, columns, so)

        with_retries(lambda: profile.write_outputs(run_url, final["systems"], cfg.scoring, cfg.stats, read, so),
                     retries, f"writing {', '.join(profile.outputs)}", log)
    exact_rows = []
    if cfg.stats.bootstrap == "exact" and cfg.stats.n_boot > 0:
        args = (run_url, final["systems"], list(cfg.scoring.rouge_types), cfg.stats.seed, cfg.stats.n_boot,
                cfg.stats.confidence, so)
        if client is None:
            exact_rows = job.exact_bootstrap(*args)
        else:
            exact_rows = client.submit(job.exact_bootstrap, *args, pure=False, retries=retries).result()
        with_retries(lambda: write_exact(run_url, exact_rows, sig, chash, so), retries,
                     "writing the exact bootstrap", log)
    summary["seconds"] = round(time.perf_counter() - t_start, 3)
    summary["finished_at"] = _utc_now()   # orders run histories (compare --history)
    with_retries(lambda: writers.write_json_atomic(summary, f"{run_url}/_summary.json", so), retries,
                 "writing _summary.json", log)
    lease.stop_heartbeat()  # nothing of the run is written after _SUCCESS, the lease included
    # what killed writes of earlier attempts left (every task of this run has ended)
    with_retries(lambda: writers.remove_temp_files(run_url, so), retries, "removing temp files", log)
    lease.check()
    runfolder.pause_point("success")
    with_retries(lambda: writers.mark_success(run_url, so), retries, "writing _SUCCESS", log)
    return RunResult(run_url, summary, rows, exact_rows, sig, chash)


def _release_kept(client, token: str) -> None:
    """Drop what this run's plan pass kept (tables no task released: stolen or skipped last
    slices, oversized examples), here or on every worker; best effort after a failure."""
    if client is None:
        job.release_unit_tables(token)
        return
    try:
        client.run(job.release_unit_tables, token)
    except Exception:  # noqa: BLE001 - a lost cluster must not hide the run's own error
        pass


def _run_task_sync(spec, t, ctx, n_blocks: int, earlier: bool) -> dict:
    if n_blocks <= 1:
        return job.run_task(spec, t, ctx, earlier=earlier)
    done = job.load_done(t, ctx)
    if done is not None:
        done["skipped"] = int(earlier)
        return done
    prep = job.prepare_split(spec, t, ctx)
    blocks = [job.split_block(prep, k, n_blocks, ctx.scoring) for k in range(n_blocks)]
    return job.finish_split(spec, t, ctx, prep, *blocks, earlier=earlier)


def _submit_task(client, spec, t, ctx, retries: int, nonce: str, n_blocks: int, done: set, where: dict):
    """One task; an oversized one fans its rougeLsum out as blocks of reference sentences.
    Tasks that read their unit prefer the worker whose plan pass kept it (``where``); the
    scheduler may still run them elsewhere (they then read the unit again)."""
    key = f"rouge-task-{nonce}-{t.index:05d}"
    near = {"workers": [where[t.unit.index]], "allow_other_workers": True} if t.unit.index in where else {}
    # Tasks run in plan order (left alone, each worker took its queue roughly last-submitted
    # first): the first merges of the statistics tree then run while later tasks score,
    # instead of all at the end.
    order = {"priority": -t.index}
    earlier = t.index in done   # only a marker of an earlier run makes the task resumed
    if n_blocks <= 1 or earlier:
        return client.submit(job.run_task, spec, t, ctx, earlier=earlier, key=key, retries=retries, pure=False,
                             **near, **order)
    prep = client.submit(job.prepare_split, spec, t, ctx, key=f"{key}-prep", retries=retries, pure=False,
                         **near, **order)
    blocks = [client.submit(job.split_block, prep, k, n_blocks, ctx.scoring, key=f"{key}-block-{k:03d}",
                            retries=retries, pure=False, **order) for k in range(n_blocks)]
    return client.submit(job.finish_split, spec, t, ctx, prep, *blocks, earlier=earlier, key=key, retries=retries,
                         pure=False, **order)


def _run_on_client(client, spec, tasks, ctx, retries: int, done: set, bar, n_blocks: dict, where: dict,
                   confidence: float, finishing: list = ()) -> dict:
    """Submit every task not finished in place (``finishing``: :func:`make_plan`), the merge
    tree and its finalisation (:func:`job.finalize_results`); raise the first task failure
    (after its retries)."""
    from distributed import as_completed

    nonce = uuid.uuid4().hex[:8]
    in_place = job.in_place_tasks(tasks)
    covers: dict = {}  # leaf future key -> the tasks it runs
    leaves = []
    for fin in finishing:
        covers[fin.future.key] = [in_place[u] for u in fin.units if u in in_place]
        leaves.append(fin.future)
    covered = {t.index for ts in covers.values() for t in ts}
    for t in tasks:
        if t.index not in covered:
            fut = _submit_task(client, spec, t, ctx, retries, nonce, n_blocks[t.index], done, where)
            covers[fut.key] = [t]
            leaves.append(fut)
    level, depth, merges = list(leaves), 0, []
    while len(level) > FAN_IN:
        level = [client.submit(job.merge_results, *level[i:i + FAN_IN],
                               key=f"rouge-merge-{nonce}-{depth}-{i // FAN_IN:05d}", retries=retries, pure=False)
                 for i in range(0, len(level), FAN_IN)]
        merges += level
        depth += 1
    root = client.submit(job.finalize_results, confidence, *level, key=f"rouge-final-{nonce}",
                         retries=retries, pure=False)
    merges.append(root)
    # a finished leaf's result (its statistics) is released once its merge has run:
    # only the futures still pending are held here
    pending = set(leaves)
    completed = as_completed(leaves)
    del leaves
    try:
        for f in completed:
            ts = covers[f.key]
            if f.status == "error":
                e = f.exception()
                raise _task_error(e, _failed_what(e, ts, f.key), retries) from e
            pending.discard(f)
            del f
            for t in ts:
                bar.update(t.n_rows, skipped=t.index in done)
        try:
            return root.result()
        except Exception as e:  # noqa: BLE001
            raise _task_error(e, "merging the task statistics", retries) from e
    except BaseException as e:
        client.cancel(list(pending) + merges)
        if isinstance(e, Exception):  # not on Ctrl-C: the user asked to stop now
            _drain(client, nonce)  # (run() cancels and drains the finish tasks)
        raise


# How long a failed run waits for its tasks that were already running (see _drain).
DRAIN_TIMEOUT_S = 120.0


def _executing_keys(dask_worker) -> list[str]:
    return [str(ts.key) for ts in (*dask_worker.state.executing, *dask_worker.state.long_running)]


def _drain(client, *markers: str, timeout: float = DRAIN_TIMEOUT_S) -> None:
    """Wait until no task whose key holds one of ``markers`` runs on any worker any more.  Cancelling
    does not stop a running task (Dask cannot): without this wait, a failed run's tasks could
    still write into the run folder after the run has returned, and a local cluster closed
    right after would kill them mid-write.  Best effort: a cluster that cannot answer ends
    the wait."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            running = client.run(_executing_keys, on_error="ignore")
        except Exception:  # noqa: BLE001 - a lost cluster: nothing left to wait for here
            return
        if not any(m in k for keys in running.values() if isinstance(keys, list) for k in keys for m in markers):
            return
        time.sleep(0.05)


def _failed_what(e: BaseException, ts: list, key: str) -> str:
    """Which task failed, for the error: the one a finish_in_place named on the exception, else
    the leaf's only task, else its first."""
    named = getattr(e, job.FAILED_TASK_ATTR, None)
    if named:
        return f"task {named}"
    if len(ts) == 1:
        return f"task {ts[0].key}"
    return f"one of the {len(ts)} tasks finished in place from task {ts[0].key}" if ts else key


def _stop_finishing(client, finishing, drain: bool) -> None:
    """Cancel :func:`job.finish_in_place` futures and (``drain``; not on Ctrl-C, when the user
    asked to stop now) wait for those running (see :func:`_drain`)."""
    if finishing:
        client.cancel([fin.future for fin in finishing])
        if drain:
            _drain(client, *(fin.future.key for fin in finishing))


def _write_failed_summary(run_url: str, so: dict, sig: str, chash: str, e: BaseException, t_start: float,
                          cfg=None) -> None:
    """Best effort: ``_summary.json`` with the error, so ``rouge-pipeline show`` can say why
    (its message without the config's credentials: pipeline.redaction)."""
    from pipeline.redaction import Redactor

    try:
        msg = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        msg = Redactor().add_config(cfg.to_dict(redact=False) if cfg is not None else {}).text(msg)
        writers.write_json_atomic({"status": f"failed: {msg}", "signature": sig, "config_hash": chash,
                                   "seconds": round(time.perf_counter() - t_start, 3)},
                                  f"{run_url}/_summary.json", so)
    except Exception:  # noqa: BLE001 - the original error matters more
        pass


_PART_NAME = re.compile(r"^part-\d+\.parquet$")
_PART = re.compile(r"^(?:scores/system-[^/]*|quarantine)/part-(\d{5,})\.parquet$")


def verify_parts(run_url: str, so: dict, n_tasks: int, chash: str, rows: int, quarantined: int) -> None:
    """Refuse (before ``_SUCCESS``) a run folder whose ``scores/`` or ``quarantine/`` holds a file
    part that is not one of this run's ``n_tasks`` tasks' with its config hash, or whose
    parts hold other row counts than the run counted."""
    import pyarrow.parquet as pq
    from concurrent.futures import ThreadPoolExecutor

    fs, path = get_fs(run_url, so)
    root = path.rstrip("/")
    # the part files there (other names are no reader's parts: left alone)
    rels = [r for r in runfolder.folder_files(fs, root) if r.startswith(("scores/", "quarantine/"))
            and _PART_NAME.match(posixpath.basename(r))]

    def footer(rel):
        with fs.open(f"{root}/{rel}", "rb") as f:
            md = pq.read_metadata(f)
        return md.num_rows, (md.metadata or {}).get(META_CONFIG_HASH.encode(), b"").decode()

    bad, counts = [], {"scores": 0, "quarantine": 0}
    parts = []
    for rel in rels:
        m = _PART.match(rel)
        if m is None or int(m.group(1)) >= n_tasks:
            bad.append(rel)
        else:
            parts.append(rel)
    with ThreadPoolExecutor(max_workers=min(16, max(1, len(parts)))) as pool:
        for rel, (n, h) in zip(parts, pool.map(footer, parts)):
            if h != chash:
                bad.append(f"{rel} (config hash {h or 'none'})")
            counts[rel.split("/", 1)[0]] += n
    if bad:
        raise RunFolderError(f"{run_url} holds part files that are not this run's ({runfolder.describe(bad)}); "
                             "no _SUCCESS written: remove them or rerun with --overwrite")
    if counts["scores"] != rows or counts["quarantine"] != quarantined:
        raise RunFolderError(f"{run_url}: its part files hold {counts['scores']} scored and {counts['quarantine']} "
                             f"quarantined rows, this run counted {rows} and {quarantined}; no _SUCCESS written")


def write_stats(run_url: str, rows: list[dict], sig: str, chash: str, confidence: float, so: dict) -> None:
    meta = {META_SIGNATURE: sig, META_CONFIG_HASH: chash, "rouge_pipeline.confidence": str(confidence)}
    writers.write_parquet_atomic(rows_to_arrow(rows), f"{run_url}/stats/stats.parquet", so, meta)
    json.dumps(rows, allow_nan=False)   # refuse NaN before writing
    writers.write_json_atomic({"signature": sig, "config_hash": chash, "confidence": confidence, "rows": rows},
                              f"{run_url}/stats/stats.json", so)


def write_exact(run_url: str, rows: list[dict], sig: str, chash: str, so: dict) -> None:
    meta = {META_SIGNATURE: sig, META_CONFIG_HASH: chash}
    writers.write_parquet_atomic(job.exact_rows_to_arrow(rows), f"{run_url}/stats/bootstrap_exact.parquet", so, meta)
    writers.write_json_atomic({"signature": sig, "config_hash": chash, "rows": rows},
                              f"{run_url}/stats/bootstrap_exact.json", so)


# execution.mode auto: inputs below this many (estimated, uncompressed) bytes are scored in this
# process, larger ones on the local cluster.  A local cluster costs seconds to start and warm;
# in process, short pairs score at tens of thousands a second, so below ~32 MiB (~100,000 short
# pairs) the cluster would mostly add its start (a chosen bound, not a tuned one).  The outputs are the same files either way.
AUTO_LOCAL_MIN_BYTES = 32 * 1024 * 1024
COMPRESSION_RATIO = 4  # the estimate's factor for compressed input files


def estimate_input_bytes(cfg) -> int:
    """The input's uncompressed size, estimated from its listing (file sizes; no file is read)."""
    sizes = with_retries(lambda: listed_sizes(cfg.input_spec()), cfg.execution.retries, "listing the input")
    return sum((n or 0) * (COMPRESSION_RATIO if compression_of(url) else 1) for url, n in sizes.items())


def choose_mode(cfg, log=_log_default) -> tuple[str, str]:
    """(``local``/``scheduler``/``sync``, the summary's note) for ``cfg.execution.mode``."""
    mode = cfg.execution.mode
    if mode != "auto":
        return mode, mode
    size = estimate_input_bytes(cfg)
    limit = AUTO_LOCAL_MIN_BYTES
    if size < limit:
        log(f"execution: in process (auto: input ~{size / 2**20:.1f} MiB < {limit / 2**20:.0f} MiB; "
            "--local or execution.mode: local starts the cluster)")
        return "sync", "auto: in process"
    log(f"execution: local cluster (auto: input ~{size / 2**20:.0f} MiB >= {limit / 2**20:.0f} MiB)")
    return "local", "auto: local cluster"


def run_config(cfg, progress: bool | None = True, log=_log_default, stream=None) -> RunResult:
    """Open the client the config asks for (auto / local / scheduler / sync) and run."""
    from pipeline.execution.cluster import dashboard_link, open_client

    ex = cfg.execution
    mode, note = choose_mode(cfg, log)
    if mode != "scheduler":  # this machine compiles once, before any local worker starts
        from pipeline.warmup import ensure_compiled

        ensure_compiled(job.ScoringSettings.from_config(cfg.scoring), log)
    with open_client(mode, ex.scheduler, ex.n_workers, ex.memory_limit, worker_profile=ex.worker_profile) as client:
        link = dashboard_link(client)
        if link:
            log(f"dashboard: {link}")
        return run(cfg, client, progress=progress, log=log, stream=stream, execution=note)
