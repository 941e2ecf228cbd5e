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
from pipeline.errors import ConfigError, NoRowsError, RunFailedError, StrictModeError
from pipeline.io.paths import compression_of, get_fs
from pipeline.io.readers import duplicate_warning, field_hints, listed_sizes
from pipeline.io.readers import plan_units as plan_units_of
from pipeline.execution import cluster, warmup
from pipeline.execution.executors import DaskExecutor, SyncExecutor, value
from pipeline.execution.progress import Progress
from pipeline.execution.waves import Outcome, TaskFailed, Waves
from pipeline import runfolder as outputs
from pipeline.runfolder import (
    META_CONFIG_HASH, META_SIGNATURE, RunFolderBusyError, RunFolderError, RunStopped,
)
from pipeline.redaction import HiddenOptions, Redactor, redact_url
from pipeline.runfolder import names
from pipeline.runfolder.names import PLAN_FORMAT
from pipeline.signature import Signature

# On a cluster, wave 1 scores a unit's first WAVE1_SLICES slices where it read them and leaves
# the rest to wave 2 (at most one task a worker per unit, each reading the unit once), so a few
# large files are spread over the workers; target_rows cuts large line files into byte ranges.
WAVE1_SLICES = 2


# Errors that retrying cannot fix: reported at once (they name the file, line or field).
PERMANENT_ERRORS = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError, ValueError,
                    TypeError, KeyError, ImportError, RunFolderError, RunFolderBusyError, RunStopped, job.HashCollisionError)


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


