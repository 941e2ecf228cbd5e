"""The compiled ``rouge155`` path: ROUGE-1.5.5 tokens -> ids in Python, counts in numba.

>>> from pipeline.rouge155 import Rouge155Options
>>> from pipeline.rouge155.fast import Rouge155Scorer
>>> res = Rouge155Scorer(Rouge155Options(stem=True)).score_arrays(
...     [["the cat sat on the mat"]], ["the cat is sitting on the mat"])
>>> res.metrics
['ROUGE-1', 'ROUGE-2', 'ROUGE-L', 'ROUGE-W-1.2', 'ROUGE-SU4']
>>> res.scores[0, 0].tolist()        # precision, recall, F (the order of BatchScores)
[0.71429, 0.83333, 0.76923]

Tokenisation (:class:`Rouge155Encoder`) reproduces :func:`pipeline.rouge155.text.prepare`:
the tokens of a sentence are exactly the maximal runs of ``[A-Za-z0-9]`` (ASCII-lowercased):
``-`` tokens are always dropped and every other byte -- including each byte of a non-ASCII
character -- separates tokens.  Empty sentences are left out (they change no count).  Each
distinct raw token is mapped once to the id of its processed form (``-s`` drops it, ``-m``
stems it when longer than 3 characters), and each distinct text is tokenised once per batch.
``-l``/``-b`` go through the specification's readers (:mod:`pipeline.rouge155.text`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pipeline.rouge155 import kernels as K
from pipeline.rouge155.options import Rouge155Options, s_metric_name, w_metric_name
from pipeline.rouge155.porter import morph_stem
from pipeline.rouge155.resources import stopwords as smart_stopwords
from pipeline.rouge155.text import limit_bytes, limit_words, read_sentences
from pipeline.scoring.batch import example_offsets, flatten_examples
from pipeline.scoring.family_types import MULTI_REF_ALIASES, MULTI_REF_NAMES, MetricSpec
from pipeline.text.encoder import DefaultEncoder

# Past this many cells one LCS table is not built; the example gets status "too_long".
MAX_LCS_CELLS = 1 << 26

# the kernels' rule of every multi_ref name (a long name is its -f letter's)
_RULE_CODES = {"A": K.RULE_POOLED, "B": K.RULE_BEST_RECALL, "max_f": K.RULE_MAX_F, "mean": K.RULE_MEAN}
RULES = {name: _RULE_CODES[MULTI_REF_ALIASES.get(name, name)] for name in MULTI_REF_NAMES}


@dataclass
class Encoded:
    """CSR token ids, the layout of :class:`pipeline.text.csr.EncodedDocs`."""

    tokens: np.ndarray
    doc_tok: np.ndarray
    sent_tokens: np.ndarray
    sent_tok: np.ndarray
    doc_sent: np.ndarray
    vocab: int


def option_metrics(opts: Rouge155Options) -> list[MetricSpec]:
    """The metrics of ``opts`` in ROUGE-1.5.5's output order (names as it prints them)."""
    out = [MetricSpec(f"ROUGE-{k}", K.KIND_N, n=k) for k in range(1, opts.n + 1)]
    if opts.rouge_l:
        out.append(MetricSpec("ROUGE-L", K.KIND_L))
    if opts.w_weight is not None:
        out.append(MetricSpec(w_metric_name(opts.w_weight), K.KIND_W, weight=float(opts.w_weight)))
    if opts.skip_gap is not None:
        out.append(MetricSpec(s_metric_name(opts.skip_gap, opts.su), K.KIND_S, gap=int(opts.skip_gap),
                              su=bool(opts.su)))
    return out


