"""Layout ``folders`` (pipeline.io.folders): pyrouge / ROUGE-1.5.5 folders matched by file-name pattern."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.io.readers import plan_units, read_unit
from pipeline.io.input_spec import InputSpec

from support.shared import DATA, needs_data


def make_folders(root: Path) -> tuple[Path, Path]:
    sys_dir, model_dir = root / "system", root / "model"
    sys_dir.mkdir(parents=True)
    model_dir.mkdir()
    (sys_dir / "1.txt").write_text("the cat sat\non the mat\n")
    (sys_dir / "2.txt").write_text("a dog\r\nbarked\r\n")
    (sys_dir / "10.txt").write_text("no references here\n")
    (sys_dir / "notes.md").write_text("ignored: does not match")
    (sys_dir / ".hidden").write_text("ignored")
    (model_dir / "1.B.txt").write_text("the cat was on the mat\n")
    (model_dir / "1.A.txt").write_text("the cat sat on the mat\n")
    (model_dir / "2.A.txt").write_text("the dog barked\n")
    (model_dir / "12.A.txt").write_text("not for id 1 or 2\n")
    (model_dir / "2.a.txt").write_text("lowercase letter: not matched by [A-Z]\n")
    return sys_dir, model_dir


def spec(sys_dir, model_dir, **kw):
    return InputSpec.from_config({"layout": "folders", "candidates": str(sys_dir), "references": str(model_dir), **kw})


def test_pyrouge_default_patterns(tmp_path):
    s, m = make_folders(tmp_path)
    sp = spec(s, m)
    assert sp.system_filename_pattern == r"(\d+).txt" and sp.model_filename_pattern == "#ID#.[A-Z].txt"
    units = plan_units(sp)
    assert len(units) == 1
    table, q = read_unit(sp, units[0])
    rows = table.to_pylist()
    assert [r["id"] for r in rows] == ["1", "2"]                       # sorted file names: 1, 10, 2
    assert rows[0]["references"] == ["the cat sat on the mat\n", "the cat was on the mat\n"]   # A, B
    assert rows[0]["candidate"] == "the cat sat\non the mat\n"
    assert rows[1]["candidate"] == "a dog\nbarked\n" and rows[1]["references"] == ["the dog barked\n"]
    assert rows[0]["system"] == ""
    qr = q.to_pylist()
    assert [r["id"] for r in qr] == ["10"] and "no references for id '10'" in qr[0]["reason"]


def test_custom_patterns_target_rows_and_system_from(tmp_path):
    s, m = make_folders(tmp_path)
    sp = spec(s, m, system_filename_pattern=r"(\d).txt", model_filename_pattern=r"#ID#\.[A-Za-z]\.txt",
              system_from="folder")
    units = plan_units(sp, target_rows=1)
    assert [u.n_rows for u in units] == [1, 1]     # 1.txt, 2.txt ("10.txt" does not match)
    tables = [read_unit(sp, u) for u in units]
    ids = [r["id"] for t, _ in tables for r in t.to_pylist()]
    assert ids == ["1", "2"] and tables[0][0].column("system").to_pylist() == ["system"]
    assert tables[1][0].to_pylist()[0]["references"] == ["the dog barked\n", "lowercase letter: not matched by [A-Z]\n"]


def test_duplicate_ids_in_one_unit_are_quarantined(tmp_path):
    s, m = make_folders(tmp_path)
    sp = spec(s, m, system_filename_pattern=r"(\d)")   # 1.txt and 10.txt both give id "1"
    table, q = read_unit(sp, plan_units(sp)[0])
    assert table.column("id").to_pylist() == ["1", "2"]
    assert any("duplicate id '1'" in r for r in q.column("reason").to_pylist())


def test_bad_utf8_and_spec_errors(tmp_path):
    s, m = make_folders(tmp_path)
    (s / "3.txt").write_bytes(b"caf\xe9\n")
    (m / "3.A.txt").write_text("cafe\n")
    sp = spec(s, m)
    table, q = read_unit(sp, plan_units(sp)[0])
    assert "3" not in table.column("id").to_pylist()
    assert any("invalid UTF-8" in r for r in q.column("reason").to_pylist())
    for bad in [dict(model_filename_pattern="(\\d+).txt"), dict(system_filename_pattern="(")]:
        with pytest.raises(ValueError):
            spec(s, m, **bad)
    with pytest.raises(ValueError):
        InputSpec.from_config({"layout": "lines", "candidates": "a", "references": "b",
                               "system_filename_pattern": "x"})
    with pytest.raises(FileNotFoundError):
        plan_units(spec(s, m, system_filename_pattern=r"nothing(\d+)"))
    with pytest.raises(FileNotFoundError):
        plan_units(spec(s / "1.txt", m))


@needs_data
def test_folders_run_with_rouge155_profile_matches_goldens(tmp_path):
    """pyrouge-style folders of DUC-2004 summaries, profile rouge155: the per-pair goldens."""
    from pipeline.config import RunConfig
    from pipeline.execution.driver import run
    from pipeline.runfolder import read_scores

    ds = "duc2004_pyrouge_tests"
    recs = [json.loads(line) for line in open(DATA / ds / f"{ds}.jsonl", encoding="utf-8")][:12]
    gold = {g["id"]: g for g in map(json.loads, open(DATA / ds / "rouge155_goldens.jsonl", encoding="utf-8"))}
    s, m = tmp_path / "sys", tmp_path / "models"
    s.mkdir()
    m.mkdir()
    for k, r in enumerate(recs, 1):
        (s / f"{k}.txt").write_text(r["candidate"] + "\n", encoding="utf-8")
        for letter, ref in zip("ABCDEFGH", r["references"]):
            (m / f"{k}.{letter}.txt").write_text(ref + "\n", encoding="utf-8")
    out = tmp_path / "run"
    cfg = RunConfig.from_dict({
        "input": {"layout": "folders", "candidates": str(s), "references": str(m)}, "output": {"url": str(out)},
        "scoring": {"profile": "rouge155", "use_stemmer": True, "diagnostics": False,
                    "rouge_types": ["rouge1", "rouge2", "rougeL", "rougeW-1.2", "rougeSU4"]},
        "execution": {"mode": "sync"}})
    run(cfg, None, progress=False, log=lambda msg: None)
    table = read_scores(str(out), "").to_pylist()
    assert len(table) == len(recs)
    names = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L", "rougeW-1.2": "ROUGE-W-1.2",
             "rougeSU4": "ROUGE-SU4"}
    for row in table:
        g = gold[recs[int(row["id"]) - 1]["id"]]["stem"]
        for t, metric in names.items():
            for x, stat in zip("rpf", ("recall", "precision", "fmeasure")):
                assert abs(row[f"{t}_{stat}"] - g[metric][x]) <= 1e-5 + 1e-12, (row["id"], t, x)
    assert (out / "rouge155_corpus.json").exists()
