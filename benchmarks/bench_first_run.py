"""What a new user meets: a fresh virtualenv, an empty kernel cache, timed from outside.

    python benchmarks/bench_first_run.py --venv ../fresh-venv --install --rounds 3

``--venv``: a virtualenv with this checkout installed (``python3 -m venv ../fresh-venv &&
../fresh-venv/bin/pip install . rouge-score==0.1.2``; ``--install`` makes it, ``--reinstall`` puts this
checkout's current files in it without touching the dependencies).  Every child runs that venv's
``python`` from a temporary folder, with no ``PYTHONPATH`` (the installed copy, not this tree)
and its own empty ``NUMBA_CACHE_DIR``; rounds alternate the rows so the machine's load is shared.

* ``compute 600 pairs``: a fresh process that imports the package and calls
  ``pipeline.compute(predictions, references, use_stemmer=True)`` on 600 short pairs, against
* ``rouge-score 600 pairs``: a fresh process doing what ``evaluate``'s rouge does with
  rouge-score 0.1.2 (``RougeScorer.score`` per pair, ``BootstrapAggregator``); target: ours
  within 1.5x of it.
* ``background compile``: the process ``compute`` starts (``python -m
  pipeline.scoring.kernel_compile``), timed alone after ``compute`` (the next row waits for it).
* ``sample first run``: the README's first command after ``pip install``, ``rouge-pipeline score
  --config configs/sample.yaml``, with an empty cache (it compiles all but the scoring kernels and
  scores in pure Python while a background process compiles those); target 20 s wall on idle
  cores.  The next row waits for that background compile.
* ``sample again``: the same command with the cache it filled.

Wall is the process's from outside; CPU is user+system of the process and the children it waited
for (the run's compile helpers; not the detached background compile, timed in its own row).
The load average is printed: other work on the cores stretches wall time, not CPU time.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus import make_corpus  # noqa: E402

TARGET_COMPUTE_RATIO = 1.5
TARGET_SAMPLE_S = 20.0

OURS = """
import json, sys
pairs = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
import pipeline
out = pipeline.compute([p["candidate"] for p in pairs], [p["reference"] for p in pairs], use_stemmer=True)
print(json.dumps(out))
"""

THEIRS = """
import json, sys
pairs = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
import numpy as np
from rouge_score import rouge_scorer, scoring
np.random.seed(int(sys.argv[2]))
scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=True)
agg = scoring.BootstrapAggregator()
for p in pairs:
    agg.add_scores(scorer.score(p["reference"], p["candidate"]))
print(json.dumps({k: v.mid.fmeasure for k, v in agg.aggregate().items()}))
"""


def timed(argv: list[str], env: dict, cwd: str) -> dict:
    """Wall and CPU (the process and the children it waited for) of one command, from outside."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate(timeout=1800)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({p.returncode}):\n{err[-3000:]}")
    return {"wall": wall, "out": out, "err": err}


def with_cpu(argv: list[str], env: dict, cwd: str) -> dict:
    """:func:`timed` in a child that reports its children's rusage (CPU of the whole tree it waited for)."""
    probe = ("import resource, subprocess, sys, json, time\n"
             "t0 = time.perf_counter()\n"
             "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
             "ru = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
             "print(json.dumps({'rc': p.returncode, 'cpu': ru.ru_utime + ru.ru_stime, 'wall': time.perf_counter() - t0,"
             " 'out': p.stdout, 'err': p.stderr}))\n")
    res = timed([sys.executable, "-c", probe, *argv], env, cwd)
    got = json.loads(res["out"])
    if got["rc"] != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({got['rc']}):\n{got['err'][-3000:]}")
    return got


