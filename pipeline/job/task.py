"""What one task does, with no knowledge of where it runs (no Dask here).

:func:`score_unit` reads a unit, cuts it by cost into slices (:func:`pipeline.job.plan.split_by_cost`),
scores each slice and writes it at once under its (unit, slice) names
(:func:`pipeline.runfolder.write_task_files`), then returns a
:class:`~pipeline.job.results.TaskResult`: the unit's counts, its mergeable statistics (a
``StatsAccumulator``), its key hashes (for the duplicates across units: :mod:`pipeline.job.dedup`)
and the slices it left for wave 2 (oversized examples, and, on a cluster, slices past its first
few).  The same function scores those slices in wave 2, and a unit again with its cross-unit
duplicates dropped.  A rerun loads finished slices from their markers.
"""
from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.io import readers, writers
from pipeline.io.input_spec import QUARANTINE_SCHEMA, WorkUnit
from pipeline.job import dedup, reuse
from pipeline.runfolder import META_SIGNATURE, RunStopped, check_stop, pause_point, remove_slices, write_task_files
from pipeline.job.plan import estimate_costs, split_by_cost
from pipeline.job.resume import load_done
from pipeline.job.results import Brief, TaskResult, empty_result, merge_results
from pipeline.stats.poisson import any_equal
from pipeline.job.scores import (ScoringSettings, _reason_counts, key_hashes, row_digests,
                                 score_table, scores_schema, split_blocks_for, unit_stats)


@dataclass(frozen=True)
class UnitContext:
    """Everything a worker needs besides the unit itself (small, picklable, no secrets in repr)."""

    run_url: str
    scoring: ScoringSettings
    seed: int
    n_boot: int
    metadata: dict = field(default_factory=dict, hash=False, compare=False)
    storage_options: dict = field(default_factory=dict, hash=False, compare=False, repr=False)
    # the plan's identity (outputs.plan_id): a marker of another plan is not resumed
    plan_id: str = field(default="", hash=False, compare=False)
    # the run's stop flag (anything with is_set(); a distributed.Event on a cluster), checked
    # before each write (outputs.check_stop); None: never stopped from outside
    stop: object = field(default=None, hash=False, compare=False, repr=False)
    # output.keep_texts: the parts also hold the candidate and references scored
    keep_texts: bool = False


@dataclass(frozen=True)
class UnitWork:
    """What :func:`score_unit` does with its unit.

    ``slices`` None is wave 1: every slice but those it leaves (oversized examples cut in blocks,
    and slices past the first ``first``; None: none past), resuming the ``done`` ones from their
    markers.  Otherwise exactly those slices (wave 2; no resume: the driver sends only what is
    left).  ``again``: the unit holds ids an earlier unit holds (:func:`dedup.later_duplicates`):
    what it wrote is removed, those rows are dropped (confirmed on the ids), and every slice is
    scored and written again."""

    target_cost: float
    first: int | None = None
    done: frozenset = frozenset()
    slices: tuple | None = None
    again: bool = False


# TEST HOOK (tests/integration/test_faults.py, benchmarks/soak.py only): seconds to sleep at the start of
# every task, read from the environment of the worker process, so a test can kill a worker or
# the driver while tasks are in flight.  Unset (the default) in every real run.
TEST_TASK_SLEEP_ENV = "ROUGE_PIPELINE_TEST_TASK_SLEEP"


def _test_sleep(var: str = TEST_TASK_SLEEP_ENV) -> None:
    s = os.environ.get(var)
    if s:
        time.sleep(float(s))


def unit_input(spec, unit: WorkUnit, ctx: UnitContext, target_cost: float, full: tuple | None = None):
    """``(table, quarantine, slices, bounds)`` of a unit: its canonical rows (without its
    ``drop_rows``), its quarantine rows, its cost split (:class:`pipeline.job.plan.Slice`, cut
    on the rows read without drops, so a unit's slices are the same whether or not later
    duplicates are dropped) and each slice's row range in ``table``.  ``full``: ``(rows,
    quarantine)`` of the unit read without drops, if the caller has them."""
    if full is None:
        full = readers.read_unit(spec, dataclasses.replace(unit, drop_rows=()) if unit.drop_rows else unit)
    full, quarantine = full
    costs = estimate_costs(full, source=ctx.scoring.diagnostics)
    slices = split_by_cost([unit], [costs], target_cost)
    bounds = [(s.lo, full.num_rows if s.hi is None else s.hi) for s in slices]
    if not unit.drop_rows:
        return full, quarantine, slices, bounds
    table, quarantine = readers.read_unit(spec, unit)
    pos = dedup.positions_in(table, unit, full)
    bounds = [(int(np.searchsorted(pos, lo)), int(np.searchsorted(pos, hi))) for lo, hi in bounds]
    return table, quarantine, slices, bounds


