"""``rouge-pipeline eval``, ``score``, ``show``, ``compare``, ``report``, ``nightly`` (argparse; Dask is
imported only when scoring).

Exit status: 0 ok, 1 run failed, 2 configuration or usage error (bad config, missing or
unreadable input, refused paths), 3 strict mode and quarantined records, 4 run-folder conflict
(other settings or an older format, not a run folder, foreign files, inputs changed during the
run), 5 no row scored (empty input or every record quarantined; ``eval``: no example), 6 run
folder held by another live run (its lease), 130 interrupted.  141: the reader of stdout closed it early (``rouge-pipeline show --json | head``),
silently.

Every failure is one line on stderr, ``rouge-pipeline: <what>: <path>: <cause>``, mapped from the
exception in one place (:func:`main`, :func:`failure`; the errors and their statuses are in
:mod:`pipeline.errors`); ``--debug`` (or ``ROUGE_PIPELINE_DEBUG=1``) prints the traceback too.

Start-up: this module imports the standard library and package modules that load no third-party
package, so ``import pipeline.cli.main`` (the console script's entry) loads no NumPy, Arrow,
pandas or Dask; each command imports what it uses inside its function.
"""
from __future__ import annotations

import argparse
import atexit
import gc
import json
import math
import os
import sys
import time
import traceback

from pipeline import __version__, redaction
from pipeline.cli import correlate
from pipeline.cli import eval as quick
from pipeline.cli import nightly
from pipeline.errors import (EXIT_BUSY, EXIT_CONFIG, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_NO_ROWS,  # noqa: F401
                            EXIT_NOT_COMPARABLE, EXIT_OK, EXIT_PIPE_CLOSED, EXIT_RUN_FOLDER, EXIT_STRICT,
                            CompareError, ConfigError, PipelineError, StrictModeError, status_epilog)
from pipeline.gate import DEFAULT_MIN_EFFECT
from pipeline.gate.format import system_label
from pipeline.redaction import masked_std
from pipeline.scoring.types import STATS
from pipeline.stats.keys import DEFAULT_SEED

# the command's start: a run's summary counts its seconds from here (the kernels' compile included)
_STARTED = time.perf_counter()

DEBUG_ENV = "ROUGE_PIPELINE_DEBUG"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rouge-pipeline", description="Exact, fast ROUGE over sharded corpora.",
                                epilog=status_epilog())
    p.add_argument("--version", action="version", version=f"rouge-pipeline {__version__}")
    p.add_argument("--debug", action="store_true",
                   help=f"print the traceback of a failure too (or set {DEBUG_ENV}=1)")
    sub = p.add_subparsers(dest="command", required=True)
    quick.add_parser(sub)
    s = sub.add_parser("score", help="score a corpus into a run folder: a YAML config, or input files and -o RUN")
    s.add_argument("inputs", nargs="*", metavar="INPUT",
                   help="record files or globs (JSONL/Parquet with id, candidate, references; input.paths), "
                        "instead of a config's input section")
    s.add_argument("--config", "-c", help="YAML config (configs/*.yaml)")
    s.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key, e.g. --set scoring.use_stemmer=true (repeatable)")
    s.add_argument("--output", "-o", help="run folder URL (output.url)")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--scheduler", help="address of an existing Dask scheduler (tcp://HOST:PORT)")
    g.add_argument("--sync", action="store_true", help="run in this process without Dask (execution.mode: sync)")
    g.add_argument("--local", action="store_true",
                   help="start the local Dask cluster whatever the input size (execution.mode: local)")
    s.add_argument("--workers", type=int, help="local worker processes (execution.n_workers)")
    s.add_argument("--overwrite", action="store_true",
                   help="replace a run folder made with other settings (only a run folder holding nothing else)")
    s.add_argument("--reuse", metavar="RUN", help="a previous run of the same settings: copy its rows of unchanged "
                   "examples instead of scoring them (execution.reuse; the outputs are a full rescore's)")
    s.add_argument("--no-progress", action="store_true", help="no progress bar / progress log lines")
    s.add_argument("--json", action="store_true",
                   help="print the summary and the statistics rows (\"statistics\") as JSON instead of a table")
    s.add_argument("--print-config", action="store_true",
                   help="print the effective configuration (defaults filled in, secrets redacted) and exit")
    sh = sub.add_parser("show", help="print the statistics table and signature of a finished run")
    sh.add_argument("run", help="run folder URL")
    sh.add_argument("--json", action="store_true", help="print the statistics rows as JSON")
    _add_compare_parsers(sub)
    nightly.add_parser(sub)
    correlate.add_parser(sub)
    for name, command in sub.choices.items():   # every --help ends with its exit statuses (pipeline.errors)
        command.epilog = status_epilog(name)
        _accept_debug(command)
    return p


def _accept_debug(parser: argparse.ArgumentParser) -> None:
    """``--debug`` after the command too (``rouge-pipeline score ... --debug``, as the failure line
    suggests); unset there, the top-level value stands."""
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help=f"print the traceback of a failure too (or set {DEBUG_ENV}=1)")


