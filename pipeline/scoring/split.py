"""Scoring one long document as blocks of its reference sentences.

rougeLsum dominates the cost of long documents (every reference sentence against
every candidate sentence), and the union LCS of each reference sentence does not
depend on the other reference sentences.  So an example can be scored as:

1. :func:`union_block` for blocks of reference sentences (independent; each may run
   on another worker), giving the union-LCS positions of that block;
2. :func:`merge_blocks`, which scores everything else in one pass and turns the
   merged positions into rougeLsum hits with rouge-score's clipping (a union token
   is a hit while both whole-summary counts are positive, i.e.
   ``sum_t min(union_count_t, candidate_count_t)``).

Positions count tokens of the reference's sentence stream, so they do not depend
on token ids (which are private to a process); split and unsplit scoring give
identical numbers (tested).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from pipeline.scoring.batch import (MAX_BACKTRACK_WORDS, STATUS_OK, STATUS_TOO_LONG, BatchScores,
                                    example_offsets, score_encoded)
from pipeline.scoring.kernels import union_positions_kernel
from pipeline.scoring.spec import fmeasure
from pipeline.text.csr import check_reference_counts


def sentence_counts(scorer, texts: Sequence[str]) -> list[int]:
    """Number of (token-bearing) sentences of each text in ``scorer``'s sentence stream."""
    enc = scorer.encode(list(texts))
    return np.diff(enc.doc_sent).tolist()


def block_bounds(n_sentences: int, n_blocks: int, k: int) -> tuple[int, int]:
    """Sentences ``[first, last)`` of block ``k`` of ``n_blocks`` (contiguous, near-equal, deterministic)."""
    n_blocks = max(1, min(n_blocks, max(n_sentences, 1)))
    if k >= n_blocks:
        return n_sentences, n_sentences
    return (k * n_sentences) // n_blocks, ((k + 1) * n_sentences) // n_blocks


def union_block(scorer, candidate: str, reference: str, first: int, last: int,
                max_backtrack_words: int = MAX_BACKTRACK_WORDS) -> np.ndarray | None:
    """Union-LCS positions of reference sentences ``[first, last)``; ``None`` if too long to backtrack."""
    enc = scorer.encode([candidate, reference])
    ok, pos = union_positions_kernel(enc.sent_tokens, enc.sent_tok, enc.doc_sent, 0, 1, first, last,
                                     max_backtrack_words)
    return pos if ok else None


def merge_blocks(scorer, candidate: str, references: Sequence[str],
                 positions: Sequence[Sequence[np.ndarray | None]]) -> BatchScores:
    """One example's scores from the union positions of every block of every reference.

    ``positions[k]`` lists the blocks of reference ``k`` (any order; blocks are disjoint).
    """
    references = list(references)
    check_reference_counts(np.array([len(references)]), 1)  # the running best F below starts at -1
    types = scorer.types
    enc = scorer.encode([candidate] + references)
    ex_doc = example_offsets([len(references)])
    lsum = [t for t, rt in enumerate(types) if rt.kind == "Lsum"]
    others = [rt for rt in types if rt.kind != "Lsum"]
    base = score_encoded(enc, ex_doc, others) if others else None
    scores = np.zeros((1, len(types), 3), dtype=np.float64)
    best = np.zeros((1, len(types)), dtype=np.int32)
    status = np.full(1, STATUS_OK, dtype=np.int8)
    j = 0
    for t, rt in enumerate(types):
        if rt.kind != "Lsum":
            scores[0, t] = base.scores[0, j]
            best[0, t] = base.best_ref[0, j]
            j += 1
    if lsum:
        st, doc_sent = enc.sent_tok, enc.doc_sent
        cand = enc.sent_tokens[st[doc_sent[0]]:st[doc_sent[1]]]
        c_ids, c_counts = np.unique(cand, return_counts=True)
        best_triple, best_k = (0.0, 0.0, -1.0), 0
        for k in range(len(references)):
            ref = enc.sent_tokens[st[doc_sent[k + 1]]:st[doc_sent[k + 2]]]
            blocks = positions[k]
            if any(b is None for b in blocks):
                status[0] = STATUS_TOO_LONG
                break
            if ref.size == 0 or cand.size == 0:
                triple = (0.0, 0.0, 0.0)
            else:
                union = ref[np.concatenate([np.asarray(b, dtype=np.int64) for b in blocks])] if blocks else ref[:0]
                u_ids, u_counts = np.unique(union, return_counts=True)
                _, iu, ic = np.intersect1d(u_ids, c_ids, assume_unique=True, return_indices=True)
                hits = int(np.minimum(u_counts[iu], c_counts[ic]).sum())
                p, r = hits / int(cand.size), hits / int(ref.size)
                triple = (p, r, fmeasure(p, r))
            if triple[2] > best_triple[2]:
                best_triple, best_k = triple, k
        for t in lsum:
            scores[0, t] = np.nan if status[0] else best_triple
            best[0, t] = best_k
    if status[0]:
        scores[0, :, :] = np.nan
    lengths = enc.doc_lengths()
    return BatchScores(list(types), scores, best, lengths[:1].copy(), np.array([int(lengths[1:].sum())]),
                       np.array([len(references)]), status, enc, ex_doc[:-1])


def score_split(scorer, candidate: str, references: Sequence[str], n_blocks: int) -> BatchScores:
    """Blocks and merge in one process (the distributed job runs the blocks as tasks)."""
    counts = sentence_counts(scorer, references)
    positions = [[union_block(scorer, candidate, ref, *block_bounds(n, n_blocks, k)) for k in range(n_blocks)]
                 for ref, n in zip(references, counts)]
    return merge_blocks(scorer, candidate, references, positions)
