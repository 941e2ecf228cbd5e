"""Issue 27, items 3 and 6: every statistic is read on the compared examples (ids only in the new
run never dilute a regression), and the base is the latest in-control run of the new run's own
settings (a reverted setting compares with the last run of its settings); accepting a change.
Both the extra-ids and the revert test fail on main before issue 27 (the value held against the
band was the mean over every example of the new run; the base was the latest run whatever its
settings)."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from support.newsroom_runs import records, score, write
from support.shared import DATA_REASON, HAVE_DATA
from pipeline.cli import main as cli
from pipeline.gate.compare import compare
from pipeline.gate.runs import RunData

SIG = "rouge:1|tok:default|seed:12345"
N_EX = 40
BIG = [0.2 + 0.5 * ((7 * j) % 11) / 11 for j in range(N_EX)]


def run_of(url, f, ids=None, time=""):
    rows = [{"id": (ids or [f"d{j}" for j in range(len(f))])[i], "system": "A", "rouge1_precision": v,
             "rouge1_recall": v, "rouge1_fmeasure": v, "cand_tokens": 10} for i, v in enumerate(f)]
    info = {"config": {"scoring": {"rouge_types": ["rouge1"]}}, "signature": SIG, "started_at": time}
    return RunData(url, info, None, {"finished_at": time}, pd.DataFrame(rows))


def test_extra_ids_in_the_new_run_do_not_hide_a_regression():
    hist = []
    for j in range(7):   # in-control nights: one example moves a little each night
        f = list(BIG)
        f[(5 * j) % N_EX] += 0.1 if j % 2 else -0.1
        hist.append(run_of(f"h{j}", f, time=f"2026-08-{10 + j:02d}"))
    centre = sum(BIG) / N_EX
    bad = [v - 0.3 if j % 4 == 0 else v for j, v in enumerate(BIG)]          # 10 of 40 truncated: -0.075
    extra = [centre + 0.15] * 20                                              # 20 new ids, above the mean
    new = run_of("n", bad + extra, ids=[f"d{j}" for j in range(N_EX)] + [f"new{j}" for j in range(20)])
    assert abs(new.means()[("A", "rouge1")] - centre) < 1e-9                  # the whole run's mean: unmoved
    res = compare(hist[-1], new, history=hist, n_boot=200, n_perm=200, texts=False)
    (row,) = [r for r in res["rows"] if r["stat"] == "fmeasure"]
    assert res["verdict"] == "moved" and row["status"] == "moved down", res["reasons"]
    assert row["n"] == N_EX and abs(row["new"] - (centre - 0.075)) < 1e-9     # held: the compared examples
    assert res["only_in_one"][0]["n_only_new"] == 20


@pytest.fixture(scope="module")
def nights(tmp_path_factory):
    """Four small nightly runs: settings A, A, B (stemmer on), A again (the revert)."""
    if not HAVE_DATA:
        pytest.skip(DATA_REASON)
    root = tmp_path_factory.mktemp("revert")
    docs = sorted({r["doc_id"] for r in records()})[:12]
    recs = [r for r in records() if r["system"] in ("lede3", "textrank") and r["doc_id"] in docs]
    inp = write(root / "in.jsonl", recs)
    for day, stem in (("01", "false"), ("02", "false"), ("03", "true"), ("04", "false")):
        score(inp, root / "nightly" / f"2026-01-{day}", f"scoring.use_stemmer={stem}")
    return root / "nightly"


FLAGS = ["--n-boot", "100", "--n-perm", "100"]


def test_a_reverted_setting_compares_with_the_last_run_of_its_own_settings(nights, capsys):
    assert cli.main(["compare", str(nights / "2026-01-02"), "--previous", *FLAGS]) == 0
    assert cli.main(["compare", str(nights / "2026-01-03"), "--previous", *FLAGS]) == 3   # the change: loud
    capsys.readouterr()
    assert cli.main(["compare", str(nights / "2026-01-04"), "--previous", "--json", *FLAGS]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["base"] == str(nights / "2026-01-02") and doc["verdict"] == "no change"
    assert any("2026-01-03 (not comparable)" in n for n in doc["notes"]), doc["notes"]
    gate = json.loads((nights / "2026-01-03" / "_gate.json").read_text())
    assert gate["verdict"] == "not comparable" and gate["false_alarm_rate"] is None   # no row judged


def test_accepting_a_change_starts_a_new_history(nights, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("USER", "ana")
    assert cli.main(["accept", str(nights / "2026-01-03"), "--reason", "stemming on purpose"]) == 0
    rec = json.loads((nights / "2026-01-03" / "_accepted.json").read_text())
    assert rec["by"] == "ana" and rec["reason"] == "stemming on purpose" and rec["at"]
    assert "accepted" in capsys.readouterr().out
    # the revert night now compares with the accepted run (other settings: loud), never with 01-02
    assert cli.main(["compare", str(nights / "2026-01-04"), "--previous", "--json", *FLAGS]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["base"] == str(nights / "2026-01-03")
    assert any("accepted by ana" in n for n in doc["notes"]) and doc["accepted"][0]["reason"] == "stemming on purpose"
    html = tmp_path / "r.html"
    assert cli.main(["report", str(nights / "2026-01-03"), "-o", str(html)]) == 0
    assert "Accepted by ana" in html.read_text() and "stemming on purpose" in html.read_text()
    assert cli.main(["accept", str(nights / "2026-01-03"), "--reason", " "]) == 2
    capsys.readouterr()
    assert cli.main(["compare", str(nights / "2026-01-04"), "--baseline", str(nights / "2026-01-01"),
                     "--previous", "--json", *FLAGS]) == 0
    assert json.loads(capsys.readouterr().out)["base"] == str(nights / "2026-01-01")


def test_a_noisy_night_without_history_is_inconclusive_exit_4(nights, tmp_path, capsys):
    """Four verdicts through the command: two runs whose outputs differ a little (two outputs
    swapped) and no history: nothing moved, but a move of min_effect could have gone unseen."""
    recs = [json.loads(line) for line in (nights.parent / "in.jsonl").read_text().splitlines()]
    lede = [r for r in recs if r["system"] == "lede3"]
    lede[0]["candidate"], lede[1]["candidate"] = lede[1]["candidate"], lede[0]["candidate"]
    new = score(write(tmp_path / "n.jsonl", recs), tmp_path / "noisy")
    assert cli.main(["compare", str(nights / "2026-01-01"), str(new), *FLAGS]) == 4
    out = capsys.readouterr()
    assert "INCONCLUSIVE" in out.out and "detect" in out.out and "inconclusive" in out.err
    assert not (new / "_gate.json").exists()     # an ad-hoc BASE NEW is not the run's gate
    assert cli.main(["compare", str(nights / "2026-01-01"), str(new), "--record", *FLAGS]) == 4
    capsys.readouterr()
    assert json.loads((new / "_gate.json").read_text())["verdict"] == "inconclusive"
    assert cli.main(["compare", str(nights / "2026-01-01"), str(new), "--no-record", "--min-effect", "0.5",
                     *FLAGS]) == 0
