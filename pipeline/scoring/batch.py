"""Columnar batch scoring: texts in, float64 P/R/F arrays out, one kernel call per batch."""
from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import Sequence

import numpy as np

from pipeline.scoring.kernels import KIND_L, KIND_LSUM, KIND_N, score_batch_kernel
from pipeline.scoring.types import RougeType
from pipeline.text.csr import EncodedDocs, check_reference_counts

_KIND = {"n": KIND_N, "L": KIND_L, "Lsum": KIND_LSUM}

# rougeLsum keeps one bit vector per candidate token of a sentence pair to backtrack
# rouge-score's LCS (plus a match-mask word per token when the whole reference fits a word);
# past this many vector words (1 GiB) a pair is reported, not scored.  rouge-score
# itself would need 64x as many table cells.
MAX_BACKTRACK_WORDS = 1 << 27

STATUS_OK, STATUS_TOO_LONG = 0, 1


@dataclass
class BatchScores:
    """Per-example results; ``scores[e, t]`` is (precision, recall, fmeasure) of type ``t``."""

    types: list[RougeType]
    scores: np.ndarray  # float64 (n_examples, n_types, 3)
    best_ref: np.ndarray  # int32 (n_examples, n_types): index of the reference kept
    cand_len: np.ndarray  # int64 tokens of the candidate
    ref_len: np.ndarray  # int64 tokens of all references together
    n_refs: np.ndarray  # int64
    status: np.ndarray  # int8: STATUS_OK, or STATUS_TOO_LONG (scores NaN)
    # the token ids scored and each example's candidate document, when known: per-example
    # diagnostics reuse the candidates' tokens instead of encoding them again
    encoded: EncodedDocs | None = None
    cand_doc: np.ndarray | None = None

    def candidate_tokens(self):
        """(tokens, start, end, generation): candidate ``e`` is ``tokens[start[e]:end[e]]``, ids
        of vocabulary generation ``generation`` (``EncodedDocs.generation``); None if unknown."""
        if self.encoded is None:
            return None
        cand = self.cand_doc
        return (self.encoded.tokens, self.encoded.doc_tok[cand], self.encoded.doc_tok[cand + 1],
                self.encoded.generation)

    def __len__(self) -> int:
        return self.scores.shape[0]

    def column(self, type_name: str, stat: str) -> np.ndarray:
        t = [rt.name for rt in self.types].index(type_name)
        return self.scores[:, t, "prf".index(stat[0])]