def _add_compare_parsers(sub) -> None:
    """``compare`` (exit 0 no change, 1 moved, 2 error, 3 not comparable, 4 inconclusive), ``accept``
    and ``report`` (pipeline.gate)."""
    c = sub.add_parser("compare", help="did the outputs move? is A better than B? can these runs be compared?",
                       description="compare BASE NEW: did the outputs move (exit 0 no change, 1 moved, 3 not comparable, "
                                   "4 inconclusive); "
                                   "compare NEW --history RUNS|ROOT (or --previous): the band learned from history; "
                                   "compare RUN --systems BASELINE,A,B: is A better than the baseline "
                                   "(paired bootstrap and approximate randomization). docs/regressions.md")
    c.add_argument("runs", nargs="+", metavar="RUN", help="BASE NEW, or NEW with --history/--previous, or RUN "
                   "(or BASE NEW) with --systems")
    c.add_argument("--band", type=float, help="fixed band: alarm when |delta F| > BAND (default: the noise band)")
    c.add_argument("--min-effect", type=float, default=DEFAULT_MIN_EFFECT,
                   help=f"smallest |delta F| that alarms, in every band but --band (default {DEFAULT_MIN_EFFECT})")
    c.add_argument("--min-coverage", type=float, default=1.0,
                   help="share of each system's base examples that must be in the new run (default 1.0)")
    c.add_argument("--allow-different-settings", action="store_true",
                   help="compare runs whose signatures differ (deliberate setting changes)")
    c.add_argument("--history", nargs="+", metavar="RUN", help="earlier runs (folders, a folder of runs such as "
                   "a nightly root, or globs): the band is a control chart of their means")
    c.add_argument("--previous", action="store_true",
                   help="history = the finished sibling folders of NEW that sort before it (dated nightly folders); "
                   "with --history: both, each run once")
    c.add_argument("--baseline", metavar="RUN", help="pin the base (e.g. a release's run) instead of the latest "
                   "in-control run of the history")
    c.add_argument("--alpha", type=float, default=None,
                   help="history band: the false-alarm rate per night, shared by every row judged (default 0.01)")
    c.add_argument("--no-record", action="store_true",
                   help="do not write the verdict into the new run's folder (_gate.json)")
    c.add_argument("--record", action="store_true",
                   help="write the verdict of an ad-hoc BASE NEW comparison too (by default only a comparison "
                   "with the run's history, --previous / --history / --baseline, is its gate and is recorded)")
    c.add_argument("--replicates", nargs="+", metavar="RUN",
                   help="repeated runs of the base's build: their spread is the run-to-run variation")
    c.add_argument("--k", type=float, default=None, help="control-chart width in standard deviations (default 4)")
    c.add_argument("--band-method", choices=("sd", "mad"), default=None,
                   help="history band: mean +- k*sd (sd, default) or median +- k*1.4826*MAD (mad)")
    c.add_argument("--window", type=int, default=None, help="history runs the chart uses, the last N (default 14)")
    c.add_argument("--min-history", type=int, default=None,
                   help="fewer history runs than this: the paired-bootstrap band (default 5)")
    c.add_argument("--systems", metavar="BASELINE,A,...",
                   help="system vs system: the baseline and the systems to test against it, paired by document")
    c.add_argument("--doc-key", metavar="REGEX", help="--systems: the document of an id, the regex's first group; "
                   "{system} stands for the system's name, e.g. '(.*):{system}$' (default: the id itself)")
    c.add_argument("--confidence", type=float, default=0.95,
                   help="confidence level of the paired-bootstrap intervals, in (0, 1) (default 0.95)")
    c.add_argument("--n-boot", type=int, default=1000, help="paired-bootstrap resamples (default 1000)")
    c.add_argument("--n-perm", type=int, default=None,
                   help="permutations / approximate-randomization trials (default 2000; --systems 10000)")
    c.add_argument("--seed", type=int, default=DEFAULT_SEED,
                   help=f"seed of the bootstrap and the permutations (default {DEFAULT_SEED})")
    c.add_argument("--top", type=int, default=10, help="examples that moved most to list (default 10)")
    c.add_argument("--all-stats", action="store_true", help="print (and with --systems test) P and R too")
    c.add_argument("--json", action="store_true", help="print the comparison as JSON")
    c.add_argument("--html", metavar="FILE", help="also write a single-file HTML report")
    a = sub.add_parser("accept", help="accept a run's change on purpose: it starts a new history (docs/regressions.md)")
    a.add_argument("run", help="run folder URL")
    a.add_argument("--reason", required=True, help="why the change is accepted (recorded in the run folder)")
    a.add_argument("--by", help="who accepts it (default: $USER)")
    r = sub.add_parser("report", help="write a single-file HTML report of a finished run")
    r.add_argument("run", help="run folder URL")
    r.add_argument("-o", "--output", required=True, metavar="FILE", help="HTML file to write")
    r.add_argument("--history", nargs="+", metavar="RUN", help="earlier runs (folders, a nightly root, globs): "
                   "a trend chart of each system's mean F with the band")


