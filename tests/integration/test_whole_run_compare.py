"""Issue 27 item 4 through the commands: a finished base run that lost one system's part
(``_SUCCESS`` still there) made ``compare BASE NEW`` and ``compare NEW --previous`` say "no
change" although that system moved; a duplicated part in the new run passed.  Now the reader
refuses such a run and ``compare`` exits 2 with one line naming the file."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support.pipeline_corpus import config
from pipeline.cli import main as cli
from pipeline.config import RunConfig
from pipeline.execution.driver import run

WORDS = "the council approved a new budget for the school and the river bridge repairs this spring".split()


def _score(root: Path, name: str, truncate_b: bool) -> Path:
    recs = []
    for i in range(40):
        ref = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(12))
        for s in ("a", "b"):
            cand = ref if not (truncate_b and s == "b") else " ".join(ref.split()[:3])
            recs.append({"id": f"d{i:02d}", "system": s, "candidate": cand, "references": [ref]})
    src = root / f"{name}.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    out = root / "nightly" / name
    run(RunConfig.from_dict(config({"layout": "records", "paths": str(src)}, out)), None, progress=False,
        log=lambda m: None)
    assert (out / "_SUCCESS").exists()
    return out


@pytest.fixture(scope="module")
def nights(tmp_path_factory):
    root = tmp_path_factory.mktemp("nights")
    return _score(root, "2026-12-01", False), _score(root, "2026-12-02", True)


def _compare(capsys, *args) -> tuple[int, str]:
    capsys.readouterr()
    code = cli.main(["compare", *map(str, args)])
    return code, capsys.readouterr().err


def test_the_whole_runs_show_the_move(nights, capsys):
    base, new = nights
    assert _compare(capsys, base, new)[0] == cli.EXIT_FAILED
    assert _compare(capsys, new, "--previous")[0] == cli.EXIT_FAILED


@pytest.fixture()
def broken_base(nights, tmp_path):
    """The nights copied, the base without system b's part."""
    base, new = (tmp_path / "nightly" / p.name for p in nights)
    for src, dst in zip(nights, (base, new)):
        shutil.copytree(src, dst)
    part = next((base / "scores" / "system-b").glob("part-*.parquet"))
    part.unlink()
    return base, new, part.relative_to(base)


def test_a_base_that_lost_a_part_is_an_error_not_no_change(broken_base, capsys):
    base, new, part = broken_base
    for args in ((base, new), (new, "--previous")):
        code, err = _compare(capsys, *args)
        assert code == cli.EXIT_CONFIG, err
        assert err.strip().splitlines()[-1] == (f"rouge-pipeline: compare: {base}: part files the run wrote are "
                                                f"missing ({part}); the run is not whole: score it again")


@pytest.mark.parametrize("name", ["part-00001-0000.parquet", "backup.parquet"])
def test_a_duplicated_or_stray_part_in_the_new_run_is_refused(nights, tmp_path, capsys, name):
    base, new = nights
    copy = tmp_path / "new"
    shutil.copytree(new, copy)
    part = next((copy / "scores" / "system-a").glob("part-*.parquet"))
    shutil.copy(part, part.parent / name)
    code, err = _compare(capsys, base, copy)
    assert code == cli.EXIT_CONFIG, err
    assert f"scores/system-a/{name}" in err and "did not write" in err
