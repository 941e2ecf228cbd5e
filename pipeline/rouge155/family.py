"""The ROUGE family by name, in every profile, and the rouge155 profile for the pipeline.

Type names (``scoring.rouge_types``):

=================  ===========================================================================
``rouge1``..9      ROUGE-N: clipped n-gram matches over the whole token stream
``rougeL``         rouge-score: LCS of the whole token streams; rouge155: ROUGE-1.5.5's ROUGE-L
``rougeLsum``      summary-level union LCS over sentences (ROUGE-1.5.5's ROUGE-L)
``rougeW-1.2``     weighted LCS, f(k) = k**1.2 (any weight > 0), summary level
``rougeS4``        skip bigrams with at most 4 tokens in between; ``rougeS*``: any gap
``rougeSU4``       ROUGE-S plus unigrams; ``rougeSU*``
=================  ===========================================================================

Definitions (Lin 2004, computed as ROUGE-1.5.5 computes them -- the pure-Python specification
is :mod:`pipeline.rouge155.metrics`; the rouge-score profile uses rouge-score's tokenizer and
does not round):

* ROUGE-W: per reference sentence, the union over candidate sentences of the positions of one
  traced weighted LCS (WLCS: a match extending a run of k gives f(k+1) - f(k)); hits are
  sum f(run) over runs of those positions that survive unigram clipping;
  R = f^-1(hits / f(sum_i f(|r_i|))) -- ROUGE-1.5.5's double weighting of the reference length
  (Lin's paper has f^-1(hits / f(|r|)));  P = f^-1(hits / f(|c|)).
* ROUGE-S/SU: pairs (t_i, t_j), i < j <= i + gap + 1 over the whole text; SU adds the unigrams
  t_0 .. t_{n-2} (ROUGE-1.5.5 never counts the last token's); clipped counts; R = hits / ref
  count, P = hits / candidate count.
* F = P R / ((1 - alpha) P + alpha R) (alpha = 1 / (1 + beta**2)); at alpha = 0.5 the rouge-score
  profile keeps rouge-score's 2PR / (P + R), bit for bit.

Multiple references (``scoring.multi_ref``): ``max_f`` (rouge-score: the reference with the
highest F, first on ties), ``pooled``/``A`` (ROUGE-1.5.5 ``-f A``: hits and counts summed over
references), ``best_recall``/``B`` (``-f B``: the first reference with the highest recall; its
P, R, F), ``mean`` (the mean of the per-reference P, R and F).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.rouge155 import kernels as K
from pipeline.rouge155.corpus import corpus_average
from pipeline.rouge155.fast import RULES, Rouge155Encoder, Rouge155Scores, _flatten, option_metrics, score_encoded
from pipeline.rouge155.options import Rouge155Options
from pipeline.scoring.engine import RougeEngine
# the type grammar, re-exported (pipeline.rouge155.family.parse_family_types and the rest, as before)
from pipeline.scoring.family_types import (MULTI_REF_NAMES, MetricSpec, check_alpha, is_extended,  # noqa: F401
                                           parse_family_type, parse_family_types)
from pipeline.scoring.types import STATS

# --------------------------------------------------------------------------- rouge-score profile

class FamilyScorer:
    """Any family type and multi-reference rule on rouge-score's (or a custom) tokenizer.

    Encoding is :class:`pipeline.scoring.engine.RougeEngine`'s (same tokens, stems and sentences);
    counting and combining are :mod:`pipeline.rouge155.kernels`.  No rounding.  With only
    rouge-score's types, ``max_f`` and alpha 0.5, use ``RougeEngine`` itself (same numbers).
    """

    def __init__(self, rouge_types, use_stemmer: bool = False, tokenizer=None, sentence_splitter=None,
                 language: str = "en", multi_ref: str = "max_f", alpha: float = 0.5):
        self.specs = parse_family_types(list(rouge_types))
        self.rouge_types = [s.name for s in self.specs]
        if multi_ref not in MULTI_REF_NAMES:
            raise ValueError(f"multi_ref: expected one of {', '.join(MULTI_REF_NAMES)}, got {multi_ref!r}")
        self.multi_ref = multi_ref
        self.alpha = check_alpha(alpha)
        # rougeLsum forces the sentence stream (ROUGE-L summary level and ROUGE-W use it)
        self._encoder = RougeEngine(["rougeLsum"], use_stemmer=use_stemmer, tokenizer=tokenizer,
                                    sentence_splitter=sentence_splitter, language=language)

    def encode(self, texts):
        return self._encoder.encode(list(texts))

    def score_arrays(self, references, candidates) -> Rouge155Scores:
        docs, n_refs, ex_doc = _flatten(references, candidates)
        enc = self._encoder.encode(docs)
        return score_encoded(enc, ex_doc, n_refs, self.specs, RULES[self.multi_ref], self.alpha,
                             rounded=False, rs_f=self.alpha == 0.5)


# --------------------------------------------------------------------------- rouge155 profile

def options_for_types(rouge_types, stem: bool = False, remove_stopwords: bool = False,
                      length_limit_words: int | None = None, length_limit_bytes: int | None = None,
                      alpha: float = 0.5, multi_ref: str = "A") -> tuple[Rouge155Options, list[str]]:
    """The ROUGE-1.5.5 options computing ``rouge_types``, and each type's ROUGE-1.5.5 metric.

    ``rougeN`` -> ``-n`` (the largest N), ``rougeL``/``rougeLsum`` -> ROUGE-L, ``rougeW-X`` ->
    ``-w X``, ``rougeS<d>``/``rougeSU<d>`` -> ``-2 d`` (``-u``).  ROUGE-1.5.5 computes one W and
    one S/SU per run, so at most one of each.
    """
    specs = parse_family_types(list(rouge_types))
    n = max([s.n for s in specs if s.kind == K.KIND_N], default=0)
    ws = {s.weight for s in specs if s.kind == K.KIND_W}
    ss = {(s.gap, s.su) for s in specs if s.kind == K.KIND_S}
    if len(ws) > 1 or len(ss) > 1:
        raise ValueError("profile rouge155: at most one rougeW-<w> and one rougeS/SU type "
                         "(ROUGE-1.5.5 computes one of each per run)")
    gap, su = ss.pop() if ss else (None, True)
    opts = Rouge155Options(
        n=n, stem=stem, stopwords=remove_stopwords, length_limit_words=length_limit_words,
        length_limit_bytes=length_limit_bytes,
        rouge_l=any(s.kind in (K.KIND_L, K.KIND_LWHOLE) for s in specs),
        w_weight=ws.pop() if ws else None, skip_gap=gap, su=su, alpha=alpha, multi_ref=multi_ref)
    by_kind = {}
    names = []
    for m in option_metrics(opts):
        by_kind.setdefault(m.kind, []).append(m)
    for s in specs:
        if s.kind == K.KIND_N:
            names.append(f"ROUGE-{s.n}")
        elif s.kind in (K.KIND_L, K.KIND_LWHOLE):
            names.append("ROUGE-L")
        else:
            names.append(by_kind[s.kind][0].name)
    return opts, names


def perl_options(opts: Rouge155Options) -> str:
    """The ROUGE-1.5.5 command-line options equivalent to ``opts`` (for the signature)."""
    parts = [f"-n {opts.n}"] if opts.n else []
    if opts.stem:
        parts.append("-m")
    if opts.stopwords:
        parts.append("-s")
    if opts.length_limit_words:
        parts.append(f"-l {opts.length_limit_words}")
    if opts.length_limit_bytes:
        parts.append(f"-b {opts.length_limit_bytes}")
    if not opts.rouge_l:
        parts.append("-x")
    if opts.w_weight is not None:
        parts.append(f"-w {opts.w_weight:g}")
    if opts.skip_gap is not None:
        parts.append(f"-2 {opts.skip_gap}" + (" -u" if opts.su else ""))
    rule = opts.multi_ref if opts.multi_ref in ("A", "B") else f"{opts.multi_ref}(not in ROUGE-1.5.5)"
    parts += [f"-f {rule}", f"-p {opts.alpha:g}"]
    return " ".join(parts)


@dataclass
class PipelineRouge155Scorer:
    """``score_arrays`` for :mod:`pipeline.job`: the configured type names, ROUGE-1.5.5 numbers.

    Where ROUGE-1.5.5 dies (``-w`` and a reference without tokens) that reference gets ROUGE-W
    counts 0 (hits 0, model count f(0) = 0): the pair is still scored, never NaN.
    """

    rouge_types: list
    opts: Rouge155Options
    metric_names: list

    @classmethod
    def create(cls, rouge_types, **kw) -> "PipelineRouge155Scorer":
        opts, names = options_for_types(rouge_types, **kw)
        return cls(list(rouge_types), opts, names)

    def __post_init__(self):
        by_name = {m.name: m for m in option_metrics(self.opts)}
        self.specs = [by_name[n] for n in self.metric_names]
        o = self.opts
        self.encoder = Rouge155Encoder(o.stem, o.stopwords, o.length_limit_words, o.length_limit_bytes)

    def encode(self, texts):
        """ROUGE-1.5.5's token ids (:class:`pipeline.rouge155.fast.Encoded`)."""
        return self.encoder.encode(list(texts))

    def score_arrays(self, references, candidates) -> Rouge155Scores:
        docs, n_refs, ex_doc = _flatten(references, candidates)
        enc = self.encoder.encode(docs)
        res = score_encoded(enc, ex_doc, n_refs, self.specs, RULES[self.opts.multi_ref], self.opts.alpha,
                            rounded=True, rs_f=False, w_empty_ref="zero")
        res.metrics = list(self.rouge_types)
        return res


