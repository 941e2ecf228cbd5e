"""Compile (or load from numba's cache) every kernel once: ``python -m pipeline.execution.warmup``.

Docker images and CI run this at build time so workers do not compile at their
first task.  A run compiles them itself when this machine has not yet
(:func:`ensure_compiled`: once, in the client, in three processes at once, its progress shown,
before any worker starts, so the workers only load numba's cache instead of all compiling at
the same time).  Whether it has is a stamp file next to numba's cache, keyed by everything that
invalidates it (:mod:`pipeline.scoring.kernel_cache`).
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import subprocess
import sys
import time

from pipeline import job
from pipeline.scorer import RougeScorer, _compiled, default_encoder
from pipeline.scoring import cold, kernel_cache

# The kernels' modules are imported inside the functions that load them: the worker plugin imports
# this module before it sets NUMBA_NUM_THREADS, which numba reads when it is first imported.

from pipeline.scoring.types import DEFAULT_TYPES


def warmup(settings=None, diagnostics: bool = True, stats: bool = True) -> float:
    """Load every kernel; with ``settings`` (a :class:`pipeline.job.ScoringSettings`) also
    build that run's scorer (a unicode or rouge155 profile's tables) through a task's path.
    ``diagnostics=False``/``stats=False`` leave the diagnostics' / statistics' kernels out."""
    t0 = time.perf_counter()
    cold.disable()  # this process compiles: no batch of it goes to the pure-Python tier
    _compiled()

    refs = ["The cat sat on the mat.\nIt was happy.", "a b c \u2014 caf\u00e9"]  # non-ASCII: the UTF-8 kernel
    refs.append(refs[0])  # a repeated reference: the kernels that tokenize it once
    cands = ["The cat is sitting on the mat.\nIt is happy.", "b a", "a cat"]
    for stem in (False, True):
        RougeScorer(list(DEFAULT_TYPES), use_stemmer=stem).score_batch(refs, cands)
        with _through_the_cache():
            RougeScorer(list(DEFAULT_TYPES), use_stemmer=stem).score_batch(refs, cands)
    RougeScorer(["rougeLsum"], tokenizer=str.split).score_batch(refs, cands)
    _warm_job(settings, diagnostics, stats)
    return time.perf_counter() - t0


def _warm_job(settings=None, diagnostics: bool = True, stats: bool = True) -> None:
    """The job's own compiled parts (a task's scoring, diagnostics and statistics, the JSONL
    byte check, split scoring), with the run's settings when given."""
    import numpy as np
    import pyarrow as pa

    from pipeline.io import records  # numba: imported here (see the note at the top)
    from pipeline.scoring.split import score_split  # numba, likewise

    table = pa.table({
        "id": ["a", "b"], "system": ["s", "s"],
        "candidate": ["the cat sat on the mat\nit was happy", "b a"],
        "references": [["the cat is on the mat\nhappy it was", "a cat"], ["a cat"]],  # repeated: tokenized once
        "source": ["the cat sat on the mat . it was happy .", None],
    })
    runs = [job.ScoringSettings(), settings or job.ScoringSettings()]
    if not diagnostics:
        runs = [dataclasses.replace(s, diagnostics=False) for s in runs]
    for s in dict.fromkeys(runs):
        scores = job.score_table(table, s)
        if stats:
            job.unit_stats(scores, job.UnitContext(run_url="", scoring=s, seed=0, n_boot=10))
    records._clean_lines(b'{"id": 1}\n')   # the line scan and digests, as a task reads a unit
    from pipeline.stats.mt_bootstrap import bootstrap_means  # numba, likewise: eval's and compute's bootstrap

    bootstrap_means(np.random.RandomState(0), np.zeros((2, 3)), 1, [0, 1, 2])
    score_split(job.scorer_for(job.ScoringSettings()), "a b\nc", ["c a\nb"], 2)


@contextlib.contextmanager
def _through_the_cache():
    """The default encoders take every list of references through their reference cache, however
    few and short (such a call skips it otherwise), so that the cache's kernels are loaded too."""
    encoders = [default_encoder(stem) for stem in (False, True)]
    for enc in encoders:
        enc.FEW_REFERENCES = -1
    try:
        yield
    finally:
        for enc in encoders:
            vars(enc).pop("FEW_REFERENCES", None)  # the class's bound again


