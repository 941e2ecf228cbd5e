"""First run and small runs, timed from outside in fresh processes.

    python benchmarks/bench_first_run.py --repeats 3

* ``sample cold``: the README's ``rouge-pipeline score --config configs/sample.yaml`` with an empty
  numba cache (``NUMBA_CACHE_DIR`` set to a new folder: nothing compiled on this machine yet),
  i.e. a fresh install's first run; the kernels are compiled once, in that process.
* ``sample warm``: the same command again (the cache filled by the cold run).
* ``sample warm --local``: the same on the local Dask cluster (what a small run paid before
  ``execution.mode: auto``).
* ``compute 100 pairs``: a fresh ``python`` that imports the package and calls
  ``pipeline.compute`` on 100 short pairs (the README's sample pairs), process wall time.

Each figure is the median of ``--repeats`` runs (the cold one gets a new empty cache each
time); the children run with the machine's environment and this checkout first on the path.
Targets (issue 20): cold <= 15 s, warm <= 2 s on 2 cores, compute <= 0.5 s.
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

COMPUTE = """
import json, sys
pairs = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
import pipeline
out = pipeline.compute([p["candidate"] for p in pairs], [p["references"] for p in pairs])
assert set(out) == {"rouge1", "rouge2", "rougeL", "rougeLsum"}
"""


def _env(cache: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=os.pathsep.join(
        [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _timed(argv: list[str], env: dict) -> tuple[float, str]:
    t0 = time.perf_counter()
    out = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=ROOT, timeout=900)
    seconds = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return seconds, out.stdout + out.stderr


def _sample(work: str, name: str, env: dict, *extra: str) -> tuple[float, str]:
    cmd = [sys.executable, "-m", "pipeline.cli.main", "score", "--config", "configs/sample.yaml", "--output",
           os.path.join(work, name), "--no-progress", "--overwrite", *extra]
    return _timed(cmd, env)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", help="also write the numbers to this file")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rp-first-run-")
    try:
        pairs = os.path.join(work, "pairs.jsonl")
        with open(os.path.join(ROOT, "configs", "sample", "part-0.jsonl"), encoding="utf-8") as src, \
                open(pairs, "w", encoding="utf-8") as dst:
            for line in list(src)[:100]:
                rec = json.loads(line)
                dst.write(json.dumps({"candidate": rec["candidate"], "references": rec["references"]}) + "\n")
        cold, warm, local, compute = [], [], [], []
        compiled_note = ""
        for k in range(args.repeats):
            cache = os.path.join(work, f"numba-{k}")
            env = _env(cache)
            s, log = _sample(work, "cold", env)
            cold.append(s)
            compiled_note = next((ln for ln in log.splitlines() if "compiled in" in ln), compiled_note)
            warm.append(_sample(work, "warm", env)[0])
            local.append(_sample(work, "local", env, "--local")[0])
            compute.append(_timed([sys.executable, "-c", COMPUTE, pairs], env)[0])
        med = {name: statistics.median(v) for name, v in
               (("sample cold", cold), ("sample warm", warm), ("sample warm --local", local),
                ("compute 100 pairs", compute))}
        print(f"cores: {os.cpu_count()}, repeats: {args.repeats} (median; all: "
              + "; ".join(f"{n} " + ", ".join(f"{x:.2f}" for x in v) for n, v in
                          (("cold", cold), ("warm", warm), ("local", local), ("compute", compute))) + ")")
        for name, v in med.items():
            print(f"{name:22s} {v:6.2f} s")
        if compiled_note:
            print(f"(cold run's own line: {compiled_note.strip()})")
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump({"cores": os.cpu_count(), "repeats": args.repeats, "median_s": med,
                           "all_s": {"cold": cold, "warm": warm, "local": local, "compute": compute}}, f, indent=2)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
