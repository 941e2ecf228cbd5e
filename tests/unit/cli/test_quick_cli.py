"""``rouge-pipeline eval`` (files, several reference files, stdin, JSONL/Parquet, per example),
``score INPUT... -o RUN`` without a config, and the small CLI items (--version, a closed
stdout, the no-argument hint, help texts).  Expected numbers come from rouge-score."""
from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rouge_score import rouge_scorer, scoring

from pipeline.cli import main as cli

TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
REFS1 = ["the cat sat on the mat", "the fast fox jumped over the lazy dog", "hello world", "a b c d"]
REFS2 = ["a cat was sitting on a mat", "a fox jumped", "hello there world", "d c b a"]
HYPS = ["the cat is sitting on the mat", "the fox jumped over the dog", "hello world", "a b x y"]


def expected(refs, hyps, types=TYPES, seed=12345, use_stemmer=False):
    """(per-example rouge-score dicts, {type: (mean P, R, F)}, {type: AggregateScore})."""
    sc = rouge_scorer.RougeScorer(types, use_stemmer=use_stemmer)
    per = [sc.score_multi(r, h) if isinstance(r, list) else sc.score(r, h) for r, h in zip(refs, hyps)]
    means = {t: tuple(math.fsum(p[t][k] for p in per) / len(per) for k in range(3)) for t in types}
    agg = scoring.BootstrapAggregator()
    for p in per:
        agg.add_scores(p)
    np.random.seed(seed)
    return per, means, agg.aggregate()


@pytest.fixture()
def files(tmp_path):
    for name, lines in (("r1.txt", REFS1), ("r2.txt", REFS2), ("h.txt", HYPS)):
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


def _main(argv, capsys):
    rc = cli.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def _json_rows(out):
    return {(r["type"], r["stat"]): r for r in json.loads(out)["rows"]}


def test_eval_two_files_json(files, capsys):
    rc, out, err = _main(["eval", "-r", str(files / "r1.txt"), "-i", str(files / "h.txt"), "-f", "json"], capsys)
    assert rc == 0, err
    _, means, agg = expected(REFS1, HYPS)
    rows = _json_rows(out)
    for t in TYPES:
        for k, stat in enumerate(("precision", "recall", "fmeasure")):
            r = rows[(t, stat)]
            assert r["mean"] == means[t][k] and r["count"] == 4
            assert (r["ci_low"], r["ci_mid"], r["ci_high"]) == (agg[t].low[k], agg[t].mid[k], agg[t].high[k])
    assert json.loads(out)["signature"].startswith("rouge:1,2,L,Lsum|tok:default|")


def test_eval_table_several_reference_files(files, capsys):
    rc, out, err = _main(["eval", "-r", str(files / "r1.txt"), "-r", str(files / "r2.txt"), "-i",
                          str(files / "h.txt"), "-t", "rouge1,rougeL", "--seed", "3"], capsys)
    assert rc == 0, err
    _, means, agg = expected([list(x) for x in zip(REFS1, REFS2)], HYPS, ["rouge1", "rougeL"], seed=3)
    lines = out.splitlines()
    assert lines[0].split() == ["type", "n", "P", "R", "F", "F", "95%", "CI"]
    for t, line in zip(["rouge1", "rougeL"], lines[2:4]):
        m, a = means[t], agg[t]
        assert line.split() == [t, "4", f"{m[0]:.4f}", f"{m[1]:.4f}", f"{m[2]:.4f}",
                                f"[{a.low.fmeasure:.4f},", f"{a.high.fmeasure:.4f}]"]
    assert lines[4].startswith("signature: rouge:1,L|")


def test_eval_reads_stdin_in_a_real_process(files):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-m", "pipeline.cli.main", "eval", "-r", str(files / "r1.txt"), "-f", "csv",
                          "--per-example", "-t", "rouge2"], input="\n".join(HYPS) + "\n", capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    per, _, _ = expected(REFS1, HYPS, ["rouge2"])
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert [r["index"] for r in rows] == ["0", "1", "2", "3"]
    assert [tuple(float(r[f"rouge2_{s}"]) for s in ("precision", "recall", "fmeasure")) for r in rows] == \
        [tuple(p["rouge2"]) for p in per]


def test_eval_jsonl_and_parquet_with_field_names(tmp_path, capsys):
    recs = [{"key": f"k{i}", "hyp": h, "gold": [r1, r2]} for i, (h, r1, r2) in enumerate(zip(HYPS, REFS1, REFS2))]
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    pq.write_table(pa.Table.from_pylist(recs), tmp_path / "p.parquet")
    per, _, _ = expected([list(x) for x in zip(REFS1, REFS2)], HYPS, use_stemmer=True)
    for name in ("p.jsonl", "p.parquet"):
        rc, out, err = _main(["eval", "-i", str(tmp_path / name), "--candidate-field", "hyp", "--references-field",
                              "gold", "--id-field", "key", "--per-example", "-s"], capsys)
        assert rc == 0, err
        rows = [json.loads(x) for x in out.splitlines()]
        assert [r["id"] for r in rows] == ["k0", "k1", "k2", "k3"]
        for r, p in zip(rows, per):
            assert all(r[f"{t}_{s}"] == p[t][k] for t in TYPES for k, s in enumerate(("precision", "recall",
                                                                                     "fmeasure")))


