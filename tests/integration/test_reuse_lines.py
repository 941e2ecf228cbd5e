"""``--reuse RUN`` skips unchanged JSONL lines unparsed (issue 30): a line whose bytes the previous run
scored (``line_digest``) is copied with its row, only the other lines are parsed and scored, and the run
folder is still byte for byte a full rescore's; anything unusual reads the unit whole, as before."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.pipeline_corpus import config, examples, run_outputs
from pipeline.config import RunConfig
from pipeline.execution.driver import run
from pipeline.io import records as records_reader

RANGES = {"target_cost": 3000, "target_rows": 25}   # units are byte ranges of 40-line files
PACKS = {"target_cost": 3000}                         # small files: one unit reads a pack of them
LONG = {f"d{i:03d}" for i in range(40) if i % 17 == 3}   # examples(): the long documents (oversized slices)


def _records() -> list[dict]:
    return [{"id": i, "system": s, "candidate": c, "references": refs, "source": f"source of {i}: {refs[0]}"}
            for i, refs, cands in examples(40) for s, c in cands.items()]


def _write(root: Path, recs: list[dict], files: int = 2) -> str:
    root.mkdir(parents=True, exist_ok=True)
    for k in range(files):
        chunk = recs[k * len(recs) // files:(k + 1) * len(recs) // files]
        (root / f"in-{k}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in chunk), encoding="utf-8")
    return str(root / "in-*.jsonl")


def _run(paths: str, out: Path, ex: dict, reuse=None):
    ex = {**ex, **({"reuse": str(reuse)} if reuse is not None else {})}
    return run(RunConfig.from_dict(config({"layout": "records", "paths": paths}, out, execution=ex)), None,
               progress=False, log=lambda _m: None)


@pytest.fixture
def parsed(monkeypatch):
    """How many lines Arrow's JSON reader parsed (the fast path's and the line path's one parser)."""
    counts = []
    real = records_reader._fast_columns

    def counting(spec, data, n_lines):
        counts.append(n_lines)
        return real(spec, data, n_lines)

    monkeypatch.setattr(records_reader, "_fast_columns", counting)
    return counts


@pytest.fixture(scope="module", params=["ranges", "packs"])
def previous(request, tmp_path_factory):
    ex = RANGES if request.param == "ranges" else PACKS
    root = tmp_path_factory.mktemp(f"lines-{request.param}")
    recs = _records()
    paths = _write(root / "in", recs)
    res = _run(paths, root / "prev", ex)
    assert res.summary["split_examples"] > 0   # the long documents are oversized
    return {"root": root, "recs": recs, "run": root / "prev", "ex": ex}


def _same_as_full(previous, tmp_path, recs, parsed) -> tuple[dict, dict]:
    """The reused run's and the full rescore's summaries (their outputs compared byte for byte)."""
    paths = _write(tmp_path / "in", recs)
    full = _run(paths, tmp_path / "full", previous["ex"])
    parsed.clear()
    again = _run(paths, tmp_path / "reused", previous["ex"], reuse=previous["run"])
    assert run_outputs(tmp_path / "reused", markers=True) == run_outputs(tmp_path / "full", markers=True)
    assert again.rows == full.rows
    return again.summary, full.summary


@pytest.mark.parametrize("how", ["candidate", "references", "source"])
def test_only_the_changed_lines_are_parsed(previous, tmp_path, parsed, how):
    recs = [dict(r) for r in previous["recs"]]
    hit = [r for k, r in enumerate(recs) if k % 7 == 2 and r["id"] not in LONG]
    for r in hit:
        r[how] = r[how] + ["one more reference"] if how == "references" else r[how] + " and a little more"
    again, full = _same_as_full(previous, tmp_path, recs, parsed)
    assert again["rows_reused"] == len(recs) - len(hit)
    assert sum(parsed) == len(hit), "the unchanged lines were parsed"