def _score_rows(table: pa.Table, quarantine: pa.Table, ctx: UnitContext, fmt: str, split_positions=None):
    """(scores, quarantine rows): the rows scored, the too-long ones added to the quarantine."""
    scores, too_long = score_table(table, ctx.scoring, quarantine=True, fmt=fmt,
                                   split_positions=split_positions if table.num_rows == 1 else None,
                                   keep_texts=ctx.keep_texts, signature=ctx.metadata.get(META_SIGNATURE, ""))
    if too_long.num_rows:
        quarantine = pa.concat_tables([quarantine, too_long])
    return scores, quarantine


def encode_outputs(scores: pa.Table, quarantine: pa.Table, ctx: UnitContext,
                   hashes: np.ndarray | None = None) -> dict:
    """Everything a slice writes, as bytes, and its counts and statistics (``hashes``:
    :func:`key_hashes` of exactly its scored rows, when known)."""
    parts = []
    systems = sorted(pc.unique(scores.column("system")).to_pylist()) if scores.num_rows else []
    for system in systems:
        # one system (the usual case) is the whole table: no filtered copy of every column
        part = scores if len(systems) == 1 else scores.filter(pc.equal(scores.column("system"), system))
        parts.append((system, writers.parquet_bytes(part, ctx.metadata)))
    q_bytes = writers.parquet_bytes(quarantine, ctx.metadata) if quarantine.num_rows else None
    return {
        "parts": parts,
        "quarantine": q_bytes,
        "rows": scores.num_rows,
        "quarantined": quarantine.num_rows,
        "quarantine_reasons": _reason_counts(quarantine),
        "systems": systems,
        "cand_tokens": int(pc.sum(scores.column("cand_tokens")).as_py() or 0),
        "ref_tokens": int(pc.sum(scores.column("ref_tokens")).as_py() or 0),
        "stats": unit_stats(scores, ctx, hashes),
    }


def score_slice(table: pa.Table, quarantine: pa.Table | None, unit: WorkUnit, k: int, n: int, ctx: UnitContext,
                hashes: np.ndarray | None = None, split_positions=None, previous: tuple | None = None) -> TaskResult:
    """Score and write slice ``k`` of ``n`` (``table``: its rows; ``quarantine``: the unit's,
    written with slice 0; ``previous``: ``(ReuseIndex, its part cache)``, rows of a previous run copied)."""
    if k != 0 or quarantine is None:
        quarantine = QUARANTINE_SCHEMA.empty_table()
    reused = 0
    if previous is not None and split_positions is None:
        scores, q, reused = _reused_rows(table, quarantine, ctx, unit.format, *previous)
    else:
        scores, q = _score_rows(table, quarantine, ctx, unit.format, split_positions)
    return _write_slice(table, scores, q, unit, k, n, ctx, hashes, reused)


def _write_slice(table: pa.Table, scores: pa.Table, q: pa.Table, unit: WorkUnit, k: int, n: int, ctx: UnitContext,
                 hashes: np.ndarray | None, reused: int) -> TaskResult:
    """Write slice ``k``'s ``scores`` (of the rows of ``table``: its keys) and quarantine ``q``."""
    held = ()
    if scores.num_rows != table.num_rows:
        # rows scored away (too long): their keys are the unit's still, for a rerun's duplicate search
        held = np.setdiff1d(_hashes(table), _hashes(scores)).tolist()
        hashes = None
    prepared = encode_outputs(scores, q, ctx, hashes)
    prepared["held"] = held
    done = write_task_files(prepared, unit.index, k, n, ctx)
    done["reused"] = reused   # the summary's count, not the marker's: the files are a full rescore's
    return _slice_result(done, skipped=0)