def test_eval_records_without_an_id_are_named_by_their_line(tmp_path, capsys):
    # <file stem>:<line>, 1-based, as the lines layout names its examples
    recs = [{"candidate": h, "references": r} for h, r in zip(HYPS, REFS1)]
    recs[1]["id"], recs[3]["id"] = "b", 7
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    pq.write_table(pa.table({"candidate": HYPS, "references": REFS1, "id": [None, "b", None, "7"]}),
                   tmp_path / "p.parquet")
    for name in ("p.jsonl", "p.parquet"):
        for fmt in ("json", "csv"):
            rc, out, err = _main(["eval", "-i", str(tmp_path / name), "--per-example", "-f", fmt], capsys)
            assert rc == 0, err
            if fmt == "json":
                ids = [json.loads(x)["id"] for x in out.splitlines()]
            else:
                ids = [r["id"] for r in csv.DictReader(io.StringIO(out))]
            assert ids == ["p:1", "b", "p:3", "7"], (name, fmt, out)


def test_eval_errors_are_one_line(files, tmp_path, capsys):
    (tmp_path / "short.txt").write_text("one line\n")
    rc, out, err = _main(["eval", "-r", str(tmp_path / "short.txt"), "-i", str(files / "h.txt")], capsys)
    assert rc == 2 and err.count("\n") == 1
    assert err.startswith("rouge-pipeline: eval: 1 references for 4 candidates: ") and "short.txt" in err
    rc, _, err = _main(["eval", "-i", str(files / "h.txt")], capsys)
    assert rc == 2 and "pass -r FILE" in err
    rc, _, err = _main(["eval", "-r", str(files / "r1.txt"), "-i", str(files / "nope.txt")], capsys)
    assert rc == 2 and err.startswith("rouge-pipeline: eval: cannot read: ") and err.count("\n") == 1
    (tmp_path / "empty.txt").write_text("")
    rc, _, err = _main(["eval", "-r", str(tmp_path / "empty.txt"), "-i", str(tmp_path / "empty.txt")], capsys)
    assert rc == 5 and "no example" in err


def test_score_input_files_without_a_config(tmp_path, capsys):
    recs = [{"id": f"d{i}", "candidate": h, "references": [r]} for i, (h, r) in enumerate(zip(HYPS, REFS1))]
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    rc, out, err = _main(["score", str(tmp_path / "c.jsonl"), "-o", str(tmp_path / "run"), "--sync",
                          "--no-progress"], capsys)
    assert rc == 0, err
    t = pq.read_table(tmp_path / "run" / "scores")
    per, means, _ = expected(REFS1, HYPS)
    got = {i: f for i, f in zip(t["id"].to_pylist(), t["rouge1_fmeasure"].to_pylist())}
    assert got == {f"d{i}": p["rouge1"].fmeasure for i, p in enumerate(per)}
    # --json: the summary and the scores in one document
    rc, out, err = _main(["score", str(tmp_path / "c.jsonl"), "-o", str(tmp_path / "run2"), "--sync",
                          "--no-progress", "--json"], capsys)
    doc = json.loads(out)
    assert rc == 0 and doc["rows"] == 4
    row = next(r for r in doc["statistics"] if r["type"] == "rouge1" and r["stat"] == "fmeasure")
    assert row["mean"] == pytest.approx(means["rouge1"][2], rel=1e-15)


def test_score_without_arguments_says_what_to_pass(capsys):
    rc, out, err = _main(["score"], capsys)
    assert rc == 2 and "pass --config FILE or an input" in err and err.count("\n") == 1


def test_version(capsys):
    from pipeline import __version__

    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"rouge-pipeline {__version__}"


def test_a_closed_stdout_is_no_traceback(tmp_path, files):
    recs = [{"id": f"d{i}", "candidate": h, "references": [r]} for i, (h, r) in enumerate(zip(HYPS, REFS1))]
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert cli.main(["score", str(tmp_path / "c.jsonl"), "-o", str(tmp_path / "run"), "--sync",
                     "--no-progress", "--json"]) == 0
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for argv in (["show", str(tmp_path / "run"), "--json"], ["eval", "-r", str(files / "r1.txt"), "-i",
                                                             str(files / "h.txt"), "--per-example"]):
        r, w = os.pipe()
        os.close(r)  # the reader is gone before the first write, as when `head` has exited
        try:
            out = subprocess.run([sys.executable, "-m", "pipeline.cli.main", *argv], stdout=w, stderr=subprocess.PIPE,
                                 text=True, timeout=120, env=env)
        finally:
            os.close(w)
        assert "Traceback" not in out.stderr and "BrokenPipe" not in out.stderr, out.stderr
        assert out.returncode == cli.EXIT_PIPE_CLOSED


def _subparsers(parser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices
    return {}


def test_every_option_has_help_text():
    missing = []
    for name, sub in _subparsers(cli._parser()).items():
        if name == "compare":  # its options belong to the compare work (issue 18)
            continue
        for action in sub._actions:
            if not isinstance(action, argparse._HelpAction) and not (action.help or "").strip():
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert not missing
