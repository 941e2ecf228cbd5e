"""Run a :class:`pipeline.config.RunConfig`: plan, map tasks, retry, resume, reduce, write.

The run folder's names and files: :mod:`pipeline.job.outputs`.

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

import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pipeline import job, profiles
from pipeline.io.paths import compression_of
from pipeline.io.readers import listed_sizes, plan_units
from pipeline.execution.executors import DaskExecutor, SyncExecutor
from pipeline.job import outputs
from pipeline.job.outputs import META_CONFIG_HASH, META_SIGNATURE, RunFolderBusyError, RunFolderError  # noqa: F401
from pipeline.redaction import HiddenOptions
from pipeline.signature import Signature

FAN_IN = 8


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


class Finishing(NamedTuple):
    """One worker's :func:`job.finish_in_place`, submitted with the plan pass."""

    future: Any        # its future
    units: list        # the unit indices it was given
    # the plan's future, held until the run ends: were it released, a finish result lost with
    # its worker would be recomputed from the plan pass itself (every unit read again)
    plan: Any


def make_plan(cfg, spec, run_url: str, so: dict, ex, log, ctx: job.UnitContext,
              bar=None, done: frozenset = frozenset(), *, finishing: list,
              inputs: dict | None = None) -> tuple[list[job.Task], dict]:
    """Load ``_plan.json`` or plan: units, per-example costs (on the workers), cost slices.

    The plan pass keeps what it read in the workers for this run's tasks (``ctx.read_token``,
    :class:`pipeline.job.UnitTables`), scored where a unit is one task (:func:`job.plan_unit`);
    ``bar(units)`` makes the progress display of that pass.  Returns (tasks, where): ``where``
    maps each unit whose tables or output were kept on a worker to that worker's address.
    Each worker's :func:`job.finish_in_place` (:class:`Finishing`) is appended to
    ``finishing`` as soon as it is submitted, so the caller, who cancels them if the run fails,
    has them even when the plan does not come back (none when the plan comes from
    ``_plan.json``; ``done``: the tasks an earlier run finished)."""
    stored = with_retries(lambda: outputs.read_plan(run_url, so), cfg.execution.retries, "reading _plan.json", log)
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
        tasks, n_dup, where = _plan_pass(cfg, spec, units, settings, ex, ctx, progress, done, finishing)
    finally:
        if progress is not None:
            progress.close()
    oversized = sum(t.oversized for t in tasks)
    log(f"plan: {len(units)} units -> {len(tasks)} tasks by estimated cost "
        f"(target {settings['target_cost']:,.0f}; {oversized} oversized single examples; "
        f"{n_dup} duplicate ids across units) in {time.perf_counter() - t0:.2f}s")
    plan_doc = {"settings": settings, "plan_hash": job.plan_hash(tasks), "plan_id": ctx.plan_id,
                "inputs": inputs or {}, "tasks": [job.task_to_dict(t) for t in tasks]}
    with_retries(lambda: outputs.write_plan(run_url, plan_doc, so), cfg.execution.retries, "writing _plan.json", log)
    return tasks, where


