"""Phase I / Phase II, night after night (issue 27): which earlier runs a band may learn from,
which run is the base, what the gate records about a run, and accepting a change on purpose.

* A run is **in control** when the gate's recorded verdict on it (``_gate.json``) is "no change"
  or "inconclusive", or when a person accepted it (``_accepted.json``).  Runs the gate judged
  "moved" or "not comparable" never enter a band nor become a base, so a regression keeps
  alarming every night (each night is compared with the last good one) until it is accepted.
  Unfinished runs are never read (no ``_SUCCESS``), and runs of other settings are left out by
  :func:`pipeline.gate.compare.screen_runs`.  A run with **no recorded verdict** (made before
  the gate recorded verdicts, or compared with ``--no-record``) counts as in control.
* The **latest accepted** run starts the history: runs before it never enter a band again.
* The **base** is the latest in-control run with the new run's signature (reverting a setting
  compares with the last run of its own settings); with none, the latest in-control run (whose
  other settings make the night "not comparable", loudly), unless pinned (``--baseline``).
"""
from __future__ import annotations

import getpass
import os
from datetime import datetime, timezone

from pipeline.errors import EXIT_INCONCLUSIVE, EXIT_MOVED, EXIT_NOT_COMPARABLE, EXIT_OK, CompareError
from pipeline.gate.runs import RunData, load_run, previous_heads
from pipeline.runfolder import records

IN_CONTROL = ("no change", "inconclusive")
EXIT_STATUS = {"no change": EXIT_OK, "moved": EXIT_MOVED, "not comparable": EXIT_NOT_COMPARABLE,
               "inconclusive": EXIT_INCONCLUSIVE}

__all__ = ["EXIT_STATUS", "IN_CONTROL", "accept_run", "choose_base", "control_history", "exit_status",
           "in_control", "record_verdict", "reuse_base"]


def in_control(run: RunData) -> bool:
    """Accepted, or judged "no change"/"inconclusive", or never judged (see the module docstring)."""
    if run.accepted:
        return True
    return run.record is None or run.record.get("verdict") in IN_CONTROL


def control_history(runs: list[RunData]) -> tuple[list[RunData], list[str]]:
    """The runs (oldest first) a band may learn from: from the latest accepted run on, the runs in
    control; and notes saying what was left out and why."""
    notes = []
    start = max((i for i, r in enumerate(runs) if r.accepted), default=0)
    if start:
        a = runs[start].accepted
        notes.append(f"history starts at {runs[start].url}, accepted by {a.get('by')} at {a.get('at')} "
                     f"({a.get('reason')}); {start} earlier run(s) left out")
    kept, out = [], []
    for r in runs[start:]:
        (kept if in_control(r) else out).append(r)
    if out:
        notes.append(f"{len(out)} run(s) out of control left out of the band and the base: "
                     + ", ".join(f"{r.url} ({r.record.get('verdict')})" for r in out[:3])
                     + (" ..." if len(out) > 3 else ""))
    return kept, notes


def choose_base(new: RunData, history: list[RunData]) -> RunData | None:
    """The latest in-control run with the new run's signature, else the latest in-control run."""
    same = [r for r in history if r.signature == new.signature]
    return (same or history or [None])[-1]


def reuse_base(new_url: str, signature: str, storage_options: dict | None = None) -> str | None:
    """The run a night reuses rows from (``nightly``'s ``--reuse``): among its earlier sibling
    nights, the latest in control (:func:`control_history`) with its ``signature``; None when
    there is none (read without their scores)."""
    history, _ = control_history(previous_heads(new_url, storage_options))
    same = [r for r in history if r.signature == signature]
    return same[-1].url if same else None


def exit_status(result: dict) -> int:
    """``compare``'s exit status for a comparison's verdict: 0 no change, 1 moved, 3 not comparable,
    4 inconclusive."""
    return EXIT_STATUS[result["verdict"]]


def record_verdict(new: RunData, result: dict, storage_options: dict | None = None) -> dict:
    """Write the gate's verdict on ``new`` into its folder (``_gate.json``); returns the record."""
    rec = {"verdict": result["verdict"], "base": result["base"], "at": _now(),
           "moved": sorted({f"{r['system']} {r['type']}" for r in result["rows"] if r.get("alarm")}),
           "inconclusive": sorted({f"{r['system']} {r['type']}" for r in result["rows"]
                                   if r["status"] == "inconclusive" and r["stat"] in result["band"]["alarm_stats"]}),
           # the rate holds only for rows judged against their history (the sign-test band)
           "false_alarm_rate": (result["band"]["history"]["alpha"]
                                if any(r.get("band") == "history" for r in result["rows"]) else None)}
    records.write_verdict(new.url, rec, storage_options)
    return rec


def accept_run(url: str, reason: str, by: str | None = None, storage_options: dict | None = None) -> dict:
    """Accept a finished run's change on purpose (``rouge-pipeline accept RUN --reason``): written to
    ``_accepted.json``; the run starts a new history.  Returns the record."""
    if not reason or not reason.strip():
        raise CompareError("accept needs a --reason (why this change is accepted)")
    run = load_run(url, storage_options)
    rec = {"by": by or os.environ.get("USER") or _user(), "at": _now(), "reason": reason.strip(),
           "verdict": (run.record or {}).get("verdict")}
    records.write_accepted(run.url, rec, storage_options)
    return rec


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
