"""Reading JSONL as lines (what ``--reuse`` does to an unchanged line), phase by phase, one process.

    python benchmarks/bench_lines.py --workdir reuse-bench/base     # the shards bench_reuse.py wrote
    python benchmarks/bench_lines.py --pairs 250000 --shards 4       # a fresh corpus (make_corpus "short")
    PYTHONPATH=OTHER_CHECKOUT python benchmarks/bench_lines.py ...   # the same phases of another tree

Each round reads every shard: its bytes (``f.read()`` into a new ``bytes``, and into Arrow's memory
pool where the tree has ``streams.read_pooled``), the line scan (``records._jsonl_scan``), the line
digests (BLAKE2b-64 of every line) and, apart, the key hashes of 250,000 15-byte keys.  Printed: GB/s
of each phase (median of the rounds) and millions of keys a second.  Run two trees one after the
other, alternating, to compare them (the phases of one tree share this process's noise only).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _spans():
    try:
        from pipeline.stats.blake2b import blake2b64_spans
    except ImportError:   # a tree from before stats/blake2b.py
        from pipeline.stats.poisson import blake2b64_spans
    return blake2b64_spans


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", type=Path, help="a folder of shard-*.jsonl (written there if absent)")
    ap.add_argument("--pairs", type=int, default=250_000)
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    if args.workdir is not None:
        return _bench(args.workdir, args)
    with tempfile.TemporaryDirectory(prefix="bench-lines-") as tmp:   # a fresh corpus is not left behind
        return _bench(Path(tmp), args)


def _bench(root: Path, args) -> int:
    import numpy as np

    from pipeline.io import records, streams

    if not sorted(root.glob("shard-*.jsonl")):
        sys.path.insert(0, str(HERE))
        from soak import write_corpus   # (after pipeline's import: soak puts this checkout first on the path)

        write_corpus(root, args.pairs, args.shards)
    files = sorted(root.glob("shard-*.jsonl"))
    spans, pooled = _spans(), getattr(streams, "read_pooled", None)
    keys = np.frombuffer(b"".join(b"short-0-%07d" % i for i in range(250_000)), np.uint8)
    koffs = np.arange(0, len(keys) + 1, 15)
    times: dict[str, list[float]] = {}
    print(f"pipeline from {Path(records.__file__).parent.parent}")

    def timed(name, fn):
        t0 = time.perf_counter()
        out = fn()
        times.setdefault(name, []).append(time.perf_counter() - t0)
        return out

    size = sum(f.stat().st_size for f in files)
    for _ in range(args.rounds):
        for f in files:
            data = timed("read, new bytes", lambda: open(f, "rb").read())
            if pooled is not None:
                with open(f, "rb") as fh:
                    timed("read, Arrow's pool", lambda: pooled(fh))
            buf = np.frombuffer(data, np.uint8)
            starts = timed("line scan", lambda: records._jsonl_scan(buf))[4]
            timed("line digests", lambda: spans(buf, starts[:-1], starts[1:] - 1))
        timed("key hashes", lambda: spans(keys, koffs[:-1], koffs[1:]))
    print(f"{len(files)} shards, {size / 1e9:.2f} GB, {args.rounds} rounds; load {os.getloadavg()[0]:.1f}")
    for name, ts in times.items():
        per = len(ts) // args.rounds   # calls a round: one a shard, or one
        t = statistics.median(sum(ts[r * per:(r + 1) * per]) for r in range(args.rounds))
        rate = f"{250_000 / t / 1e6:.1f} M keys/s" if name == "key hashes" else f"{size / 1e9 / t:.2f} GB/s"
        print(f"  {name:<20} {t:7.3f} s a round  {rate}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