def wait_background(cache: str, limit: float = 1800) -> None:
    """Until no background compile holds a lock in ``cache`` (so the next row has the cores)."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < limit:
        if not os.path.isdir(cache) or not any(n.startswith("rouge-pipeline-compiling-") for n in os.listdir(cache)):
            return
        time.sleep(0.5)


def make_venv(venv: str, install: bool, reinstall: bool) -> str:
    py = os.path.join(venv, "bin", "python")
    if install and not os.path.exists(py):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", ROOT, "rouge-score==0.1.2"], check=True)
    elif reinstall:
        subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", ROOT], check=True)
    if not os.path.exists(py):
        raise SystemExit(f"no python in {venv}: pass --install to make the venv")
    return py


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--venv", required=True, help="a virtualenv with this checkout installed")
    ap.add_argument("--install", action="store_true", help="create the venv and install this checkout if missing")
    ap.add_argument("--reinstall", action="store_true", help="reinstall this checkout's files (no dependencies)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-background-row", action="store_true", help="leave out the background compile's own row")
    ap.add_argument("--json", help="also write the numbers to this file")
    args = ap.parse_args()
    py = make_venv(args.venv, args.install, args.reinstall)
    rouge_pipeline = os.path.join(args.venv, "bin", "rouge-pipeline")
    work = tempfile.mkdtemp(prefix="rp-first-run-")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NUMBA_CACHE_DIR")}
    try:
        shutil.copytree(os.path.join(ROOT, "configs"), os.path.join(work, "configs"))
        refs, cands = make_corpus("short", 600, 0)
        pairs = os.path.join(work, "pairs.jsonl")
        with open(pairs, "w", encoding="utf-8") as f:
            for r, c in zip(refs, cands):
                f.write(json.dumps({"reference": r, "candidate": c}) + "\n")
        seed = int(subprocess.run([py, "-c", "from pipeline.stats.keys import DEFAULT_SEED as s; print(s)"],
                                  env=env, cwd=work, capture_output=True, text=True, check=True).stdout)
        rows: dict[str, list[dict]] = {k: [] for k in ("compute 600 pairs", "rouge-score 600 pairs",
                                                        "background compile", "sample first run", "sample again")}
        loads = [os.getloadavg()[0]]
        for k in range(args.rounds):
            cache = os.path.join(work, f"numba-{k}")
            e = dict(env, NUMBA_CACHE_DIR=cache)
            order = ["ours", "theirs"] if k % 2 == 0 else ["theirs", "ours"]
            for who in order:
                if who == "ours":
                    got = with_cpu([py, "-c", OURS, pairs], e, work)
                    rows["compute 600 pairs"].append(got)
                    ours_out = json.loads(got["out"])
                    if got["err"].strip():
                        print(f"compute's stderr: {got['err'].strip()[:300]}")
                    wait_background(cache)
                else:
                    got = with_cpu([py, "-c", THEIRS, pairs, str(seed)], e, work)
                    rows["rouge-score 600 pairs"].append(got)
                    theirs_out = json.loads(got["out"])
            if ours_out != theirs_out:
                print(f"WARNING: compute {ours_out} != rouge-score {theirs_out}")
            if not args.skip_background_row:
                rows["background compile"].append(with_cpu([py, "-m", "pipeline.scoring.kernel_compile"],
                                                           dict(e, NUMBA_CACHE_DIR=cache + "-bg"), work))
            cache2 = cache + "-sample"
            e2 = dict(env, NUMBA_CACHE_DIR=cache2)
            cmd = [rouge_pipeline, "score", "--config", "configs/sample.yaml", "--overwrite"]
            rows["sample first run"].append(with_cpu(cmd, e2, work))
            wait_background(cache2)
            rows["sample again"].append(with_cpu(cmd, e2, work))
            loads.append(os.getloadavg()[0])
        print(f"cores: {os.cpu_count()}, rounds: {args.rounds}; load average (1 min) at each round's end: "
              + ", ".join(f"{x:.1f}" for x in loads))
        print(f"{'what':24s} {'wall median s':>14s} {'CPU median s':>13s}   per round wall (CPU)")
        med = {}
        for name, got in rows.items():
            if not got:
                continue
            w = statistics.median(g["wall"] for g in got)
            c = statistics.median(g["cpu"] for g in got)
            med[name] = {"wall": w, "cpu": c}
            print(f"{name:24s} {w:14.2f} {c:13.2f}   " + ", ".join(f"{g['wall']:.1f} ({g['cpu']:.1f})" for g in got))
        ratios = [o["wall"] / t["wall"] for o, t in zip(rows["compute 600 pairs"], rows["rouge-score 600 pairs"])]
        print(f"compute / rouge-score, wall, per round: {', '.join(f'{r:.2f}' for r in ratios)}; median "
              f"{statistics.median(ratios):.2f} (target <= {TARGET_COMPUTE_RATIO})")
        s = med["sample first run"]
        print(f"sample first run: median {s['wall']:.1f} s wall = {s['wall'] / TARGET_SAMPLE_S:.2f} x the "
              f"{TARGET_SAMPLE_S:.0f} s target ({s['cpu']:.1f} CPU-s; on 2 idle cores the wall is at least "
              f"CPU / 2 = {s['cpu'] / 2:.1f} s)")
        line = next((ln for ln in rows["sample first run"][-1]["out"].splitlines() if ln.startswith("rows ")), "")
        print(f"its summary line: {line}")
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump({"cores": os.cpu_count(), "loads": loads, "median": med, "compute_ratio": ratios,
                           "rounds": {k: [{"wall": g["wall"], "cpu": g["cpu"]} for g in v] for k, v in rows.items()}},
                          f, indent=2)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
