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


def names(value, allowed, what: str) -> tuple[str, ...]:
    """The names asked for (a comma-separated string or a list), each one of ``allowed``, in order,
    once; a ``what`` error otherwise (the levels and the coefficients alike)."""
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    value = tuple(dict.fromkeys(value))
    bad = [v for v in value if v not in allowed]
    if bad or not value:
        raise MetaError(f"{what} {', '.join(bad) or '(none)'}: choose from {', '.join(allowed)}")
    return value


def check(names_) -> tuple[str, ...]:
    """The coefficients asked for (:func:`names`)."""
    return names(names_, COEFFICIENTS, "coefficient")


def coefficient(name: str, x: np.ndarray, y: np.ndarray) -> float:
    """The coefficient ``name`` of ``x`` and ``y`` as scipy computes it."""
    st = scipy_stats()
    if name == "pearson":
        return float(st.pearsonr(x, y)[0])
    if name == "spearman":
        return float(st.spearmanr(x, y)[0])
    return float(st.kendalltau(x, y, variant="c" if name == "kendall_c" else "b")[0])
