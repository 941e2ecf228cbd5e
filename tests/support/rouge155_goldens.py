"""The ROUGE-1.5.5 golden files and the option sets they were made with (tests only)."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from pipeline.rouge155 import Rouge155Options

from support.shared import DATA, needs_data  # noqa: F401  (re-exported for the rouge155 tests)

CONFIGS = {
    # name: options (the golden's key inside the jsonl line is "stem" or "nostem")
    "stem": Rouge155Options(stem=True),
    "nostem": Rouge155Options(),
    "fB-stem": Rouge155Options(stem=True, multi_ref="B"),
    "fB-nostem": Rouge155Options(multi_ref="B"),
    "s": Rouge155Options(stem=True, stopwords=True, w_weight=None, skip_gap=None),
    "l100": Rouge155Options(stem=True, length_limit_words=100, w_weight=None, skip_gap=None),
}
# (golden file suffix, key in the golden line, config)
GOLDEN_FILES = [("", "stem", "stem"), ("", "nostem", "nostem"), ("_fB", "stem", "fB-stem"),
                ("_fB", "nostem", "fB-nostem"), ("_s", "stem", "s"), ("_l100", "stem", "l100")]
DATASETS = ["rouge155_sample_sl2003", "duc2004_pyrouge_tests", "sacrerouge_fixtures",
            "newsroom", "dialsummeval", "multi_summeval"]


@lru_cache(maxsize=None)
def records(dataset: str) -> dict[str, dict]:
    with open(DATA / dataset / f"{dataset}.jsonl", encoding="utf-8") as f:
        return {r["id"]: r for r in map(json.loads, f)}


@lru_cache(maxsize=None)
def goldens(dataset: str, suffix: str) -> list[dict]:
    with open(DATA / dataset / f"rouge155_goldens{suffix}.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def golden_cases():
    """pytest params (dataset, suffix, key, config) of every golden file present."""
    import pytest

    return [pytest.param(ds, suffix, key, config, id=f"{ds}{suffix or ''}-{key}")
            for ds in DATASETS for suffix, key, config in GOLDEN_FILES
            if (DATA / ds / f"rouge155_goldens{suffix}.jsonl").exists()]
