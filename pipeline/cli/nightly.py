"""``rouge-pipeline nightly jobs/nightly.yaml``: a scheduled run into a dated run folder, then the gate.

It validates the job file against its JSON schema (``pipeline/cli/nightly.schema.json``, also at
``jobs/nightly.schema.json``) at run time, with jsonschema -- unknown keys are refused with a "did you mean" --
then runs ``score --config <config> --output <output_root>/<date> [--reuse <the previous in-control night>]``
(``--no-reuse``: without; :func:`reuse_argv`) (date: today in UTC, formatted
with ``date_format``; ``--date`` must be one folder name: no ``/``, ``\\`` or ``..``).  A relative
``config`` is read next to the job file, so ``--dry-run`` and the real run read the same file from
any working directory.  Each day gets a new folder; earlier folders are never touched, and a rerun
on the same day resumes that day's folder.  Then, unless ``compare: false``, it runs
``compare <new> --previous`` and writes the HTML report to ``<new>/compare.html`` (any fsspec URL).
``schedule`` is documentation only (the platform's scheduler decides when the job runs).

The night ends in one verdict and one exit status (:data:`EXIT_STATUSES`, docs/errors.md): 0 no
change, 1 moved, 2 job-file/usage error or the comparison failed, 3 not comparable, 4 inconclusive,
10 the scoring failed (its own status and line are printed; never reported as a comparison's
status), 124 the scoring ran past ``timeout_minutes`` (stopped as Ctrl-C would stop it: lease
released, finished work kept for the next run), 130 interrupted.  ``notify:`` POSTs a
Slack-compatible JSON message for the verdicts it lists (``pipeline.cli.notify``); a webhook that
is down or slow prints one warning line and never changes the exit status.
``keep_previous`` may only be ``true``: nightly never deletes a run folder.

A moved or not comparable night keeps alarming every night until accepted: its alarm line and
its notification name the command, ``nightly JOB --accept DATE_OR_RUN --reason ...`` (scores
nothing; as ``rouge-pipeline accept RUN``, :func:`pipeline.gate.control.accept_run`).
"""
from __future__ import annotations

import _thread
import contextlib
import datetime
import difflib
import io
import json
import logging
import re
import shlex
import sys
import threading
import time
from pathlib import Path

from pipeline.cli import notify
from pipeline.errors import (EXIT_CONFIG, EXIT_INCONCLUSIVE, EXIT_INTERRUPTED, EXIT_MOVED, EXIT_NOT_COMPARABLE,
                             EXIT_OK, EXIT_SCORING_FAILED, EXIT_TIMEOUT, CompareError)
from pipeline.gate.format import format_result

SCHEMA_PATH = Path(__file__).with_name("nightly.schema.json")
COMPARE_FLAGS = {"band": "--band", "min_effect": "--min-effect", "min_coverage": "--min-coverage", "k": "--k",
                 "window": "--window", "min_history": "--min-history", "method": "--band-method",
                 "alpha": "--alpha", "baseline": "--baseline",
                 "allow_different_settings": "--allow-different-settings"}

# The night's verdict -> nightly's exit status: the one table docs/errors.md, the cron wrapper, the
# K8s podFailurePolicy and the Slurm/DaskJob specs follow.
EXIT_STATUSES = {
    "no_change": EXIT_OK,
    "moved": EXIT_MOVED,                        # a row moved out of its band, up or down
    "job_error": EXIT_CONFIG,                   # the job file or the command line
    "compare_failed": EXIT_CONFIG,              # compare itself failed (its line says why)
    "not_comparable": EXIT_NOT_COMPARABLE,
    "inconclusive": EXIT_INCONCLUSIVE,          # nothing moved, but a move of min_effect could go unseen
    "scoring_failed": EXIT_SCORING_FAILED,      # the scoring's own status and line are printed
    "timed_out": EXIT_TIMEOUT,
    "interrupted": EXIT_INTERRUPTED,
}
# compare's exit status -> the night's verdict; any other status: "compare_failed".  A 1, 3 or 4
# counts only with compare's JSON result in hand: without one it was an error's status (a
# run-folder error is 4, an unforeseen one may be 1), i.e. "compare_failed".
COMPARE_VERDICTS = {EXIT_OK: "no_change", EXIT_MOVED: "moved", EXIT_NOT_COMPARABLE: "not_comparable",
                    EXIT_INCONCLUSIVE: "inconclusive", EXIT_INTERRUPTED: "interrupted"}
