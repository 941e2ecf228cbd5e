"""``rouge-pipeline nightly jobs/nightly.yaml``: a scheduled run into a dated run folder.

It runs ``score --config <config> --output <output_root>/<date>`` (date: today in UTC, formatted
with ``date_format``).  Each day gets a new folder; earlier folders are never touched, and a rerun
on the same day resumes that day's folder.  Then, unless ``compare: false``, it compares the new run
with the latest earlier dated run that finished (``rouge-pipeline compare``; options from the
``compare`` mapping: ``band``, ``min_effect``) and exits 1, loudly, when the outputs moved out of
the band.  The job file's schema is ``jobs/nightly.schema.json``.
"""
from __future__ import annotations

import datetime
import shlex
import sys

KEYS = ("name", "config", "schedule", "output_root", "date_format", "scheduler", "keep_previous",
        "timeout_minutes", "compare")


def add_parser(sub) -> None:
    n = sub.add_parser("nightly", help="run a scheduled job (jobs/nightly.yaml) into a dated run folder")
    n.add_argument("job", help="job file: name, config, schedule, output_root (jobs/nightly.schema.json)")
    n.add_argument("--date", help="the run folder's date (default: today, UTC)")
    n.add_argument("--scheduler", help="override the job's scheduler address")
    n.add_argument("--sync", action="store_true", help="run in this process without Dask")
    n.add_argument("--dry-run", action="store_true", help="print the score command and exit")


def score_argv(job: dict, date: str | None = None, scheduler: str | None = None, sync: bool = False) -> list[str]:
    unknown = sorted(set(job) - set(KEYS))
    missing = [k for k in ("config", "output_root") if not job.get(k)]
    if unknown or missing:
        raise ValueError(f"unknown keys {unknown}" if unknown else f"missing keys {missing}")
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


def run(args, main) -> int:
    import yaml

    from pipeline.cli import EXIT_CONFIG, EXIT_OK

    try:
        with open(args.job, encoding="utf-8") as f:
            job = yaml.safe_load(f)
        if not isinstance(job, dict):
            raise ValueError("the top level must be a mapping")
        argv = score_argv(job, args.date, args.scheduler, args.sync)
    except (OSError, ValueError, yaml.YAMLError) as e:
        print(f"rouge-pipeline: configuration error: {args.job}: {e}", file=sys.stderr)
        return EXIT_CONFIG
    compare_argv = None
    if job.get("compare", True) is not False:
        new = argv[argv.index("--output") + 1]
        opts = job.get("compare") if isinstance(job.get("compare"), dict) else {}
        compare_argv = ["compare", "{previous}", new]
        for key in ("band", "min_effect"):
            if opts.get(key) is not None:
                compare_argv += [f"--{key.replace('_', '-')}", str(opts[key])]
        if "://" not in new or new.startswith("file://"):
            compare_argv += ["--html", f"{new.removeprefix('file://')}/compare.html"]
    if args.dry_run:
        print("rouge-pipeline " + " ".join(shlex.quote(a) for a in argv))
        if compare_argv:
            print("rouge-pipeline " + " ".join(shlex.quote(a) for a in compare_argv))
        return EXIT_OK
    status = main(argv)
    if status != EXIT_OK or compare_argv is None:
        return status
    previous = previous_run(str(job["output_root"]), new.rstrip("/").rsplit("/", 1)[-1])
    if previous is None:
        print(f"rouge-pipeline nightly: no finished earlier run under {job['output_root']}; nothing to compare",
              file=sys.stderr)
        return EXIT_OK
    compare_argv[1] = previous
    status = main(compare_argv)
    if status == 1:
        print(f"::error::rouge-pipeline nightly: the outputs moved out of the band since {previous}; "
              f"read the movers above (and {compare_argv[-1] if '--html' in compare_argv else 'the compare output'})",
              file=sys.stderr)
    return status


def previous_run(output_root: str, current: str) -> str | None:
    """The latest dated run folder before ``current`` that finished (has ``_SUCCESS``)."""
    import fsspec

    root = output_root.rstrip("/")
    fs, path = fsspec.core.url_to_fs(root)
    try:
        names = sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(path, detail=False))
    except FileNotFoundError:
        return None
    for name in reversed([n for n in names if n < current]):
        if fs.exists(f"{path}/{name}/_SUCCESS"):
            return f"{root}/{name}"
    return None
