"""pipeline.job: a unit scored and written by slices, cost splits, duplicates across units, markers, quarantine buckets (no Dask)."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support.pipeline_corpus import write_records
from pipeline import runfolder
from pipeline import job
from pipeline.io import readers
from pipeline.io.readers import plan_units, read_unit
from pipeline.io.input_spec import InputSpec, WorkUnit


def test_job_never_imports_dask():
    code = "import sys, pipeline.job, pipeline.cli.main; assert not [m for m in sys.modules if m.startswith(('dask', 'distributed'))]"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("reason, cause", [
    ("file:///a/b.jsonl line 3: malformed JSON (Expecting value)", "malformed JSON (Expecting value)"),
    ("s3://b/x:y.jsonl line 12: no references for id 'd7'", "no references for id"),
    ("file:///a.parquet row 4: duplicate id 'x' for system 'a: b' (first at file:///a.parquet row 1)",
     "duplicate id for system"),
    ("file:///c.jsonl line 2: references side file:///r.jsonl line 9: null references", "null references"),
    ("file:///r.txt line 5: invalid UTF-8 at byte 17", "invalid UTF-8 at byte N"),
])
def test_reason_cause_buckets_by_cause_after_location(reason, cause):
    assert job.reason_cause(reason) == cause


def test_split_by_cost_is_contiguous_complete_and_isolates_oversized():
    u0, u1, u2 = (WorkUnit(index=i, layout="records", file=f"f{i}", format="jsonl") for i in range(3))
    costs = [[10] * 10, [5, 500, 5, 5], []]
    tasks = job.split_by_cost([u0, u1, u2], costs, target_cost=30)
    by_unit = {}
    for t in tasks:
        by_unit.setdefault(t.unit.index, []).append(t)
    for u, c in zip((u0, u1, u2), costs):
        ts = by_unit[u.index]
        n = len(c)
        spans = [(t.lo, n if t.hi is None else t.hi) for t in ts]
        assert spans[0][0] == 0 and spans[-1][1] == n
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
        assert sum(t.cost for t in ts) == sum(c)
    assert [(t.lo, t.hi) for t in by_unit[0]] == [(0, 3), (3, 6), (6, 9), (9, None)]
    assert [(t.lo, t.hi, t.oversized) for t in by_unit[1]] == [(0, 1, False), (1, 2, True), (2, None, False)]
    assert len(by_unit[2]) == 1 and by_unit[2][0].n_rows == 0
    # each unit's slices numbered from 0: the part names (unit, slice) are the unit's own
    assert {u: [t.index for t in ts] for u, ts in by_unit.items()} == {0: [0, 1, 2, 3], 1: [0, 1, 2], 2: [0]}
    assert job.split_by_cost([u0, u1, u2], costs, 30) == tasks            # deterministic
    assert job.split_by_cost([u1], [costs[1]], 30) == by_unit[1]          # a unit's split is its own


def _greedy_bounds(c, target):
    """The cutting rule, one example at a time (the specification split_by_cost is checked against)."""
    start, acc, bounds = 0, 0, []
    for i in range(len(c)):
        if c[i] >= target and i > start:
            bounds.append((start, i))
            start, acc = i, 0
        acc += int(c[i])
        if acc >= target:
            bounds.append((start, i + 1))
            start, acc = i + 1, 0
    if start < len(c) or not bounds:
        bounds.append((start, len(c)))
    return bounds


@pytest.mark.parametrize("seed", range(40))
def test_split_by_cost_equals_the_per_example_greedy_rule(seed):
    rng = np.random.default_rng(seed)
    target = float(rng.choice([1, 7, 30, 30.5, 100, 1e9]))
    n = int(rng.integers(0, 60))
    c = rng.integers(0, 40, size=n)
    c[rng.random(n) < 0.1] = int(target) + int(rng.integers(0, 3))   # at (and just above) the target
    c[rng.random(n) < 0.1] = 0
    u = WorkUnit(index=0, layout="records", file="f", format="jsonl")
    tasks = job.split_by_cost([u], [c.tolist()], target_cost=target)
    assert [(t.lo, n if t.hi is None else t.hi) for t in tasks] == _greedy_bounds(c, target)
    for t in tasks:
        hi = n if t.hi is None else t.hi
        assert t.cost == int(c[t.lo:hi].sum())
        assert t.oversized == (hi - t.lo == 1 and c[t.lo] >= target)


def test_estimate_costs_grow_with_both_sides():
    t = pa.table({"candidate": ["a" * 60, "a" * 6, "é" * 60],
                  "references": [["b" * 60], ["b" * 600, "c" * 600], ["b" * 60]]})
    c = job.estimate_costs(t)
    # (bytes // 6 + 1) on each side: "é" is two UTF-8 bytes
    assert c.tolist() == [11 * 11, 2 * 201, 21 * 11]
    sliced = pa.concat_tables([t.slice(2), t.slice(0, 2)])   # offsets into shared buffers, two chunks
    assert job.estimate_costs(sliced).tolist() == [21 * 11, 11 * 11, 2 * 201]


def _ctx(run, **kw):
    return job.UnitContext(run_url=str(run), scoring=job.ScoringSettings(("rouge1", "rougeL")), seed=1, n_boot=50,
                           metadata={"rouge_pipeline.signature": "sig"}, **kw)


def _keys(pairs):
    return pa.table({"system": [s for s, _ in pairs], "id": [i for _, i in pairs], "row": list(range(len(pairs)))})


def test_key_hashes_are_equal_exactly_for_equal_keys_and_are_the_statistics_hashes():
    from pipeline.stats import poisson

    pairs = [("a", "1"), ("a", "2"), ("b", "1"), ("a", "b\x1fc"), ("", "")]
    a = job.key_hashes(_keys(pairs))
    b = job.key_hashes(_keys([("b", "1"), ("a", "1")]))
    assert a.dtype == np.uint64 and len(set(a.tolist())) == 5
    assert b.tolist() == [a[2], a[0]]
    assert job.key_hashes(_keys([])).shape == (0,)
    # the bootstrap's key hash of f"{system}\x1f{id}": the plan pass hashes each key once for both
    assert a.tolist() == poisson.key_hashes([f"{s}\x1f{i}" for s, i in pairs]).tolist()


def test_later_duplicates_names_each_later_unit_its_hashes_and_the_first_unit():
    h = lambda *v: np.array(v, dtype=np.uint64)  # noqa: E731
    # unit order is input order, not the order of the arrays' values; within a unit, no repeats
    got = job.later_duplicates([3, 5, 8, 9], h(10, 11), h(12, 11), h(11, 13, 10), h(14))
    assert {u: (a.tolist(), b.tolist(), sorted(c)) for u, (a, b, c) in got.items()} == \
        {5: ([11], [3], [3]), 8: ([10, 11], [3, 3], [3])}
    assert job.duplicate_units(got) == [5, 8]
    assert job.later_duplicates([0, 1], h(1, 2), h(3)) == {}
    assert job.later_duplicates([], ) == {} and job.later_duplicates([0], h()) == {}
    # a hash repeated inside one unit (two different keys) is no duplicate across units
    assert job.later_duplicates([0, 1], h(7, 7), h(8)) == {}
    with pytest.raises(ValueError, match="2 units but 1"):
        job.later_duplicates([0, 1], h(1))


def _dup_units(tmp_path):
    root = tmp_path / "in"
    root.mkdir()
    (root / "a.jsonl").write_text("".join(json.dumps({"id": i, "candidate": f"first {i}", "references": ["x"]}) + "\n"
                                          for i in ("k1", "k2", "k3")))
    (root / "b.jsonl").write_text("".join(json.dumps({"id": i, "candidate": f"later {i}", "references": ["x"]}) + "\n"
                                          for i in ("k0", "k2", "k4")))
    spec = InputSpec.from_config({"layout": "records", "paths": str(root / "*.jsonl")})
    return spec, plan_units(spec, target_rows=100)   # one unit a file


def test_confirm_drops_compares_the_ids_not_only_their_hashes(tmp_path):
    spec, (ua, ub) = _dup_units(tmp_path)
    ta, tb = read_unit(spec, ua)[0], read_unit(spec, ub)[0]
    ha = job.key_hashes(readers.unit_keys(ta, ua))
    hb = job.key_hashes(readers.unit_keys(tb, ub))
    cand = job.later_duplicates([ua, ub], ha, hb)[ub.index]
    assert cand[2] == {ua.index: ua}
    dropped = job.confirm_drops(spec, ub, tb, cand)
    assert dropped.drop_rows == ((1, f"{ua.file} line 2"),)
    # a hash that an earlier unit holds for another key: reported, never guessed
    fake = (np.array([hb[0]], dtype=np.uint64), np.array([ua.index]), {ua.index: ua})
    with pytest.raises(job.HashCollisionError, match="shares its 64-bit hash"):
        job.confirm_drops(spec, ub, tb, fake)


def test_score_unit_writes_each_slice_at_once_and_resumes_from_markers(tmp_path):
    spec = InputSpec.from_config({"layout": "records", "paths": write_records(tmp_path / "in", 12)})
    units = plan_units(spec)
    ctx = _ctx(tmp_path / "run")
    work = job.UnitWork(target_cost=400)
    results = [job.score_unit(spec, u, ctx, work) for u in units]
    assert sum(r.slices for r in results) > len(units), "several slices a unit at this target"
    assert all(r.left == [] for r in results), "in process, wave 1 leaves nothing"
    # every canonical row scored exactly once, quarantine rows emitted once per unit
    n_rows = sum(read_unit(spec, u)[0].num_rows for u in units)
    n_q = sum(read_unit(spec, u)[1].num_rows for u in units)
    merged = job.merge_results(*results)
    assert merged.rows == n_rows and merged.quarantined == n_q == 3
    assert merged.quarantine_reasons == {"duplicate id for system": 1, "malformed JSON (Expecting property "
                                            "name enclosed in double quotes)": 1, "null candidate": 1}
    run = tmp_path / "run"
    for r in results:
        for k in range(r.slices):
            assert (run / "_done" / f"unit-{r.unit:05d}-{k:04d}.json").exists()
    part = run / "scores" / "system-sysA" / "part-00000-0000.parquet"
    f = pq.ParquetFile(part)
    assert f.schema_arrow.remove_metadata() == job.scores_schema(("rouge1", "rougeL"))
    assert f.schema_arrow.metadata[b"rouge_pipeline.signature"] == b"sig"
    assert (run / "quarantine" / "part-00000-0000.parquet").exists()
    assert not list(run.glob("quarantine/part-0000?-0001.parquet")), "a unit's quarantine goes with slice 0"
    # the key hashes of every row, as the statistics hash them
    table = read_unit(spec, units[0])[0]
    assert results[0].hashes.tolist() == job.key_hashes(readers.unit_keys(table, units[0])).tolist()
    # resume: every slice's marker and files present -> nothing read, the same statistics
    # (recomputed from the part files) and hashes (from the parts' keys)
    for u, r in zip(units, results):
        done = frozenset(range(r.slices))
        again = job.score_unit(dataclasses.replace(spec, paths=("/nonexistent/*.jsonl",)), u, ctx,
                               job.UnitWork(400, done=done))
        assert again.skipped == again.tasks == r.slices and again.stats == r.stats
        assert sorted(again.hashes.tolist()) == sorted(r.hashes.tolist())
    # not trusted, so the slice is scored again: a marker of another format, a marker whose
    # row count its part files do not have, a damaged part
    marker_path = run / "_done" / "unit-00000-0000.json"
    marker = json.loads(marker_path.read_text())
    assert "stats" not in marker and marker["slices"] == results[0].slices
    for bad in ({**marker, "marker": 4}, {**marker, "rows": marker["rows"] + 1}, {**marker, "slice": 1}):
        marker_path.write_text(json.dumps(bad))
        assert job.load_done(0, 0, ctx) is None
        redo = job.score_unit(spec, units[0], ctx, job.UnitWork(400, done=frozenset(range(results[0].slices))))
        assert redo.skipped == redo.tasks - 1 and redo.stats == results[0].stats
    data = part.read_bytes()
    part.write_bytes(data[: len(data) // 2])
    assert job.load_done(0, 0, ctx) is None
    # statistics do not depend on the split
    res2 = [job.score_unit(spec, u, _ctx(tmp_path / "run2"), job.UnitWork(1e12)) for u in units]
    assert all(r.slices == 1 for r in res2)
    assert job.merge_results(*res2).stats == merged.stats


def test_a_task_result_is_typed_and_pickles_to_the_same_numbers(tmp_path):
    """What a task returns to the graph is a frozen TaskResult; pickled as Dask sends it, the
    statistics tree merges it to the same numbers, and the client gets a Brief of it."""
    import pickle

    spec = InputSpec.from_config({"layout": "records", "paths": write_records(tmp_path / "in", 12)})
    ctx = _ctx(tmp_path / "run")
    results = [job.score_unit(spec, u, ctx, job.UnitWork(target_cost=400)) for u in plan_units(spec)]
    assert all(isinstance(r, job.TaskResult) for r in results)
    with pytest.raises(dataclasses.FrozenInstanceError):
        results[0].rows = 0
    sent = [pickle.loads(pickle.dumps(r)) for r in results]
    assert [r.hashes.tolist() for r in sent] == [r.hashes.tolist() for r in results]
    merged = job.merge_results(*sent)
    assert isinstance(merged, job.TaskResult) and merged.stats == job.merge_results(*results).stats
    assert (merged.rows, merged.quarantined) == (sum(r.rows for r in results), sum(r.quarantined for r in results))
    totals = job.finalize_results(0.95, *sent)
    assert isinstance(totals, job.Totals) and totals.rows == merged.rows and totals.stats_rows
    b = pickle.loads(pickle.dumps(job.brief(results[0])))
    assert isinstance(b, job.Brief) and (b.slices, b.rows, b.left, b.stopped) == (
        results[0].slices, results[0].rows, [], False)
    # Dask sizes a result by sys.getsizeof: its key hashes count
    assert sys.getsizeof(results[0]) >= results[0].hashes.nbytes > 0


def test_score_unit_on_a_cluster_leaves_slices_past_its_first_and_oversized_examples(tmp_path):
    root = tmp_path / "in"
    root.mkdir()
    long_ref = "\n".join(f"sentence {k} of the reference text" for k in range(40))
    rows = [{"id": f"s{i}", "candidate": "a short candidate text", "references": ["a short reference"]}
            for i in range(6)]
    rows.insert(3, {"id": "long", "candidate": "the reference text sentence " * 30, "references": [long_ref]})
    (root / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = InputSpec.from_config({"layout": "records", "paths": str(root / "a.jsonl")})
    (unit,) = plan_units(spec)
    ctx = job.UnitContext(run_url=str(tmp_path / "run"), scoring=job.ScoringSettings(("rouge1", "rougeLsum")),
                          seed=1, n_boot=10)
    r = job.score_unit(spec, unit, ctx, job.UnitWork(target_cost=20, first=2))
    costs = job.estimate_costs(read_unit(spec, unit)[0])
    slices = job.split_by_cost([unit], [costs], 20)
    long_slice = next(s for s in slices if s.oversized)
    assert r.slices == len(slices) and len(slices) > 4
    blocks = job.split_blocks_for(long_slice, ctx.scoring, 20)
    assert (long_slice.index, blocks) in r.left and blocks > 1
    scored = {k for k in range(len(slices)) if (tmp_path / "run" / "_done" / f"unit-00000-{k:04d}.json").exists()}
    assert len(scored) == 2 and long_slice.index not in scored
    assert sorted(scored | {k for k, _ in r.left}) == list(range(len(slices)))
    # wave 2: one left slice by itself
    k = next(k for k, b in r.left if b == 1)
    r2 = job.score_unit(spec, unit, ctx, job.UnitWork(target_cost=20, slices=(k,)))
    assert r2.tasks == 1 and r2.left == [] and r2.hashes is None
    assert (tmp_path / "run" / "_done" / f"unit-00000-{k:04d}.json").exists()


def test_score_table_status_and_empty():
    s = job.ScoringSettings(("rouge1",))
    t = pa.table({"id": ["a", "b", "c"], "system": ["", "", ""], "candidate": ["x y", "", "x"],
                  "references": [["x"], ["x"], ["..."]]})
    out = job.score_table(t, s)
    assert out.column("status").to_pylist() == ["ok", "empty_candidate", "empty_reference"]
    assert out.column("rouge1_recall").to_pylist()[0] == 1.0
    empty = job.score_table(t.slice(0, 0), s)
    assert empty.num_rows == 0 and empty.schema == job.scores_schema(("rouge1",))
    assert np.isfinite(out.column("rouge1_fmeasure").to_numpy()).all()


def test_warmup_with_the_runs_settings_builds_what_its_tasks_use():
    """The driver warms every worker with the run's settings before planning: a unicode
    profile's compiled batch encoder must then exist, with tokens in its vocabulary, in the
    very scorer a task gets from scorer_for."""
    from pipeline.execution.warmup import warmup

    settings = job.ScoringSettings(profile="unicode", language="de", stemming="snowball")
    job.scorer_for.cache_clear()
    warmup(settings)
    tokenizer = job.scorer_for(settings)._tokenizer
    assert tokenizer.__dict__.get("_batch_encoder") is not None
    assert tokenizer._batch_encoder.vocab.n_ids > 0
