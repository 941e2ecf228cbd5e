"""Two or more git trees of this package in ONE process, alternating with rouge-score-rs.

    python benchmarks/bench_trees.py 8e48c25 main --rounds 14
    python benchmarks/bench_trees.py main WORKTREE --kind long --rounds 3

Whole-process runs of ``bench_core.py`` on this machine move by up to 40% between identical
runs (other processes, cache state), so comparing two trees by separate runs needs many of
them.  Here each tree's ``pipeline/`` is extracted (``git archive REV``; ``WORKTREE``: the
files as they are now) into a scratch folder as a package of its own name (``pipeline_t0_<commit>``,
``pipeline_t1_<commit>``, ...; its imports renamed, its numba cache its own), and the rounds go
tree 0, rouge-score-rs, tree 1, rouge-score-rs, ... (order reversed every other round), each
round as ``bench_core.py``'s: the trees' reference caches emptied first, the same corpus,
5,000-pair ``score_batch`` calls.  Printed per tree: us a pair (median, min) and the median
of its per-round ratios to rouge-score-rs, and each tree's per-round time relative to tree 0.
Every tree's scores are checked ``==`` against tree 0's and rouge-score-rs's first.
The first run of a tree compiles its kernels (``--keep DIR`` reuses the copies and their cache).

``--per-batch``: no rouge-score-rs rounds; the trees alternate at every 5,000-pair batch (order
reversed at every batch), each batch timed in process CPU time (time the process is descheduled
is not counted), and each tree's time is given relative to tree 0's on the same batch (median and
quartiles): on a shared machine this resolves differences of a few percent that whole rounds do not.
"""
from __future__ import annotations

import os

for _var in ("NUMBA_NUM_THREADS", "RAYON_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ["ROUGE_PIPELINE_COLD_START"] = "0"  # the copies have no compile stamp: use their kernels at once

import argparse  # noqa: E402
import gc  # noqa: E402
import importlib  # noqa: E402
import io  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tarfile  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus import make_corpus  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
_IMPORT = re.compile(r"\b(from|import) pipeline\b|([\"'])pipeline\.")


def extract(rev: str, name: str, root: Path) -> None:
    """``pipeline/`` of ``rev`` (or the working tree) as package ``name`` under ``root``."""
    dest = root / name
    if dest.exists() and rev != "WORKTREE":  # a commit's copy (its name has the commit) is reused
        return
    if rev == "WORKTREE":
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(REPO / "pipeline", dest, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        tar = subprocess.run(["git", "archive", rev, "pipeline"], cwd=REPO, capture_output=True, check=True).stdout
        tmp = root / (name + ".x")
        with tarfile.open(fileobj=io.BytesIO(tar)) as tf:
            tf.extractall(tmp)
        (tmp / "pipeline").rename(dest)
        tmp.rmdir()
    for path in dest.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        new = _IMPORT.sub(lambda m: (f"{m.group(1)} {name}" if m.group(1) else f"{m.group(2)}{name}."), text)
        if new != text:
            path.write_text(new, encoding="utf-8")


def _commit(rev: str) -> str:
    """The short commit of ``rev`` (``WORKTREE``: ``worktree``), for the copy's package name."""
    if rev == "WORKTREE":
        return "worktree"
    return subprocess.run(["git", "rev-parse", "--short=10", rev + "^{commit}"], cwd=REPO, capture_output=True,
                          check=True, text=True).stdout.strip()


def forget(mod) -> None:
    """Empty the tree's reference caches (as bench_core.forget_references)."""
    engine = importlib.import_module(mod.__name__ + ".scoring.engine")
    for enc in engine._ENCODERS.values():
        if getattr(enc, "cache", None) is not None:
            enc.cache.clear()


def run(scorer, mod, refs, cands, batch):
    if mod is not None:
        forget(mod)
    out = []
    for a in range(0, len(refs), batch):
        out.extend(scorer.score_batch(refs[a:a + batch], cands[a:a + batch]))
    return out


def timed(*args):
    gc.collect()
    t0 = time.perf_counter()
    res = run(*args)
    return res, time.perf_counter() - t0


def check(results, rs_res) -> None:
    for i, res in enumerate(results):
        if res != results[0]:
            raise SystemExit(f"tree {i} scores differ from tree 0's")
        if any(tuple(a[t]) != (b[t].precision, b[t].recall, b[t].fmeasure) for a, b in zip(res, rs_res)
               for t in TYPES):
            raise SystemExit(f"tree {i} scores differ from rouge-score-rs's")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="git trees of this package in one process vs rouge-score-rs")
    ap.add_argument("revs", nargs="+", help="git revisions, or WORKTREE for the files as they are")
    ap.add_argument("--kind", choices=("short", "long"), default="short")
    ap.add_argument("--pairs", type=int, default=None, help="default 20000 short / 100 long")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--cpu", type=int, default=None, help="CPU to pin to (default: the last allowed)")
    ap.add_argument("--keep", default=None, help="folder for the extracted trees, kept (default: a temp folder)")
    ap.add_argument("--per-batch", action="store_true", help="trees alternating per batch, CPU time, no rouge-score-rs")
    args = ap.parse_args(argv)
    n = args.pairs or (20_000 if args.kind == "short" else 100)
    batch = 5_000 if args.kind == "short" else 100
    os.sched_setaffinity(0, {args.cpu if args.cpu is not None else sorted(os.sched_getaffinity(0))[-1]})
    root = Path(args.keep or tempfile.mkdtemp(prefix="bench_trees-"))
    root.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(root))
    import rouge_score_rs

    names = [f"pipeline_t{i}_{_commit(rev)}" for i, rev in enumerate(args.revs)]
    for rev, name in zip(args.revs, names):
        extract(rev, name, root)
    mods = [importlib.import_module(m) for m in names]
    refs, cands = make_corpus(args.kind, n, 0)
    scorers = [m.RougeScorer(TYPES, use_stemmer=True) for m in mods]
    rs = rouge_score_rs.RougeScorer(TYPES, use_stemmer=True)
    check([run(sc, m, refs, cands, batch) for sc, m in zip(scorers, mods)], run(rs, None, refs, cands, batch))
    if args.per_batch:
        per_batch(args, names, scorers, mods, refs, cands, batch)
    else:
        rounds(args, names, scorers, mods, rs, refs, cands, batch, root)
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)
    return 0