def no_rows_message(spec, final: job.Totals, run_url: str) -> str:
    q = final.quarantined
    if q:
        top = sorted(final.quarantine_reasons.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
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
    return DaskExecutor(client, PERMANENT_ERRORS)


def check(cfg, log=_log_default, execution: str | None = None, started: float | None = None):
    """A run's refusals that cost a listing, not a compile or a cluster: the inputs listed (a
    missing one leaves nothing in the output location), a ``--reuse`` run opened and checked,
    the run folder inspected.  Returns what :func:`run` continues from (``checked=``)."""
    r = _Run(cfg, log, execution, started)
    inputs = r.retry("listing the inputs", outputs.list_inputs, r.spec)
    r.open_previous()   # a --reuse run that cannot be trusted is refused before the folder is touched
    r.retry(f"inspecting the run folder {r.run_url}", outputs.precheck_run_folder, r.run_url, r.so,
            cfg.output.overwrite)
    return r, inputs


def run(cfg, client=None, progress: bool | None = True, log=_log_default, stream=None,
        execution: str | None = None, started: float | None = None, compile_seconds: float | None = None,
        checked=None) -> RunResult:
    """Run ``cfg`` on ``client`` (``None``: synchronously, in this process), holding the run
    folder's lease (:class:`pipeline.runfolder.Lease`) throughout; ``execution``: how
    :func:`run_config` chose where (the summary's ``execution``); ``started``: the
    ``time.perf_counter()`` the summary's ``seconds`` count from (default: now);
    ``compile_seconds``: of those, the kernels' compile; ``checked``: :func:`check`'s result
    for ``cfg``, when the caller checked first."""
    r, inputs = checked or check(cfg, log, execution, started)
    r.compile_seconds = compile_seconds
    lease = outputs.Lease(r.run_url, r.so, log)
    r.retry(f"taking the lease of {r.run_url}", lease.acquire)
    try:
        return _run_held(r, _executor(client, log), lease, inputs, progress, stream)
    finally:
        lease.release()


def _run_held(r: _Run, ex, lease, inputs: dict, progress, stream) -> RunResult:
    """The run, its folder's lease held: the steps of docs/ARCHITECTURE.md's data flow."""
    r.identify(inputs)
    done = r.prepare_folder(inputs)
    outcome, bar = r.score(ex, lease, inputs, done, progress, stream)
    summary = r.summary(outcome, bar, ex)
    r.check_rows(outcome.final, summary)
    r.warn(summary)
    files, parts, hashes = r.verify_parts(outcome)
    summary[outputs.PARTS_KEY] = parts   # what a reader holds the folder to (runfolder.whole)
    summary[outputs.PART_HASHES_KEY] = hashes
    r.check_inputs(inputs)
    r.write_statistics(outcome.final)
    exact_rows = r.exact_bootstrap(ex, outcome.final)
    r.finish(lease, summary, files)
    return RunResult(r.run_url, summary, outcome.final.stats_rows, exact_rows, r.sig, r.chash)


class _Run:
    """One run of a config: what it is (folder, input, signature, plan) and its steps, each a
    method; the driver's own storage access goes through :meth:`retry`."""

    def __init__(self, cfg, log, execution: str | None, started: float | None = None):
        self.t_start = time.perf_counter() if started is None else started
        self.compile_seconds = None
        self.cfg, self.log, self.execution = cfg, log, execution
        self.run_url = cfg.output.url.rstrip("/")
        self.so = HiddenOptions(cfg.storage_options)   # task arguments: logged by a worker when one fails
        self.spec = cfg.input_spec()
        self.retries = cfg.execution.retries
        self.sig = self.chash = self.pid = ""
        self.units = 0
        self.scoring_seconds = 0.0
        self.previous = None   # job.Previous: the run whose rows are reused (--reuse)

    def retry(self, what: str, fn, *args):
        """``fn(*args)``, retried on transient errors (:func:`with_retries`)."""
        return with_retries(lambda: fn(*args), self.retries, what, self.log)

    def seconds(self) -> float:
        return round(time.perf_counter() - self.t_start, 3)

    def identify(self, inputs: dict) -> None:
        """The signature, the config hash and the plan's identity (settings and inputs)."""
        self.sig = str(Signature.from_config(self.cfg))
        self.chash = self.cfg.config_hash()
        self.pid = outputs.plan_id(self.chash, _plan_settings(self.cfg), inputs)

    def open_previous(self) -> None:
        """``execution.reuse``: the previous run, opened and checked (:func:`job.open_previous`)."""
        url = self.cfg.execution.reuse
        if not url:
            return
        self.sig = self.sig or str(Signature.from_config(self.cfg))
        try:
            self.previous, why = self.retry(f"opening the run to reuse {url}", job.open_previous, url, self.so,
                                            self.sig, self.cfg.scoring.diagnostics, self.run_url,
                                            job.reader_fields(self.spec))
        except ConfigError as e:
            if self.cfg.execution.reuse_untrusted != "rescore":
                raise
            self.previous, why = None, f"nothing reused, every row is scored ({e})"
        if why:
            self.log(f"reuse: {redact_url(why)}")
        else:
            self.log(f"reuse: rows of {redact_url(url)} whose digest is unchanged are copied, the others scored")

    def prepare_folder(self, inputs: dict) -> dict:
        """The run folder prepared for this run; returns the slices an earlier run finished
        (listed with the folder): wave 1 loads them, not scores."""
        done = self.retry(f"preparing the run folder {self.run_url}", outputs.prepare_run_folder, self.cfg,
                          self.run_url, self.so, self.sig, self.chash, _plan_settings(self.cfg),
                          self.cfg.output.overwrite, self.log, inputs, self.pid)
        outputs.pause_point("prepared")
        return done

    def unit_context(self, ex) -> job.UnitContext:
        cfg = self.cfg
        return job.UnitContext(run_url=self.run_url, scoring=job.ScoringSettings.from_config(cfg.scoring),
                               seed=cfg.stats.seed, n_boot=cfg.stats.n_boot,
                               metadata={META_SIGNATURE: self.sig, META_CONFIG_HASH: self.chash},
                               storage_options=self.so, plan_id=self.pid, keep_texts=cfg.output.keep_texts,
                               stop=ex.new_flag(f"rouge-stop-{uuid.uuid4().hex[:8]}"))

    def score(self, ex, lease, inputs: dict, done: dict, progress, stream) -> tuple[Outcome, Progress]:
        """The units, then waves 1 and 2 and the statistics' merge: (:class:`Outcome`, the
        progress bar).  Whatever fails stops the tasks submitted, and the summary says why."""
        ctx = self.unit_context(ex)
        waves = None
        try:
            self.warm(ex, ctx)
            t_plan = time.perf_counter()
            units = plan_units(self.cfg, self.spec, self.run_url, self.so, self.log, self.pid, inputs)
            if done:
                self.log(f"resume: {sum(len(k) for k in done.values())} slice(s) of {len(done)} of {len(units)} "
                         "units already written")
            bar = Progress(len(units), None, stream=stream, enabled=bool(progress), label="scoring", unit="units",
                           t0=t_plan)
            # reusing, a slice costs about its read: wave 1 writes all of its unit's (one read a unit)
            first = WAVE1_SLICES if ex.distributed and self.previous is None else None
            waves = Waves(ex, self.spec, units, ctx, self.cfg.execution.target_cost or job.DEFAULT_TARGET_COST,
                          self.retries, done, self.cfg.stats.confidence, first, bar, self.log, self.previous)
            lease.on_lost = waves.halt   # another run took the folder: stop writing now, not at the end
            outcome = self.run_waves(waves, lease, bar)
        except BaseException as e:
            # the one place that stops them, whatever failed after they were submitted
            if waves is not None:
                waves.stop(drain=isinstance(e, Exception))
            _write_failed_summary(self.run_url, self.so, self.sig, self.chash, e, self.t_start, self.cfg)
            raise
        self.scoring_seconds = time.perf_counter() - t_plan
        self.units = len(units)
        return outcome, bar

    def warm(self, ex, ctx) -> None:
        if not ex.distributed:
            return
        t0 = time.perf_counter()
        # with this run's settings: a unicode or rouge155 profile builds its tables and loads its
        # kernels here, not inside each worker's first task (local workers share this machine's
        # cache, which run_config filled first)
        ex.warm(ctx.scoring, per_host=self.cfg.execution.mode == "scheduler")
        self.log(f"workers warm ({ex.n_workers} workers) in {time.perf_counter() - t0:.2f}s")

    def run_waves(self, waves: Waves, lease, bar: Progress) -> Outcome:
        try:
            outcome = waves.run()
        except TaskFailed as e:
            if lease.lost is not None:
                lease.check()   # raises: this run lost its lease
            raise _task_error(e.error, e.what, self.retries) from e.error
        finally:
            bar.close()
        waves.close()
        if outcome.split:
            self.log(f"{outcome.split} oversized example(s): rougeLsum in blocks of reference sentences")
        return outcome

    def summary(self, outcome: Outcome, bar: Progress, ex) -> dict:
        final = outcome.final
        return {
            "status": "ok",
            "signature": self.sig,
            "config_hash": self.chash,
            "rows": final.rows,
            "quarantined": final.quarantined,
            "quarantined_by_reason": final.quarantine_reasons,
            "systems": final.systems,
            "units": self.units,
            "tasks": outcome.tasks,
            "tasks_resumed": outcome.resumed,
            "split_examples": outcome.split,
            "duplicate_units": outcome.duplicate_units,
            "reuse": redact_url(self.previous.url) if self.previous is not None else None,
            "rows_reused": outcome.reused,        # copied from that run (--reuse), not scored
            "cand_tokens": final.cand_tokens,
            "ref_tokens": final.ref_tokens,
            "mode": ex.mode,
            "execution": self.execution or self.cfg.execution.mode,
            "workers": ex.n_workers,
            "scoring_seconds": round(self.scoring_seconds, 3),
            "rows_scored": bar.scored_rows,       # by this run (not the resumed tasks')
            "pairs_per_s": round(bar.rate(), 1),  # the bar's rate counts from the units' listing too
            **({"compile_seconds": round(self.compile_seconds, 3)} if self.compile_seconds else {}),
        }

    def warn(self, summary: dict) -> None:
        """A quarantine made mostly of repeated ids says so, in the summary and on stderr: the
        input's system field is probably unmapped (several systems read as one)."""
        warning = duplicate_warning(self.spec, summary["rows"], summary["quarantined_by_reason"])
        if warning:
            summary["warnings"] = [warning]
            self.log(f"warning: {warning}")

    def write_summary(self, summary: dict) -> None:
        self.retry("writing _summary.json", outputs.write_summary, self.run_url, summary, self.so)

    def check_rows(self, final: job.Totals, summary: dict) -> None:
        """A run with no row scored, or (strict) with quarantined records, fails here, its summary
        written."""
        if not final.rows:  # before strict mode: nothing scored is the bigger problem
            summary["status"] = "failed: no row scored"
            summary["seconds"] = self.seconds()
            self.write_summary(summary)
            raise NoRowsError(no_rows_message(self.spec, final, self.run_url), summary)
        if self.cfg.strict and final.quarantined:
            summary["status"] = "failed: strict mode and quarantined records"
            summary["seconds"] = self.seconds()
            self.write_summary(summary)
            raise StrictModeError(f"strict: {final.quarantined} record(s) quarantined "
                                  f"({final.quarantine_reasons}); see {self.run_url}/quarantine/", summary)

    def verify_parts(self, outcome: Outcome) -> tuple[list, dict, dict]:
        """Every part on disk is this run's and holds what it counted; returns the folder's files,
        the parts (``{part: [rows, bytes]}``) and their content hashes, for the summary."""
        return self.retry("checking the part files", outputs.verify_parts, self.run_url, self.so, outcome.slices,
                          self.chash, outcome.final.rows, outcome.final.quarantined)

    def check_inputs(self, inputs: dict) -> None:
        """The inputs are still those planned, or no ``_SUCCESS``."""
        changed = outputs.changed_inputs(inputs, self.retry("listing the inputs again", outputs.list_inputs,
                                                            self.spec))
        if changed:
            raise RunFolderError(f"the inputs changed while this run was running ({outputs.describe(changed)}); "
                                 f"no _SUCCESS written in {self.run_url}: run again to score them")

    def write_statistics(self, final: job.Totals) -> None:
        """The statistics, and the profile's own files (rouge155: ROUGE-1.5.5's printed averages)."""
        cfg = self.cfg
        self.retry("writing the statistics", outputs.write_stats, self.run_url, final.stats_rows, self.sig,
                   self.chash, cfg.stats.confidence, self.so)
        profile = profiles.get(cfg.scoring.profile)
        if not profile.outputs:
            return

        def read(system, columns):
            return outputs.read_scores(self.run_url, system, columns, self.so)

        docs = profile.extra_outputs(final.systems, cfg.scoring, cfg.stats, read)
        self.retry(f"writing {', '.join(profile.outputs)}", outputs.write_profile_outputs, self.run_url, docs,
                   profile.outputs, self.so)

    def exact_bootstrap(self, ex, final: job.Totals) -> list:
        """``stats.bootstrap: exact``: rouge-score's bootstrap from the parts (a task), written."""
        st = self.cfg.stats
        if st.bootstrap != "exact" or st.n_boot <= 0:
            return []
        args = (self.run_url, final.systems, list(self.cfg.scoring.rouge_types), st.seed, st.n_boot, st.confidence,
                self.so)
        rows = value(ex.submit(job.exact_bootstrap, *args, key=f"rouge-exact-{uuid.uuid4().hex[:8]}",
                               retries=self.retries, what="the exact bootstrap"))
        self.retry("writing the exact bootstrap", outputs.write_exact, self.run_url, rows, self.sig, self.chash,
                   self.so)
        return rows

    def finish(self, lease, summary: dict, files: list) -> None:
        """The summary, then ``_SUCCESS``: the run's last write."""
        summary["seconds"] = self.seconds()
        summary["finished_at"] = outputs.utc_now()   # orders run histories (compare --history)
        self.write_summary(summary)
        lease.stop_heartbeat()  # nothing of the run is written after _SUCCESS, the lease included
        # what killed writes of earlier attempts left (every task of this run has ended)
        self.retry("removing temp files", outputs.remove_temp_files, self.run_url, self.so, files)
        outputs.pause_point("success")
        lease.check()   # right before: a lease deleted or taken meanwhile leaves no _SUCCESS
        self.retry("writing _SUCCESS", outputs.mark_success, self.run_url, self.so)


def _write_failed_summary(run_url: str, so: dict, sig: str, chash: str, e: BaseException, t_start: float,
                          cfg=None) -> None:
    """Best effort: ``_summary.json`` with the error, so ``rouge-pipeline show`` can say why
    (its message without the config's credentials: pipeline.redaction)."""
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
# kernels not compiled yet: a run in this process below this many input bytes is scored in pure
# Python (pipeline.scoring.cold, ~1 MB of text a second) instead of waiting for the scoring kernels
PYTHON_FIRST_RUN_BYTES = 2 * 1024 * 1024


def estimate_input_bytes(cfg) -> int:
    """The input's uncompressed size, estimated from its listing (file sizes; no file is read)."""
    sizes = with_retries(lambda: listed_sizes(cfg.input_spec()), cfg.execution.retries, "listing the input")
    return sum((n or 0) * (COMPRESSION_RATIO if compression_of(url) else 1) for url, n in sizes.items())


def choose_mode(cfg, log=_log_default, size: int | None = None) -> tuple[str, str]:
    """(``local``/``scheduler``/``sync``, the summary's note) for ``cfg.execution.mode``
    (``size``: :func:`estimate_input_bytes`, when the caller has it)."""
    mode = cfg.execution.mode
    if mode != "auto":
        return mode, mode
    size = estimate_input_bytes(cfg) if size is None else size
    limit = AUTO_LOCAL_MIN_BYTES
    if size < limit:
        log(f"execution: in process (auto: input ~{size / 2**20:.1f} MiB < {limit / 2**20:.0f} MiB; "
            "--local or execution.mode: local starts the cluster)")
        return "sync", "auto: in process"
    log(f"execution: local cluster (auto: input ~{size / 2**20:.0f} MiB >= {limit / 2**20:.0f} MiB)")
    return "local", "auto: local cluster"


def run_config(cfg, progress: bool | None = True, log=_log_default, stream=None, debug: bool = False,
               started: float | None = None) -> RunResult:
    """Open the client the config asks for (auto / local / scheduler / sync) and run; the
    summary's ``seconds`` count from ``started`` (a ``time.perf_counter()``; default: now).  On a
    cluster, Dask's own log lines go to the run folder's log when the run fails (on stderr too
    with ``debug``), not to the terminal (:mod:`pipeline.execution.dasklogs`)."""
    started = time.perf_counter() if started is None else started
    ex = cfg.execution
    compiled_before = warmup.is_compiled()
    # the input listed once for both choices that need its size
    size = estimate_input_bytes(cfg) if ex.mode == "auto" or (ex.mode == "sync" and not compiled_before) else None
    mode, note = choose_mode(cfg, log, size)
    checked = check(cfg, log, note, started)   # a refusal before the compile and the cluster
    compiled = None
    if mode != "scheduler":  # this machine compiles once, before any local worker starts
        # a small run in this process scores in pure Python while the scoring kernels compile
        small = mode == "sync" and not compiled_before and size < PYTHON_FIRST_RUN_BYTES
        compiled = warmup.ensure_compiled(job.ScoringSettings.from_config(cfg.scoring), log, progress=bool(progress),
                                          file=stream, scoring=not small)
    timing = dict(compile_seconds=compiled, checked=checked)
    if mode == "sync":
        return run(cfg, None, progress=progress, log=log, stream=stream, execution=note, **timing)
    from pipeline.execution import dasklogs  # Dask is imported when a cluster opens (sync runs load none)

    with dasklogs.captured(debug) as dask_log, cluster.open_client(
            mode, ex.scheduler, ex.n_workers, ex.memory_limit, worker_profile=ex.worker_profile) as client:
        if mode == "local":   # its workers run here: their lines go to the same file
            client.register_plugin(dask_log.plugin())
        link = cluster.dashboard_link(client)
        if link:
            log(f"dashboard: {link}")
        try:
            return run(cfg, client, progress=progress, log=log, stream=stream, execution=note, **timing)
        except (RunFolderError, RunFolderBusyError, ConfigError):
            raise   # not this run's folder (another run's, a user's, a bad config): nothing written there
        except BaseException:
            _keep_dask_log(dask_log, cfg, log)
            raise


def _keep_dask_log(dask_log, cfg, log) -> None:
    """A failed run's Dask log into its run folder, once the run made it its own (``_run.json``);
    a failure to keep it never hides the run's own."""
    try:
        fs, path = get_fs(names.url(cfg.output.url, names.RUN_INFO), cfg.storage_options)
        if not fs.exists(path):
            return
        where = dask_log.save(cfg.output.url, HiddenOptions(cfg.storage_options))
    except Exception as e:  # noqa: BLE001 - the run's own error is the one to report
        log(f"Dask's log of this run could not be kept in the run folder ({type(e).__name__})")
        return
    if where:
        log(f"Dask's log of this run (worker tracebacks): {where}")
