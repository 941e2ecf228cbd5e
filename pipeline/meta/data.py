"""The judged data as matrices: a run's per-example scores (or any DataFrame of that shape) joined
with the human scores by ``(system, id)``, and each example placed at (system, document).

**The document key** is compare's (``rouge-pipeline compare --systems``): by default an example's
document is its ``id``; ``doc_key`` is a regular expression whose first group is the document,
``{system}`` standing for the escaped system name (``(.*):{system}$`` for ids that carry the
system).  An id it does not match, or two examples of one system on one document, is an error.

Systems and documents are sorted (by name): the resampling draws positions in these orders, so
the numbers do not depend on the order of the rows.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from pipeline.errors import MetaError
from pipeline.scoring.types import STATS, match_type_name
from pipeline.stats.keys import document_keys


@dataclass(frozen=True)
class Judged:
    systems: list[str]
    docs: list[str]
    columns: list[str]        # metric columns, ``<type>_<stat>``
    X: np.ndarray             # (columns, systems, docs) metric scores, NaN where missing
    H: np.ndarray             # (systems, docs) human scores, NaN where missing
    n_examples: int           # examples of the run with a human score
    n_unmatched: int          # judged (system, id) of the human file not in the run
    n_unjudged: int = 0       # examples of the run without a human score

    def split(self, column: str) -> tuple[str, str]:
        """``rouge2_recall`` -> ``("rouge2", "recall")``."""
        t, _, s = column.rpartition("_")
        return t, s


def metric_columns(frame: pd.DataFrame, types=None, stats=None) -> list[str]:
    """The ``<type>_<stat>`` columns of ``frame`` (types in their order, stats in ``STATS`` order),
    restricted to ``types`` and ``stats`` when given."""
    found: dict[str, list[str]] = {}
    for c in frame.columns:
        t, _, s = str(c).rpartition("_")
        if s in STATS and match_type_name(t):
            found.setdefault(t, []).append(s)
    for name, allowed, have in (("type", types, list(found)), ("stat", stats, list(STATS))):
        bad = [x for x in (allowed or []) if x not in have]
        if bad:
            raise MetaError(f"{name} {', '.join(bad)} is not in the scores (have: {', '.join(have) or 'none'})")
    return [f"{t}_{s}" for t in found if not types or t in types
            for s in STATS if s in found[t] and (not stats or s in stats)]


def judged(scores: pd.DataFrame, human: pd.DataFrame, doc_key: str | None = None, types=None,
           stats=None) -> Judged:
    """:class:`Judged` from per-example ``scores`` (``system``, ``id``, score columns) and ``human``
    (:func:`pipeline.meta.human.read_human`'s frame)."""
    for name, f in (("scores", scores), ("human", human)):
        missing = [c for c in ("id", "system") if c not in f.columns]
        if missing:
            raise MetaError(f"the {name} have no {' or '.join(missing)} column")
    columns = metric_columns(scores, types, stats)
    if not columns:
        raise MetaError("the scores have no <type>_<stat> column (e.g. rouge1_fmeasure)")
    left = scores[["system", "id", *columns]].astype({"system": str, "id": str})
    both = left.merge(human[["system", "id", "human"]].astype({"system": str, "id": str}), on=["system", "id"])
    if not len(both):
        raise MetaError(f"no (system, id) of the human judgments is in the scores (e.g. {_first(human)} "
                        f"vs {_first(left)})")
    both = both.sort_values(["system", "id"], kind="mergesort").reset_index(drop=True)
    doc = [d for s, g in both.groupby("system", sort=True) for d in document_keys(g["id"].tolist(), s, doc_key, MetaError)]
    both["doc"] = doc
    dup = both[["system", "doc"]].duplicated()
    if dup.any():
        s, d = both.loc[dup.idxmax(), ["system", "doc"]]
        raise MetaError(f"system {s!r} has several examples of document {d!r}: give --doc-key so that each "
                        "example maps to its own document")
    systems, docs = sorted(both["system"].unique()), sorted(both["doc"].unique())
    si = np.searchsorted(systems, both["system"].to_numpy(object).astype(str))
    di = np.searchsorted(docs, both["doc"].to_numpy(object).astype(str))
    X = np.full((len(columns), len(systems), len(docs)), np.nan)
    X[:, si, di] = both[columns].to_numpy(np.float64).T
    H = np.full((len(systems), len(docs)), np.nan)
    H[si, di] = both["human"].to_numpy(np.float64)
    return Judged(list(systems), list(docs), columns, X, H, len(both), len(human) - len(both),
                  len(left) - len(both))


def _first(frame: pd.DataFrame) -> str:
    r = frame.iloc[0]
    return f"({str(r['system'])!r}, {str(r['id'])!r})"
