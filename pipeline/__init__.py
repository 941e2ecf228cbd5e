"""rouge-pipeline: exact, fast ROUGE from a laptop to a Dask cluster."""
__version__ = "0.1.0"

from pipeline.scorer import RougeScorer, Score  # noqa: E402

__all__ = ["RougeScorer", "Score", "__version__"]
