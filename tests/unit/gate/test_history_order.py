"""The history a band and a trend use: only runs that began before the new run, each once
(``--history`` and ``--previous`` together: their union, ``report --history``); what is left out
(unfinished runs, runs that began after the new one) is said, never silently dropped."""
from __future__ import annotations

import json
import shutil

import pytest
import yaml

from support.pipeline_corpus import config, write_records
from pipeline.cli import main as cli
from pipeline.runfolder.names import SUCCESS


@pytest.fixture(scope="module")
def nights(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hist")
    corpus = write_records(tmp / "corpus", 12, bad=False)
    root = tmp / "root"
    for day, out in (("2025-12-31", tmp / "archive" / "2025-12-31"),   # scored in this order
                     *((d, root / d) for d in ("2026-01-01", "2026-01-02", "2026-01-03"))):
        cfg = tmp / f"{day}.yaml"
        cfg.write_text(yaml.safe_dump(config({"layout": "records", "paths": corpus}, out)))
        assert cli.main(["score", "--config", str(cfg), "--no-progress"]) == 0
    return tmp, root


@pytest.mark.parametrize("flags", [["--history", "ROOT"], ["--previous", "--history", "ROOT"],
                                   ["--history", "ROOT", "ROOT/2026-01-01"]])
def test_compare_history_holds_only_earlier_runs_each_once(nights, capsys, flags):
    _, root = nights
    new = str(root / "2026-01-02")
    flags = [f.replace("ROOT", str(root)) for f in flags]
    assert cli.main(["compare", new, *flags, "--json", "--n-boot", "50", "--n-perm", "50"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["url"] for r in doc["trend"]["runs"]] == [str(root / "2026-01-01"), new]
    assert doc["base"] == str(root / "2026-01-01")


def test_report_history_holds_only_earlier_runs(nights, capsys):
    tmp, root = nights
    out = tmp / "r.html"
    assert cli.main(["report", str(root / "2026-01-02"), "--history", str(root), "-o", str(out)]) == 0
    assert "<p>1 earlier runs and the new one" in out.read_text()      # 2026-01-01 only


def _compare_json(capsys, *argv) -> dict:
    assert cli.main(["compare", *map(str, argv), "--json", "--no-record", "--n-boot", "50", "--n-perm", "50"]) == 0
    return json.loads(capsys.readouterr().out)


def test_previous_with_history_is_their_union(nights, capsys):
    tmp, root = nights
    new = root / "2026-01-03"
    both = _compare_json(capsys, new, "--previous", "--history", tmp / "archive")
    assert [r["url"] for r in both["trend"]["runs"]] == [str(tmp / "archive" / "2025-12-31"), str(root / "2026-01-01"),
                                                        str(root / "2026-01-02"), str(new)]
    alone = _compare_json(capsys, new, "--previous")
    assert [r["url"] for r in alone["trend"]["runs"]] == [str(root / "2026-01-01"), str(root / "2026-01-02"), str(new)]


def test_unfinished_history_runs_are_named_not_dropped_silently(nights, capsys):
    tmp, root = nights
    folder = tmp / "unfinished"
    for name in ("a", "b"):
        if not (folder / name).exists():
            shutil.copytree(root / "2026-01-01", folder / name)
            (folder / name / SUCCESS).unlink()
    (folder / "notes").mkdir(exist_ok=True)   # not a run folder: nothing to say
    doc = _compare_json(capsys, root / "2026-01-02", "--history", root, folder)
    notes = [n for n in doc["notes"] if "unfinished" in n]
    assert notes == [f"2 unfinished run(s) (no _SUCCESS) left out of the history: {folder / 'a'}, {folder / 'b'}"]
    doc = _compare_json(capsys, root / "2026-01-02", "--history", root, folder / "a")   # named directly
    assert [n for n in doc["notes"] if "unfinished" in n] == [
        f"1 unfinished run(s) (no _SUCCESS) left out of the history: {folder / 'a'}"]


def test_unfinished_earlier_siblings_are_named_with_previous(nights, capsys, tmp_path):
    _, root = nights
    shutil.copytree(root, tmp_path / "root")
    (tmp_path / "root" / "2026-01-01" / SUCCESS).unlink()
    doc = _compare_json(capsys, tmp_path / "root" / "2026-01-03", "--previous")
    copy = tmp_path / "root"
    assert [r["url"] for r in doc["trend"]["runs"]] == [str(copy / d) for d in ("2026-01-02", "2026-01-03")]
    assert f"1 unfinished run(s) (no _SUCCESS) left out of the history: {copy / '2026-01-01'}" in doc["notes"]


def test_history_runs_that_began_after_the_run_are_named(nights, capsys):
    _, root = nights
    doc = _compare_json(capsys, root / "2026-01-02", "--history", root)
    assert [r["url"] for r in doc["trend"]["runs"]] == [str(root / "2026-01-01"), str(root / "2026-01-02")]
    later = [n for n in doc["notes"] if "began after" in n]
    assert later == [f"1 history run(s) began after {root / '2026-01-02'} and are left out of its band and trend: "
                     f"{root / '2026-01-03'}"]
    # a history wholly newer than the run: nothing to compare, and the one line says why
    assert cli.main(["compare", str(root / "2026-01-01"), "--history", str(root), "--no-record"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nothing to compare" in err[0] and "2 history run(s) began after" in err[0], err


def test_report_names_the_history_runs_its_trend_leaves_out(nights, capsys):
    tmp, root = nights
    out = tmp / "r1.html"
    assert cli.main(["report", str(root / "2026-01-01"), "--history", str(root), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "rouge-pipeline: report: 2 history run(s) began after" in err