def _reused_rows(table: pa.Table, quarantine: pa.Table, ctx: UnitContext, fmt: str, index, cache: dict):
    """(scores, quarantine rows, rows reused): the rows whose digest the previous run holds copied
    from it (:mod:`pipeline.job.reuse`), the others scored; in the order of ``table``."""
    if table.num_rows == 0:   # a slice of only later duplicates, dropped
        return (*_score_rows(table, quarantine, ctx, fmt), 0)
    digests = row_digests(table, ctx.scoring, ctx.metadata.get(META_SIGNATURE, ""))
    found, part, row = reuse.lookup(index, digests)
    if not found.any():
        return (*_score_rows(table, quarantine, ctx, fmt), 0)
    fresh_at, hit_at = np.flatnonzero(~found), np.flatnonzero(found)
    fresh, quarantine = _score_rows(table.take(pa.array(fresh_at)), quarantine, ctx, fmt)
    # too long to score is a function of the texts: the rows scored away are those whose digest
    # is not among the scores'
    kept = fresh_at[np.isin(digests[fresh_at], fresh.column("text_digest").to_numpy())]
    schema = fresh.schema
    copied = reuse.take_rows(index, part, row, pa.schema([f for f in schema if f.name not in reuse.OWN_COLUMNS]),
                             cache, digests[hit_at])
    # only the columns a row takes from this run's input are copied (not every text)
    own = table.select([f.name for f in schema if f.name in table.column_names and f.name in reuse.OWN_COLUMNS])
    own = own.take(pa.array(hit_at))
    own_cols = {**{c: own.column(c) for c in own.column_names}, "text_digest": pa.array(digests[hit_at], pa.uint64()),
                "cost": pa.array(estimate_costs(table, source=ctx.scoring.diagnostics)[hit_at], pa.int64())}
    cols = {f.name: copied.column(f.name) if f.name not in reuse.OWN_COLUMNS else own_cols[f.name] for f in schema}
    return _in_order(fresh, kept, pa.table(cols, schema=schema), hit_at), quarantine, len(hit_at)


def _in_order(fresh: pa.Table, fresh_at: np.ndarray, copied: pa.Table, copied_at: np.ndarray) -> pa.Table:
    """Scored and copied rows, each at its position in the input (``fresh_at``, ``copied_at``)."""
    both = pa.concat_tables([fresh, copied])
    return both.take(pa.array(np.argsort(np.concatenate([fresh_at, copied_at]), kind="stable")))


def _reusable(rows: pa.Table, ctx: UnitContext, index) -> bool:
    """Whether the previous run holds every row (an oversized slice then needs no blocks)."""
    return bool(reuse.lookup(index, row_digests(rows, ctx.scoring, ctx.metadata.get(META_SIGNATURE, "")))[0].all())


def _slice_result(done: dict, skipped: int) -> TaskResult:
    """A slice's result from what the run folder gives of it (:func:`write_task_files`,
    :func:`load_done`: its marker's counts and its statistics)."""
    return TaskResult(unit=done["unit"], rows=done["rows"], quarantined=done["quarantined"],
                      quarantine_reasons=done["quarantine_reasons"], systems=done["systems"],
                      cand_tokens=done["cand_tokens"], ref_tokens=done.get("ref_tokens", 0), stats=done["stats"],
                      tasks=1, skipped=skipped, slices=done["slices"], reused=done.get("reused", 0))


def _hashes(table: pa.Table) -> np.ndarray:
    hashes = key_hashes(table.select(["system", "id"]))
    if hashes is None:  # the readers never let a null system or id through
        raise ValueError("a canonical table holds a null system or id")
    return hashes


def _load_slices(unit: WorkUnit, n: int, ctx: UnitContext) -> list | None:
    """Every slice as :func:`load_done` gives it (from its marker and parts), or None if one is
    missing or of another slice count."""
    results = []
    for k in range(n):
        r = load_done(unit.index, k, ctx)
        if r is None or r["slices"] != n:
            return None
        results.append(r)
    return results


def _resumed(unit: WorkUnit, ctx: UnitContext, done: frozenset) -> TaskResult | None:
    """The unit's result from its markers, if an earlier run finished every slice of it."""
    first = load_done(unit.index, 0, ctx) if 0 in done else None
    if first is None or not set(range(first["slices"])) <= done:
        return None
    loaded = _load_slices(unit, first["slices"], ctx)
    if loaded is None:
        return None
    hashes = np.concatenate([d["hashes"] for d in loaded])
    return _unit_result(unit, first["slices"], [_slice_result(d, skipped=1) for d in loaded], hashes, [])


def _unit_result(unit: WorkUnit, n: int, results: list, hashes, left: list, split: dict | None = None,
                 stopped: bool = False) -> TaskResult:
    merged = merge_results(*results) or empty_result(unit.index)
    return dataclasses.replace(merged, unit=unit.index, tasks=len(results), slices=n, left=left, hashes=hashes,
                               split=split or {}, stopped=stopped)


