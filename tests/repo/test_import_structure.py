"""Import structure: the circles issue 19 opened stay open (module-level and function-local
imports both count), and validating scoring settings loads no NumPy."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "pipeline"


def _modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        name = ".".join(p.relative_to(ROOT).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = p
    return out


def import_graph(type_checking: bool = False) -> dict[str, set[str]]:
    """module -> the pipeline modules it imports anywhere in its code (``TYPE_CHECKING`` blocks
    left out unless ``type_checking``)."""
    mods = _modules()

    def resolve(name):
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name

    graph = {}
    for m, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = set() if type_checking else {
            id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for n in ast.walk(node)}
        deps = set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pipeline"):
                for a in node.names:  # a submodule itself, else the module the names come from
                    sub = f"{node.module}.{a.name}"
                    deps.add(sub if sub in mods else resolve(node.module))
            elif isinstance(node, ast.Import):
                deps.update(resolve(a.name) for a in node.names if a.name.startswith("pipeline"))
        graph[m] = {d for d in deps if d and d != m}
    return graph


def reaches(graph, start, goal) -> bool:
    seen, todo = set(), [start]
    while todo:
        m = todo.pop()
        if m == goal:
            return True
        if m not in seen:
            seen.add(m)
            todo.extend(graph.get(m, ()))
    return False


def test_the_opened_circles_stay_open():
    g = import_graph()
    # pipeline.job is a package (its __init__ loads names lazily): its scoring module stands for it
    for a, b in [("pipeline.job.scores", "pipeline.rouge155.family"),
                 ("pipeline.text.unicode", "pipeline.text.unicode_scan"),
                 ("pipeline.cli.main", "pipeline.cli.nightly")]:
        assert reaches(g, a, b) and not reaches(g, b, a), (a, b)
    assert not any(reaches(g, "pipeline.rouge155.family", m) for m in g if m.startswith("pipeline.job"))


def _cycles(graph) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


SCORING = ("pipeline.profiles", "pipeline.settings", "pipeline.scorer", "pipeline.scoring", "pipeline.rouge155",
           "pipeline.text", "pipeline.job", "pipeline.signature", "pipeline.config")


def test_no_circle_through_the_scoring_modules():
    """Settings, profiles, the scorer, its engine and kernels, the text layer and the job."""
    for comp in _cycles(import_graph()):
        assert not any(m.startswith(SCORING) for m in comp), sorted(comp)


def test_the_checker_sees_a_function_local_import():
    g = import_graph()
    assert "pipeline.text.unicode_scan" in g["pipeline.text.unicode"]  # imported in encode_batch only
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_validating_scoring_settings_loads_no_numpy():
    code = ("import sys, json; from pipeline.settings import ScoringSettings; "
            "ScoringSettings(profile='unicode', language='de', stemming='snowball', multi_ref='B', "
            "rouge_types=['rouge1', 'rougeW-1.2', 'rougeSU4']); ScoringSettings(); "
            "print(json.dumps([m for m in ('numpy', 'numba', 'pyarrow') if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert json.loads(out.stdout) == []


def test_no_import_circle_at_all():
    """Issue 26: not one circle among the package's modules, type-only imports included."""
    assert _cycles(import_graph(type_checking=True)) == []


def test_the_help_of_every_command_loads_no_numpy_arrow_or_yaml():
    """``rouge-pipeline --help`` and each command's ``--help`` build the whole parser: its defaults come
    from light modules (compare's --min-effect from pipeline.gate's __init__, not from pipeline.config)."""
    code = ("import sys, json\nfrom pipeline.cli.main import main\n"
            "for argv in (['--help'], ['compare', '--help'], ['eval', '--help'], ['score', '--help']):\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "print(json.dumps([m for m in ('numpy', 'pyarrow', 'pandas', 'yaml', 'fsspec', 'dask') if m in sys.modules]),"
            " file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert json.loads(out.stderr.strip().splitlines()[-1]) == []
