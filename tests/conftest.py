"""Shared fixtures for the scoring-core tests (issue #2 "every rouge-score number, bit-exact")."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from _shared import DATA, SEEDS

# Every test that scores through ``RougeScorer`` holds the compiled path to the oracle, whatever
# ran before it in this process: the cold-start tier (a fresh process's first small batches in
# pure Python) is off here and tested explicitly in tests/test_cold_start.py.
os.environ.setdefault("ROUGE_PIPELINE_COLD_START", "0")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    assert DATA.is_dir(), f"shared test data not found at {DATA}"
    return DATA


@pytest.fixture(scope="session")
def shared_seeds() -> Path:
    assert SEEDS.is_dir(), f"seed documents not found at {SEEDS}"
    return SEEDS