# --------------------------------------------------------------------------- printed corpus averages

def corpus_json(table, rouge_types, metric_names, opts: Rouge155Options) -> dict:
    """ROUGE-1.5.5's printed ``Average_R/P/F`` and CIs per system, from per-example scores.

    ``table``: the run's per-example rows (``id``, ``system``, ``<type>_precision/recall/
    fmeasure`` as printed by ROUGE-1.5.5); the eval IDs are the record ids, sorted as strings by
    the script's bootstrap (``-t 0``, seeds 0 .. resamples-1, drand48).
    """
    out = {}
    systems = table.column("system").to_pylist()
    ids = table.column("id").to_pylist()
    cols = {(t, s): table.column(f"{t}_{s}").to_pylist() for t in rouge_types
            for s in STATS}
    for system in sorted(set(systems)):
        rows = [i for i, s in enumerate(systems) if s == system]
        per_pair = [{t: {"r": cols[(t, "recall")][i], "p": cols[(t, "precision")][i],
                         "f": cols[(t, "fmeasure")][i]} for t in rouge_types} for i in rows]
        avg = corpus_average(per_pair, [ids[i] for i in rows], opts, list(rouge_types))
        out[system] = {t: {"metric": name, **{k: (list(v) if isinstance(v, tuple) else v)
                                               for k, v in avg[t].items()}}
                       for t, name in zip(rouge_types, metric_names)}
    return {"eval_ids": "record ids, sorted as strings", "resamples": opts.resamples,
            "confidence": opts.confidence, "counting_unit": 0, "n_pairs": len(ids), "systems": out}


