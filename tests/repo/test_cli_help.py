"""Every command's ``--help``: every option says what it does, and the help ends with the command's
exit statuses, from the one table (``pipeline.errors.COMMAND_STATUSES``) docs/errors.md lists too."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from pipeline.cli import main as cli
from pipeline.cli import nightly
from pipeline.errors import COMMAND_STATUSES

ROOT = Path(__file__).resolve().parents[2]


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = cli._parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {"": parser, **sub.choices}


def _documented(command: str) -> set[int]:
    """The statuses of docs/errors.md's ``| status of `command` |`` table."""
    doc = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    head = f"| status of `{command}` |"
    assert head in doc, f"docs/errors.md: no table {head}"
    table = doc.split(head, 1)[1].split("\n\n", 1)[0]
    return {int(s) for s in re.findall(r"^\| (\d+) \|", table, re.M)}


@pytest.mark.parametrize("name", sorted(_commands()))
def test_every_option_has_help(name):
    missing = [a.option_strings or a.dest for a in _commands()[name]._actions
               if not isinstance(a, argparse._SubParsersAction) and a.help in (None, "", argparse.SUPPRESS)]
    assert not missing, f"rouge-pipeline {name}: options without help: {missing}"


@pytest.mark.parametrize("name", sorted(_commands()))
def test_every_help_ends_with_the_exit_statuses(name):
    text = _commands()[name].format_help()
    assert "exit status:" in text, name
    tail = re.sub(r"-\s+", "-", " ".join(text.split("exit status:", 1)[1].split()))  # wrapped at hyphens
    for status, meaning in COMMAND_STATUSES.get(name, ()):
        assert f"{status} {meaning}" in tail, (name, status)
    assert name == "" or set(COMMAND_STATUSES) >= {name}, f"{name}: not in pipeline.errors.COMMAND_STATUSES"


@pytest.mark.parametrize("name", sorted(COMMAND_STATUSES))
def test_docs_list_the_same_statuses(name):
    assert _documented(name) == {s for s, _ in COMMAND_STATUSES[name]}


def test_nightly_table_is_nightlys_own():
    assert {s for s, _ in COMMAND_STATUSES["nightly"]} == set(nightly.EXIT_STATUSES.values())