# compare verdicts that are only trusted with the comparison's result in hand
_NEED_RESULT = {"moved", "not_comparable", "inconclusive"}
_DATE = re.compile(r"^[0-9A-Za-z][0-9A-Za-z_.:+-]*$")


def add_parser(sub) -> None:
    n = sub.add_parser("nightly", help="run a scheduled job (jobs/nightly.yaml) into a dated run folder, then gate")
    n.add_argument("job", help="job file: name, config, schedule, output_root (jobs/nightly.schema.json)")
    n.add_argument("--date", help="the run folder's date (default: today, UTC)")
    n.add_argument("--scheduler", help="override the job's scheduler address")
    n.add_argument("--sync", action="store_true", help="run in this process without Dask")
    n.add_argument("--dry-run", action="store_true", help="print the score and compare commands and exit")
    n.add_argument("--no-reuse", action="store_true", help="score every example (by default the rows of the "
                   "previous in-control night of the same settings whose examples are unchanged are reused)")
    n.add_argument("--accept", metavar="DATE_OR_RUN", help="accept that night's change on purpose (a date under "
                   "output_root, or a run folder URL) instead of running: the next nights compare with it "
                   "(needs --reason; the same as rouge-pipeline accept RUN)")
    n.add_argument("--reason", help="--accept: why the change is accepted (recorded in the run folder)")
    n.add_argument("--by", help="--accept: who accepts it (default: $USER)")


def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def schema_errors(doc, sch: dict) -> list[str]:
    """The violations of ``doc`` against the JSON schema ``sch`` (jsonschema, draft 2020-12), one
    line each, at the key they concern: an unknown key with its closest allowed name, a failed
    ``oneOf`` by the alternative of the value's own type."""
    import jsonschema  # start-up: a third-party package, for a job file only

    found = sorted(jsonschema.Draft202012Validator(sch).iter_errors(doc), key=lambda e: list(map(str, e.path)))
    return [line for e in found for line in _error_lines(e)]


def _error_lines(e) -> list[str]:
    if e.validator in ("oneOf", "anyOf") and e.context:
        # the alternative of the value's own type explains best (a mapping: not "not a boolean")
        import jsonschema  # start-up: as in schema_errors

        def own(c) -> bool:
            t = e.validator_value[c.schema_path[0]].get("type")
            return t is None or any(jsonschema.Draft202012Validator.TYPE_CHECKER.is_type(e.instance, x)
                                    for x in ([t] if isinstance(t, str) else t))

        chosen = [c for c in e.context if own(c)] or e.context[:1]
        return [line for c in chosen for line in _error_lines(c)]
    at = ".".join(map(str, e.absolute_path)) or "the job"
    if e.validator == "additionalProperties":
        allowed = list(e.schema.get("properties", {}))
        lines = []
        for key in sorted(set(e.instance) - set(allowed), key=str):
            near = difflib.get_close_matches(str(key), allowed, n=1)
            lines.append(f"{at}: unknown key {key!r}" + (f" (did you mean {near[0]!r}?)" if near else "")
                         + f"; allowed: {', '.join(allowed)}")
        return lines
    if e.validator == "required":
        return [f"{at}: missing key {e.message.split(' is a required')[0]}"]
    return [f"{at}: {e.message}"]


# the night's journal: each step with its UTC time and level, for the cron log (the night's one
# verdict line stays the last line, as every command's failure line)
log = logging.getLogger("rouge_pipeline.nightly")
_LEVELS = {"no_change": logging.INFO, "inconclusive": logging.WARNING, "interrupted": logging.WARNING}


@contextlib.contextmanager
def _journal():
    """The journal to this process's stderr (as it is now: the command's masked stream) for the block."""
    handler = logging.StreamHandler(sys.stderr)
    fmt = logging.Formatter("%(asctime)s %(levelname)s nightly: %(message)s", "%Y-%m-%dT%H:%M:%SZ")
    fmt.converter = time.gmtime
    handler.setFormatter(fmt)
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    try:
        yield
    finally:
        log.removeHandler(handler)


# seconds in one of timeout_minutes' minutes (a test shortens it)
_MINUTE = 60.0


def validate_job(job) -> None:
    if isinstance(job, dict) and job.get("keep_previous") is False:
        raise ValueError("keep_previous: false is not supported: nightly never deletes earlier run folders "
                         "(remove old dated folders yourself); drop the key or set it to true")
    if isinstance(job, dict):
        notify.check_no_literal_url(job.get("notify"))   # before any message could echo the value
    errs = schema_errors(job, schema())
    if errs:
        raise ValueError("; ".join(errs))


