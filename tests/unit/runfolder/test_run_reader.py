"""pipeline.runfolder.read, the one reader of a run folder: what it reads is what the files hold
(read here with plain json and pyarrow, never through the package), every consumer (the gate,
``show``, ``read_run``) gets the same, and a folder that is not a finished run is refused where
it always was, and by ``read_run`` too (issue 27)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support.pipeline_corpus import score_records
from pipeline.cli import main as cli
from pipeline.execution.dataframe import read_run
from pipeline.gate.runs import CompareError, load_run
from pipeline.runfolder import OldLayoutError, RunFolderError
from pipeline.runfolder import read as run_folder

SYSTEMS = ["sysA", "a b/c", "_under"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("reader")
    records = [{"id": f"d{i}", "system": s, "candidate": f"the cat {i} sat on {s}", "references": ["the cat sat"]}
               for i in range(5) for s in SYSTEMS]
    # small slices: several part files per system, read back in (unit, slice) order
    return score_records(root, records, target_rows=4)


def _json(path: Path):
    return json.loads(path.read_text()) if path.exists() else None


def _parts(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("part-*") if p.is_file())


def test_a_finished_run_reads_as_its_files(finished):
    opened = run_folder.open_run(str(finished))
    assert opened.url == str(finished) and opened.info == _json(finished / "_run.json")
    assert opened.summary() == _json(finished / "_summary.json")
    assert opened.stats() == _json(finished / "stats" / "stats.json") and opened.stats()["rows"]
    assert opened.exact() is None
    parts = _parts(finished / "scores")
    assert len(parts) > len(SYSTEMS)
    expected = pa.concat_tables([pq.read_table(p).replace_schema_metadata(None) for p in parts])
    assert opened.scores().equals(expected)
    assert opened.part_urls() == [f"file://{p}" for p in parts]
    for s, folder in zip(SYSTEMS, ("system-sysA", "system-a%20b%2Fc", "system-_under")):
        got = run_folder.read_scores(str(finished), s)
        assert got.equals(pa.concat_tables([pq.read_table(p) for p in _parts(finished / "scores" / folder)]))
        assert set(got["system"].to_pylist()) == {s}
        assert run_folder.read_scores(str(finished), s, ["id"]).column_names == ["id"]
    assert run_folder.read_scores(str(finished), "nobody") is None


def test_every_consumer_reads_the_same(finished, capsys):
    opened = run_folder.open_run(str(finished) + "/")
    gate = load_run(str(finished) + "/")
    assert gate.url == opened.url and gate.info == opened.info
    assert gate.stats == opened.stats() and gate.summary == opened.summary()
    assert gate.scores.equals(opened.scores().to_pandas())
    # Dask gives its string dtype: the same rows in the same order otherwise
    pd.testing.assert_frame_equal(read_run(str(finished)).compute().reset_index(drop=True),
                                  opened.scores().to_pandas(), check_dtype=False)
    assert cli.main(["show", str(finished), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == opened.stats()


def test_part_files_are_read_in_input_order(tmp_path):
    """(unit, slice) as numbers: unit 100000 after unit 99999 (a path sort puts it first)."""
    folder = tmp_path / "run" / "scores" / "system-a"
    folder.mkdir(parents=True)
    names = ["part-99999-0000.parquet", "part-100000-0000.parquet", "part-00002-0010.parquet", "part-00002-0009.parquet"]
    for k, name in enumerate(names):
        pq.write_table(pa.table({"id": [str(k)], "system": ["a"]}), folder / name)
    (folder / "notes.txt").write_text("not a part")
    _, paths = run_folder.score_files(str(tmp_path / "run"))
    assert [p.rsplit("/", 1)[-1] for p in paths] == [names[3], names[2], names[0], names[1]]
    assert run_folder.read_scores(str(tmp_path / "run"), "a")["id"].to_pylist() == ["3", "2", "0", "1"]
    assert run_folder.read_all_scores(str(tmp_path / "run"))["id"].to_pylist() == ["3", "2", "0", "1"]


def test_a_folder_without_success_is_refused_where_it_was(finished, tmp_path, capsys):
    unfinished = tmp_path / "unfinished"
    shutil.copytree(finished, unfinished)
    (unfinished / "_SUCCESS").unlink()
    msg = f"{unfinished} is not a finished run (no _SUCCESS)"
    assert not run_folder.is_complete(str(unfinished)) and run_folder.is_complete(str(finished))
    with pytest.raises(RunFolderError) as e:
        run_folder.open_run(str(unfinished))
    assert str(e.value) == msg
    with pytest.raises(CompareError) as e:
        load_run(str(unfinished))
    assert str(e.value) == msg
    assert cli.main(["show", str(unfinished)]) == 1
    assert capsys.readouterr().err.strip() == f"rouge-pipeline: {msg} (status: ok)"
    # read_run too (issue 27 item 9: it read a folder in any state)
    with pytest.raises(RunFolderError) as e:
        read_run(str(unfinished))
    assert str(e.value) == msg
    assert run_folder.open_run(str(unfinished), finished=False).info == _json(finished / "_run.json")


def test_no_run_record_or_an_old_layout_is_refused(finished, tmp_path):
    bare = tmp_path / "bare"
    shutil.copytree(finished, bare)
    (bare / "_run.json").unlink()
    with pytest.raises(RunFolderError, match=r"^.*/bare: no _run.json$"):
        run_folder.open_run(str(bare))
    with pytest.raises(CompareError, match=r"/bare: no _run.json$"):
        load_run(str(bare))
    assert run_folder.open_run(str(bare), finished=False).info is None
    old = tmp_path / "old"
    shutil.copytree(finished, old)
    info = json.loads((old / "_run.json").read_text())
    del info["layout"]
    (old / "_run.json").write_text(json.dumps(info))
    for finished_only in (True, False):
        with pytest.raises(OldLayoutError, match="older rouge-pipeline"):
            run_folder.open_run(str(old), finished=finished_only)


def test_unreadable_json_is_the_gates_read_error(finished, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(finished, broken)
    (broken / "_summary.json").write_text("{")
    with pytest.raises(ValueError):
        run_folder.open_run(str(broken)).summary()
    with pytest.raises(CompareError, match=r"/broken: cannot read the run \("):
        load_run(str(broken))
