"""The correlation coefficients, by name, as scipy computes them (the specification; the
bootstrap's compiled path, :mod:`.kernels`, is tested against these).

* ``pearson``: :func:`scipy.stats.pearsonr`;
* ``spearman``: :func:`scipy.stats.spearmanr` (Pearson of the average ranks of ties);
* ``kendall``: :func:`scipy.stats.kendalltau` tau-b (ties in either variable corrected);
  ``kendall_c``: its tau-c (Stuart's, for rectangular tables).

Each takes two equal-length float arrays without NaN and of at least two distinct values each
(:mod:`.levels` skips the rest before calling).
"""
from __future__ import annotations

import numpy as np

from pipeline.errors import MetaError

COEFFICIENTS = ("pearson", "spearman", "kendall", "kendall_c")
DEFAULT_COEFFICIENTS = ("pearson", "spearman", "kendall")
# what the signature calls each (the variant is part of the number's meaning)
SIGNED = {"pearson": "pearson", "spearman": "spearman", "kendall": "kendall-tau-b", "kendall_c": "kendall-tau-c"}
INSTALL = "pip install 'rouge-pipeline[meta]'"


def scipy_stats():
    """:mod:`scipy.stats`, or the one-line error saying how to install it."""
    try:
        import scipy.stats as st  # scipy is the optional extra `meta`: imported only when correlating
    except ImportError:
        raise MetaError(f"correlate needs scipy, which is not installed: {INSTALL}") from None
    return st


def check(names) -> tuple[str, ...]:
    """The coefficients asked for (a comma-separated string or a list), each known, in order, once."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    names = tuple(dict.fromkeys(names))
    bad = [n for n in names if n not in COEFFICIENTS]
    if bad or not names:
        raise MetaError(f"coefficient {', '.join(bad) or '(none)'}: choose from {', '.join(COEFFICIENTS)}")
    return names


def coefficient(name: str, x: np.ndarray, y: np.ndarray) -> float:
    """The coefficient ``name`` of ``x`` and ``y`` as scipy computes it."""
    st = scipy_stats()
    if name == "pearson":
        return float(st.pearsonr(x, y)[0])
    if name == "spearman":
        return float(st.spearmanr(x, y)[0])
    return float(st.kendalltau(x, y, variant="c" if name == "kendall_c" else "b")[0])
