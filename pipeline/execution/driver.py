"""Run a :class:`pipeline.config.RunConfig`: units, wave 1, wave 2, statistics, outputs.

The run folder's names and files: :mod:`pipeline.runfolder`.  The job as plain Dask waves::

    units (from the input listing)
      -> wave 1: score_unit per unit (read, cut by cost, score and write each slice at once)
           -> brief (counts, slices left: to the client)   -> hashes -> later_duplicates (a worker)
           -> the statistics tree (merge_results, fan-in FAN_IN, on the workers)
      -> wave 2: the slices wave 1 left, oversized examples in blocks of reference sentences,
         units holding a later duplicate (scored again, the duplicate dropped)
      -> finalize_results (a worker) -> statistics, summary, _SUCCESS

Parts and markers are named by (unit, slice), both functions of the data and the settings, so
the worker that reads a unit writes it; outputs are the same files whatever the cluster.

Failures (issue #5):

* Tasks are retried by Dask (``execution.retries``); a worker that dies (OOM, SIGKILL,
  preemption) is restarted by its nanny and its tasks rerun.  Every file a task writes has a
  deterministic name and is written atomically, so reruns overwrite, never duplicate.
* The driver's own storage access (run folder, plan, markers, statistics, ``_SUCCESS``) is
  retried with backoff on transient errors (:func:`with_retries`).
* A task that still fails raises: input/configuration errors as they are (they name the file,
  line or field), anything else as :class:`RunFailedError` naming the unit.  The run's stop flag
  (a ``distributed.Event``) is set, and the driver waits for the tasks still running, which
  check it before each write: nothing is written after :func:`run` returns.  ``_summary.json``
  then says ``failed: ...``; no statistics and no ``_SUCCESS`` are written; rerunning the same
  command resumes from the slices' markers.  A killed driver is the same: rerun to resume.

Security: outputs, markers and the plan are JSON and Parquet only.  Dask itself pickles task
arguments and results between client, scheduler and workers (that is how ``distributed``
works): use a cluster only on a trusted network; local clusters bind 127.0.0.1.
"""
from __future__ import annotations

import sys
import time
import uuid
from dataclasses import dataclass, field

from pipeline import job, profiles
from pipeline.errors import NoRowsError, RunFailedError, StrictModeError
from pipeline.io.paths import compression_of
from pipeline.io.readers import listed_sizes
from pipeline.io.readers import plan_units as plan_units_of
from pipeline.execution.executors import DaskExecutor, SyncExecutor
from pipeline.execution.waves import TaskFailed, Waves
from pipeline import runfolder as outputs
from pipeline.runfolder import (
    META_CONFIG_HASH, META_SIGNATURE, RunFolderBusyError, RunFolderError, RunStopped,
)
from pipeline.runfolder.names import PLAN_FORMAT
from pipeline.redaction import HiddenOptions
from pipeline.signature import Signature

# On a cluster, wave 1 scores a unit's first WAVE1_SLICES slices where it read them and leaves
# the rest to wave 2 (at most one task a worker per unit, each reading the unit once), so a few
# large files are spread over the workers; target_rows cuts large line files into byte ranges.
WAVE1_SLICES = 2


# Errors that retrying cannot fix: reported at once (they name the file, line or field).
PERMANENT_ERRORS = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError, ValueError,
                    TypeError, KeyError, RunFolderError, RunFolderBusyError, RunStopped, job.HashCollisionError)


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


def plan_units(cfg, spec, run_url: str, so: dict, log, plan_id: str, inputs: dict | None = None) -> list:
    """The units: from ``_plan.json`` when it is this plan's (same settings and inputs), else
    from the input listing (:func:`pipeline.io.readers.plan_units`), stored there for a rerun."""
    retries = cfg.execution.retries
    stored = with_retries(lambda: outputs.read_plan(run_url, so), retries, "reading _plan.json", log)
    settings = _plan_settings(cfg)
    if (stored is not None and stored.get("plan_format") == PLAN_FORMAT and stored.get("settings") == settings
            and stored.get("plan_id") == plan_id):
        units = [job.unit_from_dict(d) for d in stored["units"]]
        log(f"plan: {len(units)} units (from _plan.json)")
        return units
    t0 = time.perf_counter()
    units = with_retries(lambda: plan_units_of(spec, cfg.execution.target_rows), retries, "planning the input", log)
    log(f"plan: {len(units)} units in {time.perf_counter() - t0:.2f}s")
    doc = {"plan_format": PLAN_FORMAT, "settings": settings, "plan_id": plan_id, "inputs": inputs or {},
           "units": [job.unit_to_dict(u) for u in units]}
    with_retries(lambda: outputs.write_plan(run_url, doc, so), retries, "writing _plan.json", log)
    return units


