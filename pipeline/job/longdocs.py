"""An oversized example (costing more than a slice's target on its own): its rougeLsum in blocks of
reference sentences on several workers (:mod:`pipeline.scoring.split`), the same numbers as unsplit.
How many blocks: :func:`pipeline.job.scores.split_blocks_for`."""
from __future__ import annotations

import numpy as np

from pipeline.io.spec import WorkUnit
from pipeline.job.outputs import check_stop
from pipeline.job.scores import ScoringSettings, scorer_for
from pipeline.job.task import UnitContext, score_slice, unit_input
from pipeline.scoring import split

def prepare_split(spec, unit: WorkUnit, k: int, ctx: UnitContext, target_cost: float) -> dict | None:
    """The texts of an oversized slice's one example and its references' sentence counts."""
    table, _, _, bounds = unit_input(spec, unit, ctx, target_cost)
    lo, hi = bounds[k]
    if hi - lo != 1:  # its example was dropped (a duplicate): finish_split writes the empty slice
        return None
    row = table.slice(lo, 1)
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


def finish_split(spec, unit: WorkUnit, k: int, ctx: UnitContext, target_cost: float, prep: dict | None,
                 *blocks) -> dict:
    """Score and write oversized slice ``k`` of ``unit`` from its blocks."""
    check_stop(ctx)
    table, quarantine, slices, bounds = unit_input(spec, unit, ctx, target_cost)
    lo, hi = bounds[k]
    positions = None
    if prep is not None:
        positions = [[None if b[r] is None else np.asarray(b[r], dtype=np.int64) for b in blocks]
                     for r in range(len(prep["references"]))]
    result = score_slice(table.slice(lo, hi - lo), quarantine, unit, k, len(slices), ctx, split_positions=positions)
    result["slices"] = len(slices)
    return result
