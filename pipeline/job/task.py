"""What one task does, with no knowledge of where it runs (no Dask here).

:func:`plan_unit` reads a unit once (the plan pass): estimated costs and ids, and for a unit that
is one task its scores, encoded.  ``score_task`` reads its unit (or takes what the plan pass kept),
keeps its slice of rows, scores them in one batch and writes its files under deterministic names
(:func:`pipeline.job.outputs.write_task_files`), returning counts and the slice's mergeable
statistics (a ``StatsAccumulator``).  A rerun skips finished tasks (:func:`run_task`).
"""
from __future__ import annotations

import collections
import os
import time
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.io import readers, writers
from pipeline.io.spec import WorkUnit
from pipeline.job.cache import UNIT_TABLES
from pipeline.job.outputs import load_done, pause_point, write_task_files
from pipeline.job.plan import Task, estimate_costs, one_task
from pipeline.job.results import merge_results
from pipeline.job.scores import ScoringSettings, _reason_counts, key_hashes, score_table, unit_stats

@dataclass(frozen=True)
class UnitContext:
    """Everything a worker needs besides the task itself (small, picklable, no secrets in repr)."""

    run_url: str
    scoring: ScoringSettings
    seed: int
    n_boot: int
    metadata: dict = field(default_factory=dict, hash=False, compare=False)
    storage_options: dict = field(default_factory=dict, hash=False, compare=False, repr=False)
    # this run's token for the units its plan pass kept in the workers (UnitTables); "": none
    read_token: str = field(default="", hash=False, compare=False)
    # the plan's identity (outputs.plan_id): a marker of another plan is not resumed
    plan_id: str = field(default="", hash=False, compare=False)


def plan_unit(spec, unit: WorkUnit, read_token: str = "", keep_mb: int = 0,
              ctx: UnitContext | None = None, target_cost: float | None = None) -> dict:
    """The plan pass over one unit (on a worker): per-example estimated costs and the
    ``(system, id, row)`` keys, so the driver can find duplicates across units.  With a
    ``read_token`` the tables are kept for this run's tasks, up to ``keep_mb`` MiB per
    worker process (:class:`UnitTables`); ``kept`` says whether they were.

    With ``ctx``, a unit of which :func:`split_by_cost` makes one task (``target_cost``),
    not an oversized example, is also scored here, its statistics reduced and its files
    encoded, and kept so: the task then only writes them.  Scoring the table while it is fresh
    from the reader leaves no idle barrier between reading and scoring, lets the scheduler
    balance the expensive part (plan tasks go to whichever worker is free), and touches the
    text once while it is in cache.  The numbers are the
    task's own (the same function of the same rows); a unit whose rows change after the
    plan (cross-unit duplicates) is read and scored again by its task."""
    _test_sleep(TEST_PLAN_SLEEP_ENV)
    tables = readers.read_unit(spec, unit)
    costs = estimate_costs(tables[0], source=ctx is None or ctx.scoring.diagnostics)
    keys = readers.unit_keys(tables[0], unit)
    hashes = key_hashes(keys)
    prepared = None
    if ctx is not None and read_token and keep_mb > 0 and one_task(costs, target_cost):
        scores, quarantine = _score_rows(tables[0], tables[1], ctx, unit.format)
        same_rows = hashes is not None and scores.num_rows == tables[0].num_rows  # none too long
        prepared = encode_outputs(scores, quarantine, ctx, hashes if same_rows else None)
    # the encoded output if it fits in the budget, else the tables if they do
    kept = prepared is not None and UNIT_TABLES.put(read_token, unit, None, keep_mb << 20, prepared)
    if not kept:
        kept = UNIT_TABLES.put(read_token, unit, tables, keep_mb << 20)
    return {"costs": costs, "keys": keys, "key_hashes": hashes, "kept": kept}


# TEST HOOK (tests/integration/test_faults.py, benchmarks/soak.py only): seconds to sleep at the start of
# every task, read from the environment of the worker process, so a test can kill a worker or
# the driver while tasks are in flight.  Unset (the default) in every real run.
TEST_TASK_SLEEP_ENV = "ROUGE_PIPELINE_TEST_TASK_SLEEP"


# TEST HOOK (tests/integration/test_faults.py only): the same for every plan-pass task.
TEST_PLAN_SLEEP_ENV = "ROUGE_PIPELINE_TEST_PLAN_SLEEP"


def _test_sleep(var: str = TEST_TASK_SLEEP_ENV) -> None:
    s = os.environ.get(var)
    if s:
        time.sleep(float(s))


def _task_input(spec, task: Task, read_token: str, release: bool | None = None):
    """``(table, quarantine, prepared)`` of a task: the plan pass's encoded output where it made
    one for this whole-unit task (:func:`encode_outputs`; tables None), else its rows (and, for
    its unit's first slice, the unit's quarantine rows) from what the plan pass kept (released
    by the unit's last slice unless ``release`` says otherwise) or read."""
    kept = UNIT_TABLES.take(read_token, task.unit, task.hi is None if release is None else release)
    tables, prepared = kept if kept is not None else (None, None)
    if prepared is not None and task.lo == 0 and task.hi is None:
        return None, None, prepared
    table, quarantine = tables if tables is not None else readers.read_unit(spec, task.unit)
    hi = table.num_rows if task.hi is None else task.hi
    table = table.slice(task.lo, max(0, hi - task.lo))
    if task.lo != 0:
        quarantine = quarantine.schema.empty_table()
    return table, quarantine, None


def read_task(spec, task: Task, read_token: str = "", release: bool | None = None) -> tuple[pa.Table, pa.Table]:
    """The task's rows and quarantine rows (:func:`_task_input`), read again where the plan pass
    kept only its encoded output."""
    table, quarantine, prepared = _task_input(spec, task, read_token, release)
    if prepared is not None:
        table, quarantine, _ = _task_input(spec, task, "")
    return table, quarantine


