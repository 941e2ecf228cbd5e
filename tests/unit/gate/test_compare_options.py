"""``compare`` takes its options as a ``CompareOptions`` or as keywords (the CLI's call), with the
same result; the gate's modules define what they export (no stand-in re-exports)."""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pandas as pd
import pytest

from pipeline.gate.compare import CompareOptions, compare
from pipeline.gate.runs import CompareError, RunData

GATE = Path(__file__).resolve().parents[3] / "pipeline" / "gate"


def _run(url: str, shift: float) -> RunData:
    vals = [0.2, 0.3, 0.4, 0.5, 0.35, 0.45, 0.25, 0.55]
    rows = [{"id": f"d{i}", "system": "A", "rouge1_precision": v + shift, "rouge1_recall": v + shift,
             "rouge1_fmeasure": v + shift, "cand_tokens": 10} for i, v in enumerate(vals)]
    info = {"config": {"scoring": {"rouge_types": ["rouge1"]}}, "signature": "rouge:1", "started_at": ""}
    return RunData(url, info, None, {"finished_at": ""}, pd.DataFrame(rows))


def test_options_and_keywords_give_the_same_comparison():
    base, new = _run("b", 0.0), _run("n", 0.03)
    kw = dict(band=0.01, n_boot=200, n_perm=200, texts=False, seed=7)
    assert compare(base, new, CompareOptions(**kw)) == compare(base, new, **kw)
    # keywords win over the options object
    moved = compare(base, new, CompareOptions(band=0.5, n_boot=200, n_perm=200, texts=False), band=0.01)
    assert moved["verdict"] == "moved" and moved["band"]["band"] == 0.01
    with pytest.raises(CompareError, match="band must be >= 0"):
        compare(base, new, band=-1)
    with pytest.raises(TypeError):
        compare(base, new, bandwidth=0.1)


def test_the_gate_modules_export_only_their_own_names():
    for path in sorted(GATE.glob("*.py")):
        mod = importlib.import_module(f"pipeline.gate.{path.stem}" if path.stem != "__init__" else "pipeline.gate")
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            assert getattr(obj, "__module__", mod.__name__) == mod.__name__, (path.name, name)


def test_no_gate_function_is_over_80_lines():
    for path in sorted(GATE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.end_lineno - node.lineno < 80, (path.name, node.name)


@pytest.mark.parametrize("band", ["nan", "inf", "-inf", "-0.01"])
def test_compare_refuses_a_band_that_is_not_a_finite_number_at_least_0(band, tmp_path, capsys):
    """``--band nan`` never alarmed (``|delta| > nan`` is False): refused in one line, status 2,
    before any run is read; ``compare()`` refuses it too."""
    from pipeline.cli import main as cli

    assert cli.main(["compare", str(tmp_path / "base"), str(tmp_path / "new"), f"--band={band}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--band must be a finite number >= 0" in err[0], err
    with pytest.raises(CompareError, match="band must be"):
        compare(_run("b", 0.0), _run("n", 0.03), band=float(band), texts=False)
