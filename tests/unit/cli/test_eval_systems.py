"""``rouge-pipeline eval`` on records of several systems: per system, or a one-line error; never
one number pooled over systems.  Expected numbers come from rouge-score on each system's records."""
from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
from rouge_score import rouge_scorer, scoring

from pipeline.cli import main as cli
from pipeline.errors import EXIT_CONFIG, EXIT_OK

SAMPLE = Path(__file__).resolve().parents[3] / "configs" / "sample" / "part-0.jsonl"
TYPES = ["rouge1", "rougeL"]


def _main(argv, capsys):
    rc = cli.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def _expected(records, seed=12345):
    """{system: ({type: (mean P, R, F)}, {type: AggregateScore})} of rouge-score."""
    sc = rouge_scorer.RougeScorer(TYPES)
    out = {}
    for name in sorted({r["system"] for r in records}):
        per = [sc.score_multi(r["references"], r["candidate"]) for r in records if r["system"] == name]
        agg = scoring.BootstrapAggregator()
        for p in per:
            agg.add_scores(p)
        np.random.seed(seed)
        means = {t: tuple(math.fsum(p[t][k] for p in per) / len(per) for k in range(3)) for t in TYPES}
        out[name] = (means, agg.aggregate(), len(per))
    return out


def _two_models(tmp_path, n=30):
    """doc_id, model, prediction, target: two models over the same documents (the issue's file)."""
    rows = [{"doc_id": f"d{i}", "model": m, "prediction": f"the cat {i} sat {'on the mat' if m == 'b' else ''}",
             "target": f"the cat {i} sat on the mat"} for m in ("a", "b") for i in range(n)]
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path, rows


def test_the_readme_sample_is_reported_per_system(capsys):
    records = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    want = _expected(records)
    rc, out, err = _main(["eval", "-i", str(SAMPLE), "-t", ",".join(TYPES), "-f", "json"], capsys)
    assert rc == EXIT_OK, err
    doc = json.loads(out)
    assert doc["systems"] == {"abstractive": 50, "lead": 50}
    for row in doc["rows"]:
        means, agg, n = want[row["system"]]
        k = ("precision", "recall", "fmeasure").index(row["stat"])
        assert row["count"] == n == 50 and row["mean"] == means[row["type"]][k]
        a = agg[row["type"]]
        assert (row["ci_low"], row["ci_mid"], row["ci_high"]) == (a.low[k], a.mid[k], a.high[k])
    assert len(doc["rows"]) == 2 * len(TYPES) * 3
    rc, out, err = _main(["eval", "-i", str(SAMPLE), "-t", ",".join(TYPES)], capsys)
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["system", "type"]
    table = {(ln.split()[0], ln.split()[1]): ln.split() for ln in lines[2:-1]}
    assert set(table) == {(s, t) for s in want for t in TYPES}
    for (s, t), cells in table.items():
        assert cells[2] == "50" and cells[5] == f"{want[s][0][t][2]:.4f}"
    rc, out, err = _main(["eval", "-i", str(SAMPLE), "-t", "rouge1", "-f", "csv"], capsys)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert {r["system"] for r in rows} == {"abstractive", "lead"} and len(rows) == 6


def test_system_field_is_mapped_like_the_other_fields(tmp_path, capsys):
    path, rows = _two_models(tmp_path)
    base = ["eval", "-i", str(path), "--candidate-field", "prediction", "--references-field", "target",
            "--id-field", "doc_id", "-t", ",".join(TYPES), "-f", "json"]
    rc, out, err = _main(base + ["--system-field", "model"], capsys)
    assert rc == EXIT_OK, err
    want = _expected([{"system": r["model"], "candidate": r["prediction"], "references": [r["target"]]}
                      for r in rows])
    doc = json.loads(out)
    assert doc["systems"] == {"a": 30, "b": 30}
    for row in doc["rows"]:
        k = ("precision", "recall", "fmeasure").index(row["stat"])
        assert row["mean"] == want[row["system"]][0][row["type"]][k]


def test_several_systems_in_an_unnamed_field_are_a_one_line_error(tmp_path, capsys):
    path, _ = _two_models(tmp_path)
    base = ["eval", "-i", str(path), "--candidate-field", "prediction", "--references-field", "target"]
    for extra in ([], ["--id-field", "doc_id"]):
        rc, out, err = _main(base + extra, capsys)
        assert rc == EXIT_CONFIG and out == ""
        assert err.count("\n") == 1 and "2 systems in field 'model'" in err and "--system-field model" in err
    # turned down on purpose: the repeated ids are still an error, counted
    rc, out, err = _main(base + ["--id-field", "doc_id", "--system-field", ""], capsys)
    assert rc == EXIT_CONFIG and out == "" and err.count("\n") == 1 and "30 repeated id(s)" in err
    # and without ids, the pool is what was asked for
    rc, out, err = _main(base + ["--id-field", "", "--system-field", "", "-t", "rouge1"], capsys)
    assert rc == EXIT_OK and out.splitlines()[2].split()[:2] == ["rouge1", "60"]


