"""``rouge-pipeline nightly jobs/nightly.yaml``: a scheduled run into a dated run folder, then the gate.

It validates the job file against its JSON schema (``pipeline/cli/nightly.schema.json``, also at
``jobs/nightly.schema.json``) at run time -- unknown keys are refused with a "did you mean" --
then runs ``score --config <config> --output <output_root>/<date>`` (date: today in UTC, formatted
with ``date_format``).  Each day gets a new folder; earlier folders are never touched, and a rerun
on the same day resumes that day's folder.  Then, unless ``compare: false``, it runs
``compare <new> --previous``: the band is learned from the finished earlier dated folders (a
control chart once there are enough of them, the paired bootstrap against the latest one before
that), the HTML report is written to ``<new>/compare.html`` (any fsspec URL), and the job exits 1
when the outputs moved and 3 when the runs are not comparable, with the reason on stderr.
``timeout_minutes``: a scoring still running after that long is stopped as Ctrl-C would stop it
(lease released, finished work kept for the next run) and the job exits 124 with one line.
``keep_previous`` may only be ``true``: nightly never deletes a run folder.
"""
from __future__ import annotations

import _thread
import datetime
import difflib
import json
import re
import shlex
import sys
import threading
from pathlib import Path

from pipeline.errors import EXIT_CONFIG, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_NOT_COMPARABLE, EXIT_OK, EXIT_TIMEOUT

SCHEMA_PATH = Path(__file__).with_name("nightly.schema.json")
COMPARE_FLAGS = {"band": "--band", "min_effect": "--min-effect", "min_coverage": "--min-coverage", "k": "--k",
                 "window": "--window", "min_history": "--min-history", "method": "--band-method",
                 "allow_different_settings": "--allow-different-settings"}


def add_parser(sub) -> None:
    n = sub.add_parser("nightly", help="run a scheduled job (jobs/nightly.yaml) into a dated run folder, then gate")
    n.add_argument("job", help="job file: name, config, schedule, output_root (jobs/nightly.schema.json)")
    n.add_argument("--date", help="the run folder's date (default: today, UTC)")
    n.add_argument("--scheduler", help="override the job's scheduler address")
    n.add_argument("--sync", action="store_true", help="run in this process without Dask")
    n.add_argument("--dry-run", action="store_true", help="print the score and compare commands and exit")


def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


_TYPES = {"object": dict, "string": str, "boolean": bool, "array": list, "null": type(None)}


def _is_type(v, t: str) -> bool:
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    return isinstance(v, _TYPES[t])


def schema_errors(doc, sch: dict, where: str = "") -> list[str]:
    """The violations of ``doc`` against ``sch``, for the JSON-schema keywords the job schema uses
    (type, enum, pattern, required, properties, additionalProperties, minimum, maximum,
    exclusiveMinimum, oneOf); tests check that it agrees with ``jsonschema``."""
    at = where or "the job"
    types = sch.get("type")
    if types is not None:
        types = [types] if isinstance(types, str) else types
        if not any(_is_type(doc, t) for t in types):
            return [f"{at}: expected {' or '.join(types)}, got {json.dumps(doc)}"]
    errs = []
    if "enum" in sch and doc not in sch["enum"]:
        errs.append(f"{at}: {json.dumps(doc)} is not one of {', '.join(json.dumps(e) for e in sch['enum'])}")
    if isinstance(doc, str) and "pattern" in sch and not re.search(sch["pattern"], doc):
        errs.append(f"{at}: {doc!r} does not match {sch['pattern']!r}")
    if _is_type(doc, "number"):
        if "minimum" in sch and doc < sch["minimum"]:
            errs.append(f"{at}: {doc} is below the minimum {sch['minimum']}")
        if "maximum" in sch and doc > sch["maximum"]:
            errs.append(f"{at}: {doc} is above the maximum {sch['maximum']}")
        if "exclusiveMinimum" in sch and doc <= sch["exclusiveMinimum"]:
            errs.append(f"{at}: {doc} must be greater than {sch['exclusiveMinimum']}")
    if isinstance(doc, dict):
        props = sch.get("properties", {})
        for key in sch.get("required", []):
            if key not in doc:
                errs.append(f"{at}: missing key {key!r}")
        for key, v in doc.items():
            if key in props:
                errs += schema_errors(v, props[key], f"{where + '.' if where else ''}{key}")
            elif sch.get("additionalProperties") is False:
                near = difflib.get_close_matches(str(key), list(props), n=1)
                errs.append(f"{at}: unknown key {key!r}" + (f" (did you mean {near[0]!r}?)" if near else "")
                            + f"; allowed: {', '.join(props)}")
    if "oneOf" in sch:
        results = [schema_errors(doc, s, where) for s in sch["oneOf"]]
        ok = [r for r in results if not r]
        if len(ok) > 1:
            errs.append(f"{at}: matches several alternatives")
        elif not ok:
            # the branch of the value's own type explains best
            own = [r for s, r in zip(sch["oneOf"], results) if "type" not in s or any(
                _is_type(doc, t) for t in ([s["type"]] if isinstance(s["type"], str) else s["type"]))]
            errs += (own or results)[0]
    return errs


