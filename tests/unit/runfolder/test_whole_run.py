"""Issue 27 item 4: a run is read only if it is whole, and ``verify_parts`` lets nothing else
reach ``_SUCCESS`` (pipeline/runfolder/whole.py).  Every reader (``open_run``: the gate's
``load_run``, ``show``, ``read_run``) refuses, with one line, a finished run that lost a part,
holds a part it did not write (duplicated, copied, a ``backup.parquet``), or holds a
``(system, id)`` twice; ``verify_parts`` refuses, before ``_SUCCESS``, a file the run did not
write, a part past a unit's last slice, a part of other settings, a stray or missing quarantine
part.  Each is checked on a copy of one finished run, which passes every check untouched.

Issue 27's mutation gaps, each made by hand and seen to fail here: main's ``verify_parts`` with
``<=`` for ``<`` in its slice check (a part one slice past a unit's last accepted) fails
``..._one_slice_past_a_units_last``; without its config-hash check, ``..._other_settings``;
this tree's ``verify_parts`` without quarantine in ``whole.part_files`` fails
``..._stray_quarantine_part``, without its missing-part check ``..._missing_quarantine_part``."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support.pipeline_corpus import score_records
from pipeline.cli import main as cli
from pipeline.execution.dataframe import read_run
from pipeline.gate.runs import CompareError, load_run
from pipeline.runfolder import RunFolderError, verify_parts
from pipeline.runfolder import read as run_folder

A_PART = "scores/system-a/part-00000-0000.parquet"


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("whole")
    records = [{"id": f"d{i:02d}", "system": s, "candidate": f"the cat {i} sat on the mat {s}",
                "references": ["the cat sat on the mat"]} for i in range(24) for s in ("a", "b")]
    records[5] = {"id": "bad1", "system": "a", "references": ["x"]}          # quarantined: no candidate
    records[30] = {"id": "bad2", "system": "b", "references": ["x"]}
    # small units: several parts per system, quarantine parts in more than one unit
    return score_records(root, records, target_rows=12)


@pytest.fixture()
def copy(finished, tmp_path) -> Path:
    dst = tmp_path / "run"
    shutil.copytree(finished, dst)
    return dst


def _json(p: Path):
    return json.loads(p.read_text())


def _verify(run: Path):
    """verify_parts as the driver calls it, with what the run's own files say it counted."""
    summary = _json(run / "_summary.json")
    slices = {}
    for m in (run / "_done").glob("unit-*.json"):
        doc = _json(m)
        slices[doc["unit"]] = doc["slices"]
    return verify_parts(str(run), {}, slices, _json(run / "_run.json")["config_hash"], summary["rows"],
                        summary["quarantined"])


def _refused(run: Path, match: str) -> str:
    """Every reader refuses ``run`` with the same one line (``match``, a regex, in it)."""
    with pytest.raises(RunFolderError, match=match) as e:
        run_folder.open_run(str(run)).scores()
    msg = str(e.value)
    assert "\n" not in msg
    with pytest.raises(CompareError) as c:
        load_run(str(run))
    assert str(c.value) == msg
    with pytest.raises(RunFolderError) as r:
        read_run(str(run)).compute()
    assert str(r.value) == msg
    return msg


def _parts(run: Path) -> list[str]:
    return sorted(str(p.relative_to(run)) for d in ("scores", "quarantine") for p in (run / d).rglob("*.parquet"))


# --------------------------------------------------------------------------- a whole run passes
def test_a_finished_run_is_whole_and_lists_its_parts(finished):
    summary = _json(finished / "_summary.json")
    assert sorted(summary["parts"]) == _parts(finished)
    assert len([p for p in summary["parts"] if p.startswith("quarantine/")]) == 2
    for rel, (rows, size) in summary["parts"].items():
        assert (pq.read_metadata(finished / rel).num_rows, (finished / rel).stat().st_size) == (rows, size)
    opened = run_folder.open_run(str(finished))
    assert opened.scores().num_rows == summary["rows"] == 46
    files, parts, hashes = _verify(finished)
    assert parts == summary["parts"] and "_SUCCESS" in files
    # each part's content hash, as its marker recorded it: BLAKE2b-128 of the bytes on disk
    assert hashes == summary["part_hashes"]
    assert hashes == {rel: hashlib.blake2b((finished / rel).read_bytes(), digest_size=16).hexdigest()
                      for rel in summary["parts"]}