def _compare(args) -> int:
    # start-up: the gate loads pandas and numba
    from pipeline.gate.compare import compare
    from pipeline.gate.report import compare_report

    try:
        if not 0 < args.confidence < 1 or args.n_boot < 0 or (args.n_perm is not None and args.n_perm < 0):
            raise CompareError("--confidence must be in (0, 1), --n-boot and --n-perm >= 0")
        if args.band is not None and not (math.isfinite(args.band) and args.band >= 0):
            raise CompareError(f"--band must be a finite number >= 0 (an absolute |delta F|), not {args.band}")
        if len(args.runs) > 2:
            raise CompareError(f"at most two runs (BASE NEW), got {len(args.runs)}")
        if args.systems:
            return _significance(args)
        chart = {k: v for k, v in (("k", args.k), ("window", args.window), ("min_history", args.min_history),
                                   ("method", args.band_method), ("alpha", args.alpha)) if v is not None}
        found = _gate_runs(args)
        if found is None:
            return EXIT_OK
        base, new, history, notes = found
        replicates = _find_runs(args.replicates, new.url) if args.replicates else None
        result = compare(base, new, band=args.band, min_effect=args.min_effect, confidence=args.confidence,
                         n_boot=args.n_boot, n_perm=2000 if args.n_perm is None else args.n_perm,
                         seed=args.seed, top=args.top, min_coverage=args.min_coverage,
                         allow_different_settings=args.allow_different_settings, history=history,
                         replicates=replicates, **chart)
        result["notes"] = notes + result["notes"]
        result["accepted"] = [{"url": r.url, **r.accepted} for r in [*history, new] if r.accepted]
        if args.html:
            _write_text(args.html, compare_report(result, base, new))
    except (CompareError, OSError, ValueError) as e:
        print(f"rouge-pipeline: compare: {e}", file=sys.stderr)
        return EXIT_CONFIG
    return _compare_outcome(args, result, base, new)


