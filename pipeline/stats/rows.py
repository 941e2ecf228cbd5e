"""The statistics rows' outputs: the pinned Arrow schema, an Arrow table, deterministic JSON."""
from __future__ import annotations

import json

ROW_KEYS = (
    "system", "type", "stat", "count", "mean", "std", "min", "max",
    "q05", "q25", "median", "q75", "q95", "ci_low", "ci_high", "ci_method", "n_boot", "boot_buckets",
    "seed",
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
        pa.field("q05", f64, nullable=False),
        pa.field("q25", f64, nullable=False),
        pa.field("median", f64, nullable=False),
        pa.field("q75", f64, nullable=False),
        pa.field("q95", f64, nullable=False),
        pa.field("ci_low", f64),  # null when n_boot == 0 (or no replicate had weight)
        pa.field("ci_high", f64),
        pa.field("ci_method", pa.string(), nullable=False),
        pa.field("n_boot", pa.int64(), nullable=False),
        pa.field("boot_buckets", pa.int64(), nullable=False),
        pa.field("seed", pa.int64(), nullable=False),
    ])


def rows_to_arrow(rows: list[dict]):
    import pyarrow as pa

    schema = stats_schema()
    return pa.table({f.name: pa.array([r[f.name] for r in rows], f.type) for f in schema}, schema=schema)


def stats_to_json(rows: list[dict], indent: int | None = None) -> str:
    """Deterministic JSON of finalised rows (floats as shortest round-trip repr; NaN refused)."""
    return json.dumps(rows, indent=indent, allow_nan=False, ensure_ascii=False)