def _plan_pass(cfg, spec, units, settings, ex, ctx, progress, done: frozenset, finishing: list):
    """Every unit's plan task, then the plan: (tasks, duplicates, where); each worker's
    :func:`job.finish_in_place` goes into ``finishing`` (:func:`make_plan`)."""
    read_token, keep, target = ctx.read_token, cfg.execution.unit_cache_mb, settings["target_cost"]
    retries = cfg.execution.retries
    nonce = uuid.uuid4().hex[:8]
    futs = [ex.submit(job.plan_unit, spec, u, read_token, keep, ctx, target, key=f"rouge-plan-unit-{nonce}-{u.index:05d}",
                      retries=retries, what=f"reading {u.file}") for u in units]
    unit_of = {f.key: u for u, f in zip(units, futs)}
    # Every example's id and cost stay on the workers: one task there finds the
    # duplicates across units and cuts the tasks, so the client's memory does not
    # grow with the corpus.  Submitted now, it starts as soon as the last unit is done.
    plan = ex.submit(job.plan_tasks, units, target, *futs, key=f"rouge-plan-{nonce}", retries=retries)
    # The first unit that fails (after its retries) ends the plan pass: the rest is cancelled,
    # so a broken file is named without reading the whole corpus first (with several broken
    # files, the one named is the first to fail).
    for f in ex.as_completed(futs):
        status = f.status
        if status == "finished":
            if progress is not None:
                progress.update(0)
            continue
        e = f.exception() if status == "error" else None  # before the cancel, which would mask it
        ex.cancel([*futs, plan])
        ex.wait_stopped(nonce)
        if e is not None:
            raise _task_error(e, f"planning unit {unit_of[f.key].key}", retries) from e
        raise RunFailedError(f"planning unit {unit_of[f.key].key}: its task was {status} "
                             "(the scheduler or another client cancelled it, or the connection was lost)")
    # where each unit's tables or output wait, as the workers themselves say (the scheduler's
    # who_has would also list the worker that fetched a copy of the plan results)
    held_by = {}
    for addr, indices in sorted(ex.run_everywhere(job.kept_units, read_token).items(), reverse=True):
        held_by.update(dict.fromkeys(indices, addr))
    del futs
    # Each worker finishes the one-task units it kept as soon as the plan exists, without
    # waiting for this client to fetch it (job.finish_in_place); submitted before the plan
    # is done, so they start when it is.
    by_worker: dict[str, list[int]] = {}
    for i, addr in sorted(held_by.items()):
        by_worker.setdefault(addr, []).append(i)
    finishing.extend(
        Finishing(ex.submit(job.finish_in_place, spec, plan, indices, ctx, done, key=f"rouge-finish-{nonce}-{k:03d}",
                            workers=[addr], allow_other_workers=True, retries=retries), indices, plan)
        for k, (addr, indices) in enumerate(sorted(by_worker.items())))
    try:
        tasks, n_dup, kept = plan.result()
    except Exception as e:  # noqa: BLE001
        raise _task_error(e, "planning the tasks", retries) from e
    # a task prefers its unit's worker only where the tables wait for it there: any
    # worker restriction also keeps the scheduler from queuing the task (it goes out at once)
    where = {i: held_by[i] for i in kept if i in held_by}
    return tasks, n_dup, where


def _executor(client, log):
    """Where the tasks run: on ``client``'s cluster, or (None) in this process."""
    if client is None:
        return SyncExecutor(PERMANENT_ERRORS, log)
    return DaskExecutor(client)


def run(cfg, client=None, progress: bool | None = True, log=_log_default, stream=None,
        execution: str | None = None) -> RunResult:
    """Run ``cfg`` on ``client`` (``None``: synchronously, in this process), holding the run
    folder's lease (:class:`pipeline.job.outputs.Lease`) throughout; ``execution``: how
    :func:`run_config` chose where (the summary's ``execution``)."""
    t_start = time.perf_counter()
    run_url = cfg.output.url.rstrip("/")
    so = HiddenOptions(cfg.storage_options)
    spec = cfg.input_spec()
    retries = cfg.execution.retries
    # the inputs first: a missing one leaves nothing in the output location
    inputs = with_retries(lambda: outputs.list_inputs(spec), retries, "listing the inputs", log)
    with_retries(lambda: outputs.precheck_run_folder(run_url, so, cfg.output.overwrite), retries,
                 f"inspecting the run folder {run_url}", log)
    lease = outputs.Lease(run_url, so, log)
    with_retries(lease.acquire, retries, f"taking the lease of {run_url}", log)
    try:
        return _run_held(cfg, _executor(client, log), progress, log, stream, lease, inputs, t_start, execution)
    finally:
        lease.release()


