"""Are two trees' run folders the same?  Runs ``rouge-pipeline score`` with an older checkout and
with this one on the same config and compares every file of the two run folders byte for byte
(``_run.json`` and ``_summary.json`` after dropping their times, speeds and the output path).

    python benchmarks/same_outputs.py --old-tree ../old --config configs/sample.yaml
    python benchmarks/same_outputs.py --old-tree ../old --config big.yaml --local --workers 2

Each tree runs in a child process with ``PYTHONPATH`` set to it (compile its kernels first:
``python -m pipeline.warmup`` there).  Exit 0 when every file is the same, 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
# what a run records about itself rather than about the data: times, speeds, where it wrote
VOLATILE = {"_summary.json": ("finished_at", "started_at", "pairs_per_s", "scoring_seconds", "seconds"),
            "_run.json": ("started_at", "finished_at", "cwd")}


def run(tree: Path, config: str, out: Path, extra: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, "-m", "pipeline", "score", "--config", str(Path(config).resolve()), "--output", str(out), *extra]
    subprocess.run(cmd, cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)


def normalised(path: Path) -> bytes:
    drop = VOLATILE.get(path.name)
    if drop is None:
        return path.read_bytes()
    doc = json.loads(path.read_text())
    for k in drop:
        doc.pop(k, None)
    doc.get("config", {}).get("output", {}).pop("url", None)
    return json.dumps(doc, sort_keys=True).encode()


def differences(a: Path, b: Path) -> list[str]:
    fa = {p.relative_to(a) for p in a.rglob("*") if p.is_file()}
    fb = {p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    out = [f"only in the old run: {p}" for p in sorted(fa - fb)] + [f"only in the new run: {p}" for p in sorted(fb - fa)]
    out += [f"differs: {p}" for p in sorted(fa & fb) if normalised(a / p) != normalised(b / p)]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old-tree", type=Path, required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--keep", type=Path, help="write the two run folders here (kept)")
    args, extra = ap.parse_known_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        old, new = root / "old", root / "new"
        run(args.old_tree.resolve(), args.config, old, extra)
        run(HERE, args.config, new, extra)
        diff = differences(old, new)
        n = sum(1 for p in new.rglob("*") if p.is_file())
        print("\n".join(diff) if diff else f"identical: {n} files ({args.config} {' '.join(extra)})")
        return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
