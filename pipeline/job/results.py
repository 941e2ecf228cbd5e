"""What the job's tasks return, and those results merged into the run's: the statistics tree's
fan-in, its finalisation, and rouge-score's exact bootstrap from the parts read back.

A task returns a :class:`TaskResult` (the statistics tree merges them on the workers); the client
gets a :class:`Brief` of each and, from the tree's root, the run's :class:`Totals`."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pipeline.runfolder import read_scores
from pipeline.scoring.types import STATS
from pipeline.stats import StatsAccumulator, bootstrap_aggregate


@dataclass(frozen=True)
class TaskResult:
    """A task's counts and mergeable statistics (the slices it wrote or resumed), and, from a
    unit's task (:func:`pipeline.job.score_unit`), what wave 2 needs of the unit."""

    unit: int                                   # a merge: the lowest unit merged
    rows: int = 0                               # rows scored
    quarantined: int = 0
    quarantine_reasons: dict = field(default_factory=dict)
    systems: list = field(default_factory=list)
    cand_tokens: int = 0
    ref_tokens: int = 0
    stats: StatsAccumulator | None = None       # None only when stopped
    tasks: int = 0                              # slices written or resumed
    skipped: int = 0                            # of those, resumed from an earlier run's markers
    # a unit's task (score_unit) or an oversized slice's (finish_split) only
    slices: int | None = None                   # the unit's slice count
    left: list | None = None                    # score_unit: [(slice, blocks)] left for wave 2
    hashes: np.ndarray | None = None            # score_unit, wave 1: the key hashes of the unit's rows
    split: dict = field(default_factory=dict)   # oversized slice -> its rows, for its blocks
    split_examples: int = 0                     # finish_split: 1, or 0 when its example was dropped
    stopped: bool = False                       # the run's stop flag was set: nothing more written
    reused: int = 0                             # rows copied from a previous run (--reuse), not scored

    def __sizeof__(self) -> int:
        # Dask sizes what it does not know with sys.getsizeof: count the arrays and tables held
        # here, as it counted them in a dict, for its memory accounting and task placement
        n = object.__sizeof__(self)
        if self.hashes is not None:
            n += self.hashes.nbytes
        for s in self.split.values():
            n += sum(t.nbytes for t in (s["rows"], s["quarantine"]) if t is not None)
        return n


@dataclass(frozen=True)
class Brief:
    """What the client holds of a task's result (its statistics, hashes and rows stay on the workers)."""

    unit: int
    slices: int | None
    left: list | None
    rows: int
    quarantined: int
    tasks: int
    skipped: int
    split_examples: int
    stopped: bool
    reused: int = 0


@dataclass(frozen=True)
class Totals:
    """The run's counts and statistics rows: the statistics tree's root, finalised."""

    rows: int
    quarantined: int
    quarantine_reasons: dict
    systems: list
    cand_tokens: int
    ref_tokens: int
    stats_rows: list


def merge_results(*results: TaskResult | None) -> TaskResult | None:
    """Fan-in step of the statistics tree: merge slice or unit results into one (their counts and
    statistics); a None adds nothing, and only Nones give None."""
    if len(results) == 1 and isinstance(results[0], (list, tuple)):
        results = tuple(results[0])
    results = tuple(r for r in results if r is not None)
    if not results:
        return None
    acc = StatsAccumulator.merge_all(r.stats for r in results)
    reasons: dict[str, int] = {}
    for r in results:
        for k, v in r.quarantine_reasons.items():
            reasons[k] = reasons.get(k, 0) + v
    return TaskResult(
        unit=min(r.unit for r in results),
        tasks=sum(r.tasks for r in results),
        skipped=sum(r.skipped for r in results),
        rows=sum(r.rows for r in results),
        quarantined=sum(r.quarantined for r in results),
        quarantine_reasons=dict(sorted(reasons.items())),
        systems=sorted({s for r in results for s in r.systems}),
        cand_tokens=sum(r.cand_tokens for r in results),
        ref_tokens=sum(r.ref_tokens for r in results),
        stats=acc,
        reused=sum(r.reused for r in results),
    )


def empty_result(unit: int = 0) -> TaskResult:
    """The result of nothing scored (the shape :func:`merge_results` gives)."""
    return merge_results(TaskResult(unit=unit, stats=StatsAccumulator.empty()))


def finalize_results(confidence: float, *results: TaskResult | None) -> Totals:
    """The merge of ``results`` (the last merge of the statistics tree, in the same task) with
    its statistics rows in place of the accumulator.  In the distributed job this runs on a
    worker, where the bootstrap's compiled weight kernel is loaded already, not in the client."""
    r = merge_results(*results) or empty_result()
    return Totals(rows=r.rows, quarantined=r.quarantined, quarantine_reasons=r.quarantine_reasons,
                  systems=r.systems, cand_tokens=r.cand_tokens, ref_tokens=r.ref_tokens,
                  stats_rows=r.stats.finalize(confidence))


def exact_bootstrap(run_url: str, systems: list[str], rouge_types, seed: int, n_boot: int,
                    confidence: float, storage_options: dict | None = None) -> list[dict]:
    """rouge-score's ``BootstrapAggregator`` result per system (``np.random.seed(seed)`` before
    each system's ``aggregate()``), from the per-example Parquet read back in input order."""
    rows = []
    if n_boot <= 0:
        return rows
    cols = [f"{t}_{s}" for t in rouge_types for s in STATS]
    for system in systems:
        table = read_scores(run_url, system, cols, storage_options)
        if table is None or table.num_rows == 0:
            continue
        mat = {t: np.stack([table.column(f"{t}_{s}").to_numpy() for s in STATS], axis=1) for t in rouge_types}
        agg = bootstrap_aggregate(mat, seed, n_samples=n_boot, confidence_interval=confidence)
        for t in rouge_types:
            a = agg[t]
            for k, stat in enumerate(STATS):
                rows.append({"system": system, "type": t, "stat": stat, "count": table.num_rows,
                             "low": float(a.low[k]), "mid": float(a.mid[k]), "high": float(a.high[k]),
                             "n_boot": n_boot, "seed": seed, "method": "rouge-score-bootstrap"})
    return rows