def _executor(client, log):
    """Where the tasks run: on ``client``'s cluster, or (None) in this process."""
    if client is None:
        return SyncExecutor(PERMANENT_ERRORS, log)
    return DaskExecutor(client)


def run(cfg, client=None, progress: bool | None = True, log=_log_default, stream=None,
        execution: str | None = None) -> RunResult:
    """Run ``cfg`` on ``client`` (``None``: synchronously, in this process), holding the run
    folder's lease (:class:`pipeline.runfolder.Lease`) throughout; ``execution``: how
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
    # the slices an earlier run finished (listed with the folder): wave 1 loads them, not scores
    done = with_retries(lambda: outputs.prepare_run_folder(cfg, run_url, so, sig, chash, _plan_settings(cfg),
                                                           cfg.output.overwrite, log, inputs, pid),
                        retries, f"preparing the run folder {run_url}", log)
    outputs.pause_point("prepared")
    metadata = {META_SIGNATURE: sig, META_CONFIG_HASH: chash}
    nonce = uuid.uuid4().hex[:8]
    ctx = job.UnitContext(run_url=run_url, scoring=job.ScoringSettings.from_config(cfg.scoring),
                          seed=cfg.stats.seed, n_boot=cfg.stats.n_boot, metadata=metadata, storage_options=so,
                          plan_id=pid, stop=ex.new_flag(f"rouge-stop-{nonce}"))
    waves = None
    try:
        if ex.distributed:
            t0 = time.perf_counter()
            # with this run's settings: a unicode or rouge155 profile builds its tables and loads
            # its kernels here, not inside each worker's first task (local workers share this
            # machine's cache, which run_config filled first)
            ex.warm(ctx.scoring, per_host=cfg.execution.mode == "scheduler")
            log(f"workers warm ({ex.n_workers} workers) in {time.perf_counter() - t0:.2f}s")
        t_plan = time.perf_counter()
        units = plan_units(cfg, spec, run_url, so, log, pid, inputs)
        if done:
            log(f"resume: {sum(len(k) for k in done.values())} slice(s) of {len(done)} of {len(units)} units "
                "already written")
        bar = Progress(len(units), None, stream=stream, enabled=bool(progress), label="scoring", unit="units",
                       t0=t_plan)
        waves = Waves(ex, spec, units, ctx, cfg.execution.target_cost or job.DEFAULT_TARGET_COST, retries, done,
                      cfg.stats.confidence, WAVE1_SLICES if ex.distributed else None, bar, log)
        lease.on_lost = waves.halt   # another run took the folder: stop writing now, not at the end
        try:
            outcome = waves.run()
        except TaskFailed as e:
            if lease.lost is not None:
                lease.check()   # raises: this run lost its lease
            raise _task_error(e.error, e.what, retries) from e.error
        finally:
            bar.close()
        waves.close()
        final = outcome.final
        if outcome.split:
            log(f"{outcome.split} oversized example(s): rougeLsum in blocks of reference sentences")
    except BaseException as e:
        # the one place that stops them, whatever failed after they were submitted
        if waves is not None:
            waves.stop(drain=isinstance(e, Exception))
        _write_failed_summary(run_url, so, sig, chash, e, t_start, cfg)
        raise
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
        "units": len(units),
        "tasks": outcome.tasks,
        "tasks_resumed": outcome.resumed,
        "split_examples": outcome.split,
        "duplicate_units": outcome.duplicate_units,
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
    files = with_retries(lambda: outputs.verify_parts(run_url, so, outcome.slices, chash, final["rows"],
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
            return outputs.read_scores(run_url, system, columns, so)

        docs = profile.extra_outputs(final["systems"], cfg.scoring, cfg.stats, read)
        with_retries(lambda: outputs.write_profile_outputs(run_url, docs, profile.outputs, so),
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
        from pipeline.execution.warmup import ensure_compiled

        ensure_compiled(job.ScoringSettings.from_config(cfg.scoring), log)
    with open_client(mode, ex.scheduler, ex.n_workers, ex.memory_limit, worker_profile=ex.worker_profile) as client:
        link = dashboard_link(client)
        if link:
            log(f"dashboard: {link}")
        return run(cfg, client, progress=progress, log=log, stream=stream, execution=note)
