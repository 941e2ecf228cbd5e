"""Soak test (issue #5): N short pairs through local mode, one worker SIGKILLed midway.

    python benchmarks/soak.py                     # 2,000,000 pairs, 40 JSONL shards, 2 workers
    python benchmarks/soak.py --pairs 200000      # smaller
    python benchmarks/soak.py --pairs 200000 --no-kill --json report.json

Steps: write ``make_corpus("short", N)`` (benchmarks/corpus.py; generated pair by pair with
``make_pair``, which is what ``make_corpus`` does, so the corpus never sits in memory) into
sharded JSONL; start a LocalCluster (single-threaded worker processes on 127.0.0.1); run the
job with :func:`pipeline.execution.driver.run`; when half of the tasks have written their
completion markers, SIGKILL one worker process (its PID from ``client.run(os.getpid)``; the
nanny restarts it and Dask reruns its tasks); then check that the output has exactly N rows
and no duplicate id, and report pairs/s and the peak RSS of the client and of every worker
process (sampled every 0.1 s with psutil, restarted workers included).

Not part of the default test suite: tests/integration/test_soak.py runs it under ``pytest -m slow``.
Exit status 0 when every check passes, 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))


def write_corpus(root: Path, n_pairs: int, n_shards: int, seed: int = 0) -> str:
    """``make_corpus("short", n_pairs, seed)`` as ``n_shards`` JSONL files; returns their glob."""
    from corpus import make_pair

    root.mkdir(parents=True, exist_ok=True)
    per = -(-n_pairs // n_shards)
    for s in range(n_shards):
        lo, hi = s * per, min((s + 1) * per, n_pairs)
        if lo >= hi:
            break
        with open(root / f"shard-{s:04d}.jsonl", "w", encoding="utf-8") as f:
            for i in range(lo, hi):
                ref, cand = make_pair("short", i, seed)
                f.write(json.dumps({"id": f"short-{seed}-{i:07d}", "candidate": cand, "references": [ref]},
                                   ensure_ascii=False) + "\n")
    return str(root / "shard-*.jsonl")


class RssSampler(threading.Thread):
    """Peak RSS of this process (the client, which also hosts the scheduler and the nannies) and
    of each of its descendant processes (the workers), sampled every ``interval`` seconds."""

    def __init__(self, interval: float = 0.1):
        super().__init__(daemon=True)
        import psutil

        self.psutil = psutil
        self.me = psutil.Process()
        self.interval = interval
        self.client_peak = 0
        self.peaks: dict[int, int] = {}
        self.worker_pids: set[int] = set()
        self.stop = threading.Event()

    def run(self):
        ps = self.psutil
        while not self.stop.is_set():
            try:
                self.client_peak = max(self.client_peak, self.me.memory_info().rss)
                for c in self.me.children(recursive=True):
                    try:
                        self.peaks[c.pid] = max(self.peaks.get(c.pid, 0), c.memory_info().rss)
                    except ps.Error:
                        pass
            except ps.Error:
                pass
            self.stop.wait(self.interval)


def timed_local_run(cfg, n_workers: int, log=lambda _m: None):
    """``(result, seconds, sampler)``: ``cfg`` run on a fresh local cluster of ``n_workers``,
    warmed first (so the time is the job's), with this process's and the workers' peak RSS
    sampled throughout (``sampler.client_peak``, ``sampler.peaks``)."""
    import distributed

    from pipeline.execution.cluster import local_cluster
    from pipeline.execution.driver import run

    sampler = RssSampler()
    sampler.start()
    cluster = local_cluster(n_workers, dashboard_address=None)
    try:
        with distributed.Client(cluster) as client:
            client.run(lambda: __import__("pipeline.execution.warmup").execution.warmup.warmup())
            t0 = time.perf_counter()
            res = run(cfg, client=client, progress=False, log=log)
            seconds = time.perf_counter() - t0
    finally:
        cluster.close()
        sampler.stop.set()
        sampler.join()
    return res, seconds, sampler


def _markers(run_dir: Path) -> int:
    d = run_dir / "_done"
    return len(list(d.glob("unit-*.json"))) if d.is_dir() else 0


def soak(n_pairs: int, n_shards: int, n_workers: int, workdir: Path, kill: bool = True,
         n_boot: int = 1000, memory_limit=None, log=print) -> dict:
    import distributed
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from pipeline.config import RunConfig
    from pipeline.execution.cluster import local_cluster
    from pipeline.execution.driver import run

    t0 = time.perf_counter()
    glob = write_corpus(workdir / "corpus", n_pairs, n_shards)
    gen_s = time.perf_counter() - t0
    log(f"corpus: {n_pairs:,} pairs in {n_shards} shards, {gen_s:.1f}s")
    run_dir = workdir / "run"
    cfg = RunConfig.from_dict({
        "input": {"layout": "records", "paths": glob},
        "output": {"url": str(run_dir)},
        "stats": {"n_boot": n_boot},
        "execution": {"mode": "local", "n_workers": n_workers, "retries": 3},
    })
    sampler = RssSampler()
    sampler.start()
    kill_info: dict = {}
    cluster = local_cluster(n_workers, memory_limit=memory_limit, dashboard_address=None)
    client = distributed.Client(cluster)
    try:
        pids = client.run(os.getpid)
        sampler.worker_pids |= set(pids.values())
        victim = sorted(pids.values())[0]
        done = threading.Event()

        def killer():
            plan = run_dir / "_plan.json"
            while not done.is_set():
                if plan.exists():
                    try:
                        n_tasks = len(json.loads(plan.read_text())["units"])   # about one slice a unit
                    except (ValueError, OSError):
                        n_tasks = 0
                    n = _markers(run_dir)
                    if n_tasks and n >= max(1, n_tasks // 2):
                        os.kill(victim, signal.SIGKILL)
                        kill_info.update(pid=victim, markers_at_kill=n, tasks=n_tasks,
                                         at_s=round(time.perf_counter() - t_run, 2))
                        log(f"SIGKILL worker pid {victim} after {n}/{n_tasks} tasks")
                        return
                done.wait(0.02)

        t_run = time.perf_counter()
        th = threading.Thread(target=killer, daemon=True)
        if kill:
            th.start()
        res = run(cfg, client, progress=False, log=lambda m: log(f"  {m}"))
        run_s = time.perf_counter() - t_run
        done.set()
        after = client.run(os.getpid)
        sampler.worker_pids |= set(after.values())
    finally:
        sampler.stop.set()
        client.close()
        cluster.close()
    sampler.join(2)

    # checks: exactly n_pairs rows, no duplicate id, nothing quarantined
    ids = pa.chunked_array([pq.read_table(p, columns=["id"]).column("id").combine_chunks()
                            for p in sorted(run_dir.glob("scores/**/part-*.parquet"))])
    n_rows, n_unique = len(ids), pc.count_distinct(ids).as_py()
    checks = {
        "rows == pairs": n_rows == n_pairs,
        "no duplicate id": n_unique == n_rows,
        "summary rows == pairs": res.summary["rows"] == n_pairs,
        "nothing quarantined": res.summary["quarantined"] == 0,
        "_SUCCESS written": (run_dir / "_SUCCESS").exists(),
        "worker killed mid-run": (not kill) or bool(kill_info) and kill_info["markers_at_kill"] < kill_info["tasks"],
        "killed worker replaced": (not kill) or (kill_info.get("pid") not in after.values()
                                                 and len(after) == n_workers),
    }
    workers = {pid: rss for pid, rss in sampler.peaks.items() if pid in sampler.worker_pids}
    mib = 1 << 20
    report = {
        "pairs": n_pairs, "shards": n_shards, "workers": n_workers, "n_boot": n_boot, "tasks": res.summary["tasks"],
        "run_seconds": round(run_s, 2), "pairs_per_s": round(n_pairs / run_s, 1),
        "scoring_pairs_per_s": res.summary["pairs_per_s"], "corpus_seconds": round(gen_s, 1),
        "peak_rss_client_mib": round(sampler.client_peak / mib, 1),
        "peak_rss_workers_mib": {str(pid): round(v / mib, 1) for pid, v in sorted(workers.items())},
        "peak_rss_worker_max_mib": round(max(workers.values(), default=0) / mib, 1),
        "kill": kill_info or None, "rows": n_rows, "unique_ids": n_unique, "checks": checks,
        "ok": all(checks.values()), "cpu_count": os.cpu_count(),
    }
    return report


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=2_000_000)
    ap.add_argument("--shards", type=int, default=40)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--n-boot", type=int, default=1000, help="stats.n_boot (Poisson bootstrap replicates)")
    ap.add_argument("--memory-limit", default=None, help="per worker, e.g. 2GB (default: Dask's)")
    ap.add_argument("--no-kill", action="store_true", help="do not kill a worker")
    ap.add_argument("--workdir", help="where the corpus and run go (default: a temporary folder, removed)")
    ap.add_argument("--json", help="also write the report to this file")
    args = ap.parse_args(argv)
    tmp = None
    if args.workdir:
        workdir = Path(args.workdir)
        if workdir.exists():
            shutil.rmtree(workdir)
    else:
        tmp = tempfile.mkdtemp(prefix="rouge-soak-")
        workdir = Path(tmp)
    try:
        report = soak(args.pairs, args.shards, args.workers, workdir, kill=not args.no_kill, n_boot=args.n_boot,
                      memory_limit=args.memory_limit,
                      log=lambda m: print(m, file=sys.stderr, flush=True))
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
