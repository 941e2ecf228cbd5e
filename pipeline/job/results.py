"""Task results merged into the run's: the statistics tree's fan-in, its finalisation, and
rouge-score's exact bootstrap from the parts read back."""
from __future__ import annotations

import numpy as np

from pipeline.runfolder import read_scores
from pipeline.scoring.types import STATS
from pipeline.stats import StatsAccumulator, bootstrap_aggregate

def merge_results(*results: dict | None) -> dict | None:
    """Fan-in step of the statistics tree: merge slice or unit results into one (same shape); a
    None adds nothing, and only Nones give None."""
    if len(results) == 1 and isinstance(results[0], (list, tuple)):
        results = tuple(results[0])
    results = tuple(r for r in results if r is not None)
    if not results:
        return None
    acc = StatsAccumulator.merge_all(r["stats"] for r in results)
    reasons: dict[str, int] = {}
    for r in results:
        for k, v in r["quarantine_reasons"].items():
            reasons[k] = reasons.get(k, 0) + v
    return {
        "unit": min(r["unit"] for r in results),
        "tasks": sum(r.get("tasks", 1) for r in results),
        "skipped": sum(r.get("skipped", 0) for r in results),
        "rows": sum(r["rows"] for r in results),
        "quarantined": sum(r["quarantined"] for r in results),
        "quarantine_reasons": dict(sorted(reasons.items())),
        "systems": sorted({s for r in results for s in r["systems"]}),
        "cand_tokens": sum(r["cand_tokens"] for r in results),
        "ref_tokens": sum(r.get("ref_tokens", 0) for r in results),
        "files": [],
        "stats": acc,
    }


def empty_result(unit: int = 0) -> dict:
    """The result of nothing scored (the shape :func:`merge_results` gives)."""
    return merge_results({"unit": unit, "tasks": 0, "skipped": 0, "rows": 0, "quarantined": 0,
                          "quarantine_reasons": {}, "systems": [], "cand_tokens": 0, "ref_tokens": 0,
                          "stats": StatsAccumulator.empty()})


def finalize_results(confidence: float, *results: dict | None) -> dict:
    """The merge of ``results`` (the last merge of the statistics tree, in the same task) with
    its statistics rows (``"stats_rows"``) in place of the accumulator.  In the distributed job
    this runs on a worker, where the bootstrap's compiled weight kernel is loaded already:
    loading it in the client cost ~0.4 s of CPU on the shared cores and ~55 MiB."""
    result = merge_results(*results) or empty_result()
    out = {k: v for k, v in result.items() if k != "stats"}
    out["stats_rows"] = result["stats"].finalize(confidence)
    return out


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