def corpus_outputs(systems, scoring, n_boot: int, confidence: float, read_scores) -> dict:
    """What ``RUN/rouge155_corpus.json`` holds (:mod:`pipeline.runfolder` writes it):
    :func:`corpus_json` of a finished run's per-example scores.

    ``scoring``: the run's scoring settings; ``-r`` is ``stats.n_boot`` (1000 by default, as
    ROUGE-1.5.5) and ``-c`` is ``stats.confidence`` in percent.  ``read_scores(system, columns)``:
    a system's per-example scores in input order (an Arrow table, or None).  Rows without scores
    (NaN, e.g. status ``too_long``) are left out.
    """
    import pyarrow as pa

    types = list(scoring.rouge_types)
    opts, names = options_for_types(types, scoring.use_stemmer, scoring.remove_stopwords,
                                    scoring.length_limit_words, scoring.length_limit_bytes,
                                    scoring.alpha, scoring.multi_ref)
    opts = Rouge155Options(**{**opts.__dict__, "resamples": n_boot if n_boot > 0 else 1000,
                              "confidence": round(confidence * 100, 6)})
    cols = ["id", "system"] + [f"{t}_{s}" for t in types for s in STATS]
    tables = [t for t in (read_scores(s, cols) for s in systems) if t is not None]
    if tables:
        table = pa.concat_tables(tables)
        ok = np.ones(table.num_rows, dtype=bool)
        for c in cols[2:]:
            ok &= ~np.isnan(table.column(c).to_numpy(zero_copy_only=False))
        table = table.filter(pa.array(ok))
    out = corpus_json(table, types, names, opts) if tables and table.num_rows else {"systems": {}}
    out["options"] = perl_options(opts) + f" -c {opts.confidence:g} -r {opts.resamples} -t 0"
    return out