def _find_runs(specs, exclude):
    from pipeline.gate.runs import find_runs  # start-up: the gate loads pandas

    return find_runs(specs, exclude=exclude)


def _gate_runs(args):
    """``(base, new, history, notes)`` of a comparison, or None when there is nothing to compare:
    the history is the in-control runs (pipeline.gate.control), the base the latest of them with
    the new run's settings unless given (BASE NEW, --baseline)."""
    from pipeline.gate.control import choose_base, control_history  # start-up: the gate loads pandas
    from pipeline.gate.runs import history_runs, load_run  # start-up: the gate loads pandas

    new = load_run(args.runs[-1])
    notes: list[str] = []   # what the history left out (unfinished runs, runs that began after NEW)
    history, kept = control_history(history_runs(new, args.history, previous=args.previous, notes=notes))
    notes += kept
    if len(args.runs) == 2 and args.baseline:
        raise CompareError("give BASE NEW or --baseline RUN, not both")
    if len(args.runs) == 2 or args.baseline:
        return load_run(args.baseline or args.runs[0]), new, history, notes
    if history:
        return choose_base(new, history), new, history, notes
    if args.history or args.previous:
        print(f"rouge-pipeline: compare: no finished earlier run in control for {new.url}; nothing to compare"
              + "".join(f" ({n})" for n in notes), file=sys.stderr)
        return None
    raise CompareError("give BASE NEW, or NEW with --history / --previous / --baseline, or RUN with --systems")


def _compare_outcome(args, result: dict, base, new) -> int:
    """Print the comparison, record its verdict in the new run's folder, and return its exit status."""
    from pipeline.gate.control import exit_status, record_verdict  # start-up: the gate loads pandas
    from pipeline.gate.format import format_result  # start-up: with the gate

    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True, default=str))
    else:
        print(format_result(result, STATS if args.all_stats else ("fmeasure",)))
    if args.html:
        print(f"html: {args.html}", file=sys.stderr)
    # an ad-hoc BASE NEW is not the run's gate: recording it could drop the run from its history
    if not args.no_record and (args.record or args.previous or args.history or args.baseline):
        try:
            record_verdict(new, result)
        except OSError as e:   # a read-only run folder: the verdict still stands, the next night cannot see it
            print(f"rouge-pipeline: compare: warning: cannot record the verdict in {new.url}: {e}", file=sys.stderr)
    v = result["verdict"]
    if v == "not comparable":
        print(f"rouge-pipeline: compare: not comparable: {base.url} -> {new.url}: "
              + "; ".join(result["not_comparable"]), file=sys.stderr)
    elif v == "moved":
        print(f"rouge-pipeline: compare: moved: {base.url} -> {new.url}: " + "; ".join(result["reasons"])
              + f" (until accepted: rouge-pipeline accept {new.url} --reason ...)", file=sys.stderr)
    elif v == "inconclusive":
        print(f"rouge-pipeline: compare: inconclusive: {base.url} -> {new.url}", file=sys.stderr)
    return exit_status(result)


def _accept(args) -> int:
    from pipeline.gate.control import accept_run  # start-up: the gate loads pandas

    try:
        rec = accept_run(args.run, args.reason, args.by)
    except (CompareError, OSError, ValueError) as e:
        print(f"rouge-pipeline: accept: {e}", file=sys.stderr)
        return EXIT_CONFIG
    print(f"accepted {args.run.rstrip('/')} by {rec['by']} at {rec['at']}: {rec['reason']} "
          "(the next comparisons learn their band from this run on)")
    return EXIT_OK


def _write_text(url: str, text: str) -> None:
    """A report file, local or on any fsspec URL."""
    import fsspec  # start-up: a third-party package, for --html only

    with fsspec.open(url, "w", encoding="utf-8") as f:
        f.write(text)


