"""Compile (or load from numba's cache) every kernel once: ``python -m pipeline.execution.warmup``.

Docker images and CI run this at build time so workers do not compile at their
first task.  A run compiles them itself when this machine has not yet
(:func:`ensure_compiled`: once, in the client, with a one-line notice, before any worker
starts, so the workers only load numba's cache instead of all compiling at the same time).
Whether it has is a stamp file next to numba's cache, keyed by everything that invalidates it.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import platform
import subprocess
import sys
import time
from importlib.metadata import version

from pipeline import __version__, job
from pipeline.scorer import RougeScorer, _compiled

# The kernels' modules are imported inside the functions that load them: the worker plugin imports
# this module before it sets NUMBA_NUM_THREADS, which numba reads when it is first imported.

from pipeline.scoring.types import DEFAULT_TYPES


def warmup(settings=None, diagnostics: bool = True, stats: bool = True) -> float:
    """Load every kernel; with ``settings`` (a :class:`pipeline.job.ScoringSettings`) also
    build that run's scorer (a unicode or rouge155 profile's tables) through a task's path.
    ``diagnostics=False``/``stats=False`` leave the diagnostics' / statistics' kernels out."""
    t0 = time.perf_counter()
    _compiled()  # imports numba, which ends the cold-start tier (that tier would load no kernel)

    refs = ["The cat sat on the mat.\nIt was happy.", "a b c \u2014 caf\u00e9"]  # non-ASCII: the UTF-8 kernel
    refs.append(refs[0])  # a repeated reference: the kernels that tokenize it once
    cands = ["The cat is sitting on the mat.\nIt is happy.", "b a", "a cat"]
    for stem in (False, True):
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
    records._jsonl_shape(np.frombuffer(b'{"id": 1}\n', dtype=np.uint8))
    score_split(job.scorer_for(job.ScoringSettings()), "a b\nc", ["c a\nb"], 2)


def warm_diagnostics() -> None:
    """Compile the per-example diagnostics kernel and the statistics' kernels alone (neither
    needs the scoring kernels), with the argument types a task passes."""
    import numpy as np
    import pyarrow as pa

    types = ("rouge1",)
    schema = job.scores_schema(types, diagnostics=False)
    row = {"id": "a", "system": "s", "n_refs": 1, "cand_tokens": 1, "ref_tokens": 1, "rouge1_precision": 1.0,
           "rouge1_recall": 1.0, "rouge1_fmeasure": 1.0, "status": "ok"}
    scores = pa.Table.from_pylist([row, {**row, "id": "b"}], schema=schema)
    job.unit_stats(scores, job.UnitContext(run_url="", scoring=job.ScoringSettings(rouge_types=types), seed=0,
                                           n_boot=10))

    from pipeline.scoring.diagnostics import _per_example  # numba, likewise

    tok = np.array([1, 2, 3, 1, 2, 4, 1, 2, 3, 5], dtype=np.int32)
    c_start, c_end = np.array([0, 3], dtype=np.int64), np.array([3, 6], dtype=np.int64)
    s_start, s_end = np.array([6, 6], dtype=np.int64), np.array([10, 6], dtype=np.int64)
    _per_example(tok, c_start, c_end, s_start, s_end, np.array([True, False]),
                 np.empty((2, 7), dtype=np.float64), np.empty((2, 2), dtype=np.int64))


def _warm_key() -> str:
    """Changes whenever numba's cache of this package's kernels would be stale."""
    try:
        numba_version = version("numba")
    except Exception:  # noqa: BLE001
        numba_version = "unknown"
    root = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256(f"{__version__}|{numba_version}|{sys.version}|{platform.machine()}|{root}".encode())
    for dirpath, dirnames, files in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                st = os.stat(os.path.join(dirpath, name))
                h.update(f"{os.path.relpath(os.path.join(dirpath, name), root)}:{st.st_mtime_ns}:{st.st_size}".encode())
    return h.hexdigest()[:16]


def _stamp_path() -> str:
    """Where numba caches (``NUMBA_CACHE_DIR``, else the package's ``__pycache__`` if writable,
    else a user cache folder): clearing that cache clears the stamp with it."""
    cache = os.environ.get("NUMBA_CACHE_DIR")
    if not cache:
        cache = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__")
        if not os.access(os.path.dirname(cache), os.W_OK):
            cache = os.path.join(os.path.expanduser("~"), ".cache", "rouge-pipeline")
    return os.path.join(cache, f"rouge-pipeline-kernels-{_warm_key()}")


def is_compiled() -> bool:
    """True when this machine's numba cache holds this version's kernels (a stamp says so)."""
    try:
        return os.path.exists(_stamp_path())
    except OSError:
        return False


def _mark_compiled() -> None:
    try:
        path = _stamp_path()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write("kernels compiled\n")
    except OSError:  # a read-only cache: the next run compiles (or loads) again, as before
        pass


def _start_helper(settings):
    """The second compiling process (:func:`warm_diagnostics`), or None on one core."""
    if not getattr(settings, "diagnostics", True) or (os.cpu_count() or 1) < 2:
        return None
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    try:
        return subprocess.Popen([sys.executable, "-c", "from pipeline.execution.warmup import warm_diagnostics as w; w()"],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return None


def ensure_compiled(settings=None, log=None) -> float | None:
    """Compile the kernels in this process if this machine has not yet (one notice line
    before and the time after); ``None`` when they were compiled already."""
    if is_compiled():
        return None
    say = log or (lambda m: print(m, file=sys.stderr, flush=True))
    say("compiling the scoring kernels (first run only) ...")
    t0 = time.perf_counter()
    # the diagnostics' and statistics' kernels share nothing with the scoring ones: a second
    # process compiles them into the same cache meanwhile (about 40% of the work, another core)
    helper = _start_helper(settings)
    try:
        warmup(settings, diagnostics=helper is None, stats=helper is None)
    finally:
        if helper is not None:
            helper.wait()
    if helper is not None:
        warmup(settings)  # the diagnostics from the helper's cache (or compiled here if it failed)
    seconds = time.perf_counter() - t0
    _mark_compiled()
    say(f"scoring kernels compiled in {seconds:.1f}s (cached for the next runs)")
    return seconds


def main() -> int:
    """``python -m pipeline.execution.warmup``: compile every kernel now (e.g. in an image build)."""
    seconds = warmup()
    _mark_compiled()
    print(f"kernels ready in {seconds:.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
