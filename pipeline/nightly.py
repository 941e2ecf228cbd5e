"""``rouge-pipeline nightly jobs/nightly.yaml``: a scheduled run into a dated run folder.

It runs ``score --config <config> --output <output_root>/<date>`` (date: today in UTC, formatted
with ``date_format``).  Each day gets a new folder; earlier folders are never touched, and a rerun
on the same day resumes that day's folder.  The job file's schema is ``jobs/nightly.schema.json``.
"""
from __future__ import annotations

import datetime
import shlex
import sys

KEYS = ("name", "config", "schedule", "output_root", "date_format", "scheduler", "keep_previous",
        "timeout_minutes")


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
    if args.dry_run:
        print("rouge-pipeline " + " ".join(shlex.quote(a) for a in argv))
        return EXIT_OK
    return main(argv)
