"""An oversized example (costing more than a task's target on its own): its rougeLsum in blocks of
reference sentences on several workers (:mod:`pipeline.scoring.split`), the same numbers as unsplit."""
from __future__ import annotations

import numpy as np

from pipeline.job.outputs import load_done
from pipeline.job.plan import Task
from pipeline.job.scores import ScoringSettings, scorer_for
from pipeline.job.task import UnitContext, read_task, score_task
from pipeline.scoring.engine import RougeScorer  # the scorer the rouge-score and unicode profiles build
from pipeline.scoring import split

MAX_SPLIT_BLOCKS = 64


def split_blocks_for(task: Task, settings: ScoringSettings, target_cost: float) -> int:
    """How many blocks of reference sentences an oversized task's rougeLsum is cut into (1: no split)."""
    # only rouge-score's own scorer (default or unicode tokens, max-F) has the block kernels
    if (not task.oversized or "rougeLsum" not in settings.rouge_types
            or type(scorer_for(settings)) is not RougeScorer):
        return 1
    return int(min(MAX_SPLIT_BLOCKS, max(1, -(-task.cost // max(int(target_cost), 1)))))


def prepare_split(spec, task: Task, ctx: UnitContext) -> dict | None:
    """The texts of an oversized task's one example and its references' sentence counts."""
    table, _ = read_task(spec, task, ctx.read_token, release=False)  # finish_split reads it again
    if table.num_rows != 1:
        return None
    refs = table.column("references")[0].as_py()
    cand = table.column("candidate")[0].as_py()
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


def finish_split(spec, task: Task, ctx: UnitContext, prep: dict | None, *blocks, earlier: bool | None = None) -> dict:
    """Score and write an oversized task from its blocks (resume-aware, like :func:`run_task`)."""
    done = load_done(task, ctx)
    if done is not None:
        done["skipped"] = int(earlier is None or earlier)
        return done
    if prep is None:
        return score_task(spec, task, ctx)
    positions = [[None if b[r] is None else np.asarray(b[r], dtype=np.int64) for b in blocks]
                 for r in range(len(prep["references"]))]
    return score_task(spec, task, ctx, split_positions=positions)