def test_lines_moved_added_and_removed(previous, tmp_path, parsed):
    recs = previous["recs"][::-1][5:]   # every line moves (other units, other order), five go
    new = [{"id": f"new{k}", "system": "sysA", "candidate": f"a new candidate {k}", "references": ["a new reference"]}
           for k in range(4)]
    recs = recs[:20] + new + recs[20:]
    again, _ = _same_as_full(previous, tmp_path, recs, parsed)
    assert again["rows_reused"] == len(recs) - len(new)
    assert sum(parsed) == len(new)


def test_units_with_no_line_of_the_previous_run_are_read_once(previous, tmp_path, parsed, monkeypatch):
    """Every candidate changed (a new model's outputs): each unit is scored whole from the lines
    it read (not read again), its rows still looked up by their texts."""
    opened = []
    for name in {"open_input", "open_input_as"} & set(vars(records_reader)):   # how the readers open a file
        real = getattr(records_reader, name)
        monkeypatch.setattr(records_reader, name, lambda url, *a, _real=real, **k: opened.append(url) or _real(url, *a, **k))
    recs = [dict(r, candidate=r["candidate"] + " and a little more") for r in previous["recs"]]
    paths = _write(tmp_path / "in", recs)
    _run(paths, tmp_path / "full", previous["ex"])
    full_opens = sorted(opened)
    opened.clear()
    parsed.clear()
    again = _run(paths, tmp_path / "reused", previous["ex"], reuse=previous["run"])
    assert run_outputs(tmp_path / "reused", markers=True) == run_outputs(tmp_path / "full", markers=True)
    assert again.summary["rows_reused"] == 0
    assert sorted(opened) == full_opens, "units were read twice"
    assert sum(parsed) == len(recs)


def test_a_changed_oversized_example_reads_its_unit_whole(previous, tmp_path, parsed):
    recs = [dict(r) for r in previous["recs"]]
    long = next(r for r in recs if r["id"] in LONG)
    long["candidate"] += " the end"
    again, full = _same_as_full(previous, tmp_path, recs, parsed)
    assert again["rows_reused"] == len(recs) - 1
    assert again["split_examples"] == 1 < full["split_examples"]   # the changed one is cut in blocks again
    assert sum(parsed) > 1   # its unit was parsed whole (and the new oversized example cut in blocks)


@pytest.mark.parametrize("damage", ["a repeated key", "not json", "a null candidate"])
def test_a_changed_line_the_fast_reader_refuses_reads_its_unit_line_by_line(previous, tmp_path, parsed, damage):
    recs = [dict(r) for r in previous["recs"]]
    if damage == "a repeated key":
        recs[3] = dict(recs[3], id=recs[1]["id"], system=recs[1]["system"], candidate="another candidate")
    elif damage == "a null candidate":
        recs[3] = dict(recs[3], candidate=None)
    paths = _write(tmp_path / "in", recs)
    if damage == "not json":
        f = Path(paths.replace("*", "0"))
        lines = f.read_text().splitlines()
        f.write_text("\n".join(lines[:3] + ["{not json"] + lines[4:]) + "\n")
    full = _run(paths, tmp_path / "full", previous["ex"])
    again = _run(paths, tmp_path / "reused", previous["ex"], reuse=previous["run"])
    assert run_outputs(tmp_path / "reused", markers=True) == run_outputs(tmp_path / "full", markers=True)
    assert full.summary["quarantined"] == again.summary["quarantined"] == 1
    assert again.summary["rows_reused"] == len(recs) - 1


def test_lines_read_into_other_fields_are_other_examples(previous, tmp_path, parsed):
    """The same lines read with another ``input.columns`` (the candidate from "source"): no row
    is found by its line, as none is by its texts."""
    paths = _write(tmp_path / "in", previous["recs"])
    inp = {"layout": "records", "paths": paths, "columns": {"candidate": "source"}}

    def scored(out, reuse=None):
        ex = {**previous["ex"], **({"reuse": str(reuse)} if reuse else {})}
        return run(RunConfig.from_dict(config(inp, out, execution=ex)), None, progress=False, log=lambda _m: None)

    full = scored(tmp_path / "full")
    again = scored(tmp_path / "reused", reuse=previous["run"])
    assert again.summary["rows_reused"] == 0
    assert run_outputs(tmp_path / "reused", markers=True) == run_outputs(tmp_path / "full", markers=True)


