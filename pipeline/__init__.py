"""rouge-pipeline: exact, fast ROUGE from a laptop to a Dask cluster."""
__version__ = "0.1.0"

import gc as _gc  # noqa: E402
import os as _os  # noqa: E402

from pipeline.scorer import RougeScorer, Score  # noqa: E402

if _os.environ.get("ROUGE_PIPELINE_GC_FREEZE", "1") != "0":
    # numba and llvmlite leave a few hundred thousand long-lived objects behind.  Moved to
    # the permanent generation, no later collection rescans them: every full collection
    # gets cheaper and interpreter exit (which collects several times) about 0.4 s shorter.
    # Set ROUGE_PIPELINE_GC_FREEZE=0 to leave the collector alone.
    _gc.freeze()

__all__ = ["RougeScorer", "Score", "__version__"]
