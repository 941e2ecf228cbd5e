"""Corpus statistics: exact mergeable accumulators, Poisson bootstrap, rouge-score's bootstrap.

NumPy (numba compiles the bootstrap weights and key hashes; pyarrow is imported lazily,
for ``to_arrow`` and for keys given as an Arrow column).  Never imports dask or fsspec.
"""
from pipeline.lazy import lazy_getattr

# Every name is imported on first use: ``pipeline.stats.keys`` (the example key and the default
# seed, read by the CLI) loads no NumPy, ``pipeline.compute`` and the BootstrapAggregator need
# NumPy only, the accumulator numba.
_LAZY = {"AggregateScore": "rouge_score_bootstrap", "BootstrapAggregator": "rouge_score_bootstrap",
         "Score": "rouge_score_bootstrap", "bootstrap_aggregate": "rouge_score_bootstrap",
         "CI_METHOD": "accumulator", "QUANTILES": "finalize", "ROW_KEYS": "rows",
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
