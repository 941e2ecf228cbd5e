"""``rouge-pipeline compare`` on real data (shared/data/newsroom, scored in sync mode): the
same outputs twice are "no change" (exit 0); injected truncation, a duplicated header line
and padding raise the alarm (exit 1) and are the examples listed first."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.newsroom_runs import HEADER, injected, records, score, write
from pipeline.cli import main as cli
from pipeline.gate.compare import compare
from pipeline.gate.runs import load_run

REPO = Path(__file__).parents[3]
FAST = dict(n_boot=500, n_perm=500)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("newsroom")
    recs = records()
    base = write(root / "in" / "base.jsonl", recs)
    out = {"base": score(base, root / "base"), "again": score(base, root / "again"), "ids": {}}
    for kind in ("truncation", "header", "padding"):
        bad, ids = injected(recs, kind)
        out[kind] = score(write(root / "in" / f"{kind}.jsonl", bad), root / kind)
        out["ids"][kind] = ids
    # one id dropped, one new id, one system gone
    fewer = [r for r in recs if r["id"] != recs[0]["id"] and r["system"] != "textrank"]
    fewer.append({**fewer[1], "id": "newsroom:new:extra"})
    out["fewer"] = score(write(root / "in" / "fewer.jsonl", fewer), root / "fewer")
    out["root"] = root
    return out


def test_same_data_twice_is_no_change(runs, capsys):
    assert (runs["base"] / "_SUCCESS").exists() and (runs["again"] / "_SUCCESS").exists()
    res = compare(load_run(str(runs["base"])), load_run(str(runs["again"])), **FAST)
    assert res["moved"] is False and res["reasons"] == [] and res["movers"] == []
    assert res["n_changed_examples"] == 0 and res["only_in_one"] == [] and res["same_signature"]
    f_rows = [r for r in res["rows"] if r["stat"] == "fmeasure"]
    assert len(f_rows) == 7 * 4 and all(r["n"] == 60 for r in f_rows)
    assert all(r["delta"] == 0.0 and r["ci_low"] == 0.0 and r["ci_high"] == 0.0 and r["p_value"] == 1.0
               for r in res["rows"])
    # the CLI: exit 0, a table and the verdict
    assert cli.main(["compare", str(runs["base"]), str(runs["again"]), "--n-boot", "200", "--n-perm", "200"]) == 0
    out = capsys.readouterr().out
    assert "no change: inside the band" in out and "lede3" in out and "bootstrap band" in out


@pytest.mark.parametrize("kind", ["truncation", "header", "padding"])
def test_injected_regressions_alarm_and_come_first(runs, kind):
    base, new = load_run(str(runs["base"])), load_run(str(runs[kind]))
    res = compare(base, new, top=15, **FAST)
    ids = runs["ids"][kind]
    assert res["moved"] is True, res["reasons"]
    alarms = [r for r in res["rows"] if r["alarm"]]
    assert alarms and all(r["stat"] == "fmeasure" and r["status"] == "moved down" for r in alarms)
    assert all(r["ci_high"] < 0 for r in alarms) and min(r["p_value"] for r in alarms) < 0.05
    # only injected examples changed, so the movers are exactly those, the largest first
    assert res["n_changed_examples"] <= len(ids)
    assert len(res["movers"]) == 15 and {m["id"] for m in res["movers"]} <= ids
    mags = [m["max_abs_delta_f"] for m in res["movers"]]
    assert mags == sorted(mags, reverse=True) and mags[0] > 0.1
    # with their texts, read back from each run's input, so a person can read them
    top = res["movers"][0]
    assert res["texts_error"] is None and top["base_candidate"] and top["new_candidate"] and top["references"]
    if kind == "truncation":
        assert len(top["new_candidate"].split()) < len(top["base_candidate"].split())
        assert top["cand_tokens"][1] < top["cand_tokens"][0]
    elif kind == "header":
        assert top["new_candidate"].startswith(f"{HEADER}\n{HEADER}\n")
    else:
        assert top["new_candidate"].startswith(top["base_candidate"]) and "Click here" in top["new_candidate"]
    if kind in ("header", "padding"):       # the diagnostics see the repetition
        rep = [m["diagnostics"]["diag_repeat_3gram"] for m in res["movers"]]
        assert all(n > (b or 0) for b, n in rep)


def test_fixed_band_and_cli_json_html_exit_1(runs, tmp_path):
    res = compare(load_run(str(runs["base"])), load_run(str(runs["truncation"])), band=0.005, **FAST)
    assert res["moved"] and res["band"]["mode"] == "fixed"
    assert all(abs(r["delta"]) > 0.005 for r in res["rows"] if r["alarm"])
    huge = compare(load_run(str(runs["base"])), load_run(str(runs["truncation"])), band=0.9, texts=False, **FAST)
    assert not huge["moved"]
    # the real console script, in a subprocess: exit 1, JSON on stdout, the HTML file written
    html = tmp_path / "cmp.html"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    r = subprocess.run([sys.executable, "-m", "pipeline", "compare", str(runs["base"]), str(runs["truncation"]),
                        "--json", "--html", str(html), "--n-boot", "300", "--n-perm", "300"],
                       capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["moved"] and doc["movers"][0]["id"] in runs["ids"]["truncation"]
    assert html.exists() and "MOVED" in html.read_text()


def test_ids_in_one_run_only_and_errors(runs, capsys):
    res = compare(load_run(str(runs["base"])), load_run(str(runs["fewer"])), **FAST)
    only = {o["system"]: o for o in res["only_in_one"]}
    assert only["textrank"]["system_missing"] and only["textrank"]["only_in"] == "base"
    first = records()[0]
    s = only[first["system"]]
    assert s["only_base"] == [first["id"]] and s["n_only_base"] == 1
    extra_sys = [r for r in records() if r["id"] != first["id"] and r["system"] != "textrank"][1]["system"]
    assert "newsroom:new:extra" in only[extra_sys]["only_new"]
    assert res["verdict"] == "not comparable" and any("textrank" in r for r in res["not_comparable"])
    assert cli.main(["compare", str(runs["base"]), str(runs["fewer"]), "--n-boot", "100", "--n-perm", "100"]) == 3
    out = capsys.readouterr().out
    assert "1 ids only in base" in out and "only in the base run" in out and "NOT COMPARABLE" in out
    # errors: exit 2
    assert cli.main(["compare", str(runs["base"]), str(runs["root"] / "missing")]) == 2
    assert "not a finished run" in capsys.readouterr().err
    assert cli.main(["compare", str(runs["base"]), str(runs["again"]), "--band", "-1"]) == 2
