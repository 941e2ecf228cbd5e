"""Issue 26: meaning defined once.  The stats names, the default rouge types, the default seed,
the multi-reference rule names, the example key's separator and the pattern of a rouge type name
each have one defining module; anywhere else in the package a literal copy of one is a stray
(read from the source's syntax tree: comments and escaped text in docstrings do not count)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from pipeline.scoring.family_types import MULTI_REF_NAMES
from pipeline.scoring.types import DEFAULT_TYPES, STATS
from pipeline.stats.keys import DEFAULT_SEED, KEY_SEPARATOR

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "pipeline"
TYPES, FAMILY, KEYS = "pipeline/scoring/types.py", "pipeline/scoring/family_types.py", "pipeline/stats/keys.py"
# a regular expression of type names: "rouge" then a class, a group or \d (not a file name like rouge155_corpus)
_TYPE_PATTERN = re.compile(r"rouge(?:[\[(]|\\d)")
_RE_FUNCTIONS = {"compile", "match", "fullmatch", "search", "findall", "finditer", "sub", "subn", "split"}


def _strings(node) -> list | None:
    """The str items of a tuple, list or set display (None if it is not one, or holds anything else)."""
    if not isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return None
    items = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return items if len(items) == len(node.elts) else None


def findings(tree: ast.AST) -> list[tuple[str, int]]:
    """``(what, line)`` of every literal copy of a shared definition in ``tree``."""
    out = []
    for node in ast.walk(tree):
        items = _strings(node)
        if items is not None and tuple(items) == STATS:
            out.append(("STATS", node.lineno))
        if items is not None and tuple(items) == DEFAULT_TYPES:
            out.append(("DEFAULT_TYPES", node.lineno))
        if items is not None and len(items) >= 3 and set(items) <= set(MULTI_REF_NAMES):
            out.append(("MULTI_REF_NAMES", node.lineno))
        if isinstance(node, ast.Dict) and set(MULTI_REF_NAMES) <= {
                k.value for k in node.keys if isinstance(k, ast.Constant)}:
            out.append(("MULTI_REF_NAMES", node.lineno))
        if isinstance(node, ast.Constant) and type(node.value) is int and node.value == DEFAULT_SEED:
            out.append(("DEFAULT_SEED", node.lineno))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and KEY_SEPARATOR in node.value:
            out.append(("KEY_SEPARATOR", node.lineno))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in _RE_FUNCTIONS and isinstance(node.func.value, ast.Name)
                and node.func.value.id in ("re", "regex") and node.args
                and isinstance(node.args[0], ast.Constant) and _TYPE_PATTERN.search(str(node.args[0].value))):
            out.append(("TYPE_NAME", node.lineno))
    return out


def strays(pkg: Path = PKG) -> list[str]:
    """Every finding outside its defining module, as ``path:line what``."""
    home = {"STATS": TYPES, "DEFAULT_TYPES": TYPES, "TYPE_NAME": TYPES, "MULTI_REF_NAMES": FAMILY,
            "DEFAULT_SEED": KEYS, "KEY_SEPARATOR": KEYS}
    out = []
    for path in sorted(pkg.rglob("*.py")):
        rel = path.relative_to(pkg.parent).as_posix()
        for what, line in findings(ast.parse(path.read_text(encoding="utf-8"))):
            if home[what] != rel:
                out.append(f"{rel}:{line} {what}")
    return out


def test_each_shared_name_is_defined_once():
    assert strays() == []


def test_the_defining_modules_hold_each_one_once():
    found = {rel: sorted(what for what, _ in findings(ast.parse((ROOT / rel).read_text(encoding="utf-8"))))
             for rel in (TYPES, FAMILY, KEYS)}
    assert found == {TYPES: ["DEFAULT_TYPES", "STATS", "TYPE_NAME"], FAMILY: ["MULTI_REF_NAMES"],
                     KEYS: ["DEFAULT_SEED", "KEY_SEPARATOR"]}


def test_the_check_sees_each_kind_of_copy():
    src = '''
import re
a = ["precision", "recall", "fmeasure"]
b = ("rouge1", "rouge2", "rougeL", "rougeLsum")
c = {"A", "B", "mean"}
d = {"max_f": 1, "pooled": 2, "A": 2, "best_recall": 3, "B": 3, "mean": 4}
def f(seed: int = 12345):
    return f"{seed}\\x1f{a}"
e = re.compile(r"rouge[0-9]$")
ok = ("precision", "fmeasure"), {"A": 0, "B": 1, "max_f": 2, "mean": 3}, 123456, "\\\\x1f", re.compile("rouge155_x")
'''
    assert [what for what, _ in sorted(findings(ast.parse(src)), key=lambda f: f[1])] == [
        "STATS", "DEFAULT_TYPES", "MULTI_REF_NAMES", "MULTI_REF_NAMES", "DEFAULT_SEED", "KEY_SEPARATOR", "TYPE_NAME"]
