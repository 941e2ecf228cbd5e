"""docs/configuration.md lists every configuration key, checked against the code's own
definitions (the config dataclasses, ``InputSpec``, the column keys), so the table cannot drift:
a key without a row, a row without a key, a wrong default, or a wrong signature/hash column fails."""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
import yaml

from pipeline.config import _SECTIONS, _TOP_KEYS, RunConfig
from pipeline.io.input_spec import COLUMN_KEYS, InputSpec
from pipeline.signature import Signature

DOC = Path(__file__).parents[2] / "docs" / "configuration.md"
HEAD = ["key", "type", "default", "numbers", "signature", "hash", "meaning"]


def doc_rows(text: str | None = None) -> dict[str, dict]:
    text = DOC.read_text(encoding="utf-8") if text is None else text
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if [c.strip() for c in line.strip("|").split("|")] == HEAD)
    rows = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        row = dict(zip(HEAD, cells))
        key = row["key"].strip("`")
        assert key not in rows, f"{key}: two rows"
        rows[key] = row
    return rows


def _default(dc_field) -> object:
    if dc_field.default is not dataclasses.MISSING:
        return dc_field.default
    return dc_field.default_factory()


def code_defaults() -> dict[str, object]:
    """Every key a config file may hold, with its default, from the code's definitions."""
    out: dict[str, object] = {}
    spec = InputSpec()
    for f in dataclasses.fields(InputSpec):
        if f.name == "columns":
            for k in COLUMN_KEYS:
                out[f"input.columns.{k}"] = spec.col(k)
        else:
            v = _default(f)
            out[f"input.{f.name}"] = list(v) if isinstance(v, tuple) else v
    for name, klass in _SECTIONS.items():
        for f in dataclasses.fields(klass):
            v = _default(f)
            out[f"{name}.{f.name}"] = list(v) if isinstance(v, tuple) else v
    for f in dataclasses.fields(RunConfig):
        if f.name not in _SECTIONS and f.name != "input":
            out[f.name] = _default(f)
    assert set(_TOP_KEYS) == {k.split(".")[0] for k in out}
    return out


def _parse_default(key: str, cell: str):
    assert cell.startswith("`") and cell.endswith("`"), f"{key}: default {cell!r} not in backticks"
    raw = cell[1:-1]
    if raw == "<cpu count>":
        return os.cpu_count() or 1
    return yaml.safe_load(raw)


def test_every_key_has_a_row_and_every_row_a_key():
    rows, code = doc_rows(), code_defaults()
    assert sorted(set(code) - set(rows)) == [], "keys without a row in docs/configuration.md"
    assert sorted(set(rows) - set(code)) == [], "rows naming no configuration key"


def test_defaults_are_the_codes():
    rows = doc_rows()
    for key, default in code_defaults().items():
        assert _parse_default(key, rows[key]["default"]) == default, key


def test_the_checker_notices_a_missing_row_a_stray_row_and_a_wrong_default():
    text = DOC.read_text(encoding="utf-8")
    gone = doc_rows("\n".join(line for line in text.splitlines() if not line.startswith("| `stats.seed`")))
    assert "stats.seed" in set(code_defaults()) - set(gone)
    stray = text.replace("| `strict` |", "| `strictly` |")
    assert "strictly" in set(doc_rows(stray)) - set(code_defaults())
    wrong = doc_rows(text.replace("| `stats.n_boot` | int | `1000` |", "| `stats.n_boot` | int | `100` |"))
    assert _parse_default("stats.n_boot", wrong["stats.n_boot"]["default"]) != code_defaults()["stats.n_boot"]


