"""rouge-pipeline: exact, fast ROUGE from a laptop to a Dask cluster."""
__version__ = "0.1.0"

from pipeline.lazy import lazy_getattr  # noqa: E402
from pipeline.scorer import RougeScorer, Score  # noqa: E402

# NumPy is imported on first use of these (``import pipeline`` and a first small ``score`` load none)
_LAZY = {"compute": "pipeline.api", "RougeResult": "pipeline.api",
         "BootstrapAggregator": "pipeline.stats.rouge_score_bootstrap",
         "AggregateScore": "pipeline.stats.rouge_score_bootstrap",
         "correlate": "pipeline.meta", "CorrelationResult": "pipeline.meta"}


__getattr__ = lazy_getattr("pipeline", _LAZY, globals(), prefix="")


__all__ = ["AggregateScore", "BootstrapAggregator", "CorrelationResult", "RougeResult", "RougeScorer", "Score",
           "compute", "correlate",
           "__version__"]