def test_the_index_in_groups_finds_what_one_index_finds(previous):
    """The index is built in one group of parts a worker (joined, not merged): every line is
    found in the same row, with the same cost."""
    import numpy as np

    from pipeline.io.input_spec import InputSpec
    from pipeline.job import reuse
    from pipeline.runfolder.read import open_run

    info = open_run(str(previous["run"]), {}).info
    fields = reuse.reader_fields(InputSpec.from_config({"layout": "records", "paths": "x"}))
    prev, why = reuse.open_previous(str(previous["run"]), {}, info["signature"], True, str(previous["root"] / "x"),
                                    fields)
    assert not why and prev.lines
    one = reuse.build_index(prev)
    groups = reuse.join_index(*(reuse.build_index(prev, k, 3) for k in range(3)))
    assert len(groups.lines) == 3 and sum(len(g.digests) for g in groups.lines) == len(previous["recs"])
    digests = np.concatenate([one.lines[0].digests[::-1], np.array([1, 2, 3], dtype=np.uint64)])  # 3 unknown
    a, b = reuse.lookup_lines(one, digests), reuse.lookup_lines(groups, digests)
    assert a[0].sum() == len(previous["recs"]) and not a[0][-3:].any()
    for x, y in zip(a, b):
        assert np.array_equal(x, y)


def test_lines_reused_on_two_dask_worker_processes(previous, tmp_path):
    distributed = pytest.importorskip("distributed")
    from pipeline.execution.cluster import local_cluster

    recs = [dict(r) for r in previous["recs"]]
    hit = [r for k, r in enumerate(recs) if k % 5 == 1 and r["id"] not in LONG]
    for r in hit:
        r["candidate"] += " once more"
    paths = _write(tmp_path / "in", recs)
    _run(paths, tmp_path / "full", previous["ex"])
    with local_cluster(2, dashboard_address=None, memory_limit="1GB") as cluster, distributed.Client(cluster) as client:
        ex = {**previous["ex"], "reuse": str(previous["run"])}
        again = run(RunConfig.from_dict(config({"layout": "records", "paths": paths}, tmp_path / "reused",
                                               execution=ex)), client, progress=False,
                    log=lambda _m: None)
    assert again.summary["workers"] == 2 and again.summary["rows_reused"] == len(recs) - len(hit)
    assert run_outputs(tmp_path / "reused", markers=True) == run_outputs(tmp_path / "full", markers=True)


def test_a_slice_of_only_later_duplicates(tmp_path):
    """Lines repeating keys of an earlier file, at the end of a later one: the unit is read again
    with them dropped, its last slice is then empty, and the reused run still writes what a
    full rescore writes (it failed with an IndexError on the empty slice's digests)."""
    recs = _records()
    first, second = recs[:40], recs[40:]
    for k, (a, b) in enumerate([(first, second), (first, second + first[:3])]):
        for name, chunk in (("a", a), ("b", b)):
            (tmp_path / f"in{k}").mkdir(exist_ok=True)
            (tmp_path / f"in{k}" / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in chunk))
    _run(str(tmp_path / "in0" / "*.jsonl"), tmp_path / "prev", RANGES)
    full = _run(str(tmp_path / "in1" / "*.jsonl"), tmp_path / "full", RANGES)
    again = _run(str(tmp_path / "in1" / "*.jsonl"), tmp_path / "reused", RANGES, reuse=tmp_path / "prev")
    assert full.summary["quarantined"] == again.summary["quarantined"] == 3
    assert run_outputs(tmp_path / "reused", markers=True) == run_outputs(tmp_path / "full", markers=True)