def _run_held(cfg, ex, progress, log, stream, lease, inputs: dict, t_start: float,
              execution: str | None) -> RunResult:
    from pipeline.execution.progress import Progress

    run_url = cfg.output.url.rstrip("/")
    so = HiddenOptions(cfg.storage_options)   # task arguments: logged by a worker when one fails
    spec = cfg.input_spec()
    sig = str(Signature.from_config(cfg))
    chash = cfg.config_hash()
    retries = cfg.execution.retries
    pid = outputs.plan_id(chash, _plan_settings(cfg), inputs)
    # the tasks an earlier run finished (listed with the folder): the plan pass already
    # starts finishing this run's tasks (job.finish_in_place)
    done = with_retries(lambda: outputs.prepare_run_folder(cfg, run_url, so, sig, chash, _plan_settings(cfg),
                                                           cfg.output.overwrite, log, inputs, pid),
                        retries, f"preparing the run folder {run_url}", log)
    outputs.pause_point("prepared")
    metadata = {META_SIGNATURE: sig, META_CONFIG_HASH: chash}
    ctx = job.UnitContext(run_url=run_url, scoring=job.ScoringSettings.from_config(cfg.scoring),
                          seed=cfg.stats.seed, n_boot=cfg.stats.n_boot, metadata=metadata, storage_options=so,
                          read_token=uuid.uuid4().hex, plan_id=pid)

    finishing = []
    try:
        if ex.distributed:
            t0 = time.perf_counter()
            # with this run's settings: a unicode or rouge155 profile builds its tables and loads
            # its kernels here, not inside each worker's first task (local workers share this
            # machine's cache, which run_config filled first)
            ex.warm(ctx.scoring, per_host=cfg.execution.mode == "scheduler")
            log(f"workers warm ({ex.n_workers} workers) in {time.perf_counter() - t0:.2f}s")
        t_plan = time.perf_counter()
        tasks, where = make_plan(cfg, spec, run_url, so, ex, log, ctx,
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
        final = _run_tasks(ex, spec, tasks, ctx, retries, done, bar, n_blocks, where, cfg.stats.confidence,
                           finishing)
    except BaseException as e:
        # the one place that stops them, whatever failed after they were submitted
        _stop_finishing(ex, finishing, drain=isinstance(e, Exception))
        _write_failed_summary(run_url, so, sig, chash, e, t_start, cfg)
        raise
    finally:
        try:  # what this run's plan pass kept (tables no task released); best effort after a failure
            ex.run_everywhere(job.release_unit_tables, ctx.read_token)
        except Exception:  # noqa: BLE001 - a lost cluster must not hide the run's own error
            pass
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
        "mode": ex.mode,
        "execution": execution or cfg.execution.mode,
        "workers": ex.n_workers,
        "scoring_seconds": round(scoring_seconds, 3),
        "rows_scored": bar.scored_rows,       # by this run (not the resumed tasks')
        "pairs_per_s": round(bar.rate(), 1),  # the bar's rate counts from t_plan too
    }

    def write_summary():
        with_retries(lambda: outputs.write_summary(run_url, summary, so), retries, "writing _summary.json", log)

    if not final["rows"]:  # before strict mode: nothing scored is the bigger problem
        summary["status"] = "failed: no row scored"
        summary["seconds"] = round(time.perf_counter() - t_start, 3)
        write_summary()
        raise NoRowsError(no_rows_message(spec, final, run_url), summary)
    if cfg.strict and final["quarantined"]:
        summary["status"] = "failed: strict mode and quarantined records"
        summary["seconds"] = round(time.perf_counter() - t_start, 3)
        write_summary()
        raise StrictModeError(f"strict: {final['quarantined']} record(s) quarantined "
                              f"({final['quarantine_reasons']}); see {run_url}/quarantine/", summary)

    # every part on disk is this run's and holds what it counted; the inputs are still those planned
    files = with_retries(lambda: outputs.verify_parts(run_url, so, len(tasks), chash, final["rows"],
                                                      final["quarantined"]),
                         retries, "checking the part files", log)
    changed = outputs.changed_inputs(inputs, with_retries(lambda: outputs.list_inputs(spec), retries,
                                                          "listing the inputs again", log))
    if changed:
        raise RunFolderError(f"the inputs changed while this run was running ({outputs.describe(changed)}); "
                             f"no _SUCCESS written in {run_url}: run again to score them")
    with_retries(lambda: outputs.write_stats(run_url, rows, sig, chash, cfg.stats.confidence, so), retries,
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
        exact_rows = ex.submit(job.exact_bootstrap, *args, key=f"rouge-exact-{uuid.uuid4().hex[:8]}",
                               retries=retries, what="the exact bootstrap").result()
        with_retries(lambda: outputs.write_exact(run_url, exact_rows, sig, chash, so), retries,
                     "writing the exact bootstrap", log)
    summary["seconds"] = round(time.perf_counter() - t_start, 3)
    summary["finished_at"] = outputs.utc_now()   # orders run histories (compare --history)
    write_summary()
    lease.stop_heartbeat()  # nothing of the run is written after _SUCCESS, the lease included
    # what killed writes of earlier attempts left (every task of this run has ended)
    with_retries(lambda: outputs.remove_temp_files(run_url, so, files), retries, "removing temp files", log)
    lease.check()
    outputs.pause_point("success")
    with_retries(lambda: outputs.mark_success(run_url, so), retries, "writing _SUCCESS", log)
    return RunResult(run_url, summary, rows, exact_rows, sig, chash)


def _submit_task(ex, spec, t, ctx, retries: int, nonce: str, n_blocks: int, done: set, where: dict):
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
    what = f"task {t.key}"
    if n_blocks <= 1 or earlier:
        return ex.submit(job.run_task, spec, t, ctx, kwargs={"earlier": earlier}, key=key, retries=retries, what=what,
                         **near, **order)
    prep = ex.submit(job.prepare_split, spec, t, ctx, key=f"{key}-prep", retries=retries, what=what, **near, **order)
    blocks = [ex.submit(job.split_block, prep, k, n_blocks, ctx.scoring, key=f"{key}-block-{k:03d}",
                        retries=retries, what=what, **order) for k in range(n_blocks)]
    return ex.submit(job.finish_split, spec, t, ctx, prep, *blocks, kwargs={"earlier": earlier}, key=key,
                     retries=retries, what=what, **order)


def _run_tasks(ex, spec, tasks, ctx, retries: int, done: set, bar, n_blocks: dict, where: dict,
               confidence: float, finishing: list = ()) -> dict:
    """Submit every task not finished in place (``finishing``: :func:`make_plan`), the merge
    tree and its finalisation (:func:`job.finalize_results`); raise the first task failure
    (after its retries)."""
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
            fut = _submit_task(ex, spec, t, ctx, retries, nonce, n_blocks[t.index], done, where)
            covers[fut.key] = [t]
            leaves.append(fut)
    level, depth, merges = list(leaves), 0, []
    while len(level) > FAN_IN:
        level = [ex.submit(job.merge_results, *level[i:i + FAN_IN], key=f"rouge-merge-{nonce}-{depth}-{i // FAN_IN:05d}",
                           retries=retries) for i in range(0, len(level), FAN_IN)]
        merges += level
        depth += 1
    root = ex.submit(job.finalize_results, confidence, *level, key=f"rouge-final-{nonce}", retries=retries)
    merges.append(root)
    # a finished leaf's result (its statistics) is released once its merge has run:
    # only the futures still pending are held here
    pending = set(leaves)
    completed = ex.as_completed(leaves)
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
        ex.cancel(list(pending) + merges)
        if isinstance(e, Exception):  # not on Ctrl-C: the user asked to stop now
            ex.wait_stopped(nonce)  # (run() cancels and drains the finish tasks)
        raise


def _failed_what(e: BaseException, ts: list, key: str) -> str:
    """Which task failed, for the error: the one a finish_in_place named on the exception, else
    the leaf's only task, else its first."""
    named = getattr(e, job.FAILED_TASK_ATTR, None)
    if named:
        return f"task {named}"
    if len(ts) == 1:
        return f"task {ts[0].key}"
    return f"one of the {len(ts)} tasks finished in place from task {ts[0].key}" if ts else key


def _stop_finishing(ex, finishing, drain: bool) -> None:
    """Cancel :func:`job.finish_in_place` futures and (``drain``; not on Ctrl-C, when the user
    asked to stop now) wait for those running (:meth:`DaskExecutor.wait_stopped`)."""
    if finishing:
        ex.cancel([fin.future for fin in finishing])
        if drain:
            ex.wait_stopped(*(fin.future.key for fin in finishing))


def _write_failed_summary(run_url: str, so: dict, sig: str, chash: str, e: BaseException, t_start: float,
                          cfg=None) -> None:
    """Best effort: ``_summary.json`` with the error, so ``rouge-pipeline show`` can say why
    (its message without the config's credentials: pipeline.redaction)."""
    from pipeline.redaction import Redactor

    try:
        msg = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        msg = Redactor().add_config(cfg.to_dict(redact=False) if cfg is not None else {}).text(msg)
        outputs.write_summary(run_url, {"status": f"failed: {msg}", "signature": sig, "config_hash": chash,
                                        "seconds": round(time.perf_counter() - t_start, 3)}, so)
    except Exception:  # noqa: BLE001 - the original error matters more
        pass


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
