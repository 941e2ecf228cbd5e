"""Paths and loaders for the shared, read-only test material (``../shared``).

CI checks the repository out next to ``shared/``; tests read ``shared/data``
(real pairs), ``shared/seeds`` (seed documents) and never write there.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

SHARED = Path(__file__).parents[1].parent / "shared"
DATA = SHARED / "data"
SEEDS = SHARED / "seeds"

# The English datasets of shared/data (multi_summeval: its EN subset only;
# google_rouge_synthetic is random ASCII text, tokenized like English).
ENGLISH_DATASETS = [
    "newsroom",
    "dialsummeval",
    "multi_summeval",
    "rouge155_sample_sl2003",
    "duc2004_pyrouge_tests",
    "sacrerouge_fixtures",
    "google_rouge_synthetic",
]
ENGLISH_LANGUAGES = {"en", "synthetic"}


@lru_cache(maxsize=None)
def load_records(data_dir: Path, name: str) -> tuple[dict, ...]:
    path = Path(data_dir) / name / f"{name}.jsonl"
    with path.open(encoding="utf-8") as f:
        return tuple(json.loads(line) for line in f if line.strip())


def english_records(data_dir: Path, name: str) -> list[dict]:
    return [r for r in load_records(data_dir, name) if r["language"] in ENGLISH_LANGUAGES]


def seed_text(seeds_dir: Path, prefix: str) -> str:
    (path,) = Path(seeds_dir).glob(f"{prefix}_*.txt")
    return path.read_text(encoding="utf-8")


def run_bounds_checked(code: str, tmp_path: Path, timeout: float) -> None:
    """Run ``code`` in a fresh interpreter with numba's bounds checking on (kernels compiled
    anew into a private cache) and assert it printed ``ok``: numba does not check indices,
    so this is how a test shows that working arrays sized from the input are large enough."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "ok"
