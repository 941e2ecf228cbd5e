"""Compiling the scoring kernels into numba's cache in another process:
``python -m pipeline.scoring.kernel_compile [MODULE ...]`` (started by
:func:`pipeline.scoring.kernel_cache.start_background`, at low priority: the encoder and the
scoring kernel unless the cache has them, the ``scoring`` stamp, then each registered ``MODULE``
not in the cache yet: its ``compile_for_cache()`` and its stamp) and ``... kernel_compile kernel`` (the scoring
kernel alone, one of a run's parallel compiles: :func:`pipeline.execution.warmup.ensure_compiled`)."""
from __future__ import annotations

import importlib
import os
import sys

import numpy as np

from pipeline.scoring import batch, cold, engine, kernel_cache
from pipeline.scoring.types import DEFAULT_TYPES, parse_rouge_types
from pipeline.text.csr import EncodedDocs


def compile_kernel() -> None:
    """The scoring kernel alone, on arrays of the types the encoder gives (one stream: the
    default tokenizer's lines), so it compiles while another process compiles the encoder."""
    tokens = np.array([0, 1, 2, 1, 0, 2], dtype=np.int32)
    doc_tok = np.array([0, 3, 6], dtype=np.int64)
    sent_tok = np.array([0, 2, 3, 6], dtype=np.int64)
    doc_sent = np.array([0, 2, 3], dtype=np.int64)
    enc = EncodedDocs(tokens, doc_tok, tokens, sent_tok, doc_sent)
    batch.score_encoded(enc, np.array([0, 2], dtype=np.int64), parse_rouge_types(list(DEFAULT_TYPES)))


def compile_scoring() -> None:
    """Every path a default-tokenizer call takes (ASCII and other text, rougeLsum on lines, with
    and without the stemmer) compiled into the cache, and stamped."""
    refs = ["The cat sat on the mat.\nIt was happy.", "a b c \u2014 caf\u00e9"]  # 1- and 2-byte strs; UTF-8
    cands = ["The cat is sitting on the mat.\nIt is happy.", "b a"]
    for stem in (False, True):
        engine.RougeEngine(list(DEFAULT_TYPES), use_stemmer=stem).score_arrays(refs, cands)
    # references seen again, enough to grow the cache's tables: kept; the same column again (a run);
    # held, in another order (gathered from the cache)
    more = refs + [f"r{i}" for i in range(2100)]
    for column in (more, more, more[::-1]):
        engine.RougeEngine(list(DEFAULT_TYPES)).score_arrays(column, cands + ["r"] * (len(more) - len(cands)))
    kernel_cache.mark(kernel_cache.SCORING)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    cold.disable()  # this process exists to compile
    if argv == ["kernel"]:
        compile_kernel()
        return 0
    try:
        os.nice(10)  # the user's process scores meanwhile, in pure Python
    except (OSError, AttributeError):  # no os.nice on Windows
        pass
    try:
        if not kernel_cache.is_ready(kernel_cache.SCORING):
            compile_scoring()   # first: what every first call waits for
        for module in argv:   # registered by the layers above (kernel_cache.register), by name
            if not kernel_cache.is_ready(module):
                importlib.import_module(module).compile_for_cache()
                kernel_cache.mark(module)
    finally:
        kernel_cache.release_lock()
    return 0


if __name__ == "__main__":
    sys.exit(main())