def _score_rows(table: pa.Table, quarantine: pa.Table, ctx: UnitContext, fmt: str, split_positions=None):
    """(scores, quarantine rows): the rows scored, the too-long ones added to the quarantine."""
    scores, too_long = score_table(table, ctx.scoring, quarantine=True, fmt=fmt,
                                   split_positions=split_positions if table.num_rows == 1 else None)
    if too_long.num_rows:
        quarantine = pa.concat_tables([quarantine, too_long])
    return scores, quarantine


def encode_outputs(scores: pa.Table, quarantine: pa.Table, ctx: UnitContext,
                   hashes: np.ndarray | None = None) -> dict:
    """Everything a task writes, as bytes, and its counts and statistics: a function of its rows
    only (not of its index, which names the files), so the plan pass can make it (``hashes``:
    :func:`unit_stats`)."""
    parts = []
    systems = sorted(pc.unique(scores.column("system")).to_pylist()) if scores.num_rows else []
    for system in systems:
        # one system (the usual case) is the whole table: no filtered copy of every column
        part = scores if len(systems) == 1 else scores.filter(pc.equal(scores.column("system"), system))
        parts.append((system, writers.parquet_bytes(part, ctx.metadata)))
    q_bytes = writers.parquet_bytes(quarantine, ctx.metadata) if quarantine.num_rows else None
    stats = unit_stats(scores, ctx, hashes)
    return {
        "parts": parts,
        "quarantine": q_bytes,
        "rows": scores.num_rows,
        "quarantined": quarantine.num_rows,
        "quarantine_reasons": _reason_counts(quarantine),
        "systems": systems,
        "cand_tokens": int(pc.sum(scores.column("cand_tokens")).as_py() or 0),
        "ref_tokens": int(pc.sum(scores.column("ref_tokens")).as_py() or 0),
        "stats": stats,
        # what keeping it costs (UnitTables' budget): the files and the statistics' arrays
        "nbytes": sum(len(b) for _, b in parts) + len(q_bytes or b"") + stats.nbytes(),
    }


def score_task(spec, task: Task, ctx: UnitContext, split_positions=None) -> dict:
    """Read, score, write one task; returns counts (also stored in its marker) and statistics.

    The returned ``"stats"`` is the :class:`StatsAccumulator` itself (Dask pickles its arrays
    as they are, and the merges only add them)."""
    _test_sleep()
    pause_point("task", task.index)
    # (an oversized example, the only task with split_positions, is never one the plan pass scored)
    table, quarantine, prepared = _task_input(spec, task, ctx.read_token)
    if prepared is None:
        prepared = encode_outputs(*_score_rows(table, quarantine, ctx, task.unit.format, split_positions), ctx)
    return write_task_files(prepared, task, ctx)


def run_task(spec, task: Task, ctx: UnitContext, resume: bool = True, earlier: bool | None = None) -> dict:
    """Resume-aware entry point: the marker's result if the task is done, else :func:`score_task`.
    ``earlier``: whether an earlier run finished the task (the driver knows); a marker this run
    wrote (a retry after a worker died past it) then does not count as ``skipped`` (resumed).
    ``None``: every marker found counts."""
    if resume:
        done = load_done(task, ctx)
        if done is not None:
            done["skipped"] = int(earlier is None or earlier)
            return done
    return score_task(spec, task, ctx)


def in_place_tasks(tasks: list[Task]) -> dict[int, Task]:
    """unit index -> task, for the units the plan made exactly one task of (not an oversized
    example, no rows dropped as cross-unit duplicates): what the plan pass kept of such a unit
    is its task's whole input or output, so the worker that kept it finishes the task there
    (:func:`finish_in_place`)."""
    per_unit = collections.Counter(t.unit.index for t in tasks)
    return {t.unit.index: t for t in tasks
            if per_unit[t.unit.index] == 1 and not t.oversized and not t.unit.drop_rows}


# Set on an exception raised by a task that :func:`finish_in_place` ran: that task's ``key``,
# so the error names the task as a task of its own would.
FAILED_TASK_ATTR = "rouge_pipeline_task"


def finish_in_place(spec, plan: tuple, units: list[int], ctx: UnitContext,
                    done: frozenset = frozenset()) -> dict | None:
    """After the plan pass, on the worker that kept ``units``: run (resume-aware) the tasks of
    those that are :func:`in_place_tasks` of ``plan`` (the result of :func:`plan_tasks`), in
    order, and merge their results; None if there is none.  One call per worker instead of one
    task per unit: those tasks only write what the plan pass encoded (~3.5 ms each), and as
    tasks of their own they waited for the driver to fetch the plan and submit them, then
    cost the scheduler a round each, all after the plan pass, when nothing else runs.  Run on
    another worker (its own died), it reads and scores them one after another, as their tasks
    would have (but on one worker).  ``done``: the tasks an earlier run finished; only those
    count as ``skipped`` (resumed), not ones a retry of this call finds done by its first try."""
    in_place = in_place_tasks(plan[0])
    merged = None
    for u in sorted(units):
        task = in_place.get(u)
        if task is None:
            continue
        try:
            r = run_task(spec, task, ctx)
        except Exception as e:
            try:
                setattr(e, FAILED_TASK_ATTR, task.key)
            except (AttributeError, TypeError):  # an exception type without a __dict__
                pass
            raise
        r["skipped"] = int(bool(r.get("skipped")) and task.index in done)
        merged = merge_results(merged, r)  # as they come: one accumulator held, not one per task
    return merged
