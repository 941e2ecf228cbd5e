"""Issue 17, adversarial: malformed inputs, configs and paths in every layout and compression, each
with its exact outcome through ``rouge-pipeline score`` (in process, ``--sync``): the exit status,
a fragment of the one-line message, rows + quarantined == the records written, no duplicate
(system, id) in the scores, ``_SUCCESS`` only when the run succeeded, and no file outside the
run folder touched.  Ctrl-C needs a process of its own (a subprocess paused by a test hook)."""
from __future__ import annotations

import bz2
import contextlib
import gzip
import hashlib
import json
import locale  # noqa: F401 - imported before the tests that drop privileges (see as_nobody)
import lzma
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from pipeline.cli import main as cli
from pipeline import runfolder as outputs
from pipeline.cli.main import EXIT_CONFIG, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_NO_ROWS, EXIT_OK, main

zstd = pytest.importorskip("zstandard")

ROOT = Path(__file__).parents[2]


# --------------------------------------------------------------------------- inputs
def rec(i, cand="the cat sat on the mat", refs=("the cat sat",), **kw) -> dict:
    return {"id": f"d{i}", "candidate": cand, "references": list(refs), **kw}


def jsonl(records) -> bytes:
    return b"".join((r if isinstance(r, bytes) else (r if isinstance(r, str) else json.dumps(r)).encode()) + b"\n"
                    for r in records)


COMPRESS = {
    "gz": lambda b: gzip.compress(b, mtime=0),
    "bz2": bz2.compress,
    "xz": lzma.compress,
    "zst": lambda b: zstd.ZstdCompressor().compress(b),
}


