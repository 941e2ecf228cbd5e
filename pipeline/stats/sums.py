"""One system's sufficient statistics (:class:`SystemSums`): what the accumulator
(:mod:`pipeline.stats.accumulator`) builds and merges and the finalisation
(:mod:`pipeline.stats.finalize`) reads, below both."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SystemSums:
    """Sufficient statistics of one system (treated as immutable)."""

    count: int
    sum_x: tuple          # Python ints, flattened (n_types * 3)
    sum_x2: tuple         # Python ints, flattened (n_types * 3)
    min: np.ndarray       # float64 (n_types, 3)
    max: np.ndarray       # float64 (n_types, 3)
    hist: np.ndarray      # int64 (n_types, 3, hist_bins)
    bucket_n: np.ndarray  # int64 (boot_buckets,): examples per bucket ((0,) when n_boot == 0)
    bucket_s: np.ndarray  # int64 (boot_buckets, n_types, 3): sum of X26 per bucket
                          # (< 2**63 while a bucket holds < 2**37 examples)

    def merge(self, o: "SystemSums") -> "SystemSums":
        bucket_s = self.bucket_s + o.bucket_s
        if bucket_s.size and bucket_s.min() < 0:  # int64 wrap-around
            raise OverflowError("bootstrap bucket sums exceed 2**63 (more than 2**37 examples in one bucket)")
        return SystemSums(
            count=self.count + o.count,
            sum_x=tuple(a + b for a, b in zip(self.sum_x, o.sum_x)),
            sum_x2=tuple(a + b for a, b in zip(self.sum_x2, o.sum_x2)),
            min=np.minimum(self.min, o.min),
            max=np.maximum(self.max, o.max),
            hist=self.hist + o.hist,
            bucket_n=self.bucket_n + o.bucket_n,
            bucket_s=bucket_s,
        )

    def equals(self, o: "SystemSums") -> bool:
        return (
            self.count == o.count
            and self.sum_x == o.sum_x
            and self.sum_x2 == o.sum_x2
            and all(
                np.array_equal(getattr(self, f), getattr(o, f))
                for f in ("min", "max", "hist", "bucket_n", "bucket_s")
            )
        )