def score_unit(spec, unit: WorkUnit, ctx: UnitContext, work: UnitWork, duplicates: dict | None = None,
               index=None) -> TaskResult:
    """Read ``unit`` once, cut it by cost, score and write its slices as :class:`UnitWork` says.

    Returns the merged result of the slices written (or resumed) here with ``slices`` (the
    unit's slice count), ``left`` (``[(slice, blocks)]`` for wave 2; blocks > 1: an oversized
    example cut in blocks of reference sentences, whose rows are in ``split``) and ``hashes``
    (the key hashes of the unit's rows; wave 1 only).  ``duplicates``: the result of
    :func:`dedup.later_duplicates` (``work.again``).  ``index``: a previous run's rows
    (:func:`pipeline.job.reuse.build_index`), copied where their digest is a row's.  A run stopped
    meanwhile gets an empty result marked ``stopped``, and nothing more is written."""
    try:
        return _score_unit(spec, unit, ctx, work, duplicates, index)
    except RunStopped:
        return _unit_result(unit, 0, [], np.zeros(0, dtype=np.uint64), [], stopped=True)


def _score_unit(spec, unit: WorkUnit, ctx: UnitContext, work: UnitWork, duplicates: dict | None,
                index=None) -> TaskResult:
    _test_sleep()
    check_stop(ctx)
    pause_point("task", unit.index)
    wave1 = work.slices is None
    if wave1 and work.done:
        resumed = _resumed(unit, ctx, work.done)
        if resumed is not None:
            return resumed
    lined = _line_input(spec, unit, ctx, work, index)
    if isinstance(lined, LinedUnit):
        return _score_lines(unit, ctx, work, lined)
    # the unit's rows read without drops, when its lines were (none of them the previous run's)
    full = None if lined is None else (lined, QUARANTINE_SCHEMA.empty_table())
    if work.again:
        full = readers.read_unit(spec, dataclasses.replace(unit, drop_rows=()))
        unit = dedup.confirm_drops(spec, unit, full[0], duplicates[unit.index])
    table, quarantine, slices, bounds = unit_input(spec, unit, ctx, work.target_cost, full)
    if work.again:
        # what the unit wrote goes first (its markers first of all): a rerun after a kill
        # part-way reads the unit again rather than trust slices of both kinds
        remove_slices(unit.index, len(slices), ctx)
    hashes = _hashes(table) if wave1 and not work.again else None
    results, left, split, scored, cache = [], [], {}, 0, {}
    for s, (lo, hi) in zip(slices, bounds):
        k = s.index
        if not wave1 and k not in work.slices:
            continue
        if k in work.done:  # wave 1 of a rerun: what an earlier run wrote (work.done is empty otherwise)
            d = load_done(unit.index, k, ctx)
            if d is not None and d["slices"] == len(slices):
                results.append(_slice_result(d, skipped=1))
                continue
        blocks = split_blocks_for(s, ctx.scoring, work.target_cost)
        if blocks > 1 and index is not None and _reusable(table.slice(lo, hi - lo), ctx, index):
            blocks = 1   # an oversized example the previous run scored: copied, not cut in blocks
        if wave1 and blocks > 1:
            # an oversized example: its blocks on several workers, from the rows kept here
            left.append((k, blocks))
            split[k] = {"rows": table.take(np.arange(lo, hi)), "quarantine": quarantine if k == 0 else None,
                        "slices": len(slices)}
            continue
        if wave1 and work.first is not None and scored >= work.first:
            left.append((k, 1))
            continue
        rows = table.slice(lo, hi - lo)
        results.append(score_slice(rows, quarantine, unit, k, len(slices), ctx,
                                   hashes[lo:hi] if hashes is not None else None,
                                   previous=None if index is None else (index, cache)))
        scored += 1
    return _unit_result(unit, len(slices), results, hashes, left, split)


@dataclass(frozen=True)
class LinedUnit:
    """A unit read by its lines against a previous run (:func:`_line_input`): the rows at ``hit``
    (line numbers, ascending) copied (``copied``: their rows of the previous run), those at
    ``fresh`` parsed (``rows``: canonical); its slices, and its rows' key hashes in line order."""

    rows: pa.Table
    fresh: np.ndarray
    copied: pa.Table
    hit: np.ndarray
    slices: list
    hashes: np.ndarray


