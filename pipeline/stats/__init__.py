"""Corpus statistics: exact mergeable accumulators, Poisson bootstrap, rouge-score's bootstrap.

NumPy (numba compiles the bootstrap weights and key hashes; pyarrow is imported lazily,
for ``to_arrow`` and for keys given as an Arrow column).  Never imports dask or fsspec.
"""
from pipeline.lazy import lazy_getattr
from pipeline.stats.rouge_score_bootstrap import AggregateScore, BootstrapAggregator, Score, bootstrap_aggregate

# The accumulator (numba) is imported on first use: ``pipeline.compute`` and the
# BootstrapAggregator need NumPy only.
_LAZY = {"CI_METHOD": "accumulator", "QUANTILES": "finalize", "ROW_KEYS": "rows",
         "STATS": "accumulator", "StatsAccumulator": "accumulator", "rows_to_arrow": "rows",
         "stats_schema": "rows", "stats_to_json": "rows", "FIXED_BITS": "fixedpoint"}


__getattr__ = lazy_getattr("pipeline.stats", _LAZY, globals())

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
