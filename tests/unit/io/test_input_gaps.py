"""Bad input that must never be scored nor lost: a bad reference row at the start of a
``paired`` input, a record whose id is empty (the fast JSONL path and the line-by-line one).
(A stray ``7.A.txt.bak`` in a ``folders`` input: tests/integration/test_adversarial.py
``test_folders_id_is_escaped_and_the_model_pattern_matches_whole_names``; ``eval`` and an
empty reference list: tests/unit/cli/test_quick_inputs.py.)"""
from __future__ import annotations

import json

import pytest

from pipeline.io.input_spec import InputSpec
from pipeline.io.readers import plan_units, read_unit


def _write(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return str(path)


def _read_all(spec, target_rows=None):
    spec = InputSpec.from_config(spec)
    ids, reasons = [], []
    for unit in plan_units(spec, target_rows):
        table, quarantine = read_unit(spec, unit)
        ids += table.column("id").to_pylist()
        reasons += quarantine.column("reason").to_pylist()
    return ids, reasons


@pytest.mark.parametrize("first,reason", [
    ({"id": "a", "references": 5}, "references must be a string or a list of strings, got int"),
    ({"id": "a", "references": []}, "empty reference list"),
    ("{oops", "malformed JSON"),
    ({"references": "x"}, "missing id field"),
])
@pytest.mark.parametrize("target_rows", [None, 1])
def test_a_bad_reference_row_at_the_start_of_a_paired_input_is_quarantined(tmp_path, first, reason, target_rows):
    cands = _write(tmp_path / "c.jsonl", [{"id": "a", "candidate": "the cat"}, {"id": "b", "candidate": "a dog"}])
    refs = _write(tmp_path / "r.jsonl", [first, {"id": "b", "references": "a dog ran"}])
    ids, reasons = _read_all({"layout": "paired", "candidates": cands, "references": refs}, target_rows)
    assert ids == ["b"]
    assert any(f"r.jsonl line 1: references side: {reason}" in r for r in reasons), reasons
    assert any("c.jsonl line 1: " in r for r in reasons), reasons  # and the candidate it leaves without one
    assert len(reasons) == 2, reasons


@pytest.mark.parametrize("bad_line", [0, 3])
def test_a_record_with_an_empty_id_is_quarantined(tmp_path, bad_line):
    rows = [{"id": f"k{i}", "candidate": f"c {i}", "references": [f"r {i}"]} for i in range(5)]
    rows[bad_line]["id"] = ""
    ids, reasons = _read_all({"layout": "records", "paths": _write(tmp_path / "a.jsonl", rows)})
    assert "" not in ids and len(ids) == 4
    assert len(reasons) == 1 and reasons[0].endswith(f"a.jsonl line {bad_line + 1}: empty id")