def _significance(args) -> int:
    # start-up: the gate loads pandas and numba
    from pipeline.gate import significance as sig
    from pipeline.gate.runs import load_run

    systems = [s.strip() for s in args.systems.split(",")]
    runs = [load_run(u) for u in args.runs]
    result = sig.significance(runs[0], runs[-1], systems, stats=STATS
                              if args.all_stats else ("fmeasure",), doc_key=args.doc_key,
                              n_boot=args.n_boot, n_trials=10000 if args.n_perm is None else args.n_perm,
                              seed=args.seed, confidence=args.confidence, min_coverage=args.min_coverage,
                              allow_different_settings=args.allow_different_settings)
    if args.html:
        from pipeline.gate.report import significance_report  # start-up: the gate loads pandas

        _write_text(args.html, significance_report(result))
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True, default=str))
    else:
        print(sig.format_significance(result))
    if args.html:
        print(f"html: {args.html}", file=sys.stderr)
    if not result["comparable"]:
        print("rouge-pipeline: compare: not comparable: " + "; ".join(result["not_comparable"]), file=sys.stderr)
        return EXIT_NOT_COMPARABLE
    return EXIT_OK


def _report(args) -> int:
    # start-up: the gate loads pandas and numba
    from pipeline.gate.control import control_history
    from pipeline.gate.report import run_report
    from pipeline.gate.runs import history_runs, load_run

    try:
        run = load_run(args.run)
        history, notes = None, []
        if args.history:   # what the trend leaves out is said (unfinished runs, runs that began after RUN, ...)
            history, kept = control_history(history_runs(run, args.history, notes=notes))
            notes += kept
        html = run_report(run, history=history)
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(html)
    except (CompareError, OSError, ValueError) as e:
        print(f"rouge-pipeline: report: {e}", file=sys.stderr)
        return EXIT_CONFIG
    for note in notes:
        print(f"rouge-pipeline: report: {note}", file=sys.stderr)
    print(f"html: {args.output}")
    return EXIT_OK


def _fmt(v, digits=4) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def format_stats_table(rows: list[dict], exact_rows: list[dict] | None = None) -> str:
    """One line per (system, type): mean P/R/F and the F-measure confidence interval."""
    by = {}
    for r in rows:
        by.setdefault((r["system"], r["type"]), {})[r["stat"]] = r
    exact = {(r["system"], r["type"], r["stat"]): r for r in exact_rows or []}
    head = ["system", "type", "n", "P", "R", "F", "F std", "F 95% CI"]
    if exact:
        head.append("F rouge-score CI")
    lines = []
    for (system, typ), st in by.items():
        f = st["fmeasure"]
        line = [system_label(system), typ, str(f["count"]), _fmt(st["precision"]["mean"]), _fmt(st["recall"]["mean"]),
                _fmt(f["mean"]), _fmt(f["std"]), f"[{_fmt(f['ci_low'])}, {_fmt(f['ci_high'])}]"]
        if exact:
            e = exact.get((system, typ, "fmeasure"))
            line.append(f"[{_fmt(e['low'])}, {_fmt(e['high'])}]" if e else "-")
        lines.append(line)
    widths = [max(len(head[i]), *(len(l[i]) for l in lines)) if lines else len(head[i]) for i in range(len(head))]
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths)), "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(l, widths)) for l in lines]
    return "\n".join(out)


def format_summary(summary: dict) -> str:
    q = summary.get("quarantined", 0)
    reasons = ", ".join(f"{k}: {v}" for k, v in summary.get("quarantined_by_reason", {}).items())
    return (f"rows {summary['rows']}, quarantined {q}" + (f" ({reasons})" if q else "")
            + f", systems {len(summary['systems'])}, tasks {summary['tasks']}"
            + (f" ({summary['tasks_resumed']} resumed)" if summary.get("tasks_resumed") else "")
            + (f", {summary['rows_reused']} rows reused" if summary.get("reuse") else "")
            # wall time of the whole command, the first run's compile included (and named)
            + f", {summary.get('seconds', 0):.1f}s"
            + (f" ({summary['compile_seconds']:.1f}s of it compiling the kernels)" if summary.get("compile_seconds")
               else "") + ", "
            # the rate of what this run scored: a resumed run that found every task done has none
            + ("resumed, nothing to score" if summary.get("tasks_resumed") and not summary.get("rows_scored", 1)
               else f"{summary.get('pairs_per_s', 0):,.0f} pairs/s")
            + (f", {summary['execution']}" if summary.get("execution") else "")
            + "".join(f"\nwarning: {w}" for w in summary.get("warnings", ())))


