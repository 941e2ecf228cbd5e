"""A fresh clone has no ../shared: its tests skip with one reason that says how to run them, and
CI (``ROUGE_PIPELINE_REQUIRE_SHARED=1``, set by .ci/run) turns the missing folder into an error."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).parents[2]


def _pytest(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    # test_seeds needs shared/seeds only, and test_io's real-data test shared/data
    cmd = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
           "tests/conformance/test_seeds.py", "tests/unit/io/test_io.py::test_real_multi_reference_duc2004"]
    full = {k: v for k, v in os.environ.items() if not k.startswith("ROUGE_PIPELINE_")}
    full.update(env)
    return subprocess.run(cmd, cwd=REPO, env=full, capture_output=True, text=True, timeout=300)


def test_missing_shared_folder_skips_with_how_to_enable(tmp_path):
    out = _pytest(tmp_path, ROUGE_PIPELINE_SHARED=str(tmp_path))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    skips = [line for line in out.stdout.splitlines() if line.startswith("SKIPPED")]
    assert skips and all("set ROUGE_PIPELINE_SHARED=/path/to/shared to run" in s for s in skips), out.stdout
    assert any("needs ../shared/seeds" in s for s in skips) and any("needs ../shared/data" in s for s in skips)


def test_required_shared_folder_missing_is_an_error(tmp_path):
    out = _pytest(tmp_path, ROUGE_PIPELINE_SHARED=str(tmp_path), ROUGE_PIPELINE_REQUIRE_SHARED="1")
    assert out.returncode not in (0, 5), out.stdout[-3000:]
    assert "ROUGE_PIPELINE_REQUIRE_SHARED is set but the shared test material is missing" in out.stderr + out.stdout


def test_ci_requires_the_shared_folder():
    lines = (REPO / ".ci" / "run").read_text().splitlines()
    exported = next(i for i, line in enumerate(lines) if line.strip() == "export ROUGE_PIPELINE_REQUIRE_SHARED=1")
    assert exported < next(i for i, line in enumerate(lines) if line.strip() == "pytest")


def test_only_the_helper_knows_where_the_shared_folder_is():
    """A test that builds its own path to the shared folder would skip (or fail) its own way;
    tests/support/shared.py is the one place (its DATA, SEEDS, needs_data, needs_seeds, fixtures)."""
    pattern = re.compile(r"""/\s*["']shared["']|["']\.\./shared""")
    own = [p.name for p in sorted((REPO / "tests").rglob("*.py"))
           if p.relative_to(REPO).as_posix() != "tests/support/shared.py" and p != Path(__file__)
           and pattern.search(p.read_text(encoding="utf-8"))]
    assert own == []
