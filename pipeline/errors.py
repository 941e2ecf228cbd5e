"""The commands' exit statuses, and every error a command maps to one: each derives from
:class:`PipelineError`, which carries its ``status`` and the words that start its one line on
stderr (``label``); :func:`pipeline.cli.main.failure` reads them, and docs/errors.md lists them.

The ground floor: this module imports no other module of the package, so any layer may raise
these.  Each error keeps the builtin base (``ValueError``, ``RuntimeError``) code catches it by.
The modules that raise them re-export them (``from pipeline.config import ConfigError`` works).

Left where they are, because no command maps them:

* ``BadRecord`` (io/canonical.py), ``TaskFailed`` (execution/waves.py), ``RunStopped``
  (runfolder/folder.py): control flow inside a run; a bad record becomes a quarantine row, a
  failed or stopped task a :class:`RunFailedError` (or the error it carried).
* ``HashCollisionError`` (job/dedup.py): two keys sharing a 64-bit hash, about never; it ends
  ``score`` as an unexpected error (status 1) naming itself.
* ``WorkerVersionError`` (execution/plugin.py): raised by a worker that runs *another* version
  and unpickled by the client by its module path, which must therefore stay where it was.
"""

EXIT_OK, EXIT_FAILED, EXIT_CONFIG, EXIT_STRICT, EXIT_RUN_FOLDER = 0, 1, 2, 3, 4
EXIT_NO_ROWS = 5
EXIT_BUSY = 6
EXIT_MOVED = 1            # compare, nightly: a row moved out of its band (up or down)
EXIT_NOT_COMPARABLE = 3   # compare, nightly: the runs cannot be compared (coverage, settings)
EXIT_INCONCLUSIVE = 4     # compare, nightly: nothing moved, but a move of min_effect could have gone unseen
EXIT_SCORING_FAILED = 10  # nightly: the scoring failed (its own status and line are printed)
EXIT_TIMEOUT = 124        # nightly: the scoring ran past timeout_minutes (as GNU timeout's)
EXIT_INTERRUPTED = 130
EXIT_PIPE_CLOSED = 141    # 128 + SIGPIPE: the reader (e.g. `head`) closed our output early

# Each command's exit statuses and what they mean: the one table every ``--help`` ends with
# (:func:`status_epilog`) and docs/errors.md lists (tests/repo/test_cli_help.py holds both to it).
COMMAND_STATUSES = {
    "score": ((EXIT_OK, "ok"), (EXIT_FAILED, "the run failed (rerun the same command to resume)"),
              (EXIT_CONFIG, "configuration or usage error"), (EXIT_STRICT, "strict mode and quarantined records"),
              (EXIT_RUN_FOLDER, "run-folder conflict"), (EXIT_NO_ROWS, "no row scored"),
              (EXIT_BUSY, "the run folder is held by another run"), (EXIT_INTERRUPTED, "interrupted")),
    "eval": ((EXIT_OK, "ok"), (EXIT_FAILED, "unexpected error"), (EXIT_CONFIG, "usage or input error"),
             (EXIT_NO_ROWS, "no example"), (EXIT_INTERRUPTED, "interrupted")),
    "show": ((EXIT_OK, "ok"), (EXIT_FAILED, "the run did not finish (no _SUCCESS)"),
             (EXIT_CONFIG, "usage error or unreadable run"), (EXIT_RUN_FOLDER, "the run is not whole"),
             (EXIT_INTERRUPTED, "interrupted")),
    "compare": ((EXIT_OK, "no change"), (EXIT_MOVED, "moved"), (EXIT_CONFIG, "error"),
                (EXIT_NOT_COMPARABLE, "not comparable"), (EXIT_INCONCLUSIVE, "inconclusive"),
                (EXIT_INTERRUPTED, "interrupted")),
    "accept": ((EXIT_OK, "accepted"), (EXIT_FAILED, "unexpected error"), (EXIT_CONFIG, "no --reason, or a run that cannot be read"),
               (EXIT_INTERRUPTED, "interrupted")),
    "report": ((EXIT_OK, "written"), (EXIT_FAILED, "unexpected error"), (EXIT_CONFIG, "a run that cannot be read, or the file cannot be written"),
               (EXIT_INTERRUPTED, "interrupted")),
    "correlate": ((EXIT_OK, "ok"), (EXIT_FAILED, "unexpected error"),
                  (EXIT_CONFIG, "a bad option, a judgments file that cannot be read or matches no example, a run "
                   "that cannot be read, scipy missing (pip install 'rouge-pipeline[meta]')"),
                  (EXIT_NO_ROWS, "nothing to correlate: no level has a group of at least 3 items (or a non-constant one)"),
                  (EXIT_INTERRUPTED, "interrupted")),
    "nightly": ((EXIT_OK, "no change"), (EXIT_MOVED, "moved"), (EXIT_CONFIG, "job-file or usage error, or compare failed"),
                (EXIT_NOT_COMPARABLE, "not comparable"), (EXIT_INCONCLUSIVE, "inconclusive"),
                (EXIT_SCORING_FAILED, "the scoring failed"), (EXIT_TIMEOUT, "timed out"),
                (EXIT_INTERRUPTED, "interrupted")),
}