def _score(args) -> int:
    from pipeline.config import load_config  # start-up: pipeline.config loads NumPy, Arrow and YAML

    overrides = list(args.overrides)
    if args.inputs:
        overrides += ["input.layout=records", f"input.paths={json.dumps(args.inputs)}"]
    elif args.config is None and not any(o.startswith("input.") for o in overrides):
        print("rouge-pipeline: configuration error: nothing to score: pass --config FILE or an input "
              "(rouge-pipeline score INPUT... -o RUN; rouge-pipeline eval -r REFS -i HYPS for a quick score)",
              file=sys.stderr)
        return EXIT_CONFIG
    if args.output:
        overrides.append(f"output.url={json.dumps(args.output)}")
    if args.scheduler:
        overrides += ["execution.mode=scheduler", f"execution.scheduler={json.dumps(args.scheduler)}"]
    if args.sync:
        overrides.append("execution.mode=sync")
    if args.local:
        overrides.append("execution.mode=local")
    if args.workers is not None:
        overrides.append(f"execution.n_workers={args.workers}")
    if args.overwrite:
        overrides.append("output.overwrite=true")
    if redaction.active() is not None:   # a storage option's raw --set value, even one that fails to parse
        redaction.active().add(o.partition("=")[2] for o in args.overrides if "storage_options" in o.partition("=")[0])
    if args.reuse:
        overrides.append(f"execution.reuse={json.dumps(args.reuse)}")
    try:
        cfg = load_config(args.config, overrides)
    except OSError as e:  # the config file itself
        raise ConfigError(f"{e.filename or args.config}: {e.strerror or e}") from e
    if redaction.active() is not None:   # from here on, this config's secret values are masked too
        redaction.active().add_config(cfg.to_dict(redact=False))
    _CONTEXT["output"] = cfg.output.url
    if args.print_config:
        import yaml  # start-up: a third-party package, for --print-config only

        print(yaml.safe_dump(cfg.effective_dict(), sort_keys=False, allow_unicode=True), end="")
        return EXIT_OK

    from pipeline.execution.driver import run_config  # start-up: the driver loads Dask

    # failures are mapped to their exit status and one line by main()
    result = run_config(cfg, progress=not args.no_progress, debug=_CONTEXT.get("debug", False), started=_STARTED)
    if args.json:  # the summary and the statistics rows (show --json's "rows"), in one document
        print(json.dumps({**result.summary, "statistics": result.rows}, indent=2, sort_keys=True))
        return EXIT_OK
    print(format_stats_table(result.rows, result.exact_rows))
    print()
    print(format_summary(result.summary))
    print(f"signature: {result.signature}")
    print(f"output: {result.run_url}")
    return EXIT_OK


def _show(args) -> int:
    from pipeline.runfolder import read as run_folder  # Arrow and fsspec: for show, not for --help

    run = args.run.rstrip("/")
    stats = run_folder.read_stats(run)
    if stats is None or not run_folder.is_complete(run):
        summary = run_folder.read_summary(run)
        status = f" (status: {summary['status']})" if summary else ""
        print(f"rouge-pipeline: {run_folder.not_finished(run)}{status}", file=sys.stderr)
        return EXIT_FAILED
    run_folder.open_run(run)   # not whole (a part missing, a stray file): RunFolderError, status 4
    exact = run_folder.read_exact(run)
    if args.json:
        print(json.dumps(stats, indent=2))
        return EXIT_OK
    print(format_stats_table(stats["rows"], exact["rows"] if exact else None))
    summary = run_folder.read_summary(run)
    if summary:
        print()
        print(format_summary(summary))
    print(f"signature: {stats['signature']}")
    return EXIT_OK