# For each key: a base config (dotted overrides) and another valid value. Add one for a new key.
BASE = {"input.paths": "x.jsonl", "output.url": "out"}
PAIRED = {"input.layout": "paired", "input.candidates": "c.jsonl", "input.references": "r.jsonl"}
LINES = {"input.layout": "lines", "input.candidates": "c.txt", "input.references": "r.txt"}
FOLDERS = {"input.layout": "folders", "input.candidates": "sys", "input.references": "models"}
UNICODE = {"scoring.profile": "unicode"}
R155 = {"scoring.profile": "rouge155"}
OTHER = {
    "input.layout": ({}, "paired", PAIRED),
    "input.paths": ({}, "y.jsonl", {}),
    "input.candidates": (PAIRED, "c2.jsonl", {}),
    "input.references": (PAIRED, "r2.jsonl", {}),
    "input.format": ({}, "jsonl", {}),
    "input.reference_format": (PAIRED, "parquet", {}),
    **{f"input.columns.{k}": ({}, f"my_{k}", PAIRED if k == "reference_id" else {}) for k in COLUMN_KEYS},
    "input.storage_options": ({}, {"anon": True}, {}),
    "input.system_from": (LINES, "stem", {}),
    "input.system_filename_pattern": (FOLDERS, r"sys(\d+).txt", {}),
    "input.model_filename_pattern": (FOLDERS, "#ID#.[a-z].txt", {}),
    "output.url": ({}, "out2", {}),
    "output.overwrite": ({}, True, {}),
    "output.keep_texts": ({}, True, {}),
    "scoring.rouge_types": ({}, ["rouge1"], {}),
    "scoring.use_stemmer": ({}, True, {}),
    "scoring.tokenizer": ({}, "whitespace", {}),
    "scoring.sentence_splitter": ({}, "sentencex", {}),
    "scoring.multi_ref": ({}, "mean", {}),
    "scoring.profile": ({}, "unicode", {}),
    "scoring.language": (UNICODE, "de", {}),
    "scoring.stemming": (UNICODE, "snowball", {}),
    "scoring.cjk": (UNICODE, "segmenter", {}),
    "scoring.diagnostics": ({}, False, {}),
    "scoring.alpha": ({}, 0.8, {}),
    "scoring.remove_stopwords": (R155, True, {}),
    "scoring.length_limit_words": (R155, 100, {}),
    "scoring.length_limit_bytes": (R155, 665, {}),
    "stats.seed": ({}, 7, {}),
    "stats.n_boot": ({}, 100, {}),
    "stats.confidence": ({}, 0.9, {}),
    "stats.bootstrap": ({}, "exact", {}),
    "execution.mode": ({}, "sync", {}),
    "execution.scheduler": ({}, "tcp://127.0.0.1:8786", {}),
    "execution.n_workers": ({}, 7, {}),
    "execution.memory_limit": ({}, "1GB", {}),
    "execution.retries": ({}, 0, {}),
    "execution.target_rows": ({}, 10, {}),
    "execution.target_cost": ({}, 1000, {}),
    "execution.unit_cache_mb": ({}, 0, {}),
    "execution.worker_profile": ({}, True, {}),
    "execution.reuse": ({}, "runs/earlier", {}),
    "execution.reuse_untrusted": ({}, "rescore", {}),
    "strict": ({}, True, {}),
    "storage_options": ({}, {"anon": True}, {}),
}


def _config(flat: dict) -> RunConfig:
    if flat.get("input.layout", "records") != "records":
        flat = {k: v for k, v in flat.items() if k != "input.paths"}
    d: dict = {}
    for dotted, value in flat.items():
        *parents, last = dotted.split(".")
        node = d
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    return RunConfig.from_dict(d)


def test_every_key_has_another_value_to_check_it_with():
    assert sorted(set(code_defaults()) - set(OTHER)) == []


@pytest.mark.parametrize("key", sorted(OTHER))
def test_signature_and_hash_columns(key):
    row = doc_rows()[key]
    base, value, also = OTHER[key]
    before = _config({**BASE, **base})
    after = _config({**BASE, **base, **also, key: value})
    changed = {"signature": str(Signature.from_config(before)) != str(Signature.from_config(after)),
               "hash": before.config_hash() != after.config_hash()}
    for column, moved in changed.items():
        assert row[column] == ("yes" if moved else "no"), f"{key}: the {column} column says {row[column]!r}"
    if row["numbers"] != "no":
        assert row["hash"] == "yes", f"{key} changes numbers but is not in the config hash"
