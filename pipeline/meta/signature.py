"""The correlation signature (sacrebleu's idea applied to meta-evaluation): every choice that
changes a correlation, printed beside it.

    coef:kendall-tau-b|level:summary|doc:id|skip:constant-or-lt3|human:relevance-mean|systems:16|docs:100|boot:both-1000|ci:95|seed:12345|v:0.1.0

* ``coef``: the coefficient and its variant; ``level``: ``summary``, ``system`` or ``global``
  (:mod:`.levels`); ``doc``: the document key (``id`` or the ``--doc-key`` expression);
* ``skip``: what the level leaves out -- ``constant-or-lt3`` (summary: documents whose metric or
  human column is constant or has fewer than three systems), ``unjudged-systems`` (system: systems
  without a judged cell), ``none`` (global);
* ``human``: the field and how its annotations are aggregated (:mod:`.human`);
* ``systems``, ``docs``: the systems and documents of the judged data;
* ``boot``: ``<resampled>-<n_boot>`` or ``none``; ``ci``: the confidence in percent; ``seed``;
* then `` + `` and the run's ROUGE signature (:mod:`pipeline.signature`; ``unknown`` for a
  DataFrame without one in ``attrs["signature"]``).
"""
from __future__ import annotations

from pipeline import __version__
from pipeline.meta.coefficients import SIGNED
from pipeline.meta.human import AGGREGATION

SKIP = {"summary": "constant-or-lt3", "system": "unjudged-systems", "global": "none"}


def correlation_signature(coef: str | None, level: str | None, *, doc_key: str | None, field: str,
                          n_systems: int, n_docs: int, resample: str, n_boot: int, confidence: float, seed: int,
                          rouge: str) -> str:
    """One number's signature; with ``coef`` and ``level`` None, the part every row of a result
    shares (no ``coef``, ``level``, ``skip``)."""
    boot = f"{resample}-{n_boot}" if n_boot > 0 else "none"
    own = [f"coef:{SIGNED[coef]}", f"level:{level}"] if coef and level else []
    parts = [*own, f"doc:{doc_key or 'id'}", *([f"skip:{SKIP[level]}"] if own else []),
             f"human:{field}-{AGGREGATION}", f"systems:{n_systems}", f"docs:{n_docs}", f"boot:{boot}",
             f"ci:{round(confidence * 100, 6):g}", f"seed:{seed}", f"v:{__version__}"]
    return "|".join(parts) + " + " + (rouge or "unknown")