def check_date(date: str) -> str:
    """``--date`` names one folder under ``output_root``: refused when it could name another."""
    if not _DATE.match(date) or ".." in date:
        raise ValueError(f"--date {date!r}: the run folder's date is one folder name under output_root "
                         "(letters, digits, '-', '_', '.', ':', '+'; no '/', '\\' or '..'), e.g. 2026-08-15")
    return date


def config_path(job: dict, job_file: str | None) -> str:
    """The job's ``config``: a URL or an absolute path as written, a relative path next to the job
    file (whatever the working directory); a local file must exist (so ``--dry-run`` says so too)."""
    config = str(job["config"])
    if "://" in config or Path(config).is_absolute() or job_file is None:
        path = config
    else:
        path = str(Path(job_file).parent / config)
    if "://" not in path and not Path(path).is_file():
        raise ValueError(f"config: {path}: no such file (a relative config is read next to the job file)")
    return path


def run_url(job: dict, date_or_run: str) -> str:
    """The run folder of a night: ``<output_root>/<date>`` for a date (one folder name, :func:`check_date`);
    a run folder URL or path (anything with a ``/``) as given."""
    value = str(date_or_run)
    if "/" in value:
        return value.rstrip("/")
    return f"{str(job['output_root']).rstrip('/')}/{check_date(value)}"


def score_argv(job: dict, date: str | None = None, scheduler: str | None = None, sync: bool = False,
               job_file: str | None = None) -> list[str]:
    validate_job(job)
    if date is None:
        date = datetime.datetime.now(datetime.timezone.utc).strftime(job.get("date_format") or "%Y-%m-%d")
    argv = ["score", "--config", config_path(job, job_file), "--output", run_url(job, check_date(date)),
            "--no-progress"]
    scheduler = scheduler or job.get("scheduler")
    if sync:
        argv.append("--sync")
    elif scheduler:
        argv += ["--scheduler", scheduler]
    return argv


def compare_argv(job: dict, new: str) -> list[str] | None:
    """``compare NEW --previous`` with the job's ``compare:`` options; a 0 is a value (``band: 0``
    alarms on any change), only a missing key or ``false`` leaves a flag out.  ``baseline``: a date
    is that night's folder under ``output_root`` (:func:`run_url`), a URL or path is used as given."""
    opts = job.get("compare", True)
    if opts is False:
        return None
    opts = opts if isinstance(opts, dict) else {}
    argv = ["compare", new, "--previous"]
    for key, flag in COMPARE_FLAGS.items():
        v = opts.get(key)
        if v is None or v is False:
            continue
        if key == "baseline":
            v = run_url(job, v)
        argv += [flag] if v is True else [flag, str(v)]
    return argv + ["--html", f"{new}/compare.html"]


def _with_timeout(main, argv: list[str], minutes) -> tuple[int, bool]:
    """``main(argv)``, interrupted after ``minutes`` as Ctrl-C would (the run stops, releases its
    lease and keeps what it finished); (status, whether the timeout stopped it)."""
    if not minutes:
        return main(argv), False
    fired = threading.Event()

    def stop() -> None:
        fired.set()
        _thread.interrupt_main()

    timer = threading.Timer(minutes * _MINUTE, stop)
    timer.daemon = True
    timer.start()
    try:
        status = main(argv)
    except KeyboardInterrupt:
        if not fired.is_set():
            raise
        status = EXIT_INTERRUPTED
    finally:
        timer.cancel()
    return status, fired.is_set()