def _line_input(spec, unit: WorkUnit, ctx: UnitContext, work: UnitWork, index) -> LinedUnit | pa.Table | None:
    """The unit read by lines: the rows of lines the previous run scored copied without parsing
    the lines (``line_digest``), the others parsed; the unit's rows (a canonical table) where
    no line is the previous run's (the unit is then scored whole from them, not read again);
    None where the unit is read whole instead (no previous run, a resume, duplicates dropped,
    texts kept, not one clean JSONL unit, an unusual line, an oversized example to score, a key
    repeated in the unit)."""
    if index is None or not index.has_lines or work.again or work.done or ctx.keep_texts:
        return None   # (no line of the previous run to find: the lines are not read twice)
    lines = readers.read_lines(spec, unit)
    if lines is None:
        return None
    found, part, row, cost = reuse.lookup_lines(index, lines.digests)
    if not found.any():
        return readers.parse_lines(spec, unit, lines, np.arange(len(found))) if len(found) else None
    fresh_at, hit_at = np.flatnonzero(~found), np.flatnonzero(found)
    rows = readers.parse_lines(spec, unit, lines, fresh_at)
    if rows is None:
        return None
    costs = np.empty(len(found), dtype=np.int64)
    costs[hit_at] = cost
    costs[fresh_at] = estimate_costs(rows, source=ctx.scoring.diagnostics)
    slices = split_by_cost([unit], [costs], work.target_cost)
    if any(s.oversized and not found[s.lo:s.hi if s.hi is not None else len(found)].all() for s in slices):
        return None
    schema = scores_schema(ctx.scoring.rouge_types, ctx.scoring.diagnostics)
    copied = reuse.take_rows(index, part, row, schema, {}, lines.digests[hit_at], by="line_digest")
    copied = pa.Table.from_arrays(copied.columns, schema=schema)
    keys = pa.concat_tables([rows.select(["system", "id"]), copied.select(["system", "id"])])
    order = np.argsort(np.concatenate([fresh_at, hit_at]), kind="stable")
    hashes = _hashes(keys)[order]
    if any_equal(hashes):
        return None   # a key repeated in the unit: the line-by-line reader words it
    return LinedUnit(rows, fresh_at, copied, hit_at, slices, hashes)


def _score_lines(unit: WorkUnit, ctx: UnitContext, work: UnitWork, lined: LinedUnit) -> TaskResult:
    """:func:`_score_unit` of a unit read by lines: each slice's parsed rows scored, the others
    copied, in line order."""
    wave1, n = work.slices is None, len(lined.hashes)
    results, left = [], []
    for s in lined.slices:
        k, lo, hi = s.index, s.lo, n if s.hi is None else s.hi
        if not wave1 and k not in work.slices:
            continue
        if wave1 and work.first is not None and len(results) >= work.first:
            left.append((k, 1))
            continue
        fa, fb = np.searchsorted(lined.fresh, [lo, hi])
        ha, hb = np.searchsorted(lined.hit, [lo, hi])
        rows = lined.rows.slice(fa, fb - fa)
        fresh, q = _score_rows(rows, QUARANTINE_SCHEMA.empty_table(), ctx, unit.format)
        # rows scored away (too long) are those whose line is not among the scores'
        at = lined.fresh[fa:fb]
        kept = at[np.isin(rows.column("line_digest").to_numpy(), fresh.column("line_digest").to_numpy())]
        copied = lined.copied.slice(ha, hb - ha)
        scores = _in_order(fresh, kept, copied, lined.hit[ha:hb])
        keys = pa.concat_tables([rows.select(["system", "id"]), copied.select(["system", "id"])])
        results.append(_write_slice(keys, scores, q, unit, k, len(lined.slices), ctx, lined.hashes[lo:hi], int(hb - ha)))
    return _unit_result(unit, len(lined.slices), results, lined.hashes if wave1 else None, left)


def brief(result: TaskResult) -> Brief:
    """What the client needs of a task's result (its statistics, hashes and rows stay on the workers)."""
    return Brief(unit=result.unit, slices=result.slices, left=result.left, rows=result.rows,
                 quarantined=result.quarantined, tasks=result.tasks, skipped=result.skipped,
                 split_examples=result.split_examples, stopped=result.stopped, reused=result.reused)


def split_input(result: TaskResult, k: int) -> dict:
    """Oversized slice ``k``'s rows, as :func:`score_unit` kept them for its blocks."""
    if result.stopped:
        raise RunStopped("the run was stopped")
    return result.split[k]


def hashes_of(result: TaskResult) -> np.ndarray:
    """A wave-1 result's key hashes (the input of :func:`dedup.later_duplicates`)."""
    return result.hashes


def reload_unit(unit: WorkUnit, n_slices: int, ctx: UnitContext) -> TaskResult:
    """A unit's result from the files its slices wrote (every one must be there): the statistics
    of a run whose wave 2 dropped duplicates from units wave 1 had written whole."""
    loaded = _load_slices(unit, n_slices, ctx)
    if loaded is None:
        raise RuntimeError(f"unit {unit.key}: one of its {n_slices} slices has no complete marker and parts")
    return merge_results(*(_slice_result(d, skipped=0) for d in loaded)) or empty_result(unit.index)
