"""Input layouts -> the canonical example table, and atomic, deterministic file writing
(the run folder's names and files: :mod:`pipeline.runfolder`).

fsspec and Arrow (and numba for the JSONL byte check): this package must never import Dask
(only ``pipeline.execution`` does).  The names below load their module on first use, so that
importing a light module (``pipeline.io.paths``) does not load the readers.
"""
from pipeline.lazy import lazy_getattr

_EXPORTS = {
    "plan_units": "readers", "read_unit": "readers",
    "CANONICAL_SCHEMA": "spec", "QUARANTINE_SCHEMA": "spec", "InputSpec": "spec", "WorkUnit": "spec",
    **dict.fromkeys(("escape_system", "unescape_system", "write_json_atomic", "write_parquet_atomic"), "writers"),
}
__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr("pipeline.io", _EXPORTS, globals())
