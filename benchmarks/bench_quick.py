"""The quick paths on 21,000 pairs: ``rouge-pipeline eval`` and ``pipeline.compute`` against
``RougeScorer.score_batch`` (the scoring alone), and rouge-score (what ``evaluate``'s rouge runs).

    python benchmarks/bench_quick.py                      # 21,000 short pairs, 3 rounds
    python benchmarks/bench_quick.py --rouge-score-pairs 21000   # rouge-score on every pair (minutes)

Everything runs in this one process, after one untimed call of each (numba's kernels loaded),
in alternating rounds, so a busy machine slows every path alike; the ratios to ``score_batch``
of the same round are what to read.  ``eval`` is the command run in process
(``pipeline.cli.main.main(["eval", ...])``, output to a null stream) on a JSONL file of the pairs,
so it includes reading and checking the file; a fresh ``rouge-pipeline eval`` adds the process
start and loading the kernels (see ``bench_first_run.py``).  rouge-score scores
``--rouge-score-pairs`` pairs (scaled to the corpus per pair) and aggregates all 21,000 scores
with its ``BootstrapAggregator`` (1,000 resamples, as ``evaluate`` does).

Targets: ``eval`` and ``compute`` (default: rouge-score's seeded bootstrap mid, bit for bit)
within 3x ``score_batch``.  Also checked: ``compute``'s numbers equal rouge-score's.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

TARGET = 3.0
TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _eval(argv):
    from pipeline.cli import main as cli

    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
        rc = cli.main(["eval", *argv])
    assert rc == 0, rc


def _rouge_score(refs, cands, n_pairs):
    """rouge-score's time for the corpus: its scoring of ``n_pairs`` scaled per pair, plus its
    BootstrapAggregator over every pair's scores (ours, which are equal)."""
    import numpy as np
    from rouge_score import rouge_scorer, scoring

    from pipeline import RougeScorer

    sc = rouge_scorer.RougeScorer(TYPES)
    t0 = time.perf_counter()
    ref_scores = [sc.score(r, c) for r, c in zip(refs[:n_pairs], cands[:n_pairs])]
    scoring_s = (time.perf_counter() - t0) * len(refs) / n_pairs
    ours = RougeScorer(TYPES).score_batch(refs, cands)
    assert ours[:n_pairs] == ref_scores
    agg = scoring.BootstrapAggregator()
    for s in ours:
        agg.add_scores(s)
    np.random.seed(12345)
    t0 = time.perf_counter()
    result = agg.aggregate()
    return scoring_s + time.perf_counter() - t0, {t: result[t].mid.fmeasure for t in TYPES}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=21_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rouge-score-pairs", type=int, default=1_000)
    a = ap.parse_args(argv)

    from corpus import make_corpus

    import pipeline
    from pipeline import RougeScorer

    refs, cands = make_corpus("short", a.pairs, seed=0)
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "pairs.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for i, (r, c) in enumerate(zip(refs, cands)):
            f.write(json.dumps({"id": f"d{i}", "candidate": c, "references": r}) + "\n")
    scorer = RougeScorer(TYPES)
    paths = {
        "score_batch": lambda: scorer.score_batch(refs, cands),
        "compute": lambda: pipeline.compute(cands, refs),
        "compute n_boot=0": lambda: pipeline.compute(cands, refs, n_boot=0),
        "compute .aggregate": lambda: pipeline.compute(cands, refs, return_result=True).aggregate,
        "eval": lambda: _eval(["-i", path]),
        "eval -f json": lambda: _eval(["-i", path, "-f", "json"]),
        "eval --n-boot 0": lambda: _eval(["-i", path, "--n-boot", "0"]),
    }
    for fn in paths.values():  # untimed: kernels loaded, caches warm
        fn()
    rs_s, rs_mid = _rouge_score(refs, cands, min(a.rouge_score_pairs, a.pairs))
    ours_mid = pipeline.compute(cands, refs)
    exact = ours_mid == rs_mid
    ratios: dict[str, list[float]] = {k: [] for k in paths if k != "score_batch"}
    times: dict[str, list[float]] = {k: [] for k in paths}
    for r in range(a.rounds):
        got = {k: _timed(fn) for k, fn in paths.items()}
        for k, v in got.items():
            times[k].append(v)
            if k != "score_batch":
                ratios[k].append(v / got["score_batch"])
        print(f"round {r + 1}: " + ", ".join(f"{k} {v:.3f} s" for k, v in got.items()), flush=True)
    sb = statistics.median(times["score_batch"])
    print(f"\n{a.pairs:,} pairs, medians of {a.rounds} rounds (ratio: to score_batch in the same round)")
    print(f"  {'score_batch':<24}{sb:8.3f} s")
    for k, v in ratios.items():
        line = f"  {k:<24}{statistics.median(times[k]):8.3f} s  x{statistics.median(v):.2f}"
        if k in ("compute", "eval"):
            ok = statistics.median(v) <= TARGET
            line += f"   target <= {TARGET:g}x: {'PASS' if ok else 'MISS'}"
        print(line)
    print(f"  {'rouge-score':<24}{rs_s:8.3f} s  x{rs_s / sb:.2f}   (scoring scaled from "
          f"{min(a.rouge_score_pairs, a.pairs):,} pairs + BootstrapAggregator on all; compute is "
          f"x{rs_s / statistics.median(times['compute']):.1f} faster)")
    print(f"compute == rouge-score's BootstrapAggregator mid (seed 12345): {'PASS' if exact else 'MISS'}")
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
