"""``rouge-pipeline correlate`` on a run folder made with ``python -m pipeline score ... --sync``:
the judged JSONL itself is the human file, the JSON rows are what pandas reads, the numbers are
scipy's on the run's own scores, and errors are one line with status 2."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from support.storage_servers import cli

scipy_stats = pytest.importorskip("scipy.stats")

WORDS = "the cat sat on a mat while dogs ran around old red barn near green hills".split()


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("corr")
    rng = np.random.default_rng(5)
    lines = []
    for s in range(4):
        for d in range(6):
            ref = " ".join(rng.choice(WORDS, 9))
            cand = " ".join(rng.choice(WORDS, 7))
            lines.append({"id": f"doc{d}", "system": f"sys{s}", "candidate": cand, "references": [ref],
                          "human": {"relevance": [int(rng.integers(1, 6)), int(rng.integers(1, 6))]}})
    path = tmp / "judged.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    out = cli("score", str(path), "-o", str(tmp / "run"), "--sync", "--no-progress")
    assert out.returncode == 0, out.stderr
    return tmp, path, lines


def test_correlate_json_rows_are_scipy_on_the_runs_scores(judged_run):
    tmp, path, lines = judged_run
    out = cli("correlate", str(tmp / "run"), "--human", str(path), "--field", "human.relevance", "--json",
              "--n-boot", "40", "--html", str(tmp / "c.html"))
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    rows = pd.DataFrame(doc["rows"])
    assert set(rows["level"]) == {"summary", "system", "global"}
    assert set(rows["coefficient"]) == {"pearson", "spearman", "kendall"}
    assert len(rows) == rows["type"].nunique() * 3 * 3 * 3
    scores = pd.concat(pd.read_parquet(p) for p in sorted((tmp / "run" / "scores").rglob("*.parquet")))
    human = pd.DataFrame([{"system": r["system"], "id": r["id"], "h": np.mean(r["human"]["relevance"])}
                          for r in lines])
    df = scores.merge(human, on=["system", "id"])
    g = df[np.isfinite(df["rouge1_fmeasure"])]
    want = scipy_stats.kendalltau(g["rouge1_fmeasure"], g["h"])[0]
    row = rows[(rows["type"] == "rouge1") & (rows["stat"] == "fmeasure") & (rows["level"] == "global")
               & (rows["coefficient"] == "kendall")].iloc[0]
    assert row["r"] == want
    assert row["ci_low"] <= row["ci_high"] and row["signature"].startswith("coef:kendall-tau-b|level:global|")
    assert "rouge:" in row["signature"]    # the run's ROUGE signature
    assert (tmp / "c.html").read_text(encoding="utf-8").startswith("<!doctype html>")
    text = cli("correlate", str(tmp / "run"), "--human", str(path), "--field", "human.relevance", "--n-boot", "0",
               "--level", "system", "--coefficient", "kendall", "--compare", "rouge1_recall,rougeL_fmeasure")
    assert text.returncode == 0, text.stderr
    assert "system level, kendall" in text.stdout and "rouge1_recall vs rougeL_fmeasure" in text.stdout


@pytest.mark.parametrize("args, words", [
    (["--field", "human.nothing"], "no record has a number in 'human.nothing'"),
    (["--field", "human.relevance", "--level", "document"], "level document: choose from"),
    (["--field", "human.relevance", "--coefficient", "tau"], "coefficient tau: choose from"),
    (["--field", "human.relevance", "--doc-key", "(x"], "not a regular expression"),
])
def test_errors_are_one_line_with_status_2(judged_run, args, words):
    tmp, path, _ = judged_run
    out = cli("correlate", str(tmp / "run"), "--human", str(path), *args)
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("rouge-pipeline: correlate: ") and words in out.stderr


def test_a_folder_that_is_not_a_finished_run_is_status_2(judged_run):
    tmp, path, _ = judged_run
    out = cli("correlate", str(tmp), "--human", str(path), "--field", "human.relevance")
    assert out.returncode == 2 and out.stderr.startswith("rouge-pipeline: correlate: ") and "finished run" in out.stderr
