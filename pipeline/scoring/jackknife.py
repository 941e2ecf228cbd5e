"""Jackknifed multi-reference scores (the DUC/TAC convention) and the human-vs-human ceiling.

With K references per example a system summary is scored K times, each time against the K-1
references left after dropping one, and the K scores are averaged; a human reference k is
scored once, against the other K-1.  Both are then scored against K-1 references, so systems
and humans are comparable (a human cannot be scored against all K: one of them is itself).

ROUGE-1.5.5 has had no jackknife of its own since v1.4 (its RELEASE-NOTE: "no automatic
jackknifing is performed. If you want to do jackknifing, you need to specify the set of
references in each <EVAL> section"). DUC/TAC therefore wrote K evaluations per summary, each
listing K-1 models, and averaged them; ``-f A`` (pool) or ``-f B`` (best recall) combines the
K-1 models *within* each evaluation. :func:`jackknife` is exactly that: one scoring call on the
K leave-one-out subsets, with the scorer's own multi-reference rule inside each subset, then
the plain mean of the K (P, R, F) -- of the printed 5-decimal values with the ``rouge155``
profile, as averaging the script's per-evaluation lines gives (not its bootstrap ``Average``).

Pure functions of a scorer (anything with ``score_arrays(references, candidates).scores``:
``(n, types, 3)`` precision, recall, F) and the texts.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from pipeline.scoring.types import STATS


def _ref_lists(references) -> list[list[str]]:
    out = [[r] if isinstance(r, str) else list(r) for r in references]
    for i, refs in enumerate(out):
        if len(refs) < 2:
            raise ValueError(f"jackknife: example {i} has {len(refs)} reference(s); leaving one out needs at least 2")
    return out


def _mean_over_subsets(scores: np.ndarray, n_refs: np.ndarray) -> np.ndarray:
    """Per example, the mean of its rows of ``scores``, added in subset order then divided by K
    (so the numbers equal ``sum(values) / K`` computed one example at a time)."""
    n = len(n_refs)
    starts = np.zeros(n, dtype=np.int64)
    starts[1:] = np.cumsum(n_refs)[:-1]
    total = np.zeros((n,) + scores.shape[1:], dtype=np.float64)
    for k in range(int(n_refs.max(initial=0))):
        has = np.flatnonzero(n_refs > k)
        total[has] += scores[starts[has] + k]
    return total / n_refs.reshape((n,) + (1,) * (scores.ndim - 1))


def leave_one_out(references: Sequence) -> tuple[list[list[str]], np.ndarray]:
    """The K leave-one-out subsets of every example's references, flattened in example then
    left-out order, and the example each subset belongs to."""
    subsets, owner = [], []
    for i, refs in enumerate(_ref_lists(references)):
        for k in range(len(refs)):
            subsets.append(refs[:k] + refs[k + 1:])
            owner.append(i)
    return subsets, np.asarray(owner, dtype=np.int64)


def jackknife(scorer, references: Sequence, candidates: Sequence[str]) -> np.ndarray:
    """``(n, types, 3)``: each candidate's mean (P, R, F) over its K leave-one-out subsets."""
    refs = _ref_lists(references)
    if len(refs) != len(candidates):
        raise ValueError(f"jackknife: {len(candidates)} candidates but {len(refs)} reference lists")
    subsets, owner = leave_one_out(refs)
    scores = np.asarray(scorer.score_arrays(subsets, [candidates[i] for i in owner]).scores, dtype=np.float64)
    return _mean_over_subsets(scores, np.array([len(r) for r in refs], dtype=np.int64))


def human_scores(scorer, references: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """Every reference scored as a summary against the example's other K-1 references.

    Returns ``(scores, owner)``: ``scores[j]`` is ``(types, 3)`` for the j-th reference in
    example then reference order, ``owner[j]`` its example.
    """
    refs = _ref_lists(references)
    subsets, owner = leave_one_out(refs)
    summaries = [refs[i][k] for i, k in _positions(refs)]
    return np.asarray(scorer.score_arrays(subsets, summaries).scores, dtype=np.float64), owner


def human_jackknife(scorer, references: Sequence) -> np.ndarray:
    """``(n, types, 3)``: per example, the mean over its K references of each one's score
    against the other K-1 (the human counterpart of :func:`jackknife`)."""
    refs = _ref_lists(references)
    scores, _ = human_scores(scorer, refs)
    return _mean_over_subsets(scores, np.array([len(r) for r in refs], dtype=np.int64))


def _positions(refs: list[list[str]]):
    return [(i, k) for i, r in enumerate(refs) for k in range(len(r))]


def ceiling_table(scorer, records: Sequence[dict], types: Sequence[str]) -> list[dict]:
    """The report table: per system, the mean jackknifed (P, R, F) of its summaries and, as
    the row ``system = "(human)"``, the mean over documents of :func:`human_jackknife` (each
    document's references counted once, however many systems it has).

    ``records``: dicts with ``system``, ``doc_id``, ``candidate`` and ``references`` (as in
    ``shared/data``); a document's references must be the same on every row.  Rows are
    ``{"system", "n", "<type>_precision", "<type>_recall", "<type>_fmeasure"}``, systems sorted.
    """
    docs: dict[str, list[str]] = {}
    for r in records:
        refs = [r["references"]] if isinstance(r["references"], str) else list(r["references"])
        if docs.setdefault(r["doc_id"], refs) != refs:
            raise ValueError(f"jackknife: document {r['doc_id']!r} has different references on different rows")
    system_scores = jackknife(scorer, [r["references"] for r in records], [r["candidate"] for r in records])
    rows = []
    for system in sorted({r["system"] or "" for r in records}):
        mask = np.array([(r["system"] or "") == system for r in records])
        rows.append(_row(system, system_scores[mask], types))
    rows.append(_row("(human)", human_jackknife(scorer, list(docs.values())), types))
    return rows


def _row(system: str, scores: np.ndarray, types: Sequence[str]) -> dict:
    row = {"system": system, "n": int(len(scores))}
    for t, name in enumerate(types):
        for s, stat in enumerate(STATS):
            row[f"{name}_{stat}"] = float(np.mean(scores[:, t, s]))
    return row