def status_epilog(command: str | None = None) -> str:
    """The exit statuses of ``command`` as one paragraph (a ``--help``'s epilog); ``None``: the
    program's own help, which points to each command's."""
    if command is None:
        return ("exit status: each command's --help lists its own (0 ok, 2 usage error, 130 interrupted "
                "for every command); docs/errors.md")
    return "exit status: " + "; ".join(f"{s} {what}" for s, what in COMMAND_STATUSES[command]) + " (docs/errors.md)"


class PipelineError(Exception):
    """An error a command ends with: it exits ``status`` and prints
    ``rouge-pipeline: <label><message>``."""

    status = EXIT_FAILED
    label = "error: "


# --------------------------------------------------------------------------- 2: configuration, input
class ConfigError(PipelineError, ValueError):
    """A configuration error; the message names the field."""

    status = EXIT_CONFIG
    label = "configuration error: "


class UnreadableFileError(PipelineError, ValueError):
    """An input file that cannot be decoded at all (corrupt or truncated compression, not
    Parquet, a folder where a file is expected).  The message names the file.  A
    ``ValueError``: retrying cannot help (transient storage errors stay ``OSError``)."""

    status = EXIT_CONFIG


class WorkerEnvironmentError(PipelineError, ValueError):
    """The scheduler or workers of an existing cluster cannot run this package's tasks."""

    status = EXIT_CONFIG


class OldLayoutError(PipelineError, ValueError):
    """A run folder written with an older layout (refused, never half read).  ``score`` reports
    it as a :class:`RunFolderError`, ``compare`` and ``report`` as a :class:`CompareError`."""

    status = EXIT_CONFIG


class EvalError(PipelineError, ValueError):
    """``eval``: a usage or input error, ``what: path: cause`` (the command prints ``eval: ...``)."""

    status = EXIT_CONFIG


class CompareError(PipelineError, RuntimeError):
    """A run cannot be read or the runs cannot be compared (``compare`` and ``report`` print
    ``<command>: ...``)."""

    status = EXIT_CONFIG


class MetaError(PipelineError, ValueError):
    """``correlate``: a bad option, a human-judgment file that cannot be read or does not match the
    run, a run that cannot be read, or scipy missing (``correlate: <message>``)."""

    status = EXIT_CONFIG
    label = "correlate: "


class NothingToCorrelateError(MetaError):
    """``correlate``: the judged data hold no correlation at any level asked (every group has fewer
    than 3 items, or a constant side), so there is no number to print (``correlate: <message>``)."""

    status = EXIT_NO_ROWS


# --------------------------------------------------------------------------- a run that did not finish
class RunFailedError(PipelineError, RuntimeError):
    """A task (or the driver's own storage access) failed after its retries.  Nothing final
    was written for the run (no statistics, no ``_SUCCESS``); rerunning the same command
    resumes it."""

    status = EXIT_FAILED
    label = "run failed: "


class _EndedWithSummary(PipelineError, RuntimeError):
    """A run that ended without ``_SUCCESS`` but with a summary of what it read (``summary``)."""

    def __init__(self, message, summary):
        super().__init__(message)
        self.summary = summary


class StrictModeError(_EndedWithSummary):
    """``strict: true`` and some records were quarantined (the command adds ``summary``'s counts)."""

    status = EXIT_STRICT
    label = ""


class RunFolderError(PipelineError, RuntimeError):
    """The run folder holds a run made with other settings or an older format, is not a run
    folder, or holds files that are not this run's (or the inputs changed during the run)."""

    status = EXIT_RUN_FOLDER
    label = ""


class InputChangedError(RunFolderError):
    """An input file that is not what the plan saw when a task reads it (another size, fewer or
    more lines in a planned row or byte range): its rows cannot be matched to the plan, so none
    is scored as if it were.  The message names the file; exit 4, as for the inputs that the
    run finds changed at its end."""


class NoRowsError(_EndedWithSummary):
    """The run scored no row: the input holds no record, or every record was quarantined.
    The message says why (the most common quarantine reasons, the fields of the first
    records, a "did you mean" for the column mapping); no statistics and no ``_SUCCESS``."""

    status = EXIT_NO_ROWS
    label = "no row scored: "


class RunFolderBusyError(PipelineError, RuntimeError):
    """Another live run holds the run folder (its lease)."""

    status = EXIT_BUSY
    label = ""


class ColumnError(PipelineError, KeyError):
    """A column a run's scores do not hold (``read_run(run, columns=...)``); the message names the
    run and the columns it has.  A ``KeyError``, as pandas raises for a missing column."""

    status = EXIT_CONFIG

    def __str__(self) -> str:   # KeyError's own str() is the repr of its argument
        return str(self.args[0]) if self.args else ""
