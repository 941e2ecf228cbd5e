"""The hints of a run whose fields are not mapped: every mapping a likely field supports (the
system field too), and a quarantine made mostly of repeated ids naming the unmapped system field."""
from __future__ import annotations

import json

from pipeline.io.readers import duplicate_warning, field_hints


def _file(tmp_path, rows, name="two.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _two_models(tmp_path, **extra):
    return _file(tmp_path, [{"doc_id": f"d{i}", "model": m, "prediction": "x", "target": "y", **extra}
                            for m in ("a", "b") for i in range(3)])


def test_the_hints_name_the_system_field_and_every_mapping_together(tmp_path):
    spec = {"layout": "records", "paths": _two_models(tmp_path)}
    hints = field_hints(spec)
    assert "the records may hold several systems: did you mean --set input.columns.system=model?" in hints
    assert hints[-1] == ("all together: --set input.columns.id=doc_id --set input.columns.candidate=prediction "
                         "--set input.columns.references=target --set input.columns.system=model")


def test_no_system_hint_when_the_system_field_is_mapped_or_absent(tmp_path):
    spec = {"layout": "records", "paths": _two_models(tmp_path), "columns": {"system": "model"}}
    assert not any("system" in h for h in field_hints(spec)[1:])
    path = _file(tmp_path, [{"doc_id": "d", "system_output": "x", "target": "y"}], "one.jsonl")
    hints = field_hints({"layout": "records", "paths": path})
    # "system_output" is a candidate's name, not a system's
    assert "did you mean --set input.columns.candidate=system_output?" in " ".join(hints)
    assert not any("several systems" in h for h in hints)


def test_a_quarantine_of_repeated_ids_names_the_unmapped_system_field(tmp_path):
    path = _two_models(tmp_path)
    spec = {"layout": "records", "paths": path,
            "columns": {"id": "doc_id", "candidate": "prediction", "references": "target"}}
    warning = duplicate_warning(spec, 3, {"duplicate id": 3})
    assert warning.startswith("3 of 6 records were quarantined as a repeated (system, id)")
    assert warning.endswith("a system field is probably unmapped: did you mean --set input.columns.system=model?")
    # no likely field: says so, with the fields
    path = _file(tmp_path, [{"id": "d", "candidate": "x", "references": "y", "who": "a"}], "who.jsonl")
    warning = duplicate_warning({"layout": "records", "paths": path}, 3, {"duplicate id": 3, "null candidate": 1})
    assert "a system field is probably unmapped: --set input.columns.system=FIELD (fields: id, candidate" in warning


def test_no_warning_unless_repeated_ids_dominate(tmp_path):
    spec = {"layout": "records", "paths": _two_models(tmp_path)}
    assert duplicate_warning(spec, 10, {}) is None
    assert duplicate_warning(spec, 10, {"duplicate id": 1, "null candidate": 1}) is None
    mapped = {**spec, "columns": {"system": "model"}}
    warning = duplicate_warning(mapped, 10, {"duplicate id": 2, "null candidate": 1})
    assert "each (system, id) must be unique (system field 'model')" in warning
