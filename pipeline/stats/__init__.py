"""Corpus statistics: exact mergeable accumulators, Poisson bootstrap, rouge-score's bootstrap.

NumPy (numba compiles the bootstrap weights and key hashes; pyarrow is imported lazily,
for ``to_arrow`` and for keys given as an Arrow column).  Never imports dask or fsspec.
"""
from pipeline.stats.rouge_score_bootstrap import AggregateScore, BootstrapAggregator, Score, bootstrap_aggregate

# The accumulator (numba) is imported on first use: ``pipeline.compute`` and the
# BootstrapAggregator need NumPy only.
_LAZY = {"CI_METHOD": "accumulator", "QUANTILES": "finalize", "ROW_KEYS": "rows",
         "STATS": "accumulator", "StatsAccumulator": "accumulator", "rows_to_arrow": "rows",
         "stats_schema": "rows", "stats_to_json": "rows", "FIXED_BITS": "fixedpoint"}


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pipeline.stats' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"pipeline.stats.{module}"), name)
    globals()[name] = value
    return value

__all__ = [
    "AggregateScore",
    "BootstrapAggregator",
    "CI_METHOD",
    "FIXED_BITS",
    "QUANTILES",
    "ROW_KEYS",
    "STATS",
    "Score",
    "StatsAccumulator",
    "bootstrap_aggregate",
    "rows_to_arrow",
    "stats_schema",
    "stats_to_json",
]
