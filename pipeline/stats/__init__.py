"""Corpus statistics: exact mergeable accumulators, Poisson bootstrap, rouge-score's bootstrap.

NumPy (numba compiles the bootstrap weights and key hashes; pyarrow is imported lazily,
for ``to_arrow`` and for keys given as an Arrow column).  Never imports dask or fsspec.
"""
from pipeline.stats.accumulator import (
    CI_METHOD,
    QUANTILES,
    ROW_KEYS,
    STATS,
    StatsAccumulator,
    rows_to_arrow,
    stats_schema,
    stats_to_json,
)
from pipeline.stats.fixedpoint import FIXED_BITS
from pipeline.stats.rouge_score_bootstrap import AggregateScore, Score, bootstrap_aggregate

__all__ = [
    "AggregateScore",
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
