"""Shared fixtures for the scoring-core tests (issue #2 "every rouge-score number, bit-exact")."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from support.shared import DATA, DATA_REASON, HAVE_DATA, HAVE_SEEDS, REQUIRE_ENV, REQUIRED, SEEDS, SEEDS_REASON, missing

# Every test that scores through ``RougeScorer`` holds the compiled path to the oracle, whatever
# ran before it in this process: the cold-start tier (a fresh process's first small batches in
# pure Python) is off here and tested explicitly in tests/conformance/test_cold_start.py.
os.environ.setdefault("ROUGE_PIPELINE_COLD_START", "0")


def pytest_configure(config):
    # CI (.ci/run) must not be able to skip the shared-data tests: there a missing folder is an error.
    if REQUIRED and missing():
        raise pytest.UsageError(f"{REQUIRE_ENV} is set but the shared test material is missing: "
                                + "; ".join(missing()))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not HAVE_DATA:
        pytest.skip(DATA_REASON)
    return DATA


@pytest.fixture(scope="session")
def shared_seeds() -> Path:
    if not HAVE_SEEDS:
        pytest.skip(SEEDS_REASON)
    return SEEDS
