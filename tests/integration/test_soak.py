"""Soak (issue #5), not in the default suite: ``pytest -m slow tests/integration/test_soak.py``.

2,000,000 short pairs (``ROUGE_PIPELINE_SOAK_PAIRS`` to change it) through local mode with one
worker SIGKILLed midway: exactly N rows, no duplicate id.  See benchmarks/soak.py."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).parents[2] / "benchmarks"


@pytest.mark.slow
def test_soak_two_million_pairs_with_a_worker_killed(tmp_path):
    sys.path.insert(0, str(BENCH))
    try:
        import soak
    finally:
        sys.path.remove(str(BENCH))
    n = int(os.environ.get("ROUGE_PIPELINE_SOAK_PAIRS", "2000000"))
    report = soak.soak(n, 40, 2, tmp_path, kill=True)
    print(json.dumps(report, indent=2))
    assert report["rows"] == n and report["unique_ids"] == n
    assert report["ok"], report["checks"]