# seconds in one of timeout_minutes' minutes (a test shortens it)
_MINUTE = 60.0


def validate_job(job) -> None:
    if isinstance(job, dict) and job.get("keep_previous") is False:
        raise ValueError("keep_previous: false is not supported: nightly never deletes earlier run folders "
                         "(remove old dated folders yourself); drop the key or set it to true")
    errs = schema_errors(job, schema())
    if errs:
        raise ValueError("; ".join(errs))


def score_argv(job: dict, date: str | None = None, scheduler: str | None = None, sync: bool = False) -> list[str]:
    validate_job(job)
    if date is None:
        date = datetime.datetime.now(datetime.timezone.utc).strftime(job.get("date_format") or "%Y-%m-%d")
    argv = ["score", "--config", str(job["config"]), "--output", f"{str(job['output_root']).rstrip('/')}/{date}",
            "--no-progress"]
    scheduler = scheduler or job.get("scheduler")
    if sync:
        argv.append("--sync")
    elif scheduler:
        argv += ["--scheduler", scheduler]
    return argv


def compare_argv(job: dict, new: str) -> list[str] | None:
    opts = job.get("compare", True)
    if opts is False:
        return None
    opts = opts if isinstance(opts, dict) else {}
    argv = ["compare", new, "--previous"]
    for key, flag in COMPARE_FLAGS.items():
        v = opts.get(key)
        if v is None or v is False:
            continue
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


def run(args, main) -> int:
    import yaml  # start-up: a third-party package, for a job that runs only

    try:
        with open(args.job, encoding="utf-8") as f:
            job = yaml.safe_load(f)
        if not isinstance(job, dict):
            raise ValueError("the top level must be a mapping")
        argv = score_argv(job, args.date, args.scheduler, args.sync)
    except (OSError, ValueError, yaml.YAMLError) as e:
        print(f"rouge-pipeline: configuration error: {args.job}: {e}", file=sys.stderr)
        return EXIT_CONFIG
    new = argv[argv.index("--output") + 1]
    gate = compare_argv(job, new)
    if args.dry_run:
        print("rouge-pipeline " + " ".join(shlex.quote(a) for a in argv))
        if gate:
            print("rouge-pipeline " + " ".join(shlex.quote(a) for a in gate))
        return EXIT_OK
    status, timed_out = _with_timeout(main, argv, job.get("timeout_minutes"))
    if timed_out:
        print(f"rouge-pipeline: nightly: {new}: the scoring did not finish within timeout_minutes="
              f"{job['timeout_minutes']} and was stopped (exit {EXIT_TIMEOUT}; the next run resumes the folder)",
              file=sys.stderr)
        return EXIT_TIMEOUT
    if status != EXIT_OK or gate is None:
        return status
    status = main(gate)
    if status == EXIT_FAILED:
        print(f"::error::rouge-pipeline nightly: the outputs of {new} moved out of the band; read the movers "
              f"above and {gate[-1]}", file=sys.stderr)
    elif status == EXIT_NOT_COMPARABLE:
        print(f"::error::rouge-pipeline nightly: {new} is not comparable with the earlier runs (reason above; "
              f"{gate[-1]})", file=sys.stderr)
    elif status not in (EXIT_OK,):
        print(f"::error::rouge-pipeline nightly: the comparison failed (status {status})", file=sys.stderr)
    return status
