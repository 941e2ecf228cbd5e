"""One input path for ``eval``, ``compute`` and ``score``: compression by content as well as
extension, the same errors (each naming the file) and the same ids; every bad input or
option is one line and exit status 2, never a traceback or a silent success."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest

import pipeline
from pipeline.cli import main as cli
from pipeline.io.input_spec import InputSpec
from pipeline.io.readers import plan_units, read_unit

REFS = ["the cat sat on the mat", "hello world", "a b c d"]
HYPS = ["the cat is on the mat", "hello there", "a b x y"]


def _main(argv, capsys):
    rc = cli.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def _one_line_error(rc, err, *pieces):
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    for p in pieces:
        assert p in err, (p, err)


@pytest.fixture()
def files(tmp_path):
    (tmp_path / "refs.txt").write_text("\n".join(REFS) + "\n")
    (tmp_path / "hyps.txt").write_text("\n".join(HYPS) + "\n")
    recs = [{"id": f"k{i}", "candidate": h, "references": r} for i, (h, r) in enumerate(zip(HYPS, REFS))]
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return tmp_path


def _per_example_ids(argv, capsys):
    rc, out, err = _main(["eval", *argv, "--per-example", "-t", "rouge1"], capsys)
    assert rc == 0, err
    return [json.loads(x)["id"] for x in out.splitlines()], [json.loads(x)["rouge1_fmeasure"] for x in out.splitlines()]


def test_gzip_content_without_a_gz_name_is_read_by_eval_and_score(files, capsys):
    (files / "hyps_gz.txt").write_bytes(gzip.compress((files / "hyps.txt").read_bytes()))
    (files / "p_gz.jsonl").write_bytes(gzip.compress((files / "p.jsonl").read_bytes()))
    plain = _per_example_ids(["-r", str(files / "refs.txt"), "-i", str(files / "hyps.txt")], capsys)
    assert _per_example_ids(["-r", str(files / "refs.txt"), "-i", str(files / "hyps_gz.txt")], capsys) == plain
    assert _per_example_ids(["-i", str(files / "p_gz.jsonl")], capsys)[1] == plain[1]
    spec = InputSpec.from_config({"layout": "records", "paths": str(files / "p_gz.jsonl")})
    [unit] = plan_units(spec)
    table, quarantine = read_unit(spec, unit)
    assert table.column("id").to_pylist() == ["k0", "k1", "k2"] and quarantine.num_rows == 0
    spec = InputSpec.from_config({"layout": "lines", "candidates": str(files / "hyps_gz.txt"),
                                  "references": str(files / "refs.txt")})
    table, _ = read_unit(spec, plan_units(spec, 2)[0])
    assert table.column("candidate").to_pylist() == HYPS[:2]


def test_eval_line_ids_are_the_lines_layouts(files, capsys):
    ids, _ = _per_example_ids(["-r", str(files / "refs.txt"), "-i", str(files / "hyps.txt")], capsys)
    spec = InputSpec.from_config({"layout": "lines", "candidates": str(files / "hyps.txt"),
                                  "references": str(files / "refs.txt")})
    table, _ = read_unit(spec, plan_units(spec)[0])
    assert ids == table.column("id").to_pylist() == ["refs:1", "refs:2", "refs:3"]


def test_zst_without_zstandard_names_the_package(files, capsys, monkeypatch):
    import fsspec.compression

    monkeypatch.delitem(fsspec.compression.compr, "zstd", raising=False)
    monkeypatch.setitem(sys.modules, "zstandard", None)
    (files / "hyps.txt.zst").write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 20)
    rc, _, err = _main(["eval", "-r", str(files / "refs.txt"), "-i", str(files / "hyps.txt.zst")], capsys)
    _one_line_error(rc, err, "hyps.txt.zst", "zstandard")


def test_truncated_gz_names_the_file(files, capsys):
    data = gzip.compress(("\n".join(HYPS * 200) + "\n").encode())
    (files / "cut.txt.gz").write_bytes(data[: len(data) // 2])
    rc, _, err = _main(["eval", "-r", str(files / "refs.txt"), "-i", str(files / "cut.txt.gz")], capsys)
    _one_line_error(rc, err, "cut.txt.gz", "cannot read the file")


def test_a_second_input_is_refused_not_silently_used(files, capsys):
    rc, out, err = _main(["eval", "-r", str(files / "refs.txt"), "-i", str(files / "hyps.txt"),
                          "-i", str(files / "refs.txt")], capsys)
    _one_line_error(rc, err, "-i given twice")
    assert out == ""


def test_n_boot_beyond_the_cap_is_one_line(files, capsys):
    rc, _, err = _main(["eval", "-r", str(files / "refs.txt"), "-i", str(files / "hyps.txt"),
                        "--n-boot", str(10**10)], capsys)
    _one_line_error(rc, err, "--n-boot", "20,000")
    with pytest.raises(ValueError, match="20,000"):
        pipeline.compute(HYPS, REFS, n_boot=10**10)


@pytest.mark.parametrize("record,reason", [
    ({"id": "", "candidate": "a", "references": "a"}, "empty id"),
    ({"id": "x", "candidate": "a", "references": []}, "empty reference list"),
    ({"id": "x", "candidate": "a", "references": ["a", None]}, "null reference at index 1"),
])
def test_eval_refuses_the_records_the_records_layout_quarantines(tmp_path, capsys, record, reason):
    good = {"id": "g", "candidate": "b", "references": "b"}
    (tmp_path / "bad.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(record) + "\n")
    rc, _, err = _main(["eval", "-i", str(tmp_path / "bad.jsonl")], capsys)
    _one_line_error(rc, err, "bad.jsonl line 2: " + reason)
    spec = InputSpec.from_config({"layout": "records", "paths": str(tmp_path / "bad.jsonl")})
    _, quarantine = read_unit(spec, plan_units(spec)[0])
    assert quarantine.column("reason").to_pylist()[0].endswith("bad.jsonl line 2: " + reason)


def test_closed_stdin_is_one_line(files):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-m", "pipeline.cli.main", "eval", "-r", str(files / "refs.txt")],
                         capture_output=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         timeout=120, env=env, preexec_fn=lambda: os.close(0))
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == "rouge-pipeline: eval: no input: stdin is closed: pass -i FILE"


def test_compute_refuses_one_text_instead_of_a_list():
    for preds, refs in (("the cat", ["the cat"]), (["the cat"], "the cat"), ("the cat", "the cat")):
        with pytest.raises(ValueError, match="list of texts"):
            pipeline.compute(predictions=preds, references=refs)


def test_eval_keys_are_system_and_id_as_the_records_layouts(tmp_path, capsys):
    recs = [{"id": "a", "system": s, "candidate": "the cat", "references": "the cat sat"} for s in ("x", "y")]
    (tmp_path / "two.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    rc, out, err = _main(["eval", "-i", str(tmp_path / "two.jsonl"), "-f", "json"], capsys)
    assert rc == 0 and json.loads(out)["n"] == 2, err
    (tmp_path / "dup.jsonl").write_text("".join(json.dumps({**r, "system": "x"}) + "\n" for r in recs))
    rc, _, err = _main(["eval", "-i", str(tmp_path / "dup.jsonl")], capsys)
    _one_line_error(rc, err, "1 repeated (system, id) pair(s) (id 'a' of system 'x' on records 1 and 2)", "dup.jsonl")


def test_a_large_clean_jsonl_takes_the_records_layouts_arrow_path_with_the_same_rows(tmp_path, capsys, monkeypatch):
    from pipeline.cli import eval as eval_cli
    from pipeline.io import records

    recs = [{"id": i if i % 2 else f"s{i}", "candidate": f"{HYPS[i % 3]} {i}", "references": [REFS[i % 3], "x y"]}
            for i in range(12_000)]
    path = tmp_path / "big.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert path.stat().st_size > eval_cli._FAST_MIN_BYTES
    calls = []
    real = records._fast_columns
    monkeypatch.setattr(records, "_fast_columns", lambda *a: calls.append(1) or real(*a))
    argv = ["eval", "-i", str(path), "--per-example", "-t", "rouge1,rougeL"]
    rc, fast, err = _main(argv, capsys)
    assert rc == 0 and calls, err
    monkeypatch.setattr(eval_cli, "_FAST_MIN_BYTES", 1 << 40)
    rc, slow, err = _main(argv, capsys)
    assert rc == 0 and len(calls) == 1, err
    assert fast == slow and json.loads(fast.splitlines()[1])["id"] == "1"