class Rouge155Encoder:
    """ROUGE-1.5.5's tokeniser on the compiled scan (:class:`pipeline.text.encoder.DefaultEncoder`
    with every non-ASCII byte a separator); each distinct raw token is mapped once."""

    def __init__(self, stem: bool = False, remove_stopwords: bool = False,
                 length_limit_words: int | None = None, length_limit_bytes: int | None = None):
        self.stem = stem
        self.remove_stopwords = remove_stopwords
        self.length_limit_words = length_limit_words
        self.length_limit_bytes = length_limit_bytes
        self._stop = smart_stopwords() if remove_stopwords else frozenset()
        self._enc = DefaultEncoder(ascii_only=True, token_map=self._process)

    def _process(self, token: str) -> str | None:
        """A raw token (lowercase ``[a-z0-9]+``) -> its form after ``-s`` and ``-m``, or None."""
        if token in self._stop:
            return None
        if self.stem and len(token) > 3:
            return morph_stem(token)
        return token

    def _transformed(self, texts: list[str], lcs_quirk: bool = False) -> list[str]:
        """``-l``/``-b``: the limited texts (the specification's readers), one sentence a line."""
        out = []
        for text in texts:
            sentences = read_sentences(text)
            if self.length_limit_words:
                sentences = limit_words(sentences, self.length_limit_words)
            else:
                sentences = limit_bytes(sentences, self.length_limit_bytes, lcs_quirk=lcs_quirk)
            out.append("\n".join(sentences))
        return out

    def encode(self, texts) -> Encoded:
        texts = list(texts)
        limited = bool(self.length_limit_words or self.length_limit_bytes)
        enc = self._enc.encode(self._transformed(texts) if limited else texts)
        if self.length_limit_bytes:
            # ROUGE-L reads the byte-limited text with its own quirk: a second sentence stream
            s_enc = self._enc.encode(self._transformed(texts, lcs_quirk=True))
            if s_enc.generation != enc.generation:  # the vocabulary was rebuilt in between
                enc = self._enc.encode(self._transformed(texts))
            return Encoded(enc.tokens, enc.doc_tok, s_enc.tokens, s_enc.sent_tok, s_enc.doc_sent,
                           self._enc.vocab.n_mapped)
        return Encoded(enc.tokens, enc.doc_tok, enc.tokens, enc.sent_tok, enc.doc_sent, self._enc.vocab.n_mapped)


@dataclass
class Rouge155Scores:
    """Per-example results (the shape of :class:`pipeline.scoring.batch.BatchScores`).

    ``scores[e, t]`` = (precision, recall, F) of metric ``metrics[t]`` -- **P, R, F** in this
    order, as everywhere in the pipeline (ROUGE-1.5.5 prints R, P, F).  With the rouge155
    profile they are the printed 5-decimal values (F from the rounded P and R).
    ``counts[e, t]`` = (model count, peer count, hit) behind them for the pooled (``-f A``)
    and best-recall (``-f B``) rules (NaN for the others); ``best_ref[e, t]``: the reference
    kept (-1 when pooled or averaged).  ``status``: 0 ok, 1 an LCS table too large,
    2 a reference without tokens under ROUGE-W (ROUGE-1.5.5 dies; that metric is NaN).
    """

    metrics: list[str]
    scores: np.ndarray
    counts: np.ndarray
    best_ref: np.ndarray
    cand_len: np.ndarray
    ref_len: np.ndarray
    n_refs: np.ndarray
    status: np.ndarray
    ref_counts: np.ndarray = field(repr=False, default=None)  # (n_ref_docs, n_metrics, 4) raw

    def __len__(self) -> int:
        return self.scores.shape[0]

    def column(self, metric: str, stat: str) -> np.ndarray:
        return self.scores[:, self.metrics.index(metric), "prf".index(stat[0])]

    def as_dicts(self) -> list[dict[str, dict]]:
        """``score_pair``-shaped results: ``{metric: {"r", "p", "f", "model_count", ...}}``."""
        out = []
        for e in range(len(self)):
            row = {}
            for t, name in enumerate(self.metrics):
                p, r, f = self.scores[e, t].tolist()
                mc, pc, hit = self.counts[e, t].tolist()
                row[name] = {"r": r, "p": p, "f": f, "model_count": mc, "peer_count": pc, "hit": hit}
            out.append(row)
        return out


def _flatten(references, candidates):
    docs, n_refs = flatten_examples(references, candidates)
    return docs, n_refs, example_offsets(n_refs)


