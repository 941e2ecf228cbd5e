"""Corpus statistics: time to build, finalize, serialize and merge one accumulator.

    python benchmarks/bench_stats.py [--examples 200000] [--systems 4]

Random scores (not ROUGE-like ratios) for four rouge types, so the exact sums and the
bootstrap (B=1000) see no repeated values.  Nothing here is a test: it prints numbers only.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from pipeline.stats import StatsAccumulator

TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]


def make_data(n: int, n_systems: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    scores = rng.random((n, len(TYPES), 3))
    systems = [f"sys{i % n_systems}" for i in range(n)]
    keys = [f"{s}\x1f{i}" for i, s in enumerate(systems)]
    return keys, systems, scores


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=200_000)
    ap.add_argument("--systems", type=int, default=4)
    args = ap.parse_args()
    keys, systems, scores = make_data(args.examples, args.systems)
    StatsAccumulator.from_scores(keys[:2000], systems[:2000], scores[:2000], TYPES)  # compile / load kernels
    t0, c0 = time.perf_counter(), time.process_time()
    acc = StatsAccumulator.from_scores(keys, systems, scores, TYPES)
    t1, c1 = time.perf_counter(), time.process_time()
    rows = acc.finalize()
    t2 = time.perf_counter()
    blob = json.dumps(acc.to_dict())
    t3 = time.perf_counter()
    merged = StatsAccumulator.from_dict(json.loads(blob)).merge(acc)
    t4 = time.perf_counter()
    print(f"from_scores {args.examples:,} x {len(TYPES)} types x B=1000: {t1 - t0:.2f} s wall, {c1 - c0:.2f} s CPU; "
          f"finalize {t2 - t1:.2f} s ({len(rows)} rows); to_dict+json {t3 - t2:.2f} s ({len(blob) / 1e6:.1f} MB); "
          f"from_dict+merge {t4 - t3:.2f} s ({merged.n_examples:,} examples)")


if __name__ == "__main__":
    main()
