"""No path of the machine the project was built on in the repository: commands in docs use
``python`` and paths any user has (a fresh clone has neither the build machine's venv nor its temp corpora)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).parents[2]
# built by concatenation so that this file does not match itself
BUILD_ROOT = re.compile(r"(?<![\w.])/" + r"work(/|\b)")
TMP = re.compile(r"(?<![\w.])/" + r"tmp/")


def tracked_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, timeout=60)
        names = [n for n in out.stdout.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", ".venv", "runs", "__pycache__", "artifacts"}
        names = [str(p.relative_to(REPO)) for p in REPO.rglob("*")
                 if p.is_file() and not skip & set(p.relative_to(REPO).parts)]
    return [REPO / n for n in names if (REPO / n).is_file()]


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None


def offending(files: list[Path], root: Path = REPO) -> list[str]:
    bad = []
    for path in files:
        text = _text(path)
        if text is None:
            continue
        rel = path.relative_to(root)
        docs = path.suffix == ".md" or rel.parts[0] == "benchmarks"
        for n, line in enumerate(text.splitlines(), 1):
            if BUILD_ROOT.search(line) or str(REPO) in line or (docs and TMP.search(line)):
                bad.append(f"{rel}:{n}: {line.strip()}")
    return bad


def test_no_build_machine_paths_in_the_repository():
    files = tracked_files()
    assert any(p.name == "README.md" for p in files)
    assert offending(files) == []


def test_the_check_finds_them(tmp_path):
    (tmp_path / "docs").mkdir()
    md, code = tmp_path / "docs" / "x.md", tmp_path / "x.py"
    md.write_text("run `/" + "work/venv/bin/python x.py` on\n'/" + "tmp/corpus/*.jsonl'\nfine: ./tmp/x\n")
    code.write_text("DEFAULT = '/" + "tmp/ok-in-code'\nVENV = '/" + "work/venv'\n")
    assert [b.split(":")[:2] for b in offending([md, code], tmp_path)] == [["docs/x.md", "1"], ["docs/x.md", "2"],
                                                                         ["x.py", "2"]]
