"""Input layouts -> the canonical example table, and atomic, deterministic outputs.

fsspec and Arrow (and numba for the JSONL byte check): this package must never import Dask
(only ``pipeline.execution`` does).
"""
from pipeline.io.readers import plan_units, read_unit  # noqa: F401
from pipeline.io.spec import CANONICAL_SCHEMA, QUARANTINE_SCHEMA, InputSpec, WorkUnit  # noqa: F401
from pipeline.io.writers import (  # noqa: F401
    escape_system,
    is_complete,
    mark_success,
    part_name,
    partition_path,
    unescape_system,
    write_json_atomic,
    write_parquet_atomic,
)
