"""The gate's shell wrapper names compare's exit statuses with the gate's own verdicts."""
from __future__ import annotations

from pathlib import Path

from pipeline.gate.control import EXIT_STATUS

REPO = Path(__file__).resolve().parents[2]


def test_compare_previous_names_each_status_by_its_verdict():
    text = (REPO / "jobs" / "compare_previous.sh").read_text(encoding="utf-8")
    comment = " ".join(line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#"))
    for verdict, status in EXIT_STATUS.items():
        assert f"{status} {verdict}" in comment, (status, verdict)
    assert "inside the band" not in comment    # the fixed band is one band of four, and 0 is "no change"