def warm_encoder() -> None:
    """The default encoder's kernels (texts and Arrow columns, ASCII and not) and the JSONL byte
    check, without the scoring kernel."""
    import numpy as np
    import pyarrow as pa

    from pipeline.io import records  # numba: imported here (see the note at the top)

    cold.disable()
    for stem in (False, True):
        enc = default_encoder(stem)
        enc.encode(["The cat sat on the mat.\nIt was happy."])   # scanned in the str's own buffer
        enc.encode(["a b c \u2014 caf\u00e9"])                     # a 2-byte str
        # a reference repeated: the cache's gather and the Arrow buffer's compaction
        enc.encode_arrow(pa.array(["the cat sat", "caf\u00e9 b"]), pa.array([["a cat"], ["b", "a cat"]]))
        enc.encode_examples(["the cat", "b"], ["a dog", "b c"], np.ones(2, dtype=np.int64))  # few: no cache
        with _through_the_cache():
            # a list's references in UTF-8 (converted when not ASCII), looked up, gathered
            enc.encode_examples(["the cat", "b"], ["a caf\u00e9", "a caf\u00e9"], np.ones(2, dtype=np.int64))
            for _ in range(2):  # a column kept, then seen again: its run found (Arrow, a list)
                enc.encode_arrow(pa.array(["the cat", "b"]), pa.array(["a dog", "b c"]))
                enc.encode_examples(["the cat", "b"], ["a dog", "b c"], np.ones(2, dtype=np.int64))
    records._clean_lines(b'{"id": 1}\n')   # the line scan and digests, as a task reads a unit


def warm_split() -> None:
    """Long documents' split scoring (after the scoring kernel)."""
    from pipeline.scoring.split import score_split  # numba, likewise

    cold.disable()
    score_split(job.scorer_for(job.ScoringSettings()), "a b\nc", ["c a\nb"], 2)


def warm_diagnostics() -> None:
    """Compile the per-example diagnostics kernel and the statistics' kernels alone (neither
    needs the scoring kernels), with the argument types a task passes."""
    warm_stats()
    warm_diagnostics_kernel()


def warm_stats() -> None:
    """The statistics' kernels (a unit's statistics of a scores table, the bootstrap's weights)."""
    import numpy as np
    import pyarrow as pa

    from pipeline.stats import poisson  # numba, likewise

    types = ("rouge1",)
    schema = job.scores_schema(types, diagnostics=False)
    row = {"id": "a", "system": "s", "n_refs": 1, "cand_tokens": 1, "ref_tokens": 1, "rouge1_precision": 1.0,
           "rouge1_recall": 1.0, "rouge1_fmeasure": 1.0, "status": "ok"}
    scores = pa.Table.from_pylist([row, {**row, "id": "b"}], schema=schema)
    job.unit_stats(scores, job.UnitContext(run_url="", scoring=job.ScoringSettings(rouge_types=types), seed=0,
                                           n_boot=10))
    poisson.poisson_weights(np.array([1, 2], dtype=np.uint64), 10, np.empty((10, 2)))  # the run's read-out


def warm_diagnostics_kernel() -> None:
    """The per-example diagnostics kernel."""
    import numpy as np

    from pipeline.scoring.diagnostics import _per_example  # numba, likewise

    tok = np.array([1, 2, 3, 1, 2, 4, 1, 2, 3, 5], dtype=np.int32)
    c_start, c_end = np.array([0, 3], dtype=np.int64), np.array([3, 6], dtype=np.int64)
    s_start, s_end = np.array([6, 6], dtype=np.int64), np.array([10, 6], dtype=np.int64)
    _per_example(tok, c_start, c_end, s_start, s_end, np.array([True, False]),
                 np.empty((2, 7), dtype=np.float64), np.empty((2, 2), dtype=np.int64))