def _fast_exit() -> None:
    """Collect once, then freeze: numba and llvmlite leave a few hundred thousand objects
    behind, which each of interpreter exit's collections would rescan (~0.3 s).  Only in the
    command's own process: a library must not change the collector of its caller's."""
    gc.collect()
    gc.freeze()


_EXIT_HOOKED = False


# what the command in progress is about, for the wording of its failure (failure())
_CONTEXT: dict = {}

_OS_CONFIG_ERRORS = (FileNotFoundError, PermissionError, NotADirectoryError, IsADirectoryError, FileExistsError)


def _os_what(e: OSError) -> str:
    out = str(_CONTEXT.get("output") or "").removeprefix("file://").rstrip("/")
    name = str(e.filename or "").removeprefix("file://")
    if out and (name == out or name.startswith(out + "/") or out.startswith(name.rstrip("/") + "/")):
        return "cannot write the run folder"
    return "cannot read the input" if isinstance(e, (PermissionError, IsADirectoryError)) else "path error"


def failure(e: BaseException, command: str = "score") -> tuple[int, str]:
    """``(exit status, one-line message)`` for an exception that ended ``command``: the one map
    from exceptions to the documented exit statuses (a :class:`PipelineError` carries its own)."""
    if isinstance(e, KeyboardInterrupt):
        return EXIT_INTERRUPTED, "interrupted" + ("; rerun the same command to resume" if command == "score" else "")
    if isinstance(e, PipelineError):
        detail = f" ({format_summary(e.summary)})" if isinstance(e, StrictModeError) else ""
        return e.status, f"{e.label}{e}{detail}"
    if isinstance(e, _OS_CONFIG_ERRORS):
        if e.filename is not None and e.strerror:
            return EXIT_CONFIG, f"{_os_what(e)}: {str(e.filename).removeprefix('file://')}: {e.strerror}"
        return EXIT_CONFIG, f"error: {e}"   # fsspec's own messages name the path
    if isinstance(e, (ValueError, ImportError)):   # ImportError: a storage package not installed
        return EXIT_CONFIG, f"error: {e}"   # input and settings errors name the file, line or field
    unexpected = EXIT_CONFIG if command in ("compare", "nightly") else EXIT_FAILED  # their 1 means "moved"
    return unexpected, f"unexpected error: {type(e).__name__}: {e} (rerun with --debug for the traceback)"


def main(argv=None) -> int:
    global _EXIT_HOOKED
    if argv is None and not _EXIT_HOOKED:  # run as the command, not called from Python
        _EXIT_HOOKED = True
        atexit.register(_fast_exit)
    args = _parser().parse_args(argv)
    saved = dict(_CONTEXT)
    debug = _CONTEXT["debug"] = bool(args.debug or saved.get("debug")
                                      or os.environ.get(DEBUG_ENV, "") not in ("", "0"))
    # every line this process prints goes through the run's redactor (pipeline.redaction),
    # the failure's line and traceback too
    try:
        with masked_std():
            try:
                return _dispatch(args)
            except BrokenPipeError:
                raise
            except (Exception, KeyboardInterrupt) as e:
                status, message = failure(e, args.command)
                if debug:
                    traceback.print_exc()
                print("rouge-pipeline: " + message.replace("\r", " ").replace("\n", " "), file=sys.stderr,
                      flush=True)
                return status
            finally:
                _CONTEXT.clear()
                _CONTEXT.update(saved)
    except BrokenPipeError:
        return _stdout_closed()


def _stdout_closed() -> int:
    """The reader of stdout went away: no traceback, and none again when Python flushes at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return EXIT_PIPE_CLOSED


def _dispatch(args) -> int:
    if args.command == "eval":
        return quick.run(args)
    if args.command == "score":
        return _score(args)
    if args.command == "nightly":
        return nightly.run(args, main)
    if args.command in ("compare", "report"):
        return _compare(args) if args.command == "compare" else _report(args)
    if args.command == "accept":
        return _accept(args)
    if args.command == "correlate":
        return correlate.run(args)
    return _show(args)


if __name__ == "__main__":
    sys.exit(main())
