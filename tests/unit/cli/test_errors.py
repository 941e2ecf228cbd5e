"""The errors a command maps to an exit status: each is a ``pipeline.errors.PipelineError``
defined in ``pipeline/errors.py`` only, with the status (and builtin base) docs/errors.md lists
for it, and ``failure()`` gives that status; the old import paths still reach the same classes."""
from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import errors
from pipeline.cli.main import failure

ROOT = Path(__file__).resolve().parents[3]
PKG = ROOT / "pipeline"
ROW = re.compile(r"^\| `(\w+)` \((ValueError|RuntimeError|KeyError)\) \| (\d+) \|", re.M)
BUILTINS = {"ValueError": ValueError, "RuntimeError": RuntimeError, "KeyError": KeyError}
SUMMARY = {"rows": 0, "quarantined": 2, "quarantined_by_reason": {"null candidate": 2}, "systems": [""], "tasks": 1}


def documented() -> dict[str, tuple[str, int]]:
    """``{error: (builtin base, status)}`` from docs/errors.md's table of the errors."""
    rows = ROW.findall((ROOT / "docs" / "errors.md").read_text(encoding="utf-8"))
    assert rows, "docs/errors.md: no table of the errors"
    return {name: (base, int(status)) for name, base, status in rows}


def error_classes() -> dict[str, type]:
    return {name: c for name, c in vars(errors).items()
            if isinstance(c, type) and issubclass(c, errors.PipelineError) and not name.startswith("_")
            and c is not errors.PipelineError}


def instance(cls: type) -> BaseException:
    if cls in (errors.StrictModeError, errors.NoRowsError):
        return cls("a message", SUMMARY)
    return cls("a message")


def test_every_error_is_documented_with_its_status_and_base():
    doc, classes = documented(), error_classes()
    assert sorted(classes) == sorted(doc)
    for name, cls in classes.items():
        base, status = doc[name]
        assert cls.status == status, name
        assert issubclass(cls, BUILTINS[base]), name  # what code catches it by


@pytest.mark.parametrize("name", sorted(documented()))
def test_failure_gives_the_documented_status(name):
    cls = getattr(errors, name)
    for command in ("score", "compare"):
        status, line = failure(instance(cls), command)
        assert status == documented()[name][1], (name, command, line)
        assert "a message" in line and "\n" not in line


def test_the_lines_of_score_are_unchanged():
    assert failure(errors.ConfigError("x: bad"))[1] == "configuration error: x: bad"
    assert failure(errors.RunFailedError("task 3 failed"))[1] == "run failed: task 3 failed"
    assert failure(errors.NoRowsError("runs/x: empty", SUMMARY))[1] == "no row scored: runs/x: empty"
    assert failure(errors.RunFolderError("runs/x holds files"))[1] == "runs/x holds files"
    assert failure(errors.RunFolderBusyError("runs/x: in use"))[1] == "runs/x: in use"
    assert failure(errors.UnreadableFileError("a.gz: cannot read the file"))[1] == "error: a.gz: cannot read the file"
    strict = failure(errors.StrictModeError("strict: 2 record(s) quarantined", SUMMARY))
    assert strict == (3, "strict: 2 record(s) quarantined (rows 0, quarantined 2 (null candidate: 2), systems 1, "
                         "tasks 1, 0.0s, 0 pairs/s)")
    assert failure(RuntimeError("boom")) == (1, "unexpected error: RuntimeError: boom (rerun with --debug for the "
                                                "traceback)")
    assert failure(RuntimeError("boom"), "compare")[0] == 2
    assert failure(KeyboardInterrupt()) == (130, "interrupted; rerun the same command to resume")


def _base_names(node: ast.ClassDef) -> set[str]:
    return {b.id if isinstance(b, ast.Name) else b.attr for b in node.bases if isinstance(b, (ast.Name, ast.Attribute))}


def test_no_error_class_is_defined_outside_errors_py():
    """Neither a subclass of the base (or of one of its errors) nor a second class of the same
    name (which would shadow the one in errors.py) lives anywhere else in the package."""
    names = {"PipelineError", *error_classes()}
    stray = []
    for path in sorted(PKG.rglob("*.py")):
        if path == PKG / "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and (node.name in names or _base_names(node) & names):
                stray.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert stray == []


def test_the_old_import_paths_reach_the_same_classes():
    from pipeline.checks import ConfigError as checks_config
    from pipeline.cli.eval import EvalError
    from pipeline.config import ConfigError
    from pipeline.execution.cluster import WorkerEnvironmentError
    from pipeline.execution.driver import NoRowsError, RunFailedError, RunFolderBusyError, RunFolderError, StrictModeError
    from pipeline.gate.compare import CompareError
    from pipeline.gate.runs import CompareError as runs_compare
    from pipeline.io.input_spec import UnreadableFileError
    from pipeline.runfolder import OldLayoutError
    from pipeline.runfolder.lease import RunFolderBusyError as lease_busy

    old = [ConfigError, checks_config, EvalError, WorkerEnvironmentError, NoRowsError, RunFailedError,
           RunFolderBusyError, RunFolderError, StrictModeError, CompareError, runs_compare, UnreadableFileError,
           OldLayoutError, lease_busy]
    assert all(c is getattr(errors, c.__name__) for c in old)


def test_errors_is_the_ground_floor():
    tree = ast.parse((PKG / "errors.py").read_text(encoding="utf-8"))
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)] + \
               [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m.startswith("pipeline")]


def test_importing_the_commands_loads_no_heavy_package():
    """The reason the commands' function-local imports give (start-up)."""
    code = ("import sys, json, pipeline.cli.main; print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'numpy', 'pyarrow', 'pandas', 'numba', 'dask', 'distributed', 'fsspec', 'yaml'})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert json.loads(out.stdout) == []


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_works_before_or_after_the_command(where, tmp_path, capsys, monkeypatch):
    """The failure line says "rerun with --debug": given after the command, as a user adds it, it
    prints the traceback too (it was refused as an unknown argument)."""
    from pipeline.cli.main import DEBUG_ENV, main

    monkeypatch.delenv(DEBUG_ENV, raising=False)
    args = ["score", str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "run")]
    status = main(["--debug"] + args if where == "before" else args + ["--debug"])
    err = capsys.readouterr().err
    assert status == 2 and "Traceback" in err and err.rstrip().splitlines()[-1].startswith("rouge-pipeline: ")
    assert main(args) == 2 and "Traceback" not in capsys.readouterr().err