def _stamp_path() -> str:
    """The stamp that says every kernel is in this machine's numba cache."""
    return kernel_cache.stamp_path(kernel_cache.ALL)


def is_compiled() -> bool:
    """True when this machine's numba cache holds this version's kernels (a stamp says so)."""
    return kernel_cache.is_ready(kernel_cache.ALL)


def _mark_compiled() -> None:
    kernel_cache.mark(kernel_cache.ALL)
    kernel_cache.mark(kernel_cache.SCORING)


def _start_helpers(settings, scoring: bool) -> list:
    """The other compiling processes, on two or more cores: the scoring kernel (and the long
    documents' split scoring, which uses it) unless ``scoring`` is False, and with diagnostics
    the diagnostics' kernel (and, with the scoring kernel compiled too, the statistics'); each
    compiles into the same cache."""
    if (os.cpu_count() or 1) < 2:
        return []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    codes = []
    if scoring:
        codes.append(("the scoring kernel", "from pipeline.scoring import kernel_compile as k; k.main(['kernel']); "
                      "from pipeline.execution.warmup import warm_split as w; w()"))
    if getattr(settings, "diagnostics", True):
        codes.append(("the diagnostics' kernel", "from pipeline.execution import warmup as w; "
                      + ("w.warm_diagnostics()" if scoring else "w.warm_diagnostics_kernel()")))
    helpers = []
    for name, code in codes:
        try:
            helpers.append((name, subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL,
                                                   stderr=subprocess.DEVNULL)))
        except OSError:
            pass
    return helpers


def ensure_compiled(settings=None, log=None, progress: bool = True, file=None, scoring: bool = True) -> float | None:
    """Compile the kernels if this machine has not yet: in this process and up to two others at
    once, a notice line before, each part's end on a progress bar (stderr, or ``file``), the
    time after; ``None`` when they were compiled already.  ``scoring=False`` (a small run in
    this process): every kernel but the scoring ones, which a background process compiles
    meanwhile while the run scores in pure Python (:mod:`pipeline.scoring.cold`)."""
    if is_compiled() or (not scoring and kernel_cache.is_ready(kernel_cache.JOB)):
        return None
    say = log or (lambda m: print(m, file=sys.stderr, flush=True))
    say("compiling the kernels (first run on this machine; cached for the next runs) ...")
    t0 = time.perf_counter()
    if not scoring:
        kernel_cache.start_background()
    # the scoring kernel, the diagnostics' and the statistics' kernels share nothing: each
    # compiles in a process of its own meanwhile, this one compiles the encoder
    helpers = _start_helpers(settings, scoring)
    with _bar(len(helpers) + 1, progress, file) as bar:
        try:
            if helpers or not scoring:
                warm_encoder()
                if not scoring:
                    warm_stats()
                    if not helpers and getattr(settings, "diagnostics", True):
                        warm_diagnostics_kernel()
                bar.set_postfix_str("the encoder" + ("" if scoring else " and the statistics' kernels"))
                bar.update(1)
        finally:
            for name, helper in helpers:
                helper.wait()
                bar.set_postfix_str(name)
                bar.update(1)
        if scoring:
            warmup(settings)  # the helpers' kernels loaded (compiled here if one failed), or all on one core
        if scoring and not helpers:
            bar.update(1)
    seconds = time.perf_counter() - t0
    if scoring:
        _mark_compiled()
    else:
        kernel_cache.mark(kernel_cache.JOB)
    say(f"kernels compiled in {seconds:.1f}s (cached for the next runs"
        + ("" if scoring else "; the scoring kernels compile in the background, the run scores meanwhile") + ")")
    return seconds


def _bar(total: int, progress: bool, file):
    from tqdm import tqdm  # start-up: only on a first run

    return tqdm(total=total, file=file or sys.stderr, disable=not progress, unit="part", leave=True,
                desc="compiling", bar_format="{desc}: {n}/{total} parts done{postfix} [{elapsed}]")


def main() -> int:
    """``python -m pipeline.execution.warmup``: compile every kernel now (e.g. in an image build)."""
    seconds = warmup()
    _mark_compiled()
    print(f"kernels ready in {seconds:.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