def rounds(args, names, scorers, mods, rs, refs, cands, batch, root) -> None:
    """Whole rounds, each tree then rouge-score-rs (see module docstring)."""
    n = len(refs)
    per_pair = {name: [] for name in names}
    ratio = {name: [] for name in names}
    kept = []  # round 1's results stay alive, as in bench_core
    for r in range(args.rounds):
        order = list(zip(names, scorers, mods))
        for name, sc, mod in (order if r % 2 == 0 else order[::-1]):
            res, t = timed(sc, mod, refs, cands, batch)
            rs_res, t_rs = timed(rs, None, refs, cands, batch)
            if r == 0:
                kept += [res, rs_res]
            per_pair[name].append(t / n * 1e6)
            ratio[name].append(t_rs / t)
    print(f"{n} {args.kind} pairs, {args.rounds} rounds, load average {os.getloadavg()[0]:.2f}; trees in {root}")
    for rev, name in zip(args.revs, names):
        rel = [a / b for a, b in zip(per_pair[name], per_pair[names[0]])]
        print(f"{rev:>12}: {statistics.median(per_pair[name]):.2f} us a pair (min {min(per_pair[name]):.2f}); "
              f"x{statistics.median(ratio[name]):.2f} rouge-score-rs (per round {', '.join(f'{x:.2f}' for x in ratio[name])}); "
              f"time / {args.revs[0]}'s: median {statistics.median(rel):.3f}")


def per_batch(args, names, scorers, mods, refs, cands, batch) -> None:
    """The trees alternating at every batch, process CPU time per batch (see module docstring)."""
    cpu = {name: [] for name in names}
    k = 0
    for _ in range(args.rounds):
        for mod in mods:
            forget(mod)  # every round reads new references, as bench_core's
        gc.collect()
        for a in range(0, len(refs), batch):
            order = list(zip(names, scorers))
            for name, sc in (order if k % 2 == 0 else order[::-1]):
                t0 = time.process_time()
                sc.score_batch(refs[a:a + batch], cands[a:a + batch])
                cpu[name].append(time.process_time() - t0)
            k += 1
    print(f"{len(refs)} {args.kind} pairs, {args.rounds} rounds, {k} batches per tree alternating, process CPU time, "
          f"load average {os.getloadavg()[0]:.2f}")
    for rev, name in zip(args.revs, names):
        rel = [a / b for a, b in zip(cpu[name], cpu[names[0]])]
        q = statistics.quantiles(rel, n=4)
        print(f"{rev:>12}: {statistics.median(cpu[name]) / batch * 1e6:.2f} us a pair (CPU, median batch); "
              f"time / {args.revs[0]}'s on the same batch: median {statistics.median(rel):.3f} "
              f"(quartiles {q[0]:.3f}-{q[2]:.3f})")


if __name__ == "__main__":
    sys.exit(main())
