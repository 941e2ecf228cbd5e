"""Shared fixtures for the scoring-core tests (issue #2 "every rouge-score number, bit-exact")."""
from __future__ import annotations

from pathlib import Path

import pytest

from _shared import DATA, SEEDS


@pytest.fixture(scope="session")
def shared_data() -> Path:
    assert DATA.is_dir(), f"shared test data not found at {DATA}"
    return DATA


@pytest.fixture(scope="session")
def shared_seeds() -> Path:
    assert SEEDS.is_dir(), f"seed documents not found at {SEEDS}"
    return SEEDS
