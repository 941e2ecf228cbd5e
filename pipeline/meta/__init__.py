"""Meta-evaluation: how well ROUGE agrees with human judgments (issue #29; docs/meta-evaluation.md).

``correlate`` (:mod:`.api`), ``compare_metrics`` (:mod:`.compare_metrics`); the definitions:
:mod:`.levels` (summary, system, global), :mod:`.coefficients` (scipy's), :mod:`.resample` (the
bootstrap), :mod:`.signature`; :mod:`.human` reads the judgments, :mod:`.data` joins them with the
scores.  Runs are read through :mod:`pipeline.runfolder.read` only.  Needs scipy (the ``meta`` extra).
"""
from pipeline.meta.api import CorrelationResult, correlate
from pipeline.meta.compare_metrics import compare_metrics, williams
from pipeline.meta.compare_metrics import from_result as compare_metrics_from_result

__all__ = ["CorrelationResult", "compare_metrics", "compare_metrics_from_result", "correlate", "williams"]
