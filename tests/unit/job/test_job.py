"""pipeline.job: one task, planning by cost, markers, quarantine buckets (no Dask)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support.pipeline_corpus import write_records
from pipeline import job
from pipeline.io import readers
from pipeline.io.readers import plan_units, read_unit
from pipeline.io.spec import InputSpec, UnreadableFileError, WorkUnit


def test_job_never_imports_dask():
    code = "import sys, pipeline.job, pipeline.cli; assert not [m for m in sys.modules if m.startswith(('dask', 'distributed'))]"
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
    assert [t.index for t in tasks] == list(range(len(tasks)))
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
    assert job.split_by_cost([u0, u1, u2], costs, 30) == tasks            # deterministic
    assert [job.task_from_dict(json.loads(json.dumps(job.task_to_dict(t)))) for t in tasks] == tasks


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


def test_drop_duplicates_trusts_hashes_only_to_rule_duplicates_out():
    units = [WorkUnit(index=k, layout="records", file=f"f{k}.jsonl", format="jsonl") for k in range(2)]

    def planned(pairs, hashes=None):
        keys = _keys(pairs)
        return {"costs": [1] * len(pairs), "keys": keys,
                "key_hashes": job.key_hashes(keys) if hashes is None else np.array(hashes, dtype=np.uint64)}

    clean = [planned([("a", "1")]), planned([("a", "2")])]
    new_units, costs = job.drop_duplicates(units, clean)
    assert [u.drop_rows for u in new_units] == [(), ()] and [c.tolist() for c in costs] == [[1], [1]]
    # equal hashes of different keys (a collision): the exact search decides, nothing dropped
    collide = [planned([("a", "1")], [7]), planned([("a", "2")], [7])]
    assert [u.drop_rows for u in job.drop_duplicates(units, collide)[0]] == [(), ()]
    # a real duplicate, with and without hashes
    for dup in ([planned([("a", "1")]), planned([("a", "1"), ("a", "3")])],
                [{k: v for k, v in p.items() if k != "key_hashes"} for p in
                 (planned([("a", "1")]), planned([("a", "1"), ("a", "3")]))]):
        new_units, costs = job.drop_duplicates(units, dup)
        assert new_units[1].drop_rows == ((0, "f0.jsonl line 1"),) and [c.tolist() for c in costs] == [[1], [1]]


def test_score_task_parts_marker_and_resume(tmp_path):
    spec = InputSpec.from_config({"layout": "records", "paths": write_records(tmp_path / "in", 12)})
    units = plan_units(spec)
    tasks = job.split_by_cost(units, [job.plan_unit(spec, u)["costs"] for u in units], target_cost=400)
    assert len(tasks) > len(units)
    ctx = _ctx(tmp_path / "run")
    results = [job.run_task(spec, t, ctx) for t in tasks]
    # every canonical row scored exactly once, quarantine rows emitted once per unit
    n_rows = sum(read_unit(spec, u)[0].num_rows for u in units)
    n_q = sum(read_unit(spec, u)[1].num_rows for u in units)
    merged = job.merge_results(*results)
    assert merged["rows"] == n_rows and merged["quarantined"] == n_q == 3
    assert merged["quarantine_reasons"] == {"duplicate id for system": 1, "malformed JSON (Expecting property "
                                            "name enclosed in double quotes)": 1, "null candidate": 1}
    part = tmp_path / "run" / "scores" / "system-sysA" / "part-00000.parquet"
    f = pq.ParquetFile(part)
    assert f.schema_arrow.remove_metadata() == job.scores_schema(("rouge1", "rougeL"))
    assert f.schema_arrow.metadata[b"rouge_pipeline.signature"] == b"sig"
    assert (tmp_path / "run" / "quarantine" / "part-00000.parquet").exists()
    marker_path = tmp_path / "run" / "_done" / "unit-00000.json"
    marker = json.loads(marker_path.read_text())
    assert "stats" not in marker and marker["rows"] == results[0]["rows"] > 0
    # resume: marker + files present -> skipped, with the statistics the task returned,
    # recomputed from its part files (for every task, whatever systems it holds)
    for t, r in zip(tasks, results):
        again = job.run_task(spec, t, ctx)
        assert again["skipped"] == 1 and again["stats"] == r["stats"]
        assert {k: v for k, v in again.items() if k not in ("stats", "skipped")} == \
            {k: v for k, v in r.items() if k not in ("stats", "skipped")}
    # not trusted, so the task is scored again: a marker in another format (one that held
    # its statistics), a marker whose row count its part files do not have, a damaged part
    for bad in ({**marker, "marker": 1}, {**marker, "rows": marker["rows"] + 1}):
        marker_path.write_text(json.dumps(bad))
        assert job.load_done(tasks[0], ctx) is None
        assert job.run_task(spec, tasks[0], ctx)["skipped"] == 0
    data = part.read_bytes()
    part.write_bytes(data[: len(data) // 2])
    assert job.load_done(tasks[0], ctx) is None
    part.unlink()
    redo = job.run_task(spec, tasks[0], ctx)
    assert redo["skipped"] == 0 and part.exists()
    # statistics do not depend on the split
    whole = job.split_by_cost(units, [job.plan_unit(spec, u)["costs"] for u in units], target_cost=1e12)
    res2 = [job.score_task(spec, t, _ctx(tmp_path / "run2")) for t in whole]
    assert job.merge_results(*res2)["stats"] == merged["stats"]


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


def test_plan_pass_tables_serve_this_runs_tasks_only(tmp_path):
    spec = InputSpec.from_config({"layout": "records", "paths": write_records(tmp_path / "in", 12)})
    units = plan_units(spec)
    planned = [job.plan_unit(spec, u, "run-a", keep_mb=64) for u in units]
    assert all(p["kept"] for p in planned)
    tasks = job.split_by_cost(units, [p["costs"] for p in planned], target_cost=400)
    truth = {u.index: read_unit(spec, u) for u in units}
    gone = (FileNotFoundError, UnreadableFileError)  # a JSONL shard, the Parquet shard
    for f in (tmp_path / "in").iterdir():   # from here on only the kept tables can be read
        f.unlink()
    try:
        with pytest.raises(gone):
            job.read_task(spec, tasks[0], "run-b")          # another run's token is never served
        with pytest.raises(gone):
            job.read_task(spec, tasks[0])                   # nor a task without a token
        for t in tasks:                                     # each unit's rows, then released
            table, quarantine = job.read_task(spec, t, "run-a")
            whole, q = truth[t.unit.index]
            hi = whole.num_rows if t.hi is None else t.hi
            assert table.equals(whole.slice(t.lo, hi - t.lo))
            assert quarantine.num_rows == (q.num_rows if t.lo == 0 else 0)
        assert job.UNIT_TABLES.used == 0
        with pytest.raises(gone):
            job.read_task(spec, tasks[-1], "run-a")
    finally:
        job.UNIT_TABLES.clear()


def test_plan_pass_scores_units_that_are_one_task(tmp_path):
    """A unit that will be one task is scored, reduced and encoded by its plan pass; its task
    then only writes: the same files, marker and result as a task that reads and scores."""
    from support.pipeline_corpus import run_files

    root = tmp_path / "in"
    spec = InputSpec.from_config({"layout": "records", "paths": write_records(root, 12)})
    units = plan_units(spec)
    settings = job.ScoringSettings()

    def ctx(run, token):
        return job.UnitContext(run_url=str(tmp_path / run), scoring=settings, seed=3, n_boot=50,
                               metadata={"rouge_pipeline.signature": "t"}, read_token=token)

    kept, fresh = ctx("kept", "run-p"), ctx("fresh", "")
    try:
        planned = [job.plan_unit(spec, u, "run-p", 64, kept, job.DEFAULT_TARGET_COST) for u in units]
        tasks = job.plan_tasks(units, job.DEFAULT_TARGET_COST, *planned)[0]
        assert len(tasks) == len(units) and all(p["kept"] for p in planned)
        assert job.kept_units("run-p") == [u.index for u in units] and job.kept_units("other") == []
        for u in units:   # kept as the encoded output, not as tables
            tables, prepared = job.UNIT_TABLES.take("run-p", u, release=False)
            assert tables is None and prepared["rows"] > 0
            # the budget counts the files and the statistics
            assert prepared["nbytes"] >= (sum(len(b) for _, b in prepared["parts"]) + prepared["stats"].nbytes())
        shutil.rmtree(root)   # from here on only what the plan pass made can serve the tasks
        got = [job.score_task(spec, t, kept) for t in tasks]
        assert job.UNIT_TABLES.used == 0
        write_records(root, 12)
        want = [job.score_task(spec, t, fresh) for t in tasks]
    finally:
        job.UNIT_TABLES.clear()
    assert sum(r["quarantined"] for r in got) > 0
    for g, w in zip(got, want):
        assert g["stats"].to_dict() == w["stats"].to_dict()
        assert {k: v for k, v in g.items() if k != "stats"} == {k: v for k, v in w.items() if k != "stats"}
    files = run_files(tmp_path / "kept", "**/*.*")
    assert len(files) > len(tasks) and files == run_files(tmp_path / "fresh", "**/*.*")


def test_plan_pass_leaves_units_cut_into_several_tasks_to_them(tmp_path):
    spec = InputSpec.from_config({"layout": "records", "paths": write_records(tmp_path / "in", 12)})
    u = plan_units(spec)[0]
    c = job.UnitContext(run_url=str(tmp_path / "r"), scoring=job.ScoringSettings(), seed=0, n_boot=0,
                        read_token="run-q")
    try:
        p = job.plan_unit(spec, u, "run-q", 64, c, target_cost=400)
        assert not job.one_task(p["costs"], 400) and job.one_task(p["costs"], 1e12)
        tables, prepared = job.UNIT_TABLES.take("run-q", u, release=False)
        assert prepared is None and tables[0].num_rows == len(p["costs"])
    finally:
        job.UNIT_TABLES.clear()


def test_in_place_tasks_are_the_whole_units_with_nothing_dropped():
    import dataclasses

    u = [WorkUnit(index=i, layout="records", file=f"f{i}.jsonl", format="jsonl") for i in range(4)]
    u[3] = dataclasses.replace(u[3], drop_rows=((0, "f0.jsonl line 1"),))
    tasks = [job.Task(0, u[0]), job.Task(1, u[1], 0, 5), job.Task(2, u[1], 5, None),
             job.Task(3, u[2], oversized=True, n_rows=1, cost=10), job.Task(4, u[3])]
    assert job.in_place_tasks(tasks) == {0: tasks[0]}
    assert job.in_place_tasks([]) == {}


def test_finish_in_place_runs_its_units_tasks_with_or_without_what_was_kept(tmp_path):
    """A worker's finish_in_place gives the results and files of its units' own tasks, from the
    plan pass's output or (on another worker) by reading and scoring; units with several tasks
    are left to their tasks, and a failing task is named on its exception."""
    from support.pipeline_corpus import run_files

    spec = InputSpec.from_config({"layout": "records", "paths": write_records(tmp_path / "in", 12)})
    units = plan_units(spec)

    def ctx(run, token):
        return job.UnitContext(run_url=str(tmp_path / run), scoring=job.ScoringSettings(("rouge1", "rougeL")),
                               seed=3, n_boot=20, metadata={"rouge_pipeline.signature": "t"}, read_token=token)

    try:
        kept = ctx("kept", "run-f")
        planned = [job.plan_unit(spec, u, "run-f", 64, kept, 1e12) for u in units]
        plan = job.plan_tasks(units, 1e12, *planned)
        assert len(plan[0]) == len(units) and len(job.in_place_tasks(plan[0])) == len(units)
        indices = [u.index for u in units]
        got = job.finish_in_place(spec, plan, indices, kept)
        assert job.UNIT_TABLES.used == 0   # every kept output was taken
        moved = job.finish_in_place(spec, plan, indices, ctx("moved", "run-g"))  # nothing kept here
    finally:
        job.UNIT_TABLES.clear()
    fresh = ctx("fresh", "")
    want = job.merge_results(*[job.run_task(spec, t, fresh) for t in plan[0]])
    for r in (got, moved):
        assert r["stats"] == want["stats"] and r["tasks"] == len(units)
        assert {k: v for k, v in r.items() if k != "stats"} == {k: v for k, v in want.items() if k != "stats"}
    files = run_files(tmp_path / "fresh", "**/*.*")
    assert files == run_files(tmp_path / "kept", "**/*.*") == run_files(tmp_path / "moved", "**/*.*")
    # found done again (a retry of the same call), a task counts as resumed only if an earlier
    # run had finished it
    again = job.finish_in_place(spec, plan, indices, fresh)
    assert again["rows"] == want["rows"] and again["skipped"] == 0 and again["stats"] == want["stats"]
    resumed = job.finish_in_place(spec, plan, indices, fresh, frozenset(t.index for t in plan[0][:2]))
    assert resumed["skipped"] == 2
    # units cut into several tasks are not finished in place; none left gives None
    small = job.plan_tasks(units, 400, *[job.plan_unit(spec, u) for u in units])
    split = [u for u in units if sum(t.unit.index == u.index for t in small[0]) > 1]
    assert split and job.finish_in_place(spec, small, [u.index for u in split], fresh) is None
    assert job.merge_results(None, want, None)["rows"] == want["rows"] and job.merge_results(None) is None
    # a failure names its task
    shutil.rmtree(tmp_path / "in")
    with pytest.raises(Exception) as err:
        job.finish_in_place(spec, plan, indices, ctx("gone", ""))
    assert getattr(err.value, job.FAILED_TASK_ATTR) == plan[0][0].key


def test_unit_tables_budget_new_run_dropped_rows_and_run_end(tmp_path):
    import dataclasses

    spec = InputSpec.from_config({"layout": "records", "paths": write_records(tmp_path / "in", 12)})
    u0, u1 = plan_units(spec)[:2]
    tables = read_unit(spec, u0)
    cache = job.UnitTables()
    assert not cache.put("a", u0, tables, budget=1)                    # over budget: not kept
    assert cache.used == 0 and cache.take("a", u0, release=True) is None
    assert cache.put("a", u0, tables, budget=1 << 30)
    assert cache.used > 0 and cache.take("a", u0, release=False) is not None
    dup = dataclasses.replace(u0, drop_rows=((0, "elsewhere"),))
    assert cache.take("a", dup, release=False) is None     # its table differs from the plan's...
    assert cache.used == 0                                  # ...and is dropped, not left behind
    assert cache.put("a", u0, tables, budget=1 << 30)
    assert cache.put("b", u1, read_unit(spec, u1), budget=1 << 30)
    assert cache.take("a", u0, release=True) is None       # a new run drops the old run's units
    cache.release("a")                                      # another run's end leaves b's alone
    assert cache.take("b", u1, release=False) is not None
    cache.release("b")
    assert cache.used == 0 and cache.take("b", u1, release=True) is None
    # a plan task still running when its run ended (and was released) keeps nothing
    assert not cache.put("b", u1, read_unit(spec, u1), budget=1 << 30)
    assert cache.used == 0
    assert cache.put("c", u1, read_unit(spec, u1), budget=1 << 30)


def test_unit_cache_mb_zero_keeps_nothing(tmp_path):
    spec = InputSpec.from_config({"layout": "records", "paths": write_records(tmp_path / "in", 12)})
    u = plan_units(spec)[0]
    try:
        assert not job.plan_unit(spec, u, "run-z", keep_mb=0)["kept"]
        assert job.UNIT_TABLES.used == 0
        assert job.plan_unit(spec, u, "run-z", keep_mb=64)["kept"]
        assert job.UNIT_TABLES.used > 0
    finally:
        job.UNIT_TABLES.clear()


def test_warmup_with_the_runs_settings_builds_what_its_tasks_use():
    """The driver warms every worker with the run's settings before planning: a unicode
    profile's compiled batch encoder must then exist, with tokens in its vocabulary, in the
    very scorer a task gets from scorer_for."""
    from pipeline.warmup import warmup

    settings = job.ScoringSettings(profile="unicode", language="de", stemming="snowball")
    job.scorer_for.cache_clear()
    warmup(settings)
    tokenizer = job.scorer_for(settings)._tokenizer
    assert tokenizer.__dict__.get("_batch_encoder") is not None
    assert tokenizer._batch_encoder.vocab.n_ids > 0
