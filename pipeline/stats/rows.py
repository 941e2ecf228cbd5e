"""The statistics rows: their one shape (:data:`ROW_KEYS`), the pinned Arrow schema, an Arrow
table, deterministic JSON.

One row per (system, type, stat), the same keys wherever the statistics are given: a run's
``stats/stats.{parquet,json}``, ``score --json`` and ``show --json``, ``eval -f json|csv`` and
``RougeResult.rows()`` / ``to_dict()`` (docs/run-folder.md, "The statistics rows"):

* ``system`` (``""`` for ``eval``/``compute``: no system), ``type``, ``stat``, ``count``;
* ``mean``, ``std`` (sample, ddof=1; null below 2 examples), ``min``, ``max``: exact;
* ``q05_approx`` ... ``q95_approx``: NumPy's linear quantiles, each within ``quantile_error``
  of the exact one (a run: one histogram bin, 1e-4; ``eval``/``compute``: 0.0, exact);
* ``ci_low``, ``ci_mid``, ``ci_high``: the bootstrap's percentile interval at ``confidence`` and
  its median (null with ``n_boot`` 0), by ``ci_method`` (a run: the bucketed Poisson bootstrap
  with ``boot_buckets``; ``eval``/``compute``: rouge-score's ``BootstrapAggregator``, no buckets),
  ``n_boot`` replicates, ``seed``.
"""
from __future__ import annotations

import json

# the quantiles (key, q): approximate in a run (a histogram), hence the names
QUANTILE_KEYS = (("q05_approx", 0.05), ("q25_approx", 0.25), ("median_approx", 0.5), ("q75_approx", 0.75),
                 ("q95_approx", 0.95))
ROW_KEYS = (
    "system", "type", "stat", "count", "mean", "std", "min", "max",
    *(k for k, _ in QUANTILE_KEYS), "quantile_error", "ci_low", "ci_mid", "ci_high", "confidence", "ci_method",
    "n_boot", "boot_buckets", "seed",
)


def stats_schema():
    """The pinned Arrow schema of the statistics rows."""
    import pyarrow as pa

    f64 = pa.float64()
    return pa.schema([
        pa.field("system", pa.string(), nullable=False),
        pa.field("type", pa.string(), nullable=False),
        pa.field("stat", pa.string(), nullable=False),
        pa.field("count", pa.int64(), nullable=False),
        pa.field("mean", f64, nullable=False),
        pa.field("std", f64),  # null when count < 2
        pa.field("min", f64, nullable=False),
        pa.field("max", f64, nullable=False),
        *(pa.field(k, f64, nullable=False) for k, _ in QUANTILE_KEYS),
        pa.field("quantile_error", f64, nullable=False),   # the quantiles' largest error (0.0: exact)
        pa.field("ci_low", f64),  # null when n_boot == 0 (or no replicate had weight)
        pa.field("ci_mid", f64),
        pa.field("ci_high", f64),
        pa.field("confidence", f64, nullable=False),
        pa.field("ci_method", pa.string(), nullable=False),
        pa.field("n_boot", pa.int64(), nullable=False),
        pa.field("boot_buckets", pa.int64()),   # null: rouge-score's bootstrap (eval, compute)
        pa.field("seed", pa.int64(), nullable=False),
    ])


def rows_to_arrow(rows: list[dict]):
    import pyarrow as pa

    schema = stats_schema()
    return pa.table({f.name: pa.array([r[f.name] for r in rows], f.type) for f in schema}, schema=schema)


def stats_to_json(rows: list[dict], indent: int | None = None) -> str:
    """Deterministic JSON of finalised rows (floats as shortest round-trip repr; NaN refused)."""
    return json.dumps(rows, indent=indent, allow_nan=False, ensure_ascii=False)
