"""Diagnostics on long sources: the quadratic copy statistics before issue 17 vs the suffix automaton.

    python benchmarks/bench_diagnostics.py
    python benchmarks/bench_diagnostics.py --sizes 10000 100000 --rounds 3 --old-rev <commit>

The old module is ``pipeline/scoring/diagnostics.py`` as of ``--old-rev`` (default: the parent of the commit
that added ``copy_stats``), read with ``git show`` and imported under another name in this process
only.  Both score the same examples with the same scorer (``diagnostics.compute``: encoding the
source included), in alternating rounds; printed: seconds (median over rounds) and old/new ratios,
per source size, for a summary-length candidate (100 tokens), a long one (a tenth of the source,
copied spans and novel words) and the source itself (a system that copies everything; the old path
is timed once when it takes over ``--old-max-seconds``), and for a batch of news-sized examples
(800-token sources).
Every column of the two implementations is compared with ``==`` (the numbers must not move).
"""
from __future__ import annotations

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "benchmarks"))

from corpus import make_corpus  # noqa: E402


def _git(*args) -> str:
    return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True, check=True).stdout


def load_old(rev: str | None):
    if rev is None:
        added = _git("log", "--format=%H", "-S", "def copy_stats", "--", "pipeline/scoring/diagnostics.py").split()
        rev = f"{added[-1]}^" if added else "HEAD"
    src = _git("show", f"{rev}:pipeline/scoring/diagnostics.py")
    path = os.path.join(tempfile.mkdtemp(prefix="bench-diag-"), "diagnostics_old.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location("diagnostics_old", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, rev


def make_examples(n_src: int, n_cand: int, n_examples: int, seed: int):
    """Sources of ``n_src`` words (the corpus's reference sentences, Zipfian words), candidates of
    about ``n_cand`` words: copied source spans of 1-40 words and a few novel words between."""
    rng = random.Random(seed)
    refs, _ = make_corpus("short", max(50, n_src // 40 + 10), seed=seed)
    words = " ".join(r if isinstance(r, str) else " ".join(r) for r in refs).split()
    sources, cands = [], []
    for e in range(n_examples):
        src = [words[(e * 7919 + i) % len(words)] for i in range(n_src)]
        cand = []
        while len(cand) < n_cand:
            a = rng.randrange(len(src))
            cand += src[a:a + rng.randint(1, 40)]
            cand += [f"novel{rng.randrange(10**6)}" for _ in range(rng.randint(0, 3))]
        sources.append(" ".join(src))
        cands.append(" ".join(cand[:n_cand]))
    return cands, sources


def time_compute(mod, scorer, cands, sources, res):
    refs = [["x y"]] * len(cands)
    t0 = time.perf_counter()
    cols = mod.compute(cands, refs, sources, res.cand_len, res.ref_len, res.n_refs, scorer)
    return time.perf_counter() - t0, cols


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 200_000])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--old-rev", default=None)
    ap.add_argument("--batch", type=int, default=2000, help="news-sized examples in the batch case")
    ap.add_argument("--old-max-seconds", type=float, default=5.0,
                    help="time the old path once when its first round takes longer than this")
    args = ap.parse_args()

    from pipeline.scoring import diagnostics as new
    from pipeline.scorer import RougeScorer

    old, rev = load_old(args.old_rev)
    scorer = RougeScorer(["rouge1"])
    cases = []
    for n in args.sizes:
        cases.append((f"source {n:,} / candidate 100", *make_examples(n, 100, 1, seed=n)))
        cases.append((f"source {n:,} / candidate {n // 10:,}", *make_examples(n, n // 10, 1, seed=n + 1)))
        c, src = make_examples(n, 1, 1, seed=n + 2)
        cases.append((f"source {n:,} / candidate = the source", list(src), src))   # a copy-everything system
    cases.append((f"{args.batch} x (source 800 / candidate 60)", *make_examples(800, 60, args.batch, seed=3)))
    # compile both before timing
    c0, s0 = make_examples(50, 10, 2, seed=0)
    r0 = scorer.score_arrays([["x y"]] * 2, c0)
    for mod in (old, new):
        time_compute(mod, scorer, c0, s0, r0)

    print(f"old: pipeline/scoring/diagnostics.py at {rev}; new: this tree; median of {args.rounds} alternating rounds")
    print(f"{'case':42s} {'old s':>9s} {'new s':>9s} {'old/new':>8s}  columns equal")
    for name, cands, sources in cases:
        res = scorer.score_arrays([["x y"]] * len(cands), cands)
        t_old, t_new = [], []
        for r in range(args.rounds):
            if r == 0 or max(t_old) < args.old_max_seconds:   # the old path can take a minute
                dt, cols_old = time_compute(old, scorer, cands, sources, res)
                t_old.append(dt)
            dt, cols_new = time_compute(new, scorer, cands, sources, res)
            t_new.append(dt)
        same = all(cols_old[k].to_pylist() == cols_new[k].to_pylist() for k in cols_old)
        a, b = statistics.median(t_old), statistics.median(t_new)
        print(f"{name:42s} {a:9.3f} {b:9.3f} {a / b:8.1f}  {same}", flush=True)
        if not same:
            print("MISMATCH: the columns differ", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