def flatten_examples(references, candidates: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """Documents laid out as cand, refs..., cand, refs... and each example's reference count.

    ``references[i]`` is one text or a list of texts (at least one).
    """
    if len(references) != len(candidates):
        raise ValueError(f"{len(references)} references for {len(candidates)} candidates")
    n = len(candidates)
    if all(type(r) is str for r in references):
        # the common single-reference case, interleaved by slice assignment (C speed)
        docs: list[str] = [""] * (2 * n)
        docs[0::2] = candidates
        docs[1::2] = references
        return docs, np.ones(n, dtype=np.int64)
    if all(type(r) is list for r in references):
        # lists of references (Arrow's to_pylist gives these): flattened in C
        n_refs = np.fromiter(map(len, references), dtype=np.int64, count=n)
        check_reference_counts(n_refs, n)
        return list(chain.from_iterable(chain.from_iterable(zip(zip(candidates), references)))), n_refs
    docs = []
    n_refs = np.empty(n, dtype=np.int64)
    for i, (refs, cand) in enumerate(zip(references, candidates)):
        docs.append(cand)
        if isinstance(refs, str):
            docs.append(refs)
            n_refs[i] = 1
        else:
            refs = list(refs)
            if not refs:
                raise ValueError(f"example {i} has no reference")
            docs.extend(refs)
            n_refs[i] = len(refs)
    return docs, n_refs


def split_references(references, candidates: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """Every example's references in one list, in order, and each example's reference count
    (``references[i]``: one text or a list of texts, at least one)."""
    if len(references) != len(candidates):
        raise ValueError(f"{len(references)} references for {len(candidates)} candidates")
    n = len(candidates)
    if all(type(r) is str for r in references):
        return list(references), np.ones(n, dtype=np.int64)
    if all(type(r) is list for r in references):
        n_refs = np.fromiter(map(len, references), dtype=np.int64, count=n)
        check_reference_counts(n_refs, n)
        return list(chain.from_iterable(references)), n_refs
    flat: list[str] = []
    n_refs = np.empty(n, dtype=np.int64)
    for i, refs in enumerate(references):
        refs = [refs] if isinstance(refs, str) else list(refs)
        if not refs:
            raise ValueError(f"example {i} has no reference")
        flat.extend(refs)
        n_refs[i] = len(refs)
    return flat, n_refs


def shared_references(docs: list[str], ex_doc: np.ndarray) -> tuple[list[str], np.ndarray] | None:
    """Documents laid out as :func:`flatten_examples` does, with each distinct reference text
    kept once: (the candidates then the distinct references, the index of every document of
    the layout in that list), or None when no reference text repeats.  Equal texts give equal
    tokens, so encoding the short list and gathering by the index is the same as encoding all."""
    n = ex_doc.shape[0] - 1
    if len(docs) == 2 * n:  # one reference each: the layout alternates
        refs = docs[1::2]
        ref_at = None
    else:
        is_ref = np.ones(len(docs), dtype=np.bool_)
        is_ref[ex_doc[:-1]] = False
        ref_at = np.flatnonzero(is_ref)
        refs = [docs[i] for i in ref_at.tolist()]
    first = dict.fromkeys(refs)  # texts hashed once (str caches its hash)
    if len(first) == len(refs):
        return None
    cands = docs[0::2] if ref_at is None else [docs[i] for i in ex_doc[:-1].tolist()]
    for i, text in enumerate(first):
        first[text] = n + i
    index = np.empty(len(docs), dtype=np.int64)
    ref_index = np.fromiter(map(first.__getitem__, refs), dtype=np.int64, count=len(refs))
    if ref_at is None:
        index[0::2] = np.arange(n)
        index[1::2] = ref_index
    else:
        index[ex_doc[:-1]] = np.arange(n)
        index[ref_at] = ref_index
    return cands + list(first), index


def example_offsets(n_refs: Sequence[int] | np.ndarray) -> np.ndarray:
    """``ex_doc`` for documents laid out as cand, refs..., cand, refs..."""
    per = np.asarray(n_refs, dtype=np.int64) + 1
    out = np.zeros(per.shape[0] + 1, dtype=np.int64)
    np.cumsum(per, out=out[1:])
    return out


def score_encoded(enc: EncodedDocs, ex_doc: np.ndarray, types: Sequence[RougeType],
                  max_backtrack_words: int = MAX_BACKTRACK_WORDS) -> BatchScores:
    """Examples in the interleaved layout (cand, refs..., cand, ...): example ``e``'s documents are
    ``ex_doc[e] .. ex_doc[e+1]-1``, its candidate first."""
    cand_doc = ex_doc[:-1]
    return score_documents(enc, cand_doc, cand_doc + 1, ex_doc[1:], types, max_backtrack_words)


def score_blocks(enc: EncodedDocs, n_refs: np.ndarray, types: Sequence[RougeType]) -> BatchScores:
    """Examples in the block layout (every candidate, then every reference, in order), as
    :meth:`pipeline.text.encoder.DefaultEncoder.encode_examples` and ``encode_arrow`` return
    them: example ``e``'s references are the next ``n_refs[e]``."""
    n = n_refs.shape[0]
    ref_off = np.full(n + 1, n, dtype=np.int64)  # the references start after the n candidates
    ref_off[1:] += np.cumsum(n_refs)
    return score_documents(enc, np.arange(n, dtype=np.int64), ref_off[:-1], ref_off[1:], types)


def score_documents(enc: EncodedDocs, cand_doc: np.ndarray, ref_lo: np.ndarray, ref_hi: np.ndarray,
                    types: Sequence[RougeType], max_backtrack_words: int = MAX_BACKTRACK_WORDS) -> BatchScores:
    """Example ``e``: candidate document ``cand_doc[e]`` of ``enc`` against its references
    ``ref_lo[e] .. ref_hi[e]-1`` (one kernel call)."""
    n_ex = cand_doc.shape[0]
    kinds = np.array([_KIND[t.kind] for t in types], dtype=np.int64)
    ns = np.array([t.n for t in types], dtype=np.int64)
    out = np.empty((n_ex, len(types), 3), dtype=np.float64)
    best = np.empty((n_ex, len(types)), dtype=np.int32)
    status = np.zeros(n_ex, dtype=np.int8)
    if n_ex:
        score_batch_kernel(enc.tokens, enc.doc_tok, enc.sent_tokens, enc.sent_tok, enc.doc_sent,
                           enc.same_stream, cand_doc, ref_lo, ref_hi, kinds, ns, max_backtrack_words, out, best,
                           status)
    doc_tok = enc.doc_tok  # documents' token offsets: a run of documents' length is one subtraction
    return BatchScores(list(types), out, best, doc_tok[cand_doc + 1] - doc_tok[cand_doc],
                       doc_tok[ref_hi] - doc_tok[ref_lo], ref_hi - ref_lo, status, enc, cand_doc)
