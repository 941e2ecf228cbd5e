"""rouge-score's scorer on one tokenizer: its types (``rouge1``..``rouge9``, ``rougeL``,
``rougeLsum``), one encoder pass and one kernel call per batch (the cold tier for a process's
first small batches).  :class:`pipeline.RougeScorer` adds the scoring options on top; the
profiles build this one directly.
"""
from __future__ import annotations

import functools
import gc
from collections import namedtuple
from itertools import repeat
from typing import TYPE_CHECKING, Sequence

from pipeline.scoring import cold, kernel_cache
from pipeline.scoring.types import STATS, parse_rouge_types
from pipeline.text.sentences import get_splitter, resolve_splitter_name
from pipeline.text.tokenizers import as_tokenizer, routes

if TYPE_CHECKING:
    from pipeline.scoring.batch import BatchScores
    from pipeline.text.csr import EncodedDocs
    from pipeline.text.encoder import DefaultEncoder


_waited = False


def _compiled():
    """The compiled path's modules, imported on first use: a process whose first batches are
    small scores them in pure Python (:mod:`pipeline.scoring.cold`), which ends once numba is
    imported, here or anywhere.  The first use on a machine whose cache lacks the kernels waits
    for their compile, shown on stderr (:func:`pipeline.scoring.kernel_cache.wait_ready`)."""
    global _waited
    if not _waited:
        _waited = True
        if not cold.compiles_here() and not cold.kernels_ready():
            kernel_cache.wait_ready()  # False: nothing compiles them; numba compiles them here
    # numba: loading these ends the cold tier, so only on first use (start-up time)
    from pipeline.scoring import batch
    from pipeline.text import encoder

    cold.compiled_here()
    return batch, encoder


class Score(namedtuple("Score", STATS)):
    """Equal (as a tuple) to ``rouge_score.scoring.Score``."""

    __slots__ = ()


# Scores from (p, r, f) tuples without a Python frame (namedtuple's __new__ is Python code): map
# calls tuple.__new__ itself
def _new_scores(triples):
    return map(tuple.__new__, repeat(Score), triples)


@functools.lru_cache(maxsize=64)
def _dict_builder(names: tuple[str, ...]):
    """A function of len(names) Scores returning {name: score}, compiled as a dict
    display: the fastest way CPython builds a small dict with fixed keys."""
    args = [f"s{i}" for i in range(len(names))]
    src = f"lambda {', '.join(args)}: {{{', '.join(f'{n!r}: {a}' for n, a in zip(names, args))}}}"
    return eval(src, {})  # names are validated rouge type names; repr() quotes them


_ENCODERS: dict[bool, "DefaultEncoder"] = {}


def default_encoder(use_stemmer: bool) -> "DefaultEncoder":
    """One encoder (and so one vocabulary and stem cache) per process and stemming mode."""
    enc = _ENCODERS.get(use_stemmer)
    if enc is None:
        enc = _ENCODERS[use_stemmer] = _compiled()[1].DefaultEncoder(use_stemmer)
    return enc