def test_files_at_the_top_are_not_the_readers_business(copy):
    """A user's notes or a gate's own file beside the run's files: read as before."""
    (copy / "notes.txt").write_text("mine")
    assert run_folder.open_run(str(copy)).scores().num_rows == 46


# --------------------------------------------------------------------------- the readers
def test_a_run_that_lost_a_part_is_refused_by_every_reader(copy, capsys):
    (copy / A_PART).unlink()
    msg = _refused(copy, "part files the run wrote are missing")
    assert msg == f"{copy}: part files the run wrote are missing ({A_PART}); the run is not whole: score it again"
    capsys.readouterr()
    assert cli.main(["show", str(copy)]) == cli.EXIT_RUN_FOLDER
    assert capsys.readouterr().err.strip() == f"rouge-pipeline: {msg}"


@pytest.mark.parametrize("name", ["part-00099-0000.parquet", "part-00000-0000 (1).parquet", "backup.parquet"])
def test_a_duplicated_or_stray_part_is_refused(copy, name, capsys):
    """pandas would read every file of the folder: 46 + the copy's rows for 46."""
    shutil.copy(copy / A_PART, copy / "scores/system-a" / name)
    msg = _refused(copy, "did not write")
    assert f"scores/system-a/{name}" in msg
    capsys.readouterr()
    assert cli.main(["show", str(copy)]) == cli.EXIT_RUN_FOLDER


def test_a_stray_file_in_the_runs_folders_is_refused(copy):
    (copy / "stats" / "old.json").write_text("{}")
    assert "(stats/old.json)" in _refused(copy, "holds files the run did not write")


def test_a_part_changed_since_the_run_wrote_it_is_refused(copy):
    t = pq.read_table(copy / A_PART)
    pq.write_table(t.slice(0, t.num_rows - 1), copy / A_PART)
    assert f"{A_PART} (changed since the run wrote it)" in _refused(copy, "did not write")


def test_a_system_and_id_twice_is_refused_where_the_scores_are_read(copy):
    """The same rows and size as the run listed, one id written twice: only reading the ids shows it."""
    t = pq.read_table(copy / A_PART)
    ids = t["id"].to_pylist()
    ids[1] = ids[0]
    pq.write_table(t.set_column(t.column_names.index("id"), "id", pa.array(ids, t.schema.field("id").type)),
                   copy / A_PART)
    summary = _json(copy / "_summary.json")
    summary["parts"][A_PART][1] = (copy / A_PART).stat().st_size
    (copy / "_summary.json").write_text(json.dumps(summary))
    run_folder.open_run(str(copy))                      # the listing cannot see it
    with pytest.raises(RunFolderError, match=r"1 \(system, id\) pair\(s\) occur more than once "
                                             rf"\(first: system 'a', id '{ids[0]}'\)"):
        run_folder.open_run(str(copy)).scores()
    with pytest.raises(CompareError, match="occur more than once"):
        load_run(str(copy))


def test_a_summary_that_disagrees_with_its_parts_is_refused(copy):
    summary = _json(copy / "_summary.json")
    summary["rows"] += 1
    (copy / "_summary.json").write_text(json.dumps(summary))
    assert "its part files hold 46 scored rows, its _summary.json says 47" in _refused(copy, "says 47")


def test_a_run_listed_before_the_summary_listed_parts_is_held_to_its_markers(copy):
    """A run of this format written before ``_summary.json`` had ``parts``: its markers name its parts."""
    summary = _json(copy / "_summary.json")
    del summary["parts"]
    (copy / "_summary.json").write_text(json.dumps(summary))
    assert run_folder.open_run(str(copy)).scores().num_rows == 46
    shutil.copy(copy / A_PART, copy / "scores/system-a/part-00099-0000.parquet")
    assert "scores/system-a/part-00099-0000.parquet" in _refused(copy, "part files the run did not write")


