"""Columnar batch scoring: texts in, float64 P/R/F arrays out, one kernel call per batch."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from pipeline.scoring.kernels import KIND_L, KIND_LSUM, KIND_N, score_batch_kernel
from pipeline.scoring.types import RougeType
from pipeline.text.encoder import EncodedDocs

_KIND = {"n": KIND_N, "L": KIND_L, "Lsum": KIND_LSUM}


@dataclass
class BatchScores:
    """Per-example results; ``scores[e, t]`` is (precision, recall, fmeasure) of type ``t``."""

    types: list[RougeType]
    scores: np.ndarray  # float64 (n_examples, n_types, 3)
    best_ref: np.ndarray  # int32 (n_examples, n_types): index of the reference kept
    cand_len: np.ndarray  # int64 tokens of the candidate
    ref_len: np.ndarray  # int64 tokens of all references together
    n_refs: np.ndarray  # int64

    def __len__(self) -> int:
        return self.scores.shape[0]

    def column(self, type_name: str, stat: str) -> np.ndarray:
        t = [rt.name for rt in self.types].index(type_name)
        return self.scores[:, t, "prf".index(stat[0])]


def example_offsets(n_refs: Sequence[int] | np.ndarray) -> np.ndarray:
    """``ex_doc`` for documents laid out as cand, refs..., cand, refs..."""
    per = np.asarray(n_refs, dtype=np.int64) + 1
    out = np.zeros(per.shape[0] + 1, dtype=np.int64)
    np.cumsum(per, out=out[1:])
    return out


def score_encoded(enc: EncodedDocs, ex_doc: np.ndarray, types: Sequence[RougeType]) -> BatchScores:
    n_ex = ex_doc.shape[0] - 1
    kinds = np.array([_KIND[t.kind] for t in types], dtype=np.int64)
    ns = np.array([t.n for t in types], dtype=np.int64)
    out = np.empty((n_ex, len(types), 3), dtype=np.float64)
    best = np.empty((n_ex, len(types)), dtype=np.int32)
    if n_ex:
        score_batch_kernel(enc.tokens, enc.doc_tok, enc.sent_tokens, enc.sent_tok, enc.doc_sent,
                           enc.same_stream, ex_doc, kinds, ns, out, best)
    lengths = enc.doc_lengths()
    cand_docs = ex_doc[:-1]
    n_refs = np.diff(ex_doc) - 1
    cum = np.concatenate([[0], np.cumsum(lengths)])
    ref_len = cum[ex_doc[1:]] - cum[cand_docs + 1]
    return BatchScores(list(types), out, best, lengths[cand_docs], ref_len, n_refs)
