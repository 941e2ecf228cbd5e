"""The run folder is one layer with one owner of its names (issue 26): ``pipeline/runfolder``
imports nothing above ``io``/``stats`` (function-local imports included), and no module outside
``runfolder/names.py`` spells a run folder's file or folder name as a path."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "pipeline"

# what the run folder may import: the ground floor, storage, statistics, itself
BELOW = ("pipeline.io", "pipeline.stats", "pipeline.runfolder", "pipeline.errors", "pipeline.lazy",
         "pipeline.columns", "pipeline.redaction")


def _imports(tree: ast.AST, package: str) -> list[str]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            out += [base] if base.startswith("pipeline") else []
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.startswith("pipeline")]
    return out


def test_the_run_folder_imports_nothing_above_storage_and_statistics():
    for path in sorted((PKG / "runfolder").glob("*.py")):
        above = [m for m in _imports(ast.parse(path.read_text(encoding="utf-8")), "pipeline.runfolder")
                 if not (m + ".").startswith(tuple(b + "." for b in BELOW))]
        assert not above, (path.name, above)


# A run folder's name used as a path: bounded by "/" or the string's ends (a message's prose,
# "no _SUCCESS written", is not a path).  Folders need a "/" (a bare "scores" is a dict key).
_FILES = r"_SUCCESS|_run\.json|_plan\.json|_summary\.json|_LEASE\.json|rouge155_corpus\.json|stats/stats\.\w+|stats/bootstrap_exact\.\w+"
_FOLDERS = r"_done|scores|quarantine|stats"
PATHISH = re.compile(rf"(?:^|/)(?:{_FILES})(?:/|$)|(?:^|/)(?:{_FOLDERS})/|/(?:{_FOLDERS})$|(?:^|/)(?:system-|part-)")

# Known, with the reason they stay: (file, literal)
ALLOWED = {
    # the profile declares the file it writes; importing runfolder.names there would load Arrow
    # into the config checks (names.ROUGE155_CORPUS is the same name; test_profiles checks it is written)
    ("pipeline/profiles/rouge155.py", "rouge155_corpus.json"),
    # messages of the driver pointing the user at the folder (the driver is not this change's file)
    ("pipeline/execution/driver.py", "/quarantine/)"), ("pipeline/execution/driver.py", "/quarantine/"),
}


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def literals_outside_names() -> list[tuple[str, int, str]]:
    found = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "pipeline/runfolder/names.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
                    and PATHISH.search(node.value) and (rel, node.value) not in ALLOWED):
                found.append((rel, node.lineno, node.value))
    return found


def test_run_folder_names_are_spelled_only_in_names_py():
    assert literals_outside_names() == []


def test_the_check_sees_what_it_must():
    for path in ('f"{url}/_run.json"', '"stats/stats.json"', 'f"{run}/scores"', '"_SUCCESS"',
                 'p.startswith("part-")', '"scores/system-x/"', 'rel.startswith("scores/")'):
        tree = ast.parse(path)
        assert any(isinstance(n, ast.Constant) and isinstance(n.value, str) and PATHISH.search(n.value)
                   for n in ast.walk(tree)), path
    for prose in ('"no _SUCCESS written"', '"writing _plan.json"', '"scores"', '"quarantine"', '"stats"'):
        assert not PATHISH.search(ast.literal_eval(prose)), prose
