"""Issue #5, bad input: every bad record is either a clear error naming the file/line/record or a
quarantine row (id, system, file, row, reason) in the run's ``quarantine/`` dataset, counted in
the summary; nothing is silently dropped and every good example is scored exactly once.

The job runs synchronously here (``execution.mode: sync``: the same plan pass, tasks and
writers as on a cluster, without the cluster start-up); tests/integration/test_faults.py covers Dask."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support.pipeline_corpus import config
from pipeline.config import ConfigError, RunConfig, load_config
from pipeline.execution.driver import StrictModeError, run
from pipeline.io.input_spec import UnreadableFileError


# --------------------------------------------------------------------------- helpers
def _log(_):
    pass


def _run(inp: dict, out: Path, **kw):
    return run(RunConfig.from_dict(config(inp, out, **kw)), None, progress=False, log=_log)


def _write(path: Path, lines) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = b"".join((l if isinstance(l, bytes) else l.encode("utf-8")) + b"\n" for l in lines)
    path.write_bytes(data)
    return path


def _rec(id_, cand="the cat sat", refs=("the cat sat down",), system=None):
    d = {"id": id_, "candidate": cand, "references": list(refs)}
    if system is not None:
        d["system"] = system
    return json.dumps(d)


def _scores(run_dir: Path) -> pa.Table:
    files = sorted(run_dir.glob("scores/**/part-*.parquet"))
    t = pa.concat_tables([pq.read_table(p) for p in files]).replace_schema_metadata(None)
    return t.sort_by([("system", "ascending"), ("id", "ascending")])


def _quarantine(run_dir: Path) -> pa.Table:
    files = sorted(run_dir.glob("quarantine/part-*.parquet"))
    if not files:
        return pa.table({"id": [], "system": [], "file": [], "row": [], "reason": []})
    t = pa.concat_tables([pq.read_table(p) for p in files]).replace_schema_metadata(None)
    return t.sort_by([("file", "ascending"), ("row", "ascending")])


def _summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "_summary.json").read_text())


def _keys(t: pa.Table) -> list[tuple[str, str]]:
    return list(zip(t.column("system").to_pylist(), t.column("id").to_pylist()))


# --------------------------------------------------------------------------- bad records
def test_bad_records_become_quarantine_rows_counted_in_the_summary(tmp_path):
    lines = [
        _rec("ok1"),                                                              # 1
        '{"id": "x1", "candidate": "c", "references": ["r"',                      # 2 malformed JSON
        json.dumps({"id": "x2", "candidate": 5, "references": ["r"]}),            # 3 wrong type
        json.dumps({"id": "x3", "candidate": None, "references": ["r"]}),         # 4 null candidate
        json.dumps({"id": "x4", "references": ["r"]}),                            # 5 missing candidate
        json.dumps({"id": "x5", "candidate": "c", "references": None}),           # 6 null references
        json.dumps({"id": "x6", "candidate": "c", "references": []}),             # 7 empty reference list
        json.dumps({"id": "x7", "candidate": "c"}),                               # 8 missing references
        b'{"id": "x8", "candidate": "\xff\xfe bad", "references": ["r"]}',        # 9 invalid UTF-8
        _rec("ok1", cand="a second ok1"),                                         # 10 duplicate id
        json.dumps({"id": ["x9"], "candidate": "c", "references": ["r"]}),        # 11 wrong id type
        "",                                                                       # 12 blank: not a record
        _rec("ok2"),                                                              # 13
    ]
    f = _write(tmp_path / "in" / "bad.jsonl", lines)
    res = _run({"paths": str(f)}, tmp_path / "run")
    run_dir = tmp_path / "run"
    assert (run_dir / "_SUCCESS").exists()
    scores = _scores(run_dir)
    assert scores.column("id").to_pylist() == ["ok1", "ok2"]
    q = _quarantine(run_dir)
    assert q.column("row").to_pylist() == list(range(1, 11))
    assert set(q.column("file").to_pylist()) == {f"file://{f}"}
    assert q.column("id").to_pylist() == [None, "x2", "x3", "x4", "x5", "x6", "x7", None, "ok1", None]
    expect = ["malformed JSON", "candidate must be a string, got int", "null candidate", "missing candidate field",
              "null references", "empty reference list", "missing references field", "invalid UTF-8 at byte 27",
              "duplicate id 'ok1' (first at file://" + str(f) + " line 1)", "id must be a string or integer, got list"]
    for line, (reason, e) in enumerate(zip(q.column("reason").to_pylist(), expect), start=2):
        assert reason.startswith(f"file://{f} line {line}: ") and e in reason, (line, reason)
    s = res.summary
    assert s["rows"] == 2 and s["quarantined"] == 10
    assert sum(s["quarantined_by_reason"].values()) == 10
    assert s["quarantined_by_reason"]["duplicate id"] == 1
    assert s["quarantined_by_reason"]["invalid UTF-8 at byte N"] == 1
    assert _summary(run_dir)["quarantined"] == 10


def test_invalid_utf8_in_a_parquet_string_column(tmp_path):
    cand = pa.Array.from_buffers(pa.string(), 2, [None, pa.py_buffer(np.array([0, 5, 9], np.int32).tobytes()),
                                                  pa.py_buffer(b"hello\xff\xfeab")])
    t = pa.table({"id": ["a", "b"], "candidate": cand, "references": [["hello"], ["x"]]})
    pq.write_table(t, tmp_path / "u.parquet")
    res = _run({"paths": str(tmp_path / "u.parquet")}, tmp_path / "run")
    assert _scores(tmp_path / "run").column("id").to_pylist() == ["a"]
    (reason,) = _quarantine(tmp_path / "run").column("reason").to_pylist()
    assert reason == f"file://{tmp_path}/u.parquet row 1: candidate is not valid UTF-8 (at byte 0)"
    assert res.summary["quarantined"] == 1


@pytest.fixture(scope="module")
def dup_corpus(tmp_path_factory):
    """Three shards (JSONL, gzip JSONL, Parquet) with duplicate ids within and across shards."""
    root = tmp_path_factory.mktemp("dups")
    a = [_rec("d1", "first d1", system="s"), _rec("d2", system="s"), _rec("d3", system="s"),
         _rec("d1", "dup of d1 within a", system="s"), _rec("d4", system="s"), _rec("d1", system="t")]
    b = [_rec("d5", system="s"), _rec("d2", "dup of d2 across", system="s"), _rec("d6", system="s"),
         _rec("d2", "again", system="s"), _rec("d7", system="t"), _rec("d1", "dup of t/d1", system="t")]
    _write(root / "a.jsonl", a)
    (root / "b.jsonl.gz").write_bytes(gzip.compress(("\n".join(b) + "\n").encode(), mtime=0))
    c = [json.loads(x) for x in (_rec("d8", system="s"), _rec("d3", "dup of d3", system="s"),
                                 _rec("d9", system="s"), _rec("d7", "dup of t/d7", system="t"))]
    pq.write_table(pa.Table.from_pylist(c), root / "c.parquet", row_group_size=2)
    return root


@pytest.mark.parametrize("target_rows", [None, 1, 2, 3, 5])
def test_duplicates_across_shards_first_kept_whatever_target_rows(dup_corpus, tmp_path, target_rows):
    root = dup_corpus
    res = _run({"paths": str(root / "*")}, tmp_path / "run", execution={"target_rows": target_rows})
    scores = _scores(tmp_path / "run")
    keys = _keys(scores)
    assert len(keys) == len(set(keys)), "every example is scored exactly once"
    assert sorted(keys) == sorted([("s", f"d{i}") for i in (1, 2, 3, 4, 5, 6, 8, 9)] + [("t", "d1"), ("t", "d7")])
    # the first occurrence (file order, row order) is the one kept: "first d1" has 2 candidate tokens
    tokens = {(r["system"], r["id"]): r["cand_tokens"] for r in scores.select(["system", "id", "cand_tokens"]).to_pylist()}
    assert tokens[("s", "d1")] == 2 and tokens[("s", "d2")] == 3 and tokens[("t", "d1")] == 3
    q = _quarantine(tmp_path / "run")
    a, b, c = (f"file://{root}/{n}" for n in ("a.jsonl", "b.jsonl.gz", "c.parquet"))
    got = list(zip(q.column("file").to_pylist(), q.column("row").to_pylist(), q.column("reason").to_pylist()))
    assert got == [
        (a, 3, f"{a} line 4: duplicate id 'd1' for system 's' (first at {a} line 1)"),
        (b, 1, f"{b} line 2: duplicate id 'd2' for system 's' (first at {a} line 2)"),
        (b, 3, f"{b} line 4: duplicate id 'd2' for system 's' (first at {a} line 2)"),
        (b, 5, f"{b} line 6: duplicate id 'd1' for system 't' (first at {a} line 6)"),
        (c, 1, f"{c} row 1: duplicate id 'd3' for system 's' (first at {a} line 3)"),
        (c, 3, f"{c} row 3: duplicate id 'd7' for system 't' (first at {b} line 5)"),
    ]
    assert res.summary["rows"] == 10 and res.summary["quarantined"] == 6
    assert res.summary["quarantined_by_reason"] == {"duplicate id for system": 6}


def test_duplicates_across_shards_fail_a_strict_run(dup_corpus, tmp_path):
    with pytest.raises(StrictModeError, match="6 record"):
        _run({"paths": str(dup_corpus / "*")}, tmp_path / "run", strict=True)
    run_dir = tmp_path / "run"
    assert not (run_dir / "_SUCCESS").exists() and not (run_dir / "stats").exists()
    assert _summary(run_dir)["status"].startswith("failed: strict")


def test_candidates_without_references_and_references_without_candidates(tmp_path):
    cands = _write(tmp_path / "c" / "c.jsonl", [json.dumps({"id": i, "candidate": f"text {i}"})
                                               for i in ("a", "b", "lonely")])
    refs = _write(tmp_path / "r" / "r.jsonl", [json.dumps({"id": i, "references": [f"text {i}"]})
                                              for i in ("a", "b", "unused")])
    res = _run({"layout": "paired", "candidates": str(cands), "references": str(refs)}, tmp_path / "run")
    assert _scores(tmp_path / "run").column("id").to_pylist() == ["a", "b"]
    q = _quarantine(tmp_path / "run")
    assert sorted(zip(q.column("id").to_pylist(), q.column("reason").to_pylist())) == [
        ("lonely", f"file://{cands} line 3: no references for id 'lonely'"),
        ("unused", f"file://{refs} line 3: no candidate for id 'unused'"),
    ]
    assert res.summary["quarantined_by_reason"] == {"no candidate for id": 1, "no references for id": 1}


def test_document_of_millions_of_tokens(tmp_path):
    """2,000,000 candidate tokens: rouge1/rougeL score it; its one-sentence rougeLsum pair against a
    5,000-token reference is too long to backtrack (STATUS_TOO_LONG): a quarantine row with a
    clear reason, never a NaN row in the scores or the statistics."""
    words = [f"w{i % 5000}" for i in range(2_000_000)]
    huge = " ".join(words)
    ref = " ".join(words[:5000])
    f = _write(tmp_path / "in" / "big.jsonl", [_rec("small"), _rec("huge", huge, [ref]), _rec("small2")])
    res = _run({"paths": str(f)}, tmp_path / "run", scoring={"rouge_types": ["rouge1", "rougeL", "rougeLsum"]})
    run_dir = tmp_path / "run"
    scores = _scores(run_dir)
    assert scores.column("id").to_pylist() == ["small", "small2"]
    for name in scores.column_names:
        if name.startswith("rouge"):
            assert np.isfinite(scores.column(name).to_numpy()).all()
    (row,) = _quarantine(run_dir).to_pylist()
    assert row["id"] == "huge" and row["row"] == 1 and row["file"] == f"file://{f}"
    assert row["reason"].startswith(f"file://{f} line 2: rougeLsum sentence pair too long to backtrack "
                                    "(candidate 2000000 tokens, references 5000 tokens")
    assert res.summary["quarantined"] == 1 and res.summary["rows"] == 2
    stats = json.loads((run_dir / "stats" / "stats.json").read_text(), parse_constant=lambda c: pytest.fail(c))
    assert {r["count"] for r in stats["rows"]} == {2}
    # Without rougeLsum the same document is scored (no quarantine).
    res2 = _run({"paths": str(f)}, tmp_path / "run2", scoring={"rouge_types": ["rouge1", "rougeL"]})
    assert res2.summary["rows"] == 3 and res2.summary["quarantined"] == 0
    (huge_row,) = [r for r in _scores(tmp_path / "run2").to_pylist() if r["id"] == "huge"]
    assert huge_row["cand_tokens"] == 2_000_000 and huge_row["rouge1_recall"] == 1.0


# --------------------------------------------------------------------------- shards
def test_parquet_shards_with_different_schemas(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64()), "candidate": ["a b", "c d"],
                             "references": [["a b"], ["c"]]}), d / "p0.parquet")
    pq.write_table(pa.table({"references": ["x y", "z"], "id": ["s3", "s4"], "candidate": ["x", "z"],
                             "extra": [1.5, 2.5], "system": [None, None]}), d / "p1.parquet")
    pq.write_table(pa.table({"id": ["s5"], "candidate": pa.array(["q"], pa.large_string()),
                             "references": pa.array([["q"]], pa.large_list(pa.large_string()))}), d / "p2.parquet")
    pq.write_table(pa.table({"id": ["s6", "s7"], "candidate": pa.array([7, 8], pa.int32()),
                             "references": [["q"], ["q"]]}), d / "p3.parquet")
    res = _run({"paths": str(d / "*.parquet")}, tmp_path / "run")
    assert _scores(tmp_path / "run").column("id").to_pylist() == ["1", "2", "s3", "s4", "s5"]
    q = _quarantine(tmp_path / "run")
    assert q.column("reason").to_pylist() == [f"file://{d}/p3.parquet row {i}: candidate must be a string, got int"
                                              for i in (0, 1)]
    assert res.summary["rows"] == 5
    # a shard without a required column is a configuration error naming the file and column
    pq.write_table(pa.table({"id": ["s8"], "cand": ["x"], "references": [["x"]]}), d / "p4.parquet")
    with pytest.raises(ValueError, match=r"p4\.parquet: no column 'candidate' for candidate"):
        _run({"paths": str(d / "*.parquet")}, tmp_path / "run4")
    assert not (tmp_path / "run4" / "_SUCCESS").exists()


def test_empty_shards(tmp_path):
    d = tmp_path / "in"
    _write(d / "a.jsonl", [_rec("a1"), _rec("a2")])
    (d / "b.jsonl").write_bytes(b"")
    _write(d / "c.jsonl", ["", "   ", ""])
    (d / "e.jsonl.gz").write_bytes(gzip.compress(b"", mtime=0))
    pq.write_table(pa.table({"id": pa.array([], pa.string()), "candidate": pa.array([], pa.string()),
                             "references": pa.array([], pa.list_(pa.string()))}), d / "f.parquet")
    res = _run({"paths": str(d)}, tmp_path / "run", execution={"target_rows": 1})
    assert res.summary["rows"] == 2 and res.summary["quarantined"] == 0
    assert (tmp_path / "run" / "_SUCCESS").exists()


def test_glob_matching_no_file_is_an_error_naming_the_glob(tmp_path):
    (tmp_path / "x.jsonl").mkdir()      # a folder matched by the glob is not a file
    with pytest.raises(FileNotFoundError, match=r"the glob '.*/\*\.jsonl' matches no file"):
        _run({"paths": str(tmp_path / "*.jsonl")}, tmp_path / "run")
    assert not (tmp_path / "run" / "_SUCCESS").exists()


@pytest.mark.parametrize("kind", ["not-gzip", "truncated-gzip", "corrupt-parquet", "folder-instead-of-file"])
def test_unreadable_file_is_an_error_naming_it(tmp_path, kind):
    d = tmp_path / "in"
    _write(d / "a.jsonl", [_rec("a1")])
    if kind == "not-gzip":
        bad = d / "b.jsonl.gz"
        bad.write_bytes(b"this is not gzip")
    elif kind == "truncated-gzip":
        bad = d / "b.jsonl.gz"
        data = gzip.compress(("\n".join(_rec(f"b{i}") for i in range(2000)) + "\n").encode(), mtime=0)
        bad.write_bytes(data[: len(data) // 2])
    elif kind == "corrupt-parquet":
        bad = d / "b.parquet"
        pq.write_table(pa.table({"id": ["b"], "candidate": ["x"], "references": [["x"]]}), bad)
        raw = bad.read_bytes()
        bad.write_bytes(raw[:8] + b"\0" * (len(raw) - 16) + raw[-8:])
    else:
        # planned as a file, then replaced by a folder before its task runs
        bad = d / "b.jsonl"
        _write(bad, [_rec("b1")])
        from pipeline.execution import driver

        orig = driver.plan_units

        def plan_then_swap(*a, **k):
            plan = orig(*a, **k)
            bad.unlink()
            bad.mkdir()
            return plan

        driver.plan_units = plan_then_swap
    try:
        # the tasks read the input (not the plan pass's tables), as after a worker restart
        with pytest.raises(UnreadableFileError, match=f"file://{bad}: cannot read the file"):
            _run({"paths": str(d / "*")}, tmp_path / "run")
    finally:
        if kind == "folder-instead-of-file":
            driver.plan_units = orig
    run_dir = tmp_path / "run"
    assert not (run_dir / "_SUCCESS").exists() and not (run_dir / "stats").exists()
    assert "cannot read the file" in _summary(run_dir)["status"]


# --------------------------------------------------------------------------- configuration
@pytest.mark.parametrize("override, message", [
    ("scoring.rouge_types=[rouge1, rougeX]", r"scoring\.rouge_types: .*rougeX"),
    ("output.url=ftp://host/run", r"output\.url: unsupported URL scheme 'ftp'"),
    ("input.paths=http://host/x.jsonl", r"input\.paths: unsupported URL scheme 'http'"),
    ("scoring.use_stemer=true", r"scoring\.use_stemer"),
    ("executon.mode=sync", r"executon"),
    ("input.colums={id: key}", r"input\.colums"),
    ("execution.target_rows=0", r"execution\.target_rows: must be >= 1"),
    ("stats.confidence=1.5", r"stats\.confidence"),
])
def test_config_errors_name_the_field(tmp_path, override, message):
    f = _write(tmp_path / "a.jsonl", [_rec("a")])
    base = [f"input.paths={f}", f"output.url={tmp_path}/run", "execution.mode=sync"]
    with pytest.raises(ConfigError, match=message):
        load_config(None, base + [override])


def test_key_separator_in_a_system_name_is_quarantined(tmp_path):
    # joined as f"{system}\x1f{id}" (the bootstrap's example key), ("a\x1fb", "c") and ("a", "b\x1fc")
    # would be one key: the run failed with "example keys must be unique"
    recs = [json.dumps({"id": "c", "system": "a\x1fb", "candidate": "x y", "references": ["x"]}),
            json.dumps({"id": "b\x1fc", "system": "a", "candidate": "x", "references": ["x y"]}),
            _rec("d", system="a")]
    f = _write(tmp_path / "in" / "sep.jsonl", recs)
    res = _run({"paths": str(f)}, tmp_path / "run")
    assert _keys(_scores(tmp_path / "run")) == [("a", "b\x1fc"), ("a", "d")]   # an id may hold it
    (reason,) = _quarantine(tmp_path / "run").column("reason").to_pylist()
    assert reason == (f"file://{f} line 1: the system 'a\\x1fb' contains U+001F, which separates system "
                      "and id in example keys")
    assert res.summary["quarantined_by_reason"] == {"the system contains U+001F, which separates system "
                                                    "and id in example keys": 1}


def test_key_separator_in_a_dataframe_system_name_is_an_error():
    import pandas as pd

    from pipeline.execution.dataframe import _partition_stats

    df = pd.DataFrame({"id": ["1", "2"], "system": ["a", "a\x1fb"], "rouge1_precision": [1.0, 0.5],
                       "rouge1_recall": [1.0, 0.5], "rouge1_fmeasure": [1.0, 0.5]})
    with pytest.raises(ValueError, match=r"system name 'a\\x1fb' contains U\+001F"):
        _partition_stats(df, ["rouge1"], 1, 10, "id", "system")
    assert _partition_stats(df.iloc[:1], ["rouge1"], 1, 10, "id", "system")["systems"][0]["count"] == 1
