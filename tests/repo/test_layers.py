"""docs/ARCHITECTURE.md's layering picture is the rule: every import of the package's own code,
at module level or inside a function, goes from a room to a room on a lower line of the picture.
The picture is read from the document, so the two cannot drift apart."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "pipeline"
# ``from pipeline import __version__`` reads a constant of the package's root, not its face
GROUND_NAMES = {"__version__"}


def levels() -> dict[str, int]:
    """``{room: level}`` from the ```` ```layers ```` block of docs/ARCHITECTURE.md (top line highest)."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    block = re.search(r"```layers\n(.*?)```", text, re.S)
    assert block, "docs/ARCHITECTURE.md has no ```layers block"
    lines = [line.split("|")[0].split() for line in block.group(1).splitlines() if line.strip()]
    return {room: len(lines) - i for i, rooms in enumerate(lines) for room in rooms}


def room_of(module: str) -> str:
    """``pipeline.gate.compare`` -> ``gate``; ``pipeline.config`` -> ``config``; ``pipeline`` -> ``pipeline``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "pipeline"


def imports() -> list[tuple[str, str, str]]:
    """``(file:line, from room, to room)`` for every import of the package's own code."""
    out = []
    for path in sorted(PKG.rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "pipeline":
                if node.module == "pipeline":
                    targets = ["ground" if a.name in GROUND_NAMES else f"pipeline.{a.name}" for a in node.names]
                else:
                    targets = [node.module]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.split(".")[0] == "pipeline"]
            else:
                continue
            for target in targets:
                if target == "ground":
                    continue
                # an imported name of the root that is not a module (RougeScorer) is the root's
                to = room_of(target) if (PKG / room_of(target)).exists() or (PKG / f"{room_of(target)}.py").exists() \
                    else "pipeline"
                out.append((f"{path.relative_to(ROOT)}:{node.lineno}", room_of(module), to))
    return out


def test_every_room_of_the_package_is_on_the_picture():
    rooms = {p.stem if p.suffix == ".py" else p.name for p in PKG.iterdir()
             if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())}
    assert rooms | {"pipeline"} == set(levels())


def upward(edges, level) -> list[str]:
    """The imports that do not go down: to a room on the same line or a higher one."""
    return [f"{where}: {a} -> {b}" for where, a, b in edges if a != b and level[b] >= level[a]]


def test_every_import_goes_down_the_picture():
    assert upward(imports(), levels()) == []


def test_the_check_sees_an_upward_or_sideways_import():
    level = levels()
    assert level["cli"] > level["gate"] > level["runfolder"] > level["io"] > level["errors"]
    assert upward([("a.py:1", "io", "gate"), ("b.py:2", "gate", "execution"), ("c.py:3", "gate", "io")], level) == \
        ["a.py:1: io -> gate", "b.py:2: gate -> execution"]
    found = {(a, b) for _, a, b in imports()}
    assert {("cli", "gate"), ("gate", "runfolder"), ("cli", "pipeline")} <= found  # the walk sees imports
