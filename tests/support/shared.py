"""Paths, skip markers and loaders for the shared, read-only test material (``../shared``).

The shared datasets (``shared/data``: real pairs and ROUGE-1.5.5 goldens) and seed documents
(``shared/seeds``) are internal test material whose licences do not all allow redistribution,
so they are not in the repository. A fresh clone has no ``../shared``: every test that needs it
skips with one reason, and everything else runs.

Where the folder is looked for:
    ``$ROUGE_PIPELINE_SHARED`` (a folder holding ``data/`` and ``seeds/``), else ``../shared``
    beside the repository. ``ROUGE_PIPELINE_SHARED=/path/to/shared pytest`` runs those tests.
CI sets ``ROUGE_PIPELINE_REQUIRE_SHARED=1`` (``.ci/run``): then a missing folder is an error
at the start of the session, never a skip (tests/conftest.py).

How a test asks for it (use exactly one of these, so the skip reason is the same everywhere):
    ``@needs_data`` / ``@needs_seeds``   a test or class (or ``pytestmark = needs_data``)
    the ``shared_data`` / ``shared_seeds`` fixtures (tests/conftest.py), which skip the same way
    ``data_params(lambda: [...])``      parametrize over shared data without reading it at
                                        collection time when it is absent
"""
from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

import pytest

SHARED_ENV = "ROUGE_PIPELINE_SHARED"
REQUIRE_ENV = "ROUGE_PIPELINE_REQUIRE_SHARED"

SHARED = Path(os.environ.get(SHARED_ENV) or Path(__file__).resolve().parents[2].parent / "shared")
DATA = SHARED / "data"
SEEDS = SHARED / "seeds"
HAVE_DATA = DATA.is_dir()
HAVE_SEEDS = SEEDS.is_dir()
REQUIRED = os.environ.get(REQUIRE_ENV, "") not in ("", "0")


def _reason(what: str, path: Path) -> str:
    return f"needs ../shared/{what} (not found at {path}; set {SHARED_ENV}=/path/to/shared to run)"


DATA_REASON = _reason("data", DATA)
SEEDS_REASON = _reason("seeds", SEEDS)
needs_data = pytest.mark.skipif(not HAVE_DATA, reason=DATA_REASON)
needs_seeds = pytest.mark.skipif(not HAVE_SEEDS, reason=SEEDS_REASON)


def missing() -> list[str]:
    """The shared folders that are absent, as messages (for the CI check in conftest.py)."""
    return [f"{p} not found" for p, ok in ((DATA, HAVE_DATA), (SEEDS, HAVE_SEEDS)) if not ok]


def data_params(make) -> list:
    """``make()``'s parameters when the shared data is there; otherwise one skipped parameter,
    so a module can parametrize over the data without reading it at collection time."""
    if HAVE_DATA:
        return make()
    return [pytest.param(None, marks=pytest.mark.skip(reason=DATA_REASON), id="no-shared-data")]


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
    import subprocess
    import sys

    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "ok"
