"""What grows with pairs, files, systems and workers, for runs this machine cannot hold (docs/scaling.md).

    python benchmarks/sim_scaling.py                              # the table of docs/scaling.md
    python benchmarks/sim_scaling.py --pairs 1e9 --files 1e5 --workers 1000 --systems 4

Nothing is run on a cluster.  The per-item sizes are measured here with the job's own code on
small samples and multiplied out: a plan entry (``job.unit_to_dict`` as ``_plan.json`` stores
it), a unit's statistics (``StatsAccumulator`` of a scored unit, per system), the duplicate
search's input on the one worker that runs it (8 bytes of key hash per example), and the
scheduler's task count (wave 1: a unit's task, its brief and its hashes; the duplicate search;
the merge tree; the finalisation).  Rates (requests per second to the
object store) assume every worker finishes a task every ``--task-seconds``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

FAN_IN = 8  # pipeline.execution.waves.FAN_IN


def measure() -> dict:
    """Per-item sizes from the job's own code on small samples."""
    import numpy as np
    import pyarrow as pa

    from pipeline import job
    from pipeline.io.input_spec import WorkUnit
    from pipeline.stats import poisson

    unit = WorkUnit(index=12345, layout="records", file="s3://bucket/corpus/part-012345.jsonl.zst",
                    format="jsonl", row_stop=12_500, byte_start=0, byte_stop=7_340_032, n_rows=12_500)
    entry = len(json.dumps(job.unit_to_dict(unit), sort_keys=True, separators=(",", ":"), default=list))
    n = 2_000
    table = pa.table({"id": [f"doc-{i:09d}" for i in range(n)], "system": ["sys-a"] * n,
                      "candidate": ["the cat sat on the mat\nit was flat"] * n,
                      "references": [["a cat sat on a mat\nit was not flat"]] * n, "source": [None] * n})
    settings = job.ScoringSettings(diagnostics=False)
    scores = job.score_table(table, settings)
    acc = job.unit_stats(scores, job.UnitContext(run_url="", scoring=settings, seed=0, n_boot=1000))
    keys = pa.table({"system": table.column("system"), "id": table.column("id")})
    h = job.key_hashes(keys)
    big = np.random.default_rng(0).integers(0, 2**63, size=5_000_000, dtype=np.uint64)
    t0 = time.perf_counter()
    poisson.any_equal(big)
    t_equal = (time.perf_counter() - t0) / len(big)
    return {"plan_entry_bytes": entry, "stats_bytes_per_system": acc.nbytes(), "hash_bytes": h.itemsize,
            "id_bytes": keys.nbytes / n, "any_equal_s_per_hash": t_equal}


def model(m: dict, pairs: float, files: float, systems: int, workers: int, pairs_per_unit: float,
          task_seconds: float) -> dict:
    units = max(files, pairs / pairs_per_unit)
    tasks = units                       # short pairs: one slice per unit (more with long documents)
    merges, level = 0, tasks
    while level > FAN_IN:
        level = -(-level // FAN_IN)
        merges += level
    return {
        "units": units,
        "scheduler tasks": 3 * units + 1 + merges + 1,
        "_plan.json": units * m["plan_entry_bytes"],
        "client: units + futures pending at the start (~1 KB each)": units * (m["plan_entry_bytes"] + 3 * 1024),
        "client: per finished unit (3 integers)": units * 3 * 28,
        "duplicate search, one worker: hashes": pairs * m["hash_bytes"],
        "  its sort (s)": pairs * m["any_equal_s_per_hash"],
        "statistics per unit (all systems)": systems * m["stats_bytes_per_system"],
        "PUT/s (parts + quarantine + marker)": workers / task_seconds * (systems + 2),
        "GET/s (inputs, wave 1)": workers / task_seconds,
        "footers read before _SUCCESS": tasks * (systems + 1),
    }


def human(v: float, key: str) -> str:
    if "(s)" in key:
        return f"{v:,.1f} s"
    if "/s" in key or key in ("units", "scheduler tasks") or key.startswith("footers"):
        return f"{v:,.0f}"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if v >= size:
            return f"{v / size:,.1f} {unit}"
    return f"{v:,.0f} B"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=float, nargs="*", default=[2e5, 2e6, 1e9])
    ap.add_argument("--files", type=float, default=None, help="input files (default: pairs / 12,500)")
    ap.add_argument("--systems", type=int, default=1)
    ap.add_argument("--workers", type=int, nargs="*", default=[2, 2, 1000])
    ap.add_argument("--pairs-per-unit", type=float, default=12_500)
    ap.add_argument("--task-seconds", type=float, default=1.0, help="seconds a worker spends per task")
    a = ap.parse_args(argv)
    m = measure()
    print("measured here: " + ", ".join(f"{k} {v:.3g}" for k, v in m.items()))
    workers = a.workers + [a.workers[-1]] * (len(a.pairs) - len(a.workers))
    cols = [model(m, p, a.files or p / a.pairs_per_unit, a.systems, w, a.pairs_per_unit, a.task_seconds)
            for p, w in zip(a.pairs, workers)]
    head = [f"{p:,.0f} pairs / {w} workers" for p, w in zip(a.pairs, workers)]
    print(f"| {'':45s} | " + " | ".join(head) + " |")
    print("|" + "---|" * (len(head) + 1))
    for key in cols[0]:
        print(f"| {key:45s} | " + " | ".join(human(c[key], key) for c in cols) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