def test_repeated_ids_are_a_one_line_error(tmp_path, capsys):
    recs = [{"id": f"d{i % 3}", "candidate": "the cat", "references": "the cat sat"} for i in range(5)]
    path = tmp_path / "rep.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    rc, out, err = _main(["eval", "-i", str(path)], capsys)
    assert rc == EXIT_CONFIG and out == ""
    assert err.count("\n") == 1 and "2 repeated id(s) (id 'd0' on records 1 and 4)" in err
    recs = [{**r, "system": "s"} for r in recs]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    rc, out, err = _main(["eval", "-i", str(path), "-f", "json"], capsys)
    assert rc == EXIT_CONFIG and "2 repeated (system, id) pair(s)" in err


def test_a_missing_field_suggests_every_mapping(tmp_path, capsys):
    path, _ = _two_models(tmp_path)
    rc, out, err = _main(["eval", "-i", str(path)], capsys)
    assert rc == EXIT_CONFIG and err.count("\n") == 1
    assert err.rstrip().endswith("did you mean --candidate-field prediction --references-field target "
                                 "--id-field doc_id --system-field model?")


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_per_example_rows_name_their_system(fmt, capsys):
    rc, out, err = _main(["eval", "-i", str(SAMPLE), "-t", "rouge1", "--per-example", "-f", fmt], capsys)
    assert rc == EXIT_OK, err
    records = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    rows = ([json.loads(ln) for ln in out.splitlines()] if fmt == "json"
            else list(csv.DictReader(io.StringIO(out))))
    assert [r["system"] for r in rows] == [r["system"] for r in records]


@pytest.mark.parametrize("per_example", [False, True])
@pytest.mark.parametrize("types,words", [("rouge1,rougeL,rouge1", "names rouge1 twice"),
                                         (",", "give at least one rouge type")])
def test_rouge_types_named_twice_or_none_are_refused(types, words, per_example, capsys):
    argv = ["eval", "-i", str(SAMPLE), "-t", types] + (["--per-example"] if per_example else [])
    rc, out, err = _main(argv, capsys)
    assert rc == EXIT_CONFIG and out == "" and err.count("\n") == 1 and words in err


def test_one_rouge_type_is_one_type(capsys):
    rc, out, err = _main(["eval", "-i", str(SAMPLE), "-t", "rougeLsum"], capsys)
    assert rc == EXIT_OK, err
    assert {ln.split()[1] for ln in out.splitlines()[2:-1]} == {"rougeLsum"}


def test_a_system_like_field_is_found_in_the_records_already_read(tmp_path, capsys, monkeypatch):
    """The input is read once (as stdin or a pipe can only be): here it is gone after its first read."""
    from pipeline.cli import eval as eval_cli

    real = eval_cli._read_bytes

    def once(path):
        data = real(path)
        Path(path).unlink()
        return data

    monkeypatch.setattr(eval_cli, "_read_bytes", once)
    base = ["--candidate-field", "prediction", "--references-field", "target", "--id-field", "doc_id", "-t", "rouge1"]
    path, rows = _two_models(tmp_path, n=4)
    rc, out, err = _main(["eval", "-i", str(path), *base], capsys)
    assert rc == EXIT_CONFIG and out == ""
    assert err.count("\n") == 1 and "2 systems in field 'model' (a, b)" in err
    path.write_text("".join(json.dumps(r) + "\n" for r in rows if r["model"] == "a"), encoding="utf-8")
    rc, out, err = _main(["eval", "-i", str(path), *base, "-f", "json"], capsys)   # one value: scored
    assert rc == EXIT_OK, err
    assert json.loads(out)["n"] == 4
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    rc, out, err = _main(["eval", "-i", str(path)], capsys)   # the hints too come from the records read
    assert rc == EXIT_CONFIG and err.rstrip().endswith("did you mean --candidate-field prediction --references-field "
                                                       "target --id-field doc_id --system-field model?")


def test_json_per_system_builds_each_results_rows_once(capsys, monkeypatch):
    from pipeline.api import RougeResult

    calls = []
    real = RougeResult.rows
    monkeypatch.setattr(RougeResult, "rows", lambda self: calls.append(self.system) or real(self))
    rc, out, err = _main(["eval", "-i", str(SAMPLE), "-t", "rouge1", "--n-boot", "0", "-f", "json"], capsys)
    assert rc == EXIT_OK, err
    assert sorted(calls) == ["abstractive", "lead"]
    assert len(json.loads(out)["rows"]) == 2 * 3