def score_encoded(enc, ex_doc: np.ndarray, n_refs: np.ndarray, metrics: list[MetricSpec], rule: int,
                  alpha: float, rounded: bool, rs_f: bool, max_cells: int = MAX_LCS_CELLS,
                  vocab: int | None = None, w_empty_ref: str = "nan") -> Rouge155Scores:
    """Count and combine an encoded batch (``enc``: :class:`Encoded` or ``EncodedDocs``).

    ``w_empty_ref``: what ROUGE-W gives when a reference has no token (ROUGE-1.5.5 dies):
    ``"nan"`` (status 2, W is NaN) or ``"zero"`` (that reference's W counts are 0; status 0).
    """
    n_ex = ex_doc.shape[0] - 1
    T = len(metrics)
    kinds = np.array([m.kind for m in metrics], dtype=np.int64)
    ns = np.array([m.n for m in metrics], dtype=np.int64)
    weights = np.array([m.weight for m in metrics], dtype=np.float64)
    gaps = np.array([m.gap for m in metrics], dtype=np.int64)
    sus = np.array([m.su for m in metrics], dtype=np.bool_)
    doc_len = np.diff(enc.doc_tok)
    sent_len = np.diff(enc.sent_tok)
    longest = int(max(doc_len.max(initial=0), sent_len.max(initial=0))) + 2
    ftabs = np.zeros((T, longest if (kinds == K.KIND_W).any() else 1), dtype=np.float64)
    for t, m in enumerate(metrics):
        if m.kind == K.KIND_W:
            w = m.weight
            ftabs[t] = [k ** w for k in range(longest)]
    if vocab is None:
        vocab = getattr(enc, "vocab", None)
        if vocab is None:
            vocab = int(max(enc.tokens.max(initial=-1), enc.sent_tokens.max(initial=-1))) + 1
    n_ref_docs = int(ex_doc[-1] - n_ex)
    counts = np.empty((n_ref_docs, T, 4), dtype=np.float64)
    status = np.zeros(n_ex, dtype=np.int8)
    out = np.empty((n_ex, T, 3), dtype=np.float64)
    best = np.empty((n_ex, T), dtype=np.int32)
    pooled = np.empty((n_ex, T, 3), dtype=np.float64)
    if n_ex:
        K.count_batch(enc.tokens, enc.doc_tok, enc.sent_tokens, enc.sent_tok, enc.doc_sent, ex_doc,
                      int(vocab), kinds, ns, weights, gaps, sus, ftabs, max_cells, counts, status)
        K.combine_batch(counts, ex_doc, kinds, weights, rule, float(alpha), bool(rounded), bool(rs_f),
                        out, best, pooled)
    bad = status != K.STATUS_OK
    if bad.any():
        for e in np.flatnonzero(status == K.STATUS_TOO_LONG):
            out[e] = np.nan
        w_empty = status == K.STATUS_W_EMPTY_REF
        if w_empty_ref == "zero":
            status[w_empty] = K.STATUS_OK
        else:
            for e in np.flatnonzero(w_empty):
                out[e, kinds == K.KIND_W] = np.nan
    cand_docs = ex_doc[:-1]
    cum = np.concatenate([[0], np.cumsum(doc_len)])
    ref_len = cum[ex_doc[1:]] - cum[cand_docs + 1]
    return Rouge155Scores([m.name for m in metrics], out, pooled, best, doc_len[cand_docs], ref_len,
                          n_refs, status, counts)


class Rouge155Scorer:
    """ROUGE-1.5.5's per-pair numbers, compiled: ``score_arrays(references, candidates)``.

    ``opts``: :class:`Rouge155Options` (``multi_ref`` may also be ``pooled``, ``best_recall``,
    ``max_f`` or ``mean``).  ``metrics`` optionally restricts/renames the output: a list of
    ROUGE-1.5.5 metric names out of ``opts.metric_names``.
    """

    def __init__(self, opts: Rouge155Options | None = None, metrics: list[str] | None = None):
        self.opts = opts or Rouge155Options()
        self.specs = option_metrics(self.opts)
        if metrics is not None:
            by_name = {m.name: m for m in self.specs}
            missing = [m for m in metrics if m not in by_name]
            if missing:
                raise ValueError(f"metrics {missing} are not computed by these options "
                                 f"({', '.join(by_name)})")
            self.specs = [by_name[m] for m in metrics]
        self.metrics = [m.name for m in self.specs]
        self.rule = RULES[self.opts.multi_ref]
        o = self.opts
        self.encoder = Rouge155Encoder(o.stem, o.stopwords, o.length_limit_words, o.length_limit_bytes)

    def score_arrays(self, references, candidates) -> Rouge155Scores:
        """``references[i]``: one text or a list of texts (one sentence per line)."""
        docs, n_refs, ex_doc = _flatten(references, candidates)
        enc = self.encoder.encode(docs)
        return score_encoded(enc, ex_doc, n_refs, self.specs, self.rule, self.opts.alpha,
                             rounded=True, rs_f=False)

    def score_pairs(self, references, candidates) -> list[dict[str, dict]]:
        """As :func:`pipeline.rouge155.score_pair` for each pair (raises where it raises)."""
        res = self.score_arrays(references, candidates)
        if (res.status == K.STATUS_W_EMPTY_REF).any():
            raise ZeroDivisionError("ROUGE-W: a reference has no tokens (ROUGE-1.5.5 dies here)")
        return res.as_dicts()
