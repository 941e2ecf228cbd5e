"""End-to-end scaling of the job (issue #3): read, score, write, reduce, in local mode.

    python benchmarks/bench_pipeline.py                         # 200,000 short pairs; 1 and 2 workers, 3 rounds
    python benchmarks/bench_pipeline.py --pairs 2000000 --workers 2   # client memory at 2M pairs
    python benchmarks/bench_pipeline.py --corpus 'corpus/shard-*.jsonl'  # a corpus kept from an earlier run (--keep)
    python benchmarks/bench_pipeline.py --old-tree ../old --pairs 200000 2000000   # old code vs this one

For each worker count it runs the whole job on the same sharded JSONL corpus
(``make_corpus("short")``, written once) in a fresh run folder and prints end-to-end pairs/s
(from the start of the run to ``_SUCCESS``), the peak RSS of the client process (which also
hosts the scheduler and nannies) and of the largest worker. The reference for the efficiency
is the single-process throughput of the same work in this process (read every shard, score
with ``job.score_table``, diagnostics included, as a task does); also printed: the whole job
run in this process without Dask (``--sync``: reading, statistics, writes included), which
separates what the job does per pair from what distributing it costs. Both references run in a
child process (so the client's RSS is the job's alone), and every configuration runs once per
round, alternating, because this machine's speed drifts by tens of percent between minutes:
each job run is compared with the mean of the single-process runs just before and after it,
and the ratios are medians of those per-run ratios. Targets: end-to-end >= 70% of
single-process x workers; 2 workers >= 1.7x one; client memory flat from 200k to 2M pairs.

``--old-tree DIR`` (a checkout of an earlier commit, e.g. ``git worktree add ../old <sha>``)
compares that code with this one instead: every job run is a child process with one tree's
``pipeline`` first on its path (the child is the client: its peak RSS is the client's), and each
round runs every worker count on both trees, old first in odd rounds and new first in even ones.
"""
from __future__ import annotations

import argparse
import os
import shutil
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
# the code measured: this checkout's, or the tree --old-tree's children are given
sys.path.insert(0, os.environ.get("ROUGE_PIPELINE_BENCH_TREE") or str(HERE.parent))

from soak import timed_local_run, write_corpus  # noqa: E402


def single_process_rate(glob: str, diagnostics: bool) -> float:
    """Pairs/s of one process doing a task's work (read + score) over the whole corpus."""
    from pipeline import job
    from pipeline.io import readers
    from pipeline.io.input_spec import InputSpec

    spec = InputSpec.from_config({"layout": "records", "paths": glob})
    settings = job.ScoringSettings(diagnostics=diagnostics)
    units = readers.plan_units(spec)
    table, _ = readers.read_unit(spec, units[0])
    job.score_table(table.slice(0, 100), settings)  # compile / load kernels
    t0 = time.perf_counter()
    n = 0
    for u in units:
        table, _ = readers.read_unit(spec, u)
        n += job.score_table(table, settings).num_rows
    return n / (time.perf_counter() - t0)


def sync_job_rate(glob: str, out: Path, diagnostics: bool) -> float:
    """Pairs/s of the whole job in this process without Dask (``--sync``): the same plan,
    tasks, statistics and writes, so the difference to one worker is what distribution costs."""
    from pipeline.config import RunConfig
    from pipeline.execution.driver import run

    cfg = RunConfig.from_dict({
        "input": {"layout": "records", "paths": glob},
        "output": {"url": str(out)},
        "scoring": {"diagnostics": diagnostics},
    })
    t0 = time.perf_counter()
    res = run(cfg, client=None, progress=False, log=lambda _: None)
    return res.summary["rows"] / (time.perf_counter() - t0)


def run_job(glob: str, out: Path, n_workers: int, diagnostics: bool) -> dict:
    from pipeline.config import RunConfig

    cfg = RunConfig.from_dict({
        "input": {"layout": "records", "paths": glob},
        "output": {"url": str(out)},
        "scoring": {"diagnostics": diagnostics},
        "execution": {"mode": "local", "n_workers": n_workers},
    })
    res, seconds, sampler = timed_local_run(cfg, n_workers)
    return {"rows": res.summary["rows"], "seconds": seconds, "rate": res.summary["rows"] / seconds,
            "client_rss_mib": sampler.client_peak / 2**20,
            "worker_rss_mib": max(sampler.peaks.values(), default=0) / 2**20}