class _LastLine:
    """stderr, passed through, remembering the last ``rouge-pipeline: ...`` line (a failure's line);
    everything but ``write`` is the wrapped stream's."""

    def __init__(self, stream):
        self._stream, self.last, self._buf = stream, None, ""

    def write(self, text: str) -> int:
        self._stream.write(text)
        self._buf += text
        *lines, self._buf = self._buf.split("\n")
        for line in lines:
            if line.startswith("rouge-pipeline: "):
                self.last = line
        return len(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _score(main, argv: list[str], job: dict) -> tuple[str, int, str | None]:
    """Run the scoring: (verdict, the scoring's own status, its failure line)."""
    tee = _LastLine(sys.stderr)
    old, sys.stderr = sys.stderr, tee
    try:
        status, timed_out = _with_timeout(main, argv, job.get("timeout_minutes"))
    finally:
        sys.stderr = old
    new = argv[argv.index("--output") + 1]
    if timed_out:
        line = (f"rouge-pipeline: nightly: {new}: the scoring did not finish within timeout_minutes="
                f"{job['timeout_minutes']} and was stopped (exit {EXIT_TIMEOUT}; the next run resumes the folder)")
        return "timed_out", status, line
    if status == EXIT_OK:
        return "no_change", status, None
    if status == EXIT_INTERRUPTED:
        return "interrupted", status, tee.last
    cause = (tee.last or "").removeprefix("rouge-pipeline: ") or "no message"
    line = (f"rouge-pipeline: nightly: the scoring of {new} failed with its status {status}: {cause} "
            f"(exit {EXIT_SCORING_FAILED}; nothing was compared)")
    return "scoring_failed", status, line


def _gate(main, gate: list[str]) -> tuple[str, dict | None, int]:
    """Run the comparison (its JSON captured, its table printed): (verdict, compare's result, its status)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(gate + ["--json"])
    text = out.getvalue()
    try:
        result = json.loads(text) if text.strip() else None
    except ValueError:
        result = None
    if result is not None and isinstance(result, dict) and "rows" in result:
        try:
            print(format_result(result))
        except (KeyError, TypeError, ValueError):   # a result of another shape: print it as it came
            print(text, end="")
    elif text:
        print(text, end="")
    verdict = COMPARE_VERDICTS.get(status, "compare_failed")
    if verdict in _NEED_RESULT and not isinstance(result, dict):
        verdict = "compare_failed"                    # e.g. a run-folder error with status 4 or 1
    return verdict, result if isinstance(result, dict) else None, status


def _gate_line(verdict: str, new: str, report: str, status: int, accept: str = "") -> str | None:
    """The night's one line on stderr; ``accept``: the command that accepts the change (moved, not
    comparable: the night keeps alarming every night until it is accepted)."""
    until = f"; it alarms every night until accepted on purpose: {accept}" if accept else ""
    if verdict == "moved":
        return (f"::error::rouge-pipeline nightly: the outputs of {new} moved out of the band; read the movers "
                f"above and {report}{until}")
    if verdict == "not_comparable":
        return (f"::error::rouge-pipeline nightly: {new} is not comparable with the earlier runs (reason above; "
                f"{report}){until}")
    if verdict == "inconclusive":
        return (f"::warning::rouge-pipeline nightly: {new}: inconclusive: nothing moved, but a move of min_effect "
                f"could have gone unseen (above; {report})")
    if verdict == "compare_failed":
        return f"::error::rouge-pipeline nightly: the comparison of {new} failed (compare's status {status}; above)"
    return None


def accept_command(job_file: str, date: str) -> str:
    """The exact command that accepts a night's change on purpose (printed with its alarm, and in
    the notification): the next nights compare with that night and are quiet again."""
    return (f"rouge-pipeline nightly {shlex.quote(str(job_file))} --accept {shlex.quote(date)} "
            '--reason "..."')


def _read_job(path: str) -> dict:
    import yaml  # start-up: a third-party package, for a job that runs only

    from pipeline import yaml12  # start-up: loads yaml, for a job that runs only

    try:
        with open(path, encoding="utf-8") as f:
            job = yaml12.load(f)
    except yaml.YAMLError as e:
        raise ValueError(str(e)) from e
    if not isinstance(job, dict):
        raise ValueError("the top level must be a mapping")
    return job


def _load(args) -> tuple[dict, list[str], list[str] | None]:
    job = _read_job(args.job)
    argv = score_argv(job, args.date, args.scheduler, args.sync, job_file=args.job)
    new = argv[argv.index("--output") + 1]
    if not getattr(args, "no_reuse", False):
        argv += reuse_argv(argv[argv.index("--config") + 1], new)
    return job, argv, compare_argv(job, new)


def reuse_argv(config: str, new: str) -> list[str]:
    """``["--reuse", RUN, "--set", "execution.reuse_untrusted=rescore"]``: the previous in-control
    night of the night's settings (:func:`pipeline.gate.control.reuse_base`); the scoring opens it
    (once) and, when it cannot be trusted, scores the night whole, said in one line.  Nothing
    when there is none or the config cannot be read (the scoring reports that)."""
    # start-up: the config loads NumPy, Arrow and YAML; the gate pandas
    from pipeline.config import load_config
    from pipeline.gate.control import reuse_base
    from pipeline.signature import Signature

    try:
        cfg = load_config(config, [f"output.url={json.dumps(new)}"])
        base = reuse_base(new, str(Signature.from_config(cfg)), cfg.storage_options)
    except Exception as e:  # noqa: BLE001 - the scoring reports a bad config; a night is never lost to reuse
        print(f"rouge-pipeline: nightly: nothing reused ({type(e).__name__}: {e})", file=sys.stderr, flush=True)
        return []
    return [] if base is None else ["--reuse", base, "--set", "execution.reuse_untrusted=rescore"]


def _accept(args) -> int:
    """``nightly JOB --accept DATE_OR_RUN --reason ...``: accept that night's run (as ``rouge-pipeline
    accept RUN``), nothing scored: the next nights compare with it (pipeline.gate.control)."""
    from pipeline.gate.control import accept_run  # start-up: the gate loads pandas

    try:
        if getattr(args, "date", None) or getattr(args, "dry_run", False):
            raise ValueError("--accept runs nothing: give it without --date and --dry-run")
        if not (args.reason or "").strip():
            raise ValueError("--accept needs --reason (why this change is accepted; recorded in the run folder)")
        job = _read_job(args.job)
        validate_job(job)
        url = run_url(job, args.accept)
    except (OSError, ValueError) as e:
        print(f"rouge-pipeline: configuration error: {args.job}: {e}", file=sys.stderr)
        return EXIT_STATUSES["job_error"]
    try:
        rec = accept_run(url, args.reason, getattr(args, "by", None))
    except (CompareError, OSError, ValueError) as e:
        print(f"rouge-pipeline: nightly: accept: {e}", file=sys.stderr)
        return EXIT_STATUSES["job_error"]
    print(f"accepted {url} by {rec['by']} at {rec['at']}: {rec['reason']} "
          "(the next nights compare with this run and learn their band from it on)")
    return EXIT_OK


def _night(main, job: dict, argv: list[str], gate: list[str] | None, new: str, accept: str):
    """Score, then compare: ``(verdict, its line, compare's result, the scoring's status)``, each
    step in the journal."""
    log.info("%s: scoring %s (rouge-pipeline %s)", job["name"], new, " ".join(shlex.quote(a) for a in argv))
    verdict, score_status, line = _score(main, argv, job)
    log.log(logging.INFO if verdict == "no_change" else logging.ERROR, "%s: scoring ended with status %s",
            job["name"], score_status)
    result = None
    if verdict == "no_change" and gate is not None:
        log.info("%s: comparing %s with the earlier nights", job["name"], new)
        verdict, result, compare_status = _gate(main, gate)
        line = _gate_line(verdict, new, gate[-1], compare_status, accept)
    log.log(_LEVELS.get(verdict, logging.ERROR), "%s: %s, exit %s", job["name"], verdict, EXIT_STATUSES[verdict])
    return verdict, line, result, score_status


def run(args, main) -> int:
    if getattr(args, "accept", None) is not None:
        return _accept(args)
    if getattr(args, "reason", None) is not None:
        print("rouge-pipeline: nightly: --reason goes with --accept DATE_OR_RUN", file=sys.stderr)
        return EXIT_STATUSES["job_error"]
    try:
        if args.date is not None:
            check_date(args.date)
    except ValueError as e:
        print(f"rouge-pipeline: nightly: {e}", file=sys.stderr)
        return EXIT_STATUSES["job_error"]
    try:
        job, argv, gate = _load(args)
        if not args.dry_run:
            notify.check_environment(job.get("notify"))
    except (OSError, ValueError) as e:
        print(f"rouge-pipeline: configuration error: {args.job}: {e}", file=sys.stderr)
        return EXIT_STATUSES["job_error"]
    new = argv[argv.index("--output") + 1]
    date = new.rsplit("/", 1)[-1]
    if args.dry_run:
        print("rouge-pipeline " + " ".join(shlex.quote(a) for a in argv))
        if gate:
            print("rouge-pipeline " + " ".join(shlex.quote(a) for a in gate))
        if job.get("notify"):
            print("# " + notify.describe(job["notify"]))
        return EXIT_OK
    with _journal():
        verdict, line, result, score_status = _night(main, job, argv, gate, new, accept_command(args.job, date))
    status = EXIT_STATUSES[verdict]
    if line and verdict != "interrupted":
        print(line, file=sys.stderr, flush=True)
    night = notify.Night(job=job["name"], date=date, run=new, verdict=verdict, status=status,
                         accept=accept_command(args.job, date) if verdict in ("moved", "not_comparable") else None,
                         report=gate[-1] if result is not None else None, result=result,
                         scoring_status=score_status if verdict == "scoring_failed" else None,
                         line=line if verdict in ("scoring_failed", "timed_out") else None)
    warning = notify.maybe_send(job.get("notify"), night)
    if warning:
        print(f"rouge-pipeline: nightly: warning: {warning}; the exit status ({status}) is unchanged",
              file=sys.stderr, flush=True)
    return status
