"""Issue 26's rules for the package's code, read from its source: no function over 80 lines
outside the numba kernels, and every import of the package's own modules inside a function
says in a comment why it is not at the top (start-up time, numba, an optional package)."""
from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "pipeline"
MAX_LINES = 80


def _trees():
    for path in sorted(PKG.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        yield path.relative_to(PKG.parent), text.splitlines(), ast.parse(text)


def _is_kernel(fn: ast.FunctionDef) -> bool:
    """numba-compiled (``@njit``, ``@numba.njit(...)``, ``@jit``...): one loop nest is clearer than calls there."""
    return any("jit" in ast.unparse(d) for d in fn.decorator_list)


def long_functions() -> list[str]:
    out = []
    for rel, _, tree in _trees():
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _is_kernel(fn):
                first = min([fn.lineno] + [d.lineno for d in fn.decorator_list])
                if fn.end_lineno - first + 1 > MAX_LINES:
                    out.append(f"{rel}:{fn.lineno} {fn.name} ({fn.end_lineno - first + 1} lines)")
    return out


def _own_module(node) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").split(".")[0] == "pipeline"
    return isinstance(node, ast.Import) and any(a.name.split(".")[0] == "pipeline" for a in node.names)


def _has_reason(lines: list[str], node) -> bool:
    """A comment on the import's own lines, or on the lines just above it (a comment may head a
    group of imports: it covers the imports that follow it without a blank line)."""
    if any("#" in lines[i] for i in range(node.lineno - 1, node.end_lineno)):
        return True
    i = node.lineno - 2
    while i >= 0:
        text = lines[i].strip()
        if text.startswith("#"):
            return True
        if not text.startswith(("from ", "import ")) and not text.endswith((",", "(")) and text != ")":
            return False
        i -= 1
    return False


def unexplained_local_imports() -> list[str]:
    out = []
    for rel, lines, tree in _trees():
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if _own_module(node) and not _has_reason(lines, node):
                    out.append(f"{rel}:{node.lineno} {lines[node.lineno - 1].strip()}")
    return sorted(set(out))


def test_no_function_over_80_lines_outside_the_numba_kernels():
    assert long_functions() == []


def test_every_function_local_import_of_our_own_code_says_why():
    assert unexplained_local_imports() == []


def test_the_checks_see_what_they_look_for(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    tree = ast.parse(f"def f():\n{body}\n\n@njit\ndef k():\n{body}\n")
    f, k = tree.body
    assert f.end_lineno - f.lineno + 1 > MAX_LINES and not _is_kernel(f) and _is_kernel(k)
    src = ["def g():", "    from pipeline import io", "    # numba: loaded on first use", "    from pipeline import stats",
           "    from pipeline import text"]
    imports = [n for n in ast.walk(ast.parse("\n".join(src))) if isinstance(n, ast.ImportFrom)]
    assert [_has_reason(src, n) for n in imports] == [False, True, True]
