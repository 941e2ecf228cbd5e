"""``score()`` one pair a call (rouge-score's idiom): ours vs rouge-score-rs, one core, the same pairs.

    python benchmarks/bench_single_calls.py --pairs 3000 --rounds 7

Every round calls each library's ``score(reference, candidate)`` once a pair, in alternating
order (ours first in even rounds); our reference cache is emptied before each of our rounds, as
in ``bench_core.py``.  Printed: us a call per library (median over rounds), the median of the
per-round ratios, and whether every score equals rouge-score-rs's (float64 ``==``).
"""
from __future__ import annotations

import os

for _var in ("NUMBA_NUM_THREADS", "RAYON_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_core import TYPES, _compare, _timed, forget_references, run_rouge_score  # noqa: E402
from corpus import make_corpus  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kind", choices=("short", "long"), default="short")
    ap.add_argument("--pairs", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args(argv)

    import rouge_score_rs

    import pipeline

    refs, cands = make_corpus(args.kind, args.pairs, 0)
    ours = pipeline.RougeScorer(TYPES, use_stemmer=True)
    rs = rouge_score_rs.RougeScorer(TYPES, use_stemmer=True)
    ours.score_batch(refs, cands)  # the kernels loaded (compiled on first use), as in a warm process
    libs = {"ours": ours, "rouge-score-rs": rs}
    per_call = {name: [] for name in libs}
    results = {}
    for r in range(args.rounds):
        for name in (list(libs) if r % 2 == 0 else list(libs)[::-1]):
            if name == "ours":
                forget_references()
            res, wall, _ = _timed(run_rouge_score, libs[name], refs, cands, None)  # score() a pair a call
            per_call[name].append(wall / len(refs) * 1e6)
            results.setdefault(name, res)
    for name, us in per_call.items():
        print(f"{name:<16} {statistics.median(us):8.1f} us a call (min {min(us):.1f})")
    ratio = statistics.median(b / a for a, b in zip(per_call["ours"], per_call["rouge-score-rs"]))
    print(f"ours / rouge-score-rs: x{ratio:.2f} (median of per-round ratios; > 1: ours faster)")
    bad = len(_compare(results["ours"], results["rouge-score-rs"]))
    print(f"exact: {len(refs) - bad} of {len(refs)} pairs == rouge-score-rs")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
