"""Many small input files against a few big ones (issue 19, item 7): the same pairs as
``--shards`` JSONL files of ``--per-shard`` pairs and as 16 files, on a local cluster.

    python benchmarks/bench_many_files.py                          # 10,000 shards x 20 pairs vs 16 shards, 2 workers
    python benchmarks/bench_many_files.py --shards 3000 --rounds 1

Each job runs in a fresh child process (so the client's peak RSS is that job's alone) and the two
corpora alternate, round after round, because this machine's speed drifts between minutes. Printed
per run: end-to-end pairs/s (``run`` start to ``_SUCCESS``), the plan step's line (units,
seconds; slices) and the peak RSS of the client process, which also hosts the scheduler and the nannies.
Targets: the many-files throughput >= 50% of the 16-file one, its client peak RSS <= 1.5x.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
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


def run_job(glob: str, out: Path, n_workers: int) -> dict:
    from pipeline.config import RunConfig

    cfg = RunConfig.from_dict({"input": {"layout": "records", "paths": glob}, "output": {"url": str(out)},
                               "execution": {"mode": "local", "n_workers": n_workers}})
    lines: list[str] = []
    res, seconds, sampler = timed_local_run(cfg, n_workers, lines.append)
    plan = next((m for m in lines if m.startswith("plan: ")), "") + f"; {res.summary['tasks']} slices"
    return {"rows": res.summary["rows"], "seconds": seconds, "rate": res.summary["rows"] / seconds,
            "client_rss_mib": sampler.client_peak / 2**20, "plan": plan}


def _in_child(glob: str, out: Path, n_workers: int) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", glob, "--out", str(out),
           "--workers", str(n_workers)]
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if p.returncode != 0:
        raise RuntimeError(f"job failed:\n{p.stderr[-4000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shards", type=int, default=10_000)
    ap.add_argument("--per-shard", type=int, default=20)
    ap.add_argument("--few", type=int, default=16, help="the reference corpus's number of files")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(run_job(a.child, Path(a.out), a.workers)))
        return 0
    n_pairs = a.shards * a.per_shard
    with tempfile.TemporaryDirectory(prefix="bench-many-files-") as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        corpora = {"many": write_corpus(root / "many", n_pairs, a.shards),
                   "few": write_corpus(root / "few", n_pairs, a.few)}
        print(f"corpus: {n_pairs:,} short pairs as {a.shards:,} and as {a.few} JSONL files "
              f"(written in {time.perf_counter() - t0:.1f}s); {a.workers} workers", flush=True)
        runs: dict[str, list[dict]] = {"many": [], "few": []}
        for r in range(a.rounds):
            for name in ("few", "many"):
                res = _in_child(corpora[name], root / f"run-{name}-{r}", a.workers)
                assert res["rows"] == n_pairs, res
                runs[name].append(res)
                print(f"round {r + 1} {name:>4}: {res['rate']:,.0f} pairs/s ({res['seconds']:.2f}s), client peak RSS "
                      f"{res['client_rss_mib']:.0f} MiB; {res['plan']}", flush=True)
        rate = {k: statistics.median(x["rate"] for x in v) for k, v in runs.items()}
        rss = {k: max(x["client_rss_mib"] for x in v) for k, v in runs.items()}
        print(f"many/few throughput {rate['many'] / rate['few']:.0%} (target >= 50%; medians "
              f"{rate['many']:,.0f} vs {rate['few']:,.0f} pairs/s); client peak RSS "
              f"{rss['many'] / rss['few']:.2f}x (target <= 1.5x; {rss['many']:.0f} vs {rss['few']:.0f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
