"""An oversized example (costing more than a slice's target on its own): its rougeLsum in blocks of
reference sentences on several workers (:mod:`pipeline.scoring.split`), the same numbers as unsplit.
How many blocks: :func:`pipeline.job.scores.split_blocks_for`."""
from __future__ import annotations

import dataclasses

import numpy as np

from pipeline.io.input_spec import WorkUnit
from pipeline.runfolder import RunStopped, check_stop
from pipeline.job.results import TaskResult
from pipeline.job.scores import ScoringSettings, scorer_for
from pipeline.job.task import UnitContext, score_slice
from pipeline.scoring import split


def prepare_split(pre: dict, ctx: UnitContext) -> dict | None:
    """The texts of an oversized slice's one example and its references' sentence counts
    (``pre``: its rows as :func:`pipeline.job.task.split_input` gives them)."""
    row = pre["rows"]
    if row.num_rows != 1:  # its example was dropped (a duplicate): finish_split writes the empty slice
        return None
    refs = row.column("references")[0].as_py()
    cand = row.column("candidate")[0].as_py()
    return {"candidate": cand, "references": refs,
            "n_sentences": split.sentence_counts(scorer_for(ctx.scoring), refs)}


def split_block(prep: dict | None, k: int, n_blocks: int, settings: ScoringSettings):
    """Block ``k``: union positions of every reference's ``k``-th sentence block (lists; None: too long)."""
    if prep is None:
        return None
    scorer = scorer_for(settings)
    out = []
    for ref, n in zip(prep["references"], prep["n_sentences"]):
        pos = split.union_block(scorer, prep["candidate"], ref, *split.block_bounds(n, n_blocks, k))
        out.append(None if pos is None else pos.tolist())
    return out


def finish_split(unit: WorkUnit, k: int, ctx: UnitContext, pre: dict, prep: dict | None, *blocks) -> TaskResult:
    """Score and write oversized slice ``k`` of ``unit`` from its blocks (no read: ``pre`` holds
    its rows); ``split_examples``: 1, or 0 when the example was dropped as a duplicate."""
    try:
        check_stop(ctx)
        positions = None
        if prep is not None:
            positions = [[None if b[r] is None else np.asarray(b[r], dtype=np.int64) for b in blocks]
                         for r in range(len(prep["references"]))]
        result = score_slice(pre["rows"], pre["quarantine"], unit, k, pre["slices"], ctx, split_positions=positions)
    except RunStopped:
        return TaskResult(unit=unit.index, stopped=True)
    return dataclasses.replace(result, split_examples=int(prep is not None))
