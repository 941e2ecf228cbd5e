"""The history a band and a trend use: only runs that began before the new run, each once
(``--history`` and ``--previous`` together, ``report --history``)."""
from __future__ import annotations

import json

import pytest
import yaml

from support.pipeline_corpus import config, write_records
from pipeline.cli import main as cli


@pytest.fixture(scope="module")
def nights(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hist")
    corpus = write_records(tmp / "corpus", 12, bad=False)
    root = tmp / "root"
    for day in ("2026-01-01", "2026-01-02", "2026-01-03"):   # scored in this order
        cfg = tmp / f"{day}.yaml"
        cfg.write_text(yaml.safe_dump(config({"layout": "records", "paths": corpus}, root / day)))
        assert cli.main(["score", "--config", str(cfg), "--no-progress"]) == 0
    return tmp, root


@pytest.mark.parametrize("flags", [["--history", "ROOT"], ["--previous", "--history", "ROOT"],
                                   ["--history", "ROOT", "ROOT/2026-01-01"]])
def test_compare_history_holds_only_earlier_runs_each_once(nights, capsys, flags):
    _, root = nights
    new = str(root / "2026-01-02")
    flags = [f.replace("ROOT", str(root)) for f in flags]
    assert cli.main(["compare", new, *flags, "--json", "--n-boot", "50", "--n-perm", "50"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["url"] for r in doc["trend"]["runs"]] == [str(root / "2026-01-01"), new]
    assert doc["base"] == str(root / "2026-01-01")


def test_report_history_holds_only_earlier_runs(nights, capsys):
    tmp, root = nights
    out = tmp / "r.html"
    assert cli.main(["report", str(root / "2026-01-02"), "--history", str(root), "-o", str(out)]) == 0
    assert "<p>1 earlier runs and the new one" in out.read_text()      # 2026-01-01 only