# --------------------------------------------------------------------------- verify_parts, before _SUCCESS
def test_verify_parts_refuses_a_file_the_run_did_not_write(copy):
    shutil.copy(copy / A_PART, copy / "scores/system-a/backup.parquet")
    with pytest.raises(RunFolderError, match=r"holds files the run did not write \(scores/system-a/backup.parquet\)"):
        _verify(copy)


def test_verify_parts_refuses_a_part_one_slice_past_a_units_last(copy):
    marker = _json(copy / "_done" / "unit-00000-0000.json")
    past = f"scores/system-a/part-00000-{marker['slices']:04d}.parquet"
    shutil.copy(copy / A_PART, copy / past)
    with pytest.raises(RunFolderError, match=rf"holds part files that are not this run's \({past}\)"):
        _verify(copy)


def test_verify_parts_refuses_a_part_written_with_other_settings(copy):
    """The same rows and name, another config hash in its footer."""
    t = pq.read_table(copy / A_PART)
    meta = {**t.schema.metadata, b"rouge_pipeline.config_hash": b"0ther"}
    pq.write_table(t.replace_schema_metadata(meta), copy / A_PART)
    with pytest.raises(RunFolderError, match=rf"not this run's \({A_PART} \(config hash 0ther\)\)"):
        _verify(copy)


def test_verify_parts_refuses_a_stray_quarantine_part(copy):
    q = sorted(p for p in _json(copy / "_summary.json")["parts"] if p.startswith("quarantine/"))
    units = sorted(int(p.name[5:10]) for p in (copy / "_done").glob("unit-*-0000.json"))
    free = next(u for u in units if f"quarantine/part-{u:05d}-0000.parquet" not in q)  # a unit with none
    stray = f"quarantine/part-{free:05d}-0000.parquet"
    shutil.copy(copy / q[0], copy / stray)
    with pytest.raises(RunFolderError, match=rf"not this run's \({stray}\)"):
        _verify(copy)


def test_verify_parts_refuses_a_missing_quarantine_part(copy):
    q = sorted(p for p in _json(copy / "_summary.json")["parts"] if p.startswith("quarantine/"))[0]
    (copy / q).unlink()
    with pytest.raises(RunFolderError, match=rf"part files this run wrote are missing \({q}\)"):
        _verify(copy)


def test_verify_parts_refuses_parts_that_hold_other_rows_than_counted(copy):
    """A part its marker names, of this config, holding its rows twice."""
    t = pq.read_table(copy / A_PART)
    pq.write_table(pa.concat_tables([t, t]), copy / A_PART)
    with pytest.raises(RunFolderError, match=rf"its part files hold {46 + t.num_rows} scored and 2 quarantined "
                                             "rows, this run counted 46 and 2; no _SUCCESS written"):
        _verify(copy)


def test_a_part_read_with_other_rows_than_listed_is_refused(copy):
    """The listing agrees (names, sizes, totals); one part's rows do not: found as it is read,
    by the gate and by each ``read_run`` partition."""
    summary = _json(copy / "_summary.json")
    other = next(p for p in summary["parts"] if p.startswith("scores/") and p != A_PART)
    summary["parts"][A_PART][0] -= 1
    summary["parts"][other][0] += 1
    (copy / "_summary.json").write_text(json.dumps(summary))
    n = pq.read_metadata(copy / A_PART).num_rows
    run_folder.open_run(str(copy))
    msg = f"{copy}: {A_PART} holds {n} rows, the run wrote {n - 1}; the run is not whole: score it again"
    with pytest.raises(RunFolderError) as e:
        run_folder.open_run(str(copy)).scores()
    assert str(e.value) == msg
    with pytest.raises(CompareError, match="the run wrote"):
        load_run(str(copy))
    with pytest.raises(RunFolderError, match=rf"^{copy}: scores/system-a/part-\d{{5}}-\d{{4}}\.parquet holds \d+ "
                                             r"rows, the run wrote \d+; the run is not whole"):
        read_run(str(copy)).compute()      # whichever partition is read first
