"""``correlate`` speed: summary level, 1,000-replicate bootstrap (systems and documents), 16
systems x 100 documents x 12 metric columns (4 types x P/R/F), with ties and NaNs.

    python benchmarks/bench_correlate.py [--rounds 3] [--coefficients pearson,spearman,kendall]

Prints the median over rounds of the wall and process CPU time of the whole call (joining the
frames, the point estimates with scipy, the bootstrap) and of its phases, for each coefficient
alone and for all of them in one call; the target is a median wall time under 5 s (PASS/MISS).
On a shared machine the CPU time is the steadier figure.  Not a test: times depend on the machine.
"""
from __future__ import annotations

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from pipeline.meta import correlate, levels, resample  # noqa: E402
from pipeline.meta.data import judged  # noqa: E402
from pipeline.meta.human import judgments  # noqa: E402

TARGET_S = 5.0


def frames(n_sys=16, n_docs=100, seed=0):
    rng = np.random.default_rng(seed)
    ids = np.repeat([f"s{s:02d}" for s in range(n_sys)], n_docs), np.tile([f"d{d:03d}" for d in range(n_docs)], n_sys)
    scores = pd.DataFrame({"system": ids[0], "id": ids[1]})
    for t in ("rouge1", "rouge2", "rougeL", "rougeLsum"):
        for st in ("precision", "recall", "fmeasure"):
            v = np.round(rng.random(len(scores)), 2)
            v[rng.random(len(v)) < 0.02] = np.nan
            scores[f"{t}_{st}"] = v
    human = scores[["system", "id"]].copy()
    human["rel"] = rng.integers(1, 6, len(human)).astype(float)
    return scores, human


def one_round(scores, human, coef: str, n_boot: int) -> dict:
    w0, c0 = time.perf_counter(), time.process_time()
    res = correlate(scores, human, field="rel", levels="summary", coefficients=coef, n_boot=n_boot)
    total = time.perf_counter() - w0, time.process_time() - c0
    data = judged(scores, judgments(human.to_dict("records"), "rel", "bench"))
    points = boot = 0.0
    for c in coef.split(","):
        w1 = time.perf_counter()
        [levels.summary_level(data.X[k], data.H, c) for k in range(len(data.columns))]
        w2 = time.perf_counter()
        resample.replicates(resample.Prepared(data.X, data.H, "summary"), c, n_boot, "both", 12345)
        points, boot = points + w2 - w1, boot + time.perf_counter() - w2
    assert len(res.rows) == 12 * len(coef.split(","))
    return {"wall": total[0], "cpu": total[1], "points": points, "bootstrap": boot}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--coefficients", default="pearson,spearman,kendall")
    args = ap.parse_args()
    scores, human = frames()
    coefs = args.coefficients.split(",") + [args.coefficients]   # each alone, then all in one call
    correlate(scores, human, field="rel", levels="summary", coefficients=coefs[-1], n_boot=5)  # compile once
    runs = {c: [] for c in coefs}
    for r in range(args.rounds):          # alternating rounds: the machine's noise is shared
        for c in coefs:
            runs[c].append(one_round(scores, human, c, args.n_boot))
    print(f"summary level, {args.n_boot} replicates (both), 16 systems x 100 documents x 12 columns, "
          f"median of {args.rounds} rounds")
    for c, rs in runs.items():
        med = {k: statistics.median(x[k] for x in rs) for k in rs[0]}
        verdict = "PASS" if med["wall"] < TARGET_S else "MISS"
        print(f"  {c:<24} wall {med['wall']:.2f} s (cpu {med['cpu']:.2f} s; point estimates {med['points']:.2f} s, "
              f"bootstrap {med['bootstrap']:.2f} s)  target < {TARGET_S:g} s: {verdict}")


if __name__ == "__main__":
    main()
