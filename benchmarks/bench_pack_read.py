"""Reading one pack of small JSONL files in process (``read_unit`` of layout ``records``, no
cluster): the cost of a pack's read itself, per pair.

    python benchmarks/bench_pack_read.py                          # 400 files x 20 pairs, this tree
    python benchmarks/bench_pack_read.py --tree ../old --tree .   # two checkouts, alternating rounds

Each tree is timed in a child process with that tree's ``pipeline`` first on the path; the
rounds alternate the trees because this machine's speed drifts between minutes.  Printed per
round and tree: the median and best of ``--repeats`` reads of the pack, in ms and us/pair.
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def time_reads(glob: str, repeats: int) -> dict:
    from pipeline.io.readers import plan_units, read_unit
    from pipeline.io.input_spec import InputSpec

    spec = InputSpec.from_config({"layout": "records", "paths": glob})
    unit = next(u for u in plan_units(spec) if u.files)
    rows = read_unit(spec, unit)[0].num_rows   # also the first touch of the files and kernels
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        read_unit(spec, unit)
        times.append(time.perf_counter() - t0)
    return {"files": len(unit.files), "rows": rows, "median": statistics.median(times), "best": min(times)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=400)
    ap.add_argument("--per-file", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tree", action="append", help="a checkout whose pipeline to time (repeatable)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(time_reads(a.child, a.repeats)))
        return 0
    from soak import write_corpus

    trees = [str(Path(t).resolve()) for t in (a.tree or [HERE.parent])]
    with tempfile.TemporaryDirectory(prefix="bench-pack-read-") as tmp:
        glob = write_corpus(Path(tmp), a.files * a.per_file, a.files)
        for r in range(a.rounds):
            for tree in trees:
                env = dict(os.environ, PYTHONPATH=tree)
                p = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", glob,
                                    "--repeats", str(a.repeats)], env=env, cwd=tree, capture_output=True,
                                   text=True, check=True)
                res = json.loads(p.stdout.strip().splitlines()[-1])
                print(f"round {r + 1} {tree}: {res['files']} files, {res['rows']:,} pairs: median "
                      f"{res['median'] * 1e3:.2f} ms ({res['median'] / res['rows'] * 1e6:.2f} us/pair), best "
                      f"{res['best'] * 1e3:.2f} ms", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