def truncated(ext: str, data: bytes) -> bytes:
    c = COMPRESS[ext](data)
    return c[: len(c) * 2 // 3]


def many(n=300, start=0) -> bytes:
    """Enough records that a truncated stream still holds a decodable prefix of whole lines."""
    return jsonl(rec(i, cand=f"the cat number {i} sat on the mat") for i in range(start, start + n))


def lines_text(n=300, word="cat") -> bytes:
    return "".join(f"the {word} {i} sat on the mat\n" for i in range(n)).encode()


def put(path: Path, data: bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return str(path)


# --------------------------------------------------------------------------- running
def snapshot(root: Path, skip: Path) -> dict:
    out = {}
    for p in sorted(root.rglob("*")):
        if p == skip or skip in p.parents:
            continue
        st = p.lstat()
        out[str(p)] = (p.is_dir(), st.st_mode, st.st_size, st.st_mtime_ns,
                       None if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest())
    return out


def score(tmp_path: Path, capsys, input_cfg: dict | None, *args: str, config: dict | None = None,
          output: Path | None = None, wrap=contextlib.nullcontext) -> tuple[int, str, Path]:
    """``rouge-pipeline score -c <config> --sync`` in this process: (status, stderr, run folder);
    asserts the run touched nothing outside its run folder and printed no traceback."""
    out = output or tmp_path / "run"
    cfg = dict(config or {})
    if input_cfg is not None:
        cfg["input"] = input_cfg
    cfg.setdefault("stats", {"n_boot": 20})
    cfg_file = tmp_path / "config.yaml"
    cfg_file.write_text(yaml.safe_dump(cfg))
    before = snapshot(tmp_path, out)
    capsys.readouterr()
    with wrap():
        status = main(["score", "-c", str(cfg_file), "--sync", "--no-progress", "-o", str(out), *args])
    err = capsys.readouterr().err
    assert snapshot(tmp_path, out) == before, "a file outside the run folder changed"
    assert "Traceback" not in err
    if status != EXIT_OK:
        last = err.strip().splitlines()[-1]
        assert last.startswith("rouge-pipeline: "), err
    return status, err, out


def outcome(run: Path) -> tuple[int, int]:
    """(rows, quarantined) as stored in the run folder (scores and quarantine parts)."""
    scores = sorted(run.glob("scores/**/part-*.parquet"))
    quarantine = sorted(run.glob("quarantine/part-*.parquet"))
    rows = sum(pq.read_metadata(p).num_rows for p in scores)
    if scores:
        t = pa.concat_tables([pq.read_table(p, columns=["system", "id"]) for p in scores])
        keys = list(zip(t.column("system").to_pylist(), t.column("id").to_pylist()))
        assert len(set(keys)) == len(keys), "duplicate (system, id) in the scores"
    return rows, sum(pq.read_metadata(p).num_rows for p in quarantine)


def score_ids(run: Path) -> list[str]:
    return [i for p in sorted(run.glob("scores/**/part-*.parquet"))
            for i in pq.read_table(p, columns=["id"]).column("id").to_pylist()]


def reasons(run: Path) -> list[str]:
    parts = sorted(run.glob("quarantine/part-*.parquet"))
    return [r for p in parts for r in pq.read_table(p).column("reason").to_pylist()]


@dataclass
class Case:
    build: Callable[[Path], dict]        # writes the input under the folder, returns input config
    status: int
    message: str = ""                    # a fragment of stderr
    rows: int | None = None              # expected rows and quarantined when the run scored
    quarantined: int = 0
    reason: str = ""                     # a fragment of one quarantine reason
    config: dict = field(default_factory=dict)


def _rec_file(name: str, data: bytes) -> Callable[[Path], dict]:
    return lambda d: {"paths": put(d / "in" / name, data)}


def _paired(cands: bytes, refs: bytes, cname="c.jsonl", rname="r.jsonl") -> Callable[[Path], dict]:
    return lambda d: {"layout": "paired", "candidates": put(d / "in" / cname, cands),
                      "references": put(d / "in" / rname, refs)}


def _lines(cands: bytes, refs: bytes, cname="pred.txt", rname="gold.txt", **kw) -> Callable[[Path], dict]:
    return lambda d: {"layout": "lines", "candidates": put(d / "in" / "pred" / cname, cands),
                      "references": put(d / "in" / "gold" / rname, refs), **kw}


def _folders(cands: dict, models: dict, **kw) -> Callable[[Path], dict]:
    def build(d: Path) -> dict:
        for name, b in cands.items():
            put(d / "in" / "sys" / name, b)
        for name, b in models.items():
            put(d / "in" / "models" / name, b)
        (d / "in" / "sys").mkdir(parents=True, exist_ok=True)
        return {"layout": "folders", "candidates": str(d / "in" / "sys"), "references": str(d / "in" / "models"),
                **kw}
    return build


def _two_test_sets(d: Path) -> dict:
    for s in ("testA", "testB"):
        put(d / "in" / s / "pred.txt", lines_text(3, "dog"))
        put(d / "in" / s / "ref.txt", lines_text(3))
    return {"layout": "lines", "candidates": f"{d}/in/*/pred.txt", "references": f"{d}/in/*/ref.txt"}


def _multi_frame_zstd(n=300) -> bytes:
    a, b = many(n // 2), many(n - n // 2, start=n // 2)
    return zstd.ZstdCompressor().compress(a) + zstd.ZstdCompressor().compress(b)


def _parquet(d: Path) -> dict:
    p = d / "in" / "a.parquet"
    p.parent.mkdir(parents=True)
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(50)], "candidate": ["a b"] * 50,
                             "references": [["a"]] * 50}), p)
    raw = p.read_bytes()
    p.write_bytes(raw[: len(raw) // 2])
    return {"paths": str(p)}


def _dups_across_files(d: Path) -> dict:
    put(d / "in" / "a.jsonl", jsonl([rec(1), rec(2)]))
    put(d / "in" / "b.jsonl.gz", gzip.compress(jsonl([rec(2), rec(3)]), mtime=0))
    return {"paths": str(d / "in")}


def _empty_folder(d: Path) -> dict:
    (d / "in" / "empty").mkdir(parents=True)
    return {"paths": str(d / "in" / "empty")}


CASES: dict[str, Case] = {}
# every compression, truncated, in every layout (and both sides of paired): the file fails
for ext in COMPRESS:
    CASES[f"records-truncated-{ext}"] = Case(_rec_file(f"a.jsonl.{ext}", truncated(ext, many())), EXIT_CONFIG,
                                             "cannot read the file")
    CASES[f"records-truncated-{ext}-target-rows"] = Case(
        _rec_file(f"a.jsonl.{ext}", truncated(ext, many())), EXIT_CONFIG, "cannot read the file",
        config={"execution": {"target_rows": 40}})
    CASES[f"paired-candidates-truncated-{ext}"] = Case(
        _paired(truncated(ext, many()), many(), cname=f"c.jsonl.{ext}"), EXIT_CONFIG, "cannot read the file")
    CASES[f"paired-references-truncated-{ext}"] = Case(
        _paired(many(), truncated(ext, many()), rname=f"r.jsonl.{ext}"), EXIT_CONFIG, "cannot read the file")
    CASES[f"lines-candidates-truncated-{ext}"] = Case(
        _lines(truncated(ext, lines_text()), lines_text(), cname=f"pred.txt.{ext}"), EXIT_CONFIG,
        "cannot read the file")
    CASES[f"lines-references-truncated-{ext}"] = Case(
        _lines(lines_text(), truncated(ext, lines_text()), rname=f"gold.txt.{ext}"), EXIT_CONFIG,
        "cannot read the file")
    CASES[f"folders-model-truncated-{ext}"] = Case(
        _folders({"1.txt": b"the cat sat\n"}, {f"1.A.txt.{ext}": truncated(ext, lines_text())},
                 model_filename_pattern=f"#ID#.[A-Z].txt.{ext}"), EXIT_CONFIG, "cannot read the file")
CASES.update({
    # zstd frames one after another are one stream (as the zstd tool reads them), whole
    "records-zstd-two-frames-target-rows": Case(_rec_file("a.jsonl.zst", _multi_frame_zstd()), EXIT_OK, rows=300,
                                                config={"execution": {"target_rows": 70}}),
    "lines-zstd-two-frames": Case(_lines(COMPRESS["zst"](lines_text(150)) + COMPRESS["zst"](lines_text(150)),
                                         lines_text(150) + lines_text(150), cname="pred.txt.zst"),
                                  EXIT_OK, rows=300),
    "records-not-gzip": Case(_rec_file("a.jsonl.gz", b"this is not gzip at all"), EXIT_CONFIG,
                             "cannot read the file"),
    "records-corrupt-parquet": Case(_parquet, EXIT_CONFIG, "cannot read the file"),
    # empty and odd files
    "records-empty-file": Case(_rec_file("a.jsonl", b""), EXIT_NO_ROWS, "the input holds no record"),
    "records-empty-gz": Case(_rec_file("a.jsonl.gz", gzip.compress(b"", mtime=0)), EXIT_NO_ROWS,
                             "the input holds no record"),
    "records-only-whitespace": Case(_rec_file("a.jsonl", b"\n   \n\t\n\n"), EXIT_NO_ROWS,
                                    "the input holds no record"),
    "records-bom-and-crlf": Case(_rec_file("a.jsonl", b"\xef\xbb\xbf" + jsonl([rec(1), rec(2), rec(3)])
                                           .replace(b"\n", b"\r\n")), EXIT_OK, rows=3),
    "records-nul-bytes": Case(_rec_file("a.jsonl", jsonl([rec(1), b"\0\0\0\0", rec(2)])), EXIT_OK, rows=2,
                              quarantined=1, reason="malformed JSON"),
    "records-invalid-utf8": Case(_rec_file("a.jsonl", jsonl([rec(1), b'{"id": "x", "candidate": "\xff\xfe", '
                                                                     b'"references": ["a"]}'])),
                                 EXIT_OK, rows=1, quarantined=1, reason="invalid UTF-8"),
    "records-json-array-one-line": Case(_rec_file("a.json", json.dumps([rec(1), rec(2)]).encode() + b"\n"),
                                        EXIT_CONFIG, "a JSON array, not JSONL"),
    "records-json-array-pretty": Case(_rec_file("a.jsonl", json.dumps([rec(1), rec(2)], indent=2).encode()),
                                      EXIT_CONFIG, "a JSON array, not JSONL"),
    "records-list-string-number-records": Case(_rec_file("a.jsonl", jsonl([rec(1), "[1, 2]", '"text"', "42"])),
                                               EXIT_OK, rows=1, quarantined=3, reason="expected a JSON object"),
    "records-wrong-field-names": Case(_rec_file("a.jsonl", jsonl([{"id": "a", "summary": "x y", "references": "x"},
                                                                  {"id": "b", "summary": "x", "references": "x"}])),
                                      EXIT_NO_ROWS, "did you mean --set input.columns.candidate=summary"),
    "records-all-quarantined": Case(_rec_file("a.jsonl", jsonl([rec(1, cand=None), rec(2, cand=None)])),
                                    EXIT_NO_ROWS, "null candidate: 2"),
    "records-all-quarantined-strict": Case(_rec_file("a.jsonl", jsonl([rec(1, cand=None)])), EXIT_NO_ROWS,
                                           "every record was quarantined", config={"strict": True}),
    "records-null-candidate": Case(_rec_file("a.jsonl", jsonl([rec(1), rec(2, cand=None)])), EXIT_OK, rows=1,
                                   quarantined=1, reason="null candidate"),
    "records-references-string-list-empty": Case(
        _rec_file("a.jsonl", jsonl([rec(1, refs="the cat"), rec(2, refs=["the cat", "a dog"]), rec(3, refs=[])])),
        EXIT_OK, rows=2, quarantined=1, reason="empty reference list"),
    "records-non-string-reference-items": Case(_rec_file("a.jsonl", jsonl([rec(1), rec(2, refs=[1, "x"])])),
                                               EXIT_OK, rows=1, quarantined=1, reason="reference 0 must be a string"),
    "records-duplicate-ids-one-file": Case(_rec_file("a.jsonl", jsonl([rec(1), rec(2), rec(1)])), EXIT_OK, rows=2,
                                           quarantined=1, reason="duplicate id"),
    "records-duplicate-ids-across-files": Case(_dups_across_files, EXIT_OK, rows=3, quarantined=1,
                                               reason="duplicate id"),
    "records-huge-id": Case(_rec_file("a.jsonl", jsonl([{**rec(1), "id": "x" * 200_000}, rec(2)])), EXIT_OK,
                            rows=2),
    "records-id-with-key-separator": Case(_rec_file("a.jsonl", jsonl([{**rec(1), "id": "a\x1fb"}])), EXIT_OK,
                                          rows=1),
    "records-system-with-key-separator": Case(_rec_file("a.jsonl", jsonl([rec(1, system="s\x1f1"), rec(2)])),
                                              EXIT_OK, rows=1, quarantined=1, reason="U+001F"),
    "records-odd-system-names": Case(_rec_file("a.jsonl", jsonl([rec(1, system="a/b"), rec(1, system="x=y"),
                                                                 rec(1, system=".."), rec(1, system=""),
                                                                 rec(1, system="../../escape")])),
                                     EXIT_OK, rows=5),
    "records-glob-matches-nothing": Case(lambda d: {"paths": str(d / "in" / "*.jsonl")}, EXIT_CONFIG,
                                         "matches no file"),
    "records-no-such-file": Case(lambda d: {"paths": str(d / "in" / "nope.jsonl")}, EXIT_CONFIG, "no such file"),
    "records-empty-folder": Case(_empty_folder, EXIT_CONFIG, "holds no file"),
    # paired
    "paired-bad-reference-row-beside-a-good-one": Case(
        _paired(jsonl([{"id": "a", "candidate": "the cat"}]),
                jsonl([{"id": "a", "references": "the cat"}, {"id": "a", "references": []},
                       {"id": "a", "references": [None]}])),
        EXIT_OK, rows=1, quarantined=2, reason="references side: empty reference list"),
    "paired-ids-on-one-side-only": Case(
        _paired(jsonl([{"id": "a", "candidate": "x"}, {"id": "b", "candidate": "y"}]),
                jsonl([{"id": "a", "references": "x"}, {"id": "c", "references": "z"}])),
        EXIT_OK, rows=1, quarantined=2, reason="no candidate for id"),
    "paired-wrong-reference-column": Case(
        _paired(jsonl([{"id": "a", "candidate": "x"}]), jsonl([{"id": "a", "refs": "x"}])),
        EXIT_NO_ROWS, "did you mean --set input.columns.references=refs"),
    # lines
    "lines-unequal-line-counts": Case(_lines(lines_text(3), lines_text(4)), EXIT_CONFIG, "has 3 lines but"),
    "lines-two-test-sets-one-reference-name": Case(_two_test_sets, EXIT_OK, rows=6),
    "lines-empty-files": Case(_lines(b"", b""), EXIT_NO_ROWS, "the input holds no record"),
    "lines-invalid-utf8": Case(_lines(b"the cat\n\xff\xfe\n", b"the cat\nthe dog\n"), EXIT_OK, rows=1,
                               quarantined=1, reason="invalid UTF-8"),
    # folders
    "folders-no-model-for-a-system-file": Case(_folders({"1.txt": b"the cat\n", "2.txt": b"a dog\n"},
                                                        {"1.A.txt": b"the cat\n"}),
                                               EXIT_OK, rows=1, quarantined=1, reason="no references for id"),
    "folders-pattern-matches-nothing": Case(_folders({"a.txt": b"x\n"}, {"a.A.txt": b"x\n"}), EXIT_CONFIG,
                                            "matches system_filename_pattern"),
    "folders-invalid-utf8-candidate": Case(_folders({"1.txt": b"\xff\n", "2.txt": b"x\n"},
                                                    {"1.A.txt": b"x\n", "2.A.txt": b"x\n"}),
                                           EXIT_OK, rows=1, quarantined=1, reason="invalid UTF-8"),
    # configuration
    "config-unknown-key": Case(_rec_file("a.jsonl", jsonl([rec(1)])), EXIT_CONFIG, "scoring.use_stemer",
                               config={"scoring": {"use_stemer": True}}),
    "config-wrong-type": Case(_rec_file("a.jsonl", jsonl([rec(1)])), EXIT_CONFIG, "execution.target_rows",
                              config={"execution": {"target_rows": "ten"}}),
    "config-negative-target-rows": Case(_rec_file("a.jsonl", jsonl([rec(1)])), EXIT_CONFIG, "execution.target_rows",
                                        config={"execution": {"target_rows": -5}}),
    "config-negative-n-boot": Case(_rec_file("a.jsonl", jsonl([rec(1)])), EXIT_CONFIG, "stats.n_boot",
                                   config={"stats": {"n_boot": -1}}),
    "config-unknown-input-column": Case(lambda d: {**_rec_file("a.jsonl", jsonl([rec(1)]))(d),
                                                   "columns": {"candidat": "x"}}, EXIT_CONFIG, "candidat"),
})


@pytest.mark.parametrize("name", list(CASES))
def test_adversarial(tmp_path, capsys, name):
    case = CASES[name]
    status, err, run = score(tmp_path, capsys, case.build(tmp_path), config=case.config)
    assert status == case.status, err
    assert case.message in err
    assert (run / "_SUCCESS").exists() == (status == EXIT_OK)
    if status == EXIT_OK:
        rows, quarantined = outcome(run)
        summary = json.loads((run / "_summary.json").read_text())
        assert (rows, quarantined) == (case.rows, case.quarantined)
        assert (summary["rows"], summary["quarantined"]) == (rows, quarantined)
        assert not case.reason or any(case.reason in r for r in reasons(run)), reasons(run)
    elif status == EXIT_NO_ROWS:
        assert outcome(run)[0] == 0 and not (run / "stats").exists()
        assert json.loads((run / "_summary.json").read_text())["status"] == "failed: no row scored"


# --------------------------------------------------------------------------- the outcome of each, in detail
def test_lines_ids_are_unique_by_relative_path_and_unchanged_where_unique(tmp_path, capsys):
    status, err, run = score(tmp_path, capsys, _two_test_sets(tmp_path))
    assert status == EXIT_OK, err
    ids = sorted(score_ids(run))
    assert ids == ["testA/ref:1", "testA/ref:2", "testA/ref:3", "testB/ref:1", "testB/ref:2", "testB/ref:3"]
    # one reference file per name: today's ids
    status, err, run = score(tmp_path / "one", capsys,
                             _lines(lines_text(2), lines_text(2), rname="ref.txt")(tmp_path / "one"))
    assert status == EXIT_OK, err
    assert sorted(score_ids(run)) == ["ref:1", "ref:2"]


def test_folders_id_is_escaped_and_the_model_pattern_matches_whole_names(tmp_path, capsys):
    build = _folders({"a+b.txt": b"the cat sat\n", "7.txt": b"the dog sat\n"},
                     {"aab.A.txt": b"the cat sat\n", "a+b.A.txt": b"a bird flew\n", "7.A.txt": b"the dog sat\n",
                      "7.A.txt.bak": b"something else entirely\n"},
                     system_filename_pattern=r"(.+)\.txt")
    status, err, run = score(tmp_path, capsys, build(tmp_path))
    assert status == EXIT_OK, err
    t = pq.read_table(next(run.glob("scores/**/*.parquet")))
    got = {i: (n, f) for i, n, f in zip(t.column("id").to_pylist(), t.column("n_refs").to_pylist(),
                                        t.column("rouge1_fmeasure").to_pylist())}
    assert got["a+b"] == (1, 0.0)        # against "a bird flew" only, not aab.A.txt
    assert got["7"] == (1, 1.0)          # the .bak is not a second reference


def test_paired_bad_reference_row_is_quarantined_once_with_its_reason(tmp_path, capsys):
    # two systems and two candidate shards read the same reference rows: each bad one is reported once
    d = tmp_path / "in"
    put(d / "c" / "0.jsonl", jsonl([{"id": "a", "system": s, "candidate": "the cat"} for s in ("x", "y")]))
    put(d / "c" / "1.jsonl", jsonl([{"id": "a", "system": "z", "candidate": "the cat"}]))
    put(d / "r.jsonl", jsonl([{"id": "a", "references": "the cat"}, {"id": "a", "references": 5}]))
    status, err, run = score(tmp_path, capsys, {"layout": "paired", "candidates": str(d / "c"),
                                                "references": str(d / "r.jsonl")},
                             config={"execution": {"target_rows": 1}})
    assert status == EXIT_OK, err
    assert outcome(run) == (3, 1)
    [reason] = reasons(run)
    assert reason.endswith("r.jsonl line 2: references side: references must be a string or a list of strings, "
                           "got int")


def test_no_rows_message_names_reasons_fields_and_a_guess(tmp_path, capsys):
    data = jsonl([{"key": f"k{i}", "prediction": "x", "target": "y"} for i in range(4)])
    status, err, run = score(tmp_path, capsys, {"paths": put(tmp_path / "in" / "a.jsonl", data)})
    assert status == EXIT_NO_ROWS
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"rouge-pipeline: no row scored: {run}: every record was quarantined (4; most common: "
                           "missing id field 'id': 4")
    assert "fields in the first records of input.paths: key, prediction, target" in line
    for guess in ("input.columns.id=key", "input.columns.candidate=prediction", "input.columns.references=target"):
        assert guess in line
    # the guess is right: with it, the run scores every record
    status, err, run = score(tmp_path, capsys, {"paths": str(tmp_path / "in" / "a.jsonl"),
                                                "columns": {"id": "key", "candidate": "prediction",
                                                            "references": "target"}},
                             output=tmp_path / "run2")
    assert status == EXIT_OK and outcome(run) == (4, 0)


# --------------------------------------------------------------------------- paths and permissions
def test_missing_config_file(tmp_path, capsys):
    status = main(["score", "-c", str(tmp_path / "nope.yaml"), "--sync", "-o", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert status == EXIT_CONFIG
    assert err.strip() == f"rouge-pipeline: configuration error: {tmp_path}/nope.yaml: No such file or directory"


def test_output_under_a_regular_file(tmp_path, capsys):
    (tmp_path / "file").write_text("mine")
    status, err, _ = score(tmp_path, capsys, _rec_file("a.jsonl", jsonl([rec(1)]))(tmp_path),
                           output=tmp_path / "file" / "run")
    assert status == EXIT_CONFIG
    assert err.strip().splitlines()[-1] == (f"rouge-pipeline: cannot write the run folder: {tmp_path}/file/run: "
                                            "Not a directory")


@pytest.fixture
def nobody(tmp_path, capsys):
    """``(work folder, context manager)``: the manager runs its body with the effective uid of
    ``nobody`` when this process is root (root reads and writes whatever the permissions say).
    The modules a run needs are imported first (one run as root): nobody cannot read root's
    Python installation.  The folder is outside pytest's tmp_path, which nobody cannot enter."""
    import contextlib
    import shutil
    import tempfile

    status, err, _ = score(tmp_path, capsys, _rec_file("a.jsonl", jsonl([rec(1)]))(tmp_path))
    assert status == EXIT_OK, err
    work = Path(tempfile.mkdtemp(prefix="rp-nobody-"))
    work.chmod(0o777)

    @contextlib.contextmanager
    def as_nobody():
        if os.geteuid() != 0:
            yield
            return
        os.seteuid(65534)
        try:
            yield
        finally:
            os.seteuid(0)

    try:
        yield work, as_nobody
    finally:
        shutil.rmtree(work)


def test_unreadable_input(capsys, nobody):
    work, as_nobody = nobody
    inp = put(work / "in" / "a.jsonl", jsonl([rec(1)]))
    Path(inp).chmod(0)
    status, err, run = score(work, capsys, {"paths": inp}, wrap=as_nobody)
    assert status == EXIT_CONFIG
    assert err.strip().splitlines()[-1] == f"rouge-pipeline: cannot read the input: {inp}: Permission denied"
    assert not (run / "_SUCCESS").exists()


def test_output_folder_without_write_permission(capsys, nobody):
    work, as_nobody = nobody
    inp = _rec_file("a.jsonl", jsonl([rec(1)]))(work)
    (work / "ro").mkdir(mode=0o555)
    status, err, _ = score(work, capsys, inp, output=work / "ro" / "run", wrap=as_nobody)
    assert status == EXIT_CONFIG
    assert err.strip().splitlines()[-1] == (f"rouge-pipeline: cannot write the run folder: {work}/ro/run: "
                                            "Permission denied")


# --------------------------------------------------------------------------- unexpected errors, --debug, Ctrl-C
def test_unexpected_error_is_one_line_and_debug_shows_the_traceback(tmp_path, capsys, monkeypatch):
    from pipeline.execution import driver

    class Boom:
        @staticmethod
        def from_config(cfg):
            raise RuntimeError("kaboom")

    monkeypatch.setattr(driver, "Signature", Boom)
    inp = _rec_file("a.jsonl", jsonl([rec(1)]))(tmp_path)
    status, err, run = score(tmp_path, capsys, inp)
    assert status == EXIT_FAILED
    assert err.strip().splitlines()[-1] == ("rouge-pipeline: unexpected error: RuntimeError: kaboom "
                                            "(rerun with --debug for the traceback)")
    assert not (run / "_SUCCESS").exists()
    for argv, env in ((["--debug"], None), ([], "1")):
        if env:
            monkeypatch.setenv(cli.DEBUG_ENV, env)
        status = main([*argv, "score", "-c", str(tmp_path / "config.yaml"), "--sync", "--no-progress",
                       "-o", str(run)])
        err = capsys.readouterr().err
        assert status == EXIT_FAILED
        assert "Traceback (most recent call last)" in err and "raise RuntimeError(\"kaboom\")" in err
        assert err.strip().splitlines()[-1].startswith("rouge-pipeline: unexpected error: RuntimeError: kaboom")


def test_ctrl_c_exits_130_without_a_traceback_and_a_rerun_resumes(tmp_path):
    inp = put(tmp_path / "in" / "a.jsonl", jsonl(rec(i) for i in range(6)))
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "pipeline", "score", "--sync", "--no-progress", "--set", f"input.paths={inp}",
           "--set", "execution.target_rows=2", "--set", "stats.n_boot=20", "-o", str(run)]
    pause = tmp_path / "paused"
    env = {**os.environ, "PYTHONPATH": str(ROOT), outputs.TEST_PAUSE_ENV: f"task>=1:{pause}"}
    # Ctrl-C's default action in the child, whatever the test runner inherited (a shell's background
    # job ignores SIGINT, and so would the child)
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        while not Path(f"{pause}.reached").exists():   # task 1 has begun (task 0 is done) and waits there
            assert p.poll() is None, p.communicate()
            time.sleep(0.01)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == EXIT_INTERRUPTED, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == "rouge-pipeline: interrupted; rerun the same command to resume"
    assert not (run / "_SUCCESS").exists()
    env.pop(outputs.TEST_PAUSE_ENV)
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == EXIT_OK, again.stderr
    assert "resume: 1 slice(s) of 1 of 3 units already written" in again.stderr
    assert (run / "_SUCCESS").exists() and outcome(run) == (6, 0)


# --------------------------------------------------------------------------- the zstd frame reader itself
def _streamed(data: bytes) -> bytes:
    """A frame without its size in the header (a streaming compressor: `zstd < in > out`)."""
    c = zstd.ZstdCompressor().compressobj()
    return c.compress(data) + c.flush()


@pytest.mark.parametrize("how", ["whole", "pieces"])
def test_zstd_reader_whole_frames_only(tmp_path, how):
    from pipeline.io import streams
    from pipeline.io.input_spec import UnreadableFileError

    a, b = lines_text(2000), lines_text(3000, "dog")
    sized, streamed = COMPRESS["zst"](a), _streamed(b)

    def read(data: bytes) -> bytes:
        p = tmp_path / "x.txt.zst"
        p.write_bytes(data)
        with streams.reading(str(p)), streams.open_input(str(p), {}, "zstd") as f:
            if how == "whole":
                return f.read()
            out = []
            while chunk := f.read(1000):
                out.append(chunk)
            return b"".join(out)

    assert read(b"") == b""
    assert read(sized) == a and read(streamed) == b
    assert read(sized + streamed + sized) == a + b + a
    for bad in (sized[:-1], streamed[:-3], sized + streamed[: len(streamed) // 2], streamed[:20]):
        with pytest.raises(UnreadableFileError, match="the zstd stream ends inside a frame"):
            read(bad)
    with pytest.raises(UnreadableFileError, match="ZstdError"):
        read(sized + b"not a frame")
