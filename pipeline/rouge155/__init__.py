"""The ``rouge155`` profile: ROUGE-1.5.5 (Chin-Yew Lin's Perl script) numbers in pure Python.

A readable specification written from ``shared/reference/rouge155-semantics.md``; the
compiled path is tested against it.

>>> from pipeline.rouge155 import Rouge155Options, score_pair, corpus_average
>>> opts = Rouge155Options(n=2, stem=True)          # -n 2 -m -2 4 -u -w 1.2 (defaults)
>>> s = score_pair("the cat is sitting on the mat", ["the cat sat on the mat"], opts)
>>> s["ROUGE-1"]["r"], s["ROUGE-W-1.2"]["r"], s["ROUGE-SU4"]["f"]
(0.83333, 0.5209, 0.56522)

Modules: ``resources`` (WordNet exception table, SMART stopwords), ``porter`` (the stemmer),
``text`` (reading, ``-l``/``-b``, tokenisation), ``metrics`` (per-pair scores), ``corpus``
(printed averages and bootstrap confidence intervals).
"""
from pipeline.rouge155.corpus import corpus_average, default_eval_ids, drand48_indices
from pipeline.rouge155.metrics import round5, score_pair
from pipeline.rouge155.options import Rouge155Options
from pipeline.rouge155.porter import morph_stem, porter_stem
from pipeline.rouge155.text import tokenize

__all__ = [
    "Rouge155Options", "score_pair", "corpus_average", "default_eval_ids", "drand48_indices",
    "round5", "morph_stem", "porter_stem", "tokenize",
]
