"""``--reuse`` (issue 30): a run given the previous run of the same settings vs a full rescore, end to end.

    python benchmarks/bench_reuse.py                          # 2,000,000 short pairs, 2 local workers
    python benchmarks/bench_reuse.py --pairs 200000 --rounds 3
    python benchmarks/bench_reuse.py --shares 0.001 0.01 0.1 --workdir reuse-bench --keep

The previous run scores ``make_corpus("short")`` (``--shards`` JSONL files).  Then, for each share of
``--shares``, that share of the candidates (every k-th pair, spread over every shard) gets one more
word, and the corpus is scored twice in a fresh folder on a fresh local cluster (warmed first, so the
times are the jobs'): a full rescore, and with ``--reuse`` the previous run; the two run at each round
in alternating order, because this machine's speed drifts between minutes.  Printed: each run's
seconds (start to ``_SUCCESS``), the full/reuse ratio (the median of the rounds' ratios) and the
reused run's cost as a share of the full rescore's; every reused run's parts, quarantine, statistics
and markers are compared byte for byte (``cmp``) with the full rescore's.  Also printed: one read of
the inputs in this process (every unit read, as the tasks read them: parsed, and as lines, as a
reused run reads an unchanged line), the part of a reused run's cost that does not shrink with the share.
"""
from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(var, "1")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from soak import timed_local_run, write_corpus  # noqa: E402

COMPARED = ("scores", "quarantine", "stats", "_done")


def change(src: Path, dst: Path, share: float) -> int:
    """``src``'s shards copied to ``dst`` with every ``1/share``-th candidate one word longer; how many."""
    shutil.rmtree(dst, ignore_errors=True)
    dst.mkdir(parents=True)
    every, n, changed = max(1, round(1 / share)), 0, 0
    for f in sorted(src.glob("shard-*.jsonl")):
        with open(f, encoding="utf-8") as fi, open(dst / f.name, "w", encoding="utf-8") as fo:
            for line in fi:
                if n % every == 0:
                    rec = json.loads(line)
                    rec["candidate"] += " revised"
                    line = json.dumps(rec, ensure_ascii=False) + "\n"
                    changed += 1
                fo.write(line)
                n += 1
    return changed


def config(glob: str, out: Path, workers: int, reuse: Path | None):
    from pipeline.config import RunConfig

    ex = {"mode": "local", "n_workers": workers, **({"reuse": str(reuse)} if reuse else {})}
    return RunConfig.from_dict({"input": {"layout": "records", "paths": glob}, "output": {"url": str(out)},
                                "execution": ex})


def same_files(a: Path, b: Path) -> list[str]:
    """What differs between two run folders' outputs (``cmp``: byte for byte)."""
    diff = []
    for sub in COMPARED:
        fa = {p.relative_to(a) for p in (a / sub).rglob("*") if p.is_file()}
        fb = {p.relative_to(b) for p in (b / sub).rglob("*") if p.is_file()}
        diff += [str(p) for p in sorted(fa ^ fb)]
        diff += [str(p) for p in sorted(fa & fb) if not filecmp.cmp(a / p, b / p, shallow=False)]
    return diff


def read_once(glob: str) -> float:
    """Seconds to read every unit of the input once, in this process."""
    from pipeline.io import readers
    from pipeline.io.input_spec import InputSpec

    spec = InputSpec.from_config({"layout": "records", "paths": glob})
    t0 = time.perf_counter()
    for u in readers.plan_units(spec):
        readers.read_unit(spec, u)
    return time.perf_counter() - t0


def read_lines_once(glob: str) -> float:
    """Seconds to read every unit of the input once as lines (bytes split and digested, not
    parsed: what a reused run reads of an unchanged line), in this process."""
    from pipeline.io import readers
    from pipeline.io.input_spec import InputSpec

    spec = InputSpec.from_config({"layout": "records", "paths": glob})
    t0 = time.perf_counter()
    for u in readers.plan_units(spec):
        readers.read_lines(spec, u)
    return time.perf_counter() - t0


def timed(glob: str, out: Path, workers: int, reuse: Path | None) -> tuple[float, dict]:
    shutil.rmtree(out, ignore_errors=True)
    res, seconds, _ = timed_local_run(config(glob, out, workers, reuse), workers)
    return seconds, res.summary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=2_000_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--shares", type=float, nargs="+", default=[0.001, 0.01, 0.1])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--full-at", type=float, nargs="*", default=[0.01],
                    help="the shares whose full rescore is also run (the others: the reused run only, its cost "
                         "against the last full rescore)")
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args()
    root = args.workdir or Path(tempfile.mkdtemp(prefix="bench-reuse-"))
    root.mkdir(parents=True, exist_ok=True)
    base = root / "base"
    if not base.is_dir():
        write_corpus(base, args.pairs, args.shards)
    prev = root / "prev"
    t_prev, _ = timed(str(base / "shard-*.jsonl"), prev, args.workers, None)
    print(f"{args.pairs:,} pairs, {args.workers} workers, {args.shards} shards; the previous run: {t_prev:.1f}s")
    print(f"uptime: {os.popen('uptime').read().strip()}")
    ok, last_full = True, []
    for share in sorted(args.shares, key=lambda x: x not in args.full_at):   # a full rescore first
        changed = change(base, root / "now", share)
        glob = str(root / "now" / "shard-*.jsonl")
        print(f"share {share:g}: {changed:,} candidates changed; one read of the inputs {read_once(glob):.1f}s "
              f"(parsed), {read_lines_once(glob):.1f}s (as lines)")
        fulls, reused, ratios = [], [], []
        kinds = ("full", "reuse") if share in args.full_at or not last_full else ("reuse",)
        for r in range(args.rounds):
            t = {}
            for kind in kinds if r % 2 == 0 else kinds[::-1]:
                t[kind], summary = timed(glob, root / kind, args.workers, prev if kind == "reuse" else None)
                if kind == "reuse":
                    assert summary["rows_reused"] == args.pairs - changed, summary["rows_reused"]
            if "full" not in t:
                print(f"  round {r + 1}: reuse {t['reuse']:.1f}s ({100 * t['reuse'] / last_full[-1]:.1f}% of the "
                      "last full rescore)")
                reused.append(t["reuse"])
                continue
            diff = same_files(root / "full", root / "reuse")
            ok &= not diff
            fulls.append(t["full"])
            reused.append(t["reuse"])
            ratios.append(t["full"] / t["reuse"])
            print(f"  round {r + 1}: full {t['full']:.1f}s, reuse {t['reuse']:.1f}s (x{ratios[-1]:.2f}); "
                  + ("outputs identical (cmp)" if not diff else f"OUTPUTS DIFFER: {diff[:5]}"))
        if fulls:
            last_full[:] = [statistics.median(fulls)]
            print(f"  median: full {statistics.median(fulls):.1f}s, reuse {statistics.median(reused):.1f}s, "
                  f"x{statistics.median(ratios):.2f}; the reused run costs "
                  f"{100 * statistics.median(r_ / f_ for r_, f_ in zip(reused, fulls)):.1f}% of the full rescore")
    print(f"uptime: {os.popen('uptime').read().strip()}")
    if not args.keep and args.workdir is None:
        shutil.rmtree(root, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