class RougeEngine:
    """rouge-score's ``RougeScorer``: same arguments, same ``Score`` numbers (see
    :class:`pipeline.RougeScorer`, its subclass, for the arguments)."""

    def __init__(self, rouge_types, use_stemmer: bool = False, split_summaries: bool = False,
                 tokenizer=None, sentence_splitter: str | None = None, language: str = "en"):
        self.types = parse_rouge_types(rouge_types, allow_empty=True)
        self.rouge_types = [t.name for t in self.types]
        self.use_stemmer = use_stemmer
        self.split_summaries = split_summaries
        self.sentence_splitter = resolve_splitter_name(split_summaries, sentence_splitter)
        self._splitter = get_splitter(self.sentence_splitter, language)
        self._needs_sentences = any(t.kind == "Lsum" for t in self.types)
        # sentences, when needed, are the text's lines: one token stream serves all types
        self._one_stream = not self._needs_sentences or self.sentence_splitter == "newline"
        # As in rouge-score, a custom tokenizer makes use_stemmer a no-op.
        self._tokenizer = None if tokenizer is None else as_tokenizer(tokenizer)
        self._routes = None if tokenizer is None else routes(self._tokenizer)
        self._token_index: dict = {}
        self._raw_index: dict = {}  # raw token -> id of its form (batch tokenizers)
        # the default tokenizer over one token stream: the Arrow buffers are scanned in place,
        # and the cold-start tier (which implements only that) may take small batches
        self._default_stream = self._tokenizer is None and self._one_stream

    @property
    def tokenizer_name(self) -> str:
        """The tokenizer's name in the signature (``default``, or the custom tokenizer's)."""
        if self._tokenizer is None:
            return "default"
        return self._routes.name

    # -- encoding ---------------------------------------------------------------
    def encode(self, texts: Sequence[str]) -> EncodedDocs:
        """Token ids of ``texts`` (whole texts and, for rougeLsum, sentences) for the kernels."""
        if self._tokenizer is not None:
            encoder = _compiled()[1]
            r = self._routes
            if r.encode_batch is not None and self._one_stream:
                encoded = r.encode_batch(list(texts))
                if encoded is not None:
                    return encoded
            if r.tokenize_batch is not None and self._one_stream:
                marked = r.tokenize_batch(list(texts))
                if marked is not None:
                    return encoder.encode_marked(marked, self._raw_index, self._token_index, r.stem_token)
            split = self._splitter if self._needs_sentences else None
            compose = self.sentence_splitter == "newline" and r.tokens_never_span_newlines
            return encoder.encode_with_tokenizer(texts, r.tokenize, split, self._token_index, compose)
        enc = default_encoder(self.use_stemmer)
        whole = enc.encode(texts)
        if self._one_stream:
            return whole
        # Sentence boundaries from the splitter, marked as newlines for the encoder;
        # a newline inside a sentence is only whitespace there.
        marked = ["\n".join(s.replace("\n", " ") for s in self._splitter(t)) for t in texts]
        sents = enc.encode(marked)
        if sents.generation != whole.generation:  # the vocabulary was rebuilt in between
            whole = enc.encode(texts)
        return _compiled()[1].EncodedDocs(whole.tokens, whole.doc_tok, sents.tokens, sents.sent_tok,
                                          sents.doc_sent, sents.generation)

    # -- batch API --------------------------------------------------------------
    def score_arrays(self, references, candidates: Sequence[str]) -> BatchScores:
        """Columnar scoring.  ``references[i]`` is one text or a list of texts (combined by
        ``multi_ref``); the result's ``scores[e, t]`` is (precision, recall, fmeasure)."""
        if self._default_stream and not cold.kernels_ready():
            res = self._python_batch(references, candidates)
            if res is not None:
                return res
        batch, encoder = _compiled()
        if self._default_stream:  # references seen before (in any batch) are not tokenized again
            refs, n_refs = batch.split_references(references, candidates)
            enc = default_encoder(self.use_stemmer).encode_examples(list(candidates), refs, n_refs)
            return batch.score_blocks(enc, n_refs, self.types)
        docs, n_refs = batch.flatten_examples(references, candidates)
        ex_doc = batch.example_offsets(n_refs)
        shared = batch.shared_references(docs, ex_doc)
        if shared is None:
            enc = self.encode(docs)
        else:  # a reference text that repeats is tokenized once
            enc = encoder.gather(self.encode(shared[0]), shared[1])
        return batch.score_encoded(enc, ex_doc, self.types)

    def _python_batch(self, references, candidates) -> BatchScores | None:
        """While the scoring kernels compile in the background: the batch scored by the
        pure-Python tier (:func:`pipeline.scoring.cold.try_columns`), or None."""
        got = cold.try_columns(self.types, self.use_stemmer, references, candidates)
        if got is None:
            return None
        import numpy as np

        # the result type's module imports numba (no kernel is compiled): only here (start-up time)
        from pipeline.scoring.batch import BatchScores

        scores, best, cand_len, ref_len, n_refs = got
        n, k = len(scores), len(self.types)
        return BatchScores(list(self.types), np.array(scores, dtype=np.float64).reshape(n, k, 3),
                           np.array(best, dtype=np.int32).reshape(n, k), np.array(cand_len, dtype=np.int64),
                           np.array(ref_len, dtype=np.int64), np.array(n_refs, dtype=np.int64),
                           np.zeros(n, dtype=np.int8))

    def score_arrow(self, references, candidates) -> BatchScores:
        """:meth:`score_arrays` on Arrow columns (``references``: strings or lists of strings).
        With the default tokenizer the UTF-8 buffers are tokenized in place."""
        if self._default_stream and not cold.kernels_ready():
            res = self._python_batch(references.to_pylist(), candidates.to_pylist())
            if res is not None:
                return res
        if self._default_stream:
            enc, n_refs = default_encoder(self.use_stemmer).encode_arrow(candidates, references)
            return _compiled()[0].score_blocks(enc, n_refs, self.types)
        return self.score_arrays(references.to_pylist(), candidates.to_pylist())

    def score_batch(self, targets, predictions) -> list[dict[str, Score]]:
        """``[score_multi(t, p) ...]`` (``score`` for a string ``t``) for whole lists at once:
        ``targets[i]`` is a reference text or a list of them.  ValueError for an example whose
        rougeLsum sentence pair is too long to score; a ROUGE-W score of a reference without
        tokens is NaN (ROUGE-1.5.5 stops there)."""
        if self._default_stream:
            small = cold.try_score(self.types, self.use_stemmer, targets, predictions)
            if small is not None:
                return [dict(zip(d, _new_scores(d.values()))) for d in small]
        return self.to_dicts(self._checked_arrays(targets, predictions))

    def score_matrix(self, targets, predictions):
        """:meth:`score_batch`'s numbers as one float64 array ``(n, types, 3)`` (precision,
        recall, fmeasure): no Python object per score, for callers that aggregate."""
        import numpy as np  # NumPy only for this call: importing the engine stays light

        k = len(self.rouge_types)
        if self._default_stream:
            small = cold.try_score(self.types, self.use_stemmer, targets, predictions)
            if small is not None:
                flat = [v for d in small for t in self.rouge_types for v in d[t]]
                return np.array(flat, dtype=np.float64).reshape(len(small), k, 3)
        if not len(predictions):
            return np.empty((0, k, 3), dtype=np.float64)
        return self._checked_arrays(targets, predictions).scores

    def _checked_arrays(self, targets, predictions) -> BatchScores:
        res = self.score_arrays(targets, predictions)
        too_long = (res.status == 1).nonzero()[0]
        if too_long.size:
            raise ValueError(
                f"example {int(too_long[0])}: a rougeLsum sentence pair is too long to backtrack "
                f"within {_compiled()[0].MAX_BACKTRACK_WORDS} words of memory; split the text into "
                "sentences (newlines) or leave out rougeLsum")
        return res

    def to_dicts(self, res: BatchScores) -> list[dict[str, Score]]:
        """``score_batch``'s result objects from columnar scores."""
        k = len(self.rouge_types)
        if k == 0:
            return [{} for _ in range(res.scores.shape[0])]
        # Millions of small acyclic objects: the cyclic GC would only rescan the
        # caller's heap again and again while they are built.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            # One flat float list converted in C, Scores made by _new_scores and each dict by a
            # dict display: about 5x less than dict(zip(...)) of Score._make over nested lists.
            flat = iter(res.scores.ravel().tolist())
            scores = _new_scores(zip(flat, flat, flat))
            return list(map(_dict_builder(tuple(self.rouge_types)), *([scores] * k)))
        finally:
            if gc_was_enabled:
                gc.enable()

    def score_table(self, table, candidate: str = "candidate", references: str = "references"):
        """Arrow in, Arrow out: the table's columns plus ``<type>_precision/recall/fmeasure``."""
        import pyarrow as pa

        res = self.score_arrow(table.column(references), table.column(candidate))
        for t, name in enumerate(self.rouge_types):
            for k, stat in enumerate(STATS):
                table = table.append_column(f"{name}_{stat}", pa.array(res.scores[:, t, k], pa.float64()))
        return table

    # -- rouge-score API --------------------------------------------------------
    def score(self, target: str, prediction: str) -> dict[str, Score]:
        """``{type: Score(precision, recall, fmeasure)}`` of ``prediction`` against ``target``
        (the reference first, as in rouge-score)."""
        return self.score_batch([target], [prediction])[0]

    def score_multi(self, targets: Sequence[str], prediction: str) -> dict[str, Score]:
        """Several references: rouge-score's rule (per type, the reference with the highest F,
        first on ties) or the ``multi_ref`` rule given to the constructor."""
        targets = list(targets)
        if not targets:
            raise ValueError("attempt to get argmax of an empty sequence")
        return self.score_batch([targets], [prediction])[0]