def _measure_in_child(what: str, glob: str, out: Path, diagnostics: bool) -> float:
    """``single_process_rate`` or ``sync_job_rate`` in a fresh interpreter, so that what they
    read and allocate never counts in the client's peak RSS measured afterwards here."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--measure", what, "--corpus", glob, "--out", str(out)]
    if not diagnostics:
        cmd.append("--no-diagnostics")
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if p.returncode != 0:
        raise RuntimeError(f"{what} measurement failed:\n{p.stderr}")
    return float(p.stdout.strip().splitlines()[-1])


def _job_in_child(tree: Path, glob: str, out: Path, n_workers: int, diagnostics: bool) -> dict:
    """:func:`run_job` in a fresh interpreter running ``tree``'s code."""
    import json

    cmd = [sys.executable, str(Path(__file__).resolve()), "--measure", "job", "--corpus", glob, "--out", str(out),
           "--workers", str(n_workers)] + ([] if diagnostics else ["--no-diagnostics"])
    env = {**os.environ, "ROUGE_PIPELINE_BENCH_TREE": str(tree), "PYTHONPATH": str(tree)}
    p = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env, cwd=str(tree))
    if p.returncode != 0:
        raise RuntimeError(f"the job on {tree} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def compare_trees(old: Path, glob: str, work: Path, counts: list[int], rounds: int, diagnostics: bool) -> None:
    """Old vs new, alternating (see the module docstring); prints both columns and their ratio."""
    new = HERE.parent
    runs = {(t, w): [] for t in ("old", "new") for w in counts}
    for rep in range(rounds):
        print(f"round {rep + 1} of {rounds}:", flush=True)
        order = ("old", "new") if rep % 2 == 0 else ("new", "old")
        for w in counts:
            for t in order:
                r = _job_in_child(old if t == "old" else new, glob, work / f"run-{t}-{w}-{rep}", w, diagnostics)
                runs[t, w].append(r)
                print(f"  {t} {w} worker(s): {r['rate']:,.0f} pairs/s ({r['seconds']:.1f}s); peak RSS client "
                      f"{r['client_rss_mib']:.0f} MiB, largest worker {r['worker_rss_mib']:.0f} MiB", flush=True)
    med = statistics.median
    print("\n| workers | old pairs/s | new pairs/s | new/old (median of rounds) | old client MiB | new client MiB |")
    print("|---|---|---|---|---|---|")
    for w in counts:
        o, n = runs["old", w], runs["new", w]
        ratio = med(b["rate"] / a["rate"] for a, b in zip(o, n))
        print(f"| {w} | {med(r['rate'] for r in o):,.0f} | {med(r['rate'] for r in n):,.0f} | x{ratio:.2f} | "
              f"{max(r['client_rss_mib'] for r in o):.0f} | {max(r['client_rss_mib'] for r in n):.0f} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=200_000)
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    ap.add_argument("--repeats", type=int, default=3,
                    help="rounds of (one-process job, then each worker count between single-process runs), "
                         "so that the machine's drift hits every configuration alike; medians are reported")
    ap.add_argument("--no-diagnostics", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (and its corpus)")
    ap.add_argument("--corpus", default=None, help="glob of an existing records-layout JSONL corpus "
                    "(writing 2M pairs takes ~10 min); --pairs is then ignored")
    ap.add_argument("--skip-single", action="store_true",
                    help="do not measure the single-process reference (no efficiency ratio)")
    ap.add_argument("--old-tree", type=Path, default=None,
                    help="a checkout of older code: run it and this code in alternating rounds (see above)")
    ap.add_argument("--measure", choices=("single", "sync", "job"), help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    diagnostics = not args.no_diagnostics
    if args.measure == "job":  # the child of _job_in_child
        import json

        print(json.dumps(run_job(args.corpus, Path(args.out), int(args.workers), diagnostics)))
        return 0
    if args.measure:  # the child of _measure_in_child
        rate = (single_process_rate(args.corpus, diagnostics) if args.measure == "single"
                else sync_job_rate(args.corpus, Path(args.out), diagnostics))
        print(rate)
        return 0
    work = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    try:
        t0 = time.perf_counter()
        if args.corpus:
            glob = args.corpus
            print(f"corpus: {glob}")
        else:
            glob = write_corpus(work / "corpus", args.pairs, args.shards)
            print(f"corpus: {args.pairs:,} short pairs in {args.shards} shards ({time.perf_counter() - t0:.0f}s to write)",
                  flush=True)
        counts = [int(x) for x in args.workers.split(",")]
        if args.old_tree is not None:
            compare_trees(args.old_tree.resolve(), glob, work, counts, args.repeats, diagnostics)
            return 0
        # Each job run is bracketed by two single-process measurements and compared with their
        # mean: this machine's speed moves by tens of percent within a minute, and a reference
        # taken once per round was up to ~20 s away from the run it scaled.
        singles, syncs, jobs, refs = [], [], {w: [] for w in counts}, {w: [] for w in counts}

        def measure_single() -> float:
            singles.append(_measure_in_child("single", glob, work / "unused", diagnostics))
            print(f"  single process (read + score{' + diagnostics' if diagnostics else ''}): "
                  f"{singles[-1]:,.0f} pairs/s", flush=True)
            return singles[-1]

        for rep in range(args.repeats):
            print(f"round {rep + 1} of {args.repeats}:", flush=True)
            if not args.skip_single:
                syncs.append(_measure_in_child("sync", glob, work / f"run-sync-{rep}", diagnostics))
                print(f"  whole job in one process, no Dask (plan + read + score + statistics + writes): "
                      f"{syncs[-1]:,.0f} pairs/s", flush=True)
                before = measure_single()
            for w in counts:
                r = run_job(glob, work / f"run-{w}-{rep}", w, diagnostics)
                jobs[w].append(r)
                print(f"  {w} worker(s): {r['rows']:,} rows in {r['seconds']:.1f}s = {r['rate']:,.0f} pairs/s "
                      f"end to end; peak RSS client {r['client_rss_mib']:.0f} MiB, largest worker "
                      f"{r['worker_rss_mib']:.0f} MiB", flush=True)
                if not args.skip_single:
                    after = measure_single()
                    refs[w].append((before + after) / 2)
                    before = after
            if 1 in jobs and 2 in jobs:
                print(f"  2 workers / 1 worker in this round: x{jobs[2][-1]['rate'] / jobs[1][-1]['rate']:.2f}")
        med = statistics.median
        print(f"\nmedians over {args.repeats} round(s):")
        single = med(singles) if singles else None
        sync = med(syncs) if syncs else None
        if single:
            print(f"single process: {single:,.0f} pairs/s; whole job in one process: {sync:,.0f} pairs/s")
        for w in counts:
            rate = med(r["rate"] for r in jobs[w])
            line = f"{w} worker(s): {rate:,.0f} pairs/s"
            if single:
                # per run: the job against the mean of the single-process runs just before and after it
                effs = [r["rate"] / (s * w) for r, s in zip(jobs[w], refs[w])]
                e = med(effs)
                line += (f"; {e:.0%} of single-process x {w} (per run {', '.join(f'{x:.0%}' for x in effs)}; "
                         f"target >= 70%: {'PASS' if e >= 0.7 else 'MISS'}); "
                         f"{med(r['rate'] / (s * w) for r, s in zip(jobs[w], syncs)):.0%} of the one-process job x {w}")
            line += (f"; peak RSS client {max(r['client_rss_mib'] for r in jobs[w]):.0f} MiB, largest worker "
                     f"{max(r['worker_rss_mib'] for r in jobs[w]):.0f} MiB (max over rounds)")
            print(line)
        if 1 in jobs and 2 in jobs:
            ratios = [b["rate"] / a["rate"] for a, b in zip(jobs[1], jobs[2])]
            sp = med(ratios)
            print(f"2 workers / 1 worker: x{sp:.2f} median of the per-round ratios "
                  f"({', '.join(f'x{x:.2f}' for x in ratios)}; target >= 1.7: {'PASS' if sp >= 1.7 else 'MISS'})")
        print(f"load average at the end: {os.getloadavg()[0]:.2f} (other processes share the cores)")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
