"""The distributed job on real LocalClusters (worker processes, 127.0.0.1, no dashboard).

One module-scoped cluster per worker count, reused by every test."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support.bootstrap_definition import direct_ci
from support.pipeline_corpus import config, run_outputs, write_lines, write_paired, write_records
from pipeline import runfolder
from pipeline import job
from pipeline.config import RunConfig
from pipeline.execution.driver import RunFolderError, StrictModeError, run
from pipeline.stats import stats_schema
from pipeline.stats.accumulator import BOOT_BUCKETS

distributed = pytest.importorskip("distributed")


def _cluster(n):
    from pipeline.execution.cluster import local_cluster

    cluster = local_cluster(n, dashboard_address=None, memory_limit="1GB")
    client = distributed.Client(cluster)
    return cluster, client


@pytest.fixture(scope="module")
def client1():
    cluster, client = _cluster(1)
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def client2():
    cluster, client = _cluster(2)
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    return {"records": write_records(root / "records"), "paired": write_paired(root / "paired"),
            "lines": write_lines(root / "lines"), "clean": write_records(root / "clean", bad=False), "root": root}


def _cfg(corpus, out, **kw):
    d = config({"layout": "records", "paths": corpus["records"]}, out, **kw)
    return RunConfig.from_dict(d)


_outputs = run_outputs


def _sorted_scores(run: Path) -> pa.Table:
    t = pa.concat_tables(pq.read_table(p) for p in sorted(run.glob("scores/**/*.parquet")))
    return t.sort_by([("system", "ascending"), ("id", "ascending")]).replace_schema_metadata(None)


def _log(_):
    pass


TARGET = {"target_cost": 3000}      # several tasks per unit on this small corpus


def test_one_vs_two_workers_byte_identical_and_sync(corpus, client1, client2, tmp_path):
    stats = {"bootstrap": "exact"}
    r1 = run(_cfg(corpus, tmp_path / "w1", execution=TARGET, stats=stats), client1, progress=False, log=_log)
    r2 = run(_cfg(corpus, tmp_path / "w2", execution=TARGET, stats=stats), client2, progress=False, log=_log)
    rs = run(_cfg(corpus, tmp_path / "sync", execution=TARGET, stats=stats), None, progress=False, log=_log)
    o1, o2, os_ = _outputs(tmp_path / "w1"), _outputs(tmp_path / "w2"), _outputs(tmp_path / "sync")
    assert r1.summary["tasks"] > 3
    assert any("system-sysA" in k for k in o1) and "stats/bootstrap_exact.json" in o1
    assert o1 == o2 == os_
    assert r1.rows == r2.rows == rs.rows and r1.exact_rows == r2.exact_rows
    for r in (r1, r2, rs):
        assert (Path(r.run_url) / "_SUCCESS").exists()


def test_keep_texts_two_workers_byte_identical_and_the_texts_are_the_inputs(corpus, client2, tmp_path):
    """output.keep_texts (issue #27): the parts also hold the texts scored, byte-identical on two
    workers and in process, and every row's text_digest is that of its kept texts."""
    from pipeline.job.digest import run_digest

    out = {"keep_texts": True}
    r2 = run(_cfg(corpus, tmp_path / "w2", execution=TARGET, output=out), client2, progress=False, log=_log)
    rs = run(_cfg(corpus, tmp_path / "sync", execution=TARGET, output=out), None, progress=False, log=_log)
    assert r2.summary["tasks"] > 3 and _outputs(tmp_path / "w2") == _outputs(tmp_path / "sync")
    assert r2.rows == rs.rows
    rows = _sorted_scores(tmp_path / "w2").to_pylist()
    info = json.loads((tmp_path / "w2" / "_run.json").read_text())
    assert rows and all(r["text_digest"] == run_digest(info, r["candidate"], r["references"], None) for r in rows)


def _computed(ts_data, prefix: str) -> dict:
    """``{key: (worker, start, stop)}`` of the finished tasks whose key starts with ``prefix``."""
    out = {}
    for t in ts_data:
        key = str(t["key"])
        if key.startswith(prefix) and t.get("status") == "OK":
            for ss in t.get("startstops", ()):
                if ss["action"] == "compute":
                    out[key] = (t["worker"], ss["start"], ss["stop"])
    return out


def test_each_unit_is_read_scored_and_written_by_one_wave_1_task(corpus, client2, tmp_path):
    """Parts and markers are named by (unit, slice), so the worker that reads a unit writes it
    there and then: every marker was written while its unit's wave-1 task ran, no other task
    read the input, and the files are the in-process run's, markers included."""
    from distributed import get_task_stream

    with get_task_stream(client2) as ts:
        a = run(_cfg(corpus, tmp_path / "dask"), client2, progress=False, log=_log)
    c = run(_cfg(corpus, tmp_path / "sync"), None, progress=False, log=_log)
    assert a.summary["quarantined"] > 0 and a.summary["units"] > 1 and a.summary["duplicate_units"] == 0
    units = _computed(ts.data, "rouge-unit-")
    units = {k: v for k, v in units.items() if "-brief-" not in k}
    assert len(units) == a.summary["units"] and len({w for w, _, _ in units.values()}) == 2
    kinds = {str(t["key"]).split("-")[1] for t in ts.data}
    assert kinds <= {"unit", "hashes", "duplicates", "duplicate", "merge", "final"}, kinds   # no plan pass, no wave 2
    by_unit = {int(k.rsplit("-", 1)[1]): v for k, v in units.items()}
    markers = sorted((tmp_path / "dask" / "_done").glob("unit-*.json"))
    assert len(markers) == a.summary["tasks"] >= len(by_unit)
    for m in markers:
        _, start, stop = by_unit[int(m.name.split("-")[1])]
        # written inside its unit's task (both ends with the slack of Dask's worker-to-scheduler clock offset)
        assert start - 0.05 <= m.stat().st_mtime <= stop + 0.05, m.name
    assert _outputs(tmp_path / "dask", markers=True) == _outputs(tmp_path / "sync", markers=True)
    assert a.rows == c.rows


def _dup_shards(root: Path) -> dict:
    """Three shards: b repeats an id of a (another candidate), c holds only ids of a and b."""
    root.mkdir()
    rec = lambda i, cand: json.dumps({"id": i, "candidate": cand, "references": ["the cat sat on the mat"]})  # noqa: E731
    (root / "a.jsonl").write_text("\n".join([rec("k1", "the cat sat"), rec("k2", "a dog")]) + "\n")
    (root / "b.jsonl").write_text("\n".join([rec("k3", "on the mat"), rec("k1", "the dog ran far")]) + "\n")
    (root / "c.jsonl").write_text("\n".join([rec("k3", "cat"), rec("k2", "mat")]) + "\n")
    return {"records": str(root / "*.jsonl")}


def test_duplicates_across_units_are_dropped_in_wave_2_first_occurrence_kept(client2, tmp_path):
    from distributed import get_task_stream
    from rouge_score import rouge_scorer

    corpus = _dup_shards(tmp_path / "in")
    ex = {"target_rows": 100}   # one unit a shard (not packed)
    with get_task_stream(client2) as ts:
        r = run(_cfg(corpus, tmp_path / "dask", execution=ex), client2, progress=False, log=_log)
    rs = run(_cfg(corpus, tmp_path / "sync", execution=ex), None, progress=False, log=_log)
    assert r.summary["units"] == 3 and r.summary["duplicate_units"] == 2
    again = {int(k.rsplit("-", 1)[1]) for k in _computed(ts.data, "rouge-again-") if "-brief-" not in k}
    assert again == {1, 2}, "b and c are scored again in wave 2, a is not"
    scores = _sorted_scores(tmp_path / "dask")
    assert scores.column("id").to_pylist() == ["k1", "k2", "k3"]
    oracle = rouge_scorer.RougeScorer(["rouge1"]).score("the cat sat on the mat", "the cat sat")["rouge1"]
    k1 = scores.to_pylist()[0]
    assert (k1["rouge1_precision"], k1["rouge1_recall"], k1["rouge1_fmeasure"]) == tuple(oracle)   # a's, the first
    a, b, c = (f"file://{tmp_path}/in/{n}.jsonl" for n in "abc")
    q = pa.concat_tables(pq.read_table(p) for p in sorted((tmp_path / "dask" / "quarantine").glob("*.parquet")))
    assert q.column("reason").to_pylist() == [
        f"{b} line 2: duplicate id 'k1' (first at {a} line 1)",
        f"{c} line 1: duplicate id 'k3' (first at {b} line 1)",
        f"{c} line 2: duplicate id 'k2' (first at {a} line 2)"]
    # c's wave-1 part (its two rows) is gone: c now scores nothing
    assert not list((tmp_path / "dask" / "scores").glob("*/part-00002-*.parquet"))
    assert r.summary["rows"] == 3 and r.summary["quarantined"] == 3
    assert _outputs(tmp_path / "dask", markers=True) == _outputs(tmp_path / "sync", markers=True)
    assert r.rows == rs.rows


def test_an_oversized_example_is_split_in_wave_2_with_rouge_scores_numbers(client2, tmp_path):
    from distributed import get_task_stream
    from rouge_score import rouge_scorer

    root = tmp_path / "in"
    root.mkdir()
    long_ref = "\n".join(f"sentence {k} says the cat sat on mat number {k}" for k in range(60))
    long_cand = "\n".join(f"the cat {k} sat on the mat {k % 7}" for k in range(50))
    recs = [{"id": f"s{i}", "candidate": "the cat sat", "references": ["the cat sat on the mat"]} for i in range(4)]
    recs.insert(2, {"id": "long", "candidate": long_cand, "references": [long_ref]})
    (root / "a.jsonl").write_text("".join(json.dumps(x) + "\n" for x in recs))
    corpus = {"records": str(root / "a.jsonl")}
    ex = {"target_cost": 2000}
    with get_task_stream(client2) as ts:
        r = run(_cfg(corpus, tmp_path / "dask", execution=ex), client2, progress=False, log=_log)
    rs = run(_cfg(corpus, tmp_path / "sync", execution=ex), None, progress=False, log=_log)
    assert r.summary["split_examples"] == rs.summary["split_examples"] == 1
    blocks = [k for k in _computed(ts.data, "rouge-split-") if "-block-" in k]
    assert len(blocks) > 1, "the long example's rougeLsum ran as several block tasks"
    long_row = next(x for x in _sorted_scores(tmp_path / "dask").to_pylist() if x["id"] == "long")
    want = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"]).score(long_ref, long_cand)
    for ty, sc in want.items():
        assert (long_row[f"{ty}_precision"], long_row[f"{ty}_recall"], long_row[f"{ty}_fmeasure"]) == tuple(sc), ty
    assert _outputs(tmp_path / "dask", markers=True) == _outputs(tmp_path / "sync", markers=True)


def test_exact_bootstrap_matches_rouge_score(corpus, client2, tmp_path):
    rouge_scoring = pytest.importorskip("rouge_score.scoring")
    cfg = _cfg(corpus, tmp_path / "ex", stats={"bootstrap": "exact", "n_boot": 100})
    res = run(cfg, client2, progress=False, log=_log)
    types = cfg.scoring.rouge_types
    for system in res.summary["systems"]:
        t = runfolder.read_scores(str(tmp_path / "ex"), system)
        np.random.seed(cfg.stats.seed)
        agg = rouge_scoring.BootstrapAggregator(n_samples=100)
        for i in range(t.num_rows):
            agg.add_scores({ty: rouge_scoring.Score(*(t.column(f"{ty}_{s}")[i].as_py() for s in job.STATS))
                            for ty in types})
        want = agg.aggregate()
        got = {(r["type"], r["stat"]): r for r in res.exact_rows if r["system"] == system}
        for ty in types:
            for k, s in enumerate(job.STATS):
                assert got[(ty, s)]["low"] == want[ty].low[k]
                assert got[(ty, s)]["mid"] == want[ty].mid[k]
                assert got[(ty, s)]["high"] == want[ty].high[k]


def test_partition_sizes_give_identical_scores_and_statistics(corpus, client2, tmp_path):
    # (duplicate ids are detected within a unit only, so this corpus has none)
    clean = {"records": corpus["clean"]}
    a = run(_cfg(clean, tmp_path / "a"), client2, progress=False, log=_log)
    b = run(_cfg(clean, tmp_path / "b", execution={"target_rows": 7, "target_cost": 500}), client2,
            progress=False, log=_log)
    assert b.summary["tasks"] > 2 * a.summary["tasks"]
    assert _sorted_scores(tmp_path / "a").equals(_sorted_scores(tmp_path / "b"))
    assert a.rows == b.rows and a.signature == b.signature
    for system in a.summary["systems"]:   # the parts in (unit, slice) order: the input's order
        assert runfolder.read_scores(str(tmp_path / "a"), system).equals(runfolder.read_scores(str(tmp_path / "b"), system))
    assert (tmp_path / "a/stats/stats.json").read_bytes() == (tmp_path / "b/stats/stats.json").read_bytes()
    assert (tmp_path / "a/stats/stats.parquet").read_bytes() == (tmp_path / "b/stats/stats.parquet").read_bytes()


def test_schema_of_every_output_and_statistics_against_numpy(corpus, client2, tmp_path):
    cfg = _cfg(corpus, tmp_path / "s", execution=TARGET)
    res = run(cfg, client2, progress=False, log=_log)
    run_dir = tmp_path / "s"
    sig = res.signature.encode()
    types = res_types = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
    for p in run_dir.glob("scores/**/*.parquet"):
        schema = pq.read_schema(p)
        assert schema.remove_metadata() == job.scores_schema(types)
        assert schema.metadata[b"rouge_pipeline.signature"] == sig
        assert schema.metadata[b"rouge_pipeline.config_hash"] == res.config_hash.encode()
        assert p.parent.name in ("system-sysA", "system-sysB")
    q = list(run_dir.glob("quarantine/*.parquet"))
    assert q and all(pq.read_schema(p).remove_metadata().names == ["id", "system", "file", "row", "reason"]
                     for p in q)
    st = pq.read_schema(run_dir / "stats/stats.parquet")
    assert st.remove_metadata() == stats_schema() and st.metadata[b"rouge_pipeline.signature"] == sig
    js = json.loads((run_dir / "stats/stats.json").read_text())
    assert js["signature"] == res.signature and js["rows"] == res.rows
    summary = json.loads((run_dir / "_summary.json").read_text())
    assert summary["signature"] == res.signature and summary["config_hash"] == res.config_hash
    assert summary["rows"] == 120 and summary["quarantined"] == 3 and summary["systems"] == ["sysA", "sysB"]
    assert set(summary["quarantined_by_reason"]) == {"duplicate id for system", "null candidate",
                                                     "malformed JSON (Expecting property name enclosed in "
                                                     "double quotes)"}
    for key in ("tasks", "seconds", "pairs_per_s", "status"):
        assert key in summary
    run_info = json.loads((run_dir / "_run.json").read_text())
    assert run_info["signature"] == res.signature and run_info["config_hash"] == res.config_hash
    assert (run_dir / "_SUCCESS").stat().st_size == 0
    assert len(list(run_dir.glob("_done/unit-*.json"))) == summary["tasks"]
    # statistics against a direct NumPy computation over the per-example Parquet
    table = pa.concat_tables(pq.read_table(p) for p in sorted(run_dir.glob("scores/**/*.parquet")))
    systems = np.array(table.column("system").to_pylist())
    for row in res.rows:
        x = table.column(f"{row['type']}_{row['stat']}").to_numpy()[systems == row["system"]]
        assert row["count"] == len(x)
        assert abs(row["mean"] - x.mean()) < 1e-12
        assert abs(row["std"] - x.std(ddof=1)) < 1e-12
        assert row["min"] == x.min() and row["max"] == x.max()
        for key, qv in (("q05_approx", 0.05), ("q25_approx", 0.25), ("median_approx", 0.5), ("q75_approx", 0.75),
                        ("q95_approx", 0.95)):
            assert abs(row[key] - np.quantile(x, qv)) <= 1e-4 + 1e-12
        assert row["ci_low"] <= row["mean"] <= row["ci_high"]
    # the intervals by their definition, from the per-example Parquet and the bootstrap keys
    ids = table.column("id").to_pylist()
    cols = [f"{t}_{s}" for t in types for s in ("precision", "recall", "fmeasure")]
    for name in ("sysA", "sysB"):
        sel = systems == name
        mat = np.column_stack([table.column(c).to_numpy()[sel] for c in cols])
        want = direct_ci([f"{name}\x1f{i}" for i, ok in zip(ids, sel) if ok], mat, cfg.stats.seed,
                         cfg.stats.n_boot, BOOT_BUCKETS)
        assert [(r["ci_low"], r["ci_high"]) for r in res.rows if r["system"] == name] == want
    del res_types


def test_paired_and_lines_layouts_sharded(corpus, client2, tmp_path):
    cands, refs = corpus["paired"]
    cfg = RunConfig.from_dict(config({"layout": "paired", "candidates": cands, "references": refs},
                                     tmp_path / "p", execution=TARGET))
    res = run(cfg, client2, progress=False, log=_log)
    s = res.summary
    # 40 docs x 2 systems; d005 has no references (2 rows) and orphan-cand neither; orphan-ref unused
    assert s["rows"] == 78 and s["quarantined"] == 4
    assert s["quarantined_by_reason"] == {"no candidate for id": 1, "no references for id": 3}
    qt = pa.concat_tables(pq.read_table(p) for p in (tmp_path / "p").glob("quarantine/*.parquet"))
    assert sorted(qt.column("id").to_pylist()) == ["d005", "d005", "orphan-cand", "orphan-ref"]
    ids = set(_sorted_scores(tmp_path / "p").column("id").to_pylist())
    assert "d005" not in ids and len(ids) == 39

    cands, refs = corpus["lines"]
    cfg = RunConfig.from_dict(config({"layout": "lines", "candidates": cands, "references": refs,
                                      "system_from": "folder"}, tmp_path / "l",
                                     execution={"target_rows": 4}))
    res = run(cfg, client2, progress=False, log=_log)
    assert res.summary["rows"] == 60 and res.summary["systems"] == ["sysA", "sysB"]
    assert res.summary["quarantined"] == 0
    t = _sorted_scores(tmp_path / "l")
    assert t.column("id").to_pylist()[:2] == ["f0:1", "f0:10"]


def test_resume_after_losing_markers_and_parts(corpus, client2, tmp_path):
    cfg = _cfg(corpus, tmp_path / "r", execution=TARGET)
    first = run(cfg, client2, progress=False, log=_log)
    before = _outputs(tmp_path / "r")
    markers = sorted((tmp_path / "r" / "_done").glob("*.json"))
    for m in markers[::3]:
        m.unlink()
    parts = sorted((tmp_path / "r" / "scores").glob("**/*.parquet"))
    for p in parts[1::4]:
        p.unlink()
    (tmp_path / "r" / "stats" / "stats.json").unlink()
    again = run(_cfg(corpus, tmp_path / "r", execution=TARGET), client2, progress=False, log=_log)
    assert _outputs(tmp_path / "r") == before
    assert again.rows == first.rows
    assert 0 < again.summary["tasks_resumed"] < first.summary["tasks"]
    assert (tmp_path / "r" / "_SUCCESS").exists()


def test_refuses_other_settings_unless_overwrite(corpus, tmp_path):
    run(_cfg(corpus, tmp_path / "o"), None, progress=False, log=_log)
    with pytest.raises(RunFolderError, match="other settings"):
        run(_cfg(corpus, tmp_path / "o", scoring={"use_stemmer": True}), None, progress=False, log=_log)
    with pytest.raises(RunFolderError, match="planned with"):
        run(_cfg(corpus, tmp_path / "o", execution={"target_rows": 5}), None, progress=False, log=_log)
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "x.txt").write_text("mine")
    with pytest.raises(RunFolderError, match="not a rouge-pipeline run folder"):
        run(_cfg(corpus, tmp_path / "foreign"), None, progress=False, log=_log)
    res = run(_cfg(corpus, tmp_path / "o", scoring={"use_stemmer": True}, output={"overwrite": True}), None,
              progress=False, log=_log)
    assert "stem:porter" in res.signature
    assert json.loads((tmp_path / "o" / "_run.json").read_text())["config_hash"] == res.config_hash


def test_strict_mode_fails_without_success(corpus, tmp_path):
    with pytest.raises(StrictModeError) as e:
        run(_cfg(corpus, tmp_path / "st", strict=True), None, progress=False, log=_log)
    assert e.value.summary["quarantined"] == 3
    assert not (tmp_path / "st" / "_SUCCESS").exists()
    assert json.loads((tmp_path / "st" / "_summary.json").read_text())["status"].startswith("failed")
    clean = tmp_path / "clean"
    shutil.copytree(Path(corpus["records"]).parent, clean)
    (clean / "shard-0.jsonl").write_text("\n".join((clean / "shard-0.jsonl").read_text().splitlines()[:-3]) + "\n")
    d = config({"layout": "records", "paths": str(clean / "shard-*")}, tmp_path / "st2", strict=True)
    res = run(RunConfig.from_dict(d), None, progress=False, log=_log)
    assert res.summary["quarantined"] == 0 and (tmp_path / "st2" / "_SUCCESS").exists()


def test_dataframe_api_on_the_cluster(corpus, client2, tmp_path):
    import dask.dataframe as dd

    from pipeline.execution.dataframe import corpus_statistics, read_run, score_dataframe

    res = run(_cfg(corpus, tmp_path / "d"), client2, progress=False, log=_log)
    ddf = read_run(str(tmp_path / "d"))
    assert ddf.npartitions == len(list((tmp_path / "d").glob("scores/**/*.parquet")))
    types = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
    assert corpus_statistics(ddf, types, seed=3, n_boot=200) == res.rows
    recs = [json.loads(line) for line in Path(corpus["records"]).with_name("shard-0.jsonl").read_text().splitlines()
            if line.startswith("{\"id")][:20]
    import pandas as pd

    pdf = pd.DataFrame({"id": [r["id"] for r in recs], "candidate": [r["candidate"] for r in recs],
                                          "references": pd.Series([r["references"] for r in recs],
                                                                  dtype=pd.ArrowDtype(pa.list_(pa.string())))})
    scored = score_dataframe(dd.from_pandas(pdf, npartitions=3), rouge_types=["rouge1", "rougeL"]).compute()
    direct = job.score_table(pa.table({"id": pdf["id"], "system": [""] * len(pdf), "candidate": pdf["candidate"],
                                       "references": [r["references"] for r in recs]}), job.ScoringSettings(("rouge1", "rougeL")))
    assert scored["rougeL_fmeasure"].tolist() == direct.column("rougeL_fmeasure").to_pylist()


def test_local_workers_run_without_the_statistical_profiler(client1):
    """Off by default (it held the GIL every 10 ms: ~10% of the job); ``worker_profile`` opts in."""
    from pipeline.execution.cluster import open_client

    def callbacks(dask_worker):
        return sorted(dask_worker.periodic_callbacks)

    assert all("profile" not in cb and "heartbeat" in cb for cb in client1.run(callbacks).values())
    # and its scheduler gives a worker its next task when it is free (none queued behind)
    assert client1.run_on_scheduler(lambda dask_scheduler: dask_scheduler.WORKER_SATURATION) == 1.0
    with open_client("local", n_workers=1, dashboard_address=None, worker_profile=True) as client:
        assert all("profile" in cb for cb in client.run(callbacks).values())


def test_local_cluster_housekeeping_intervals_reach_every_process(client1):
    """Dask's periodic housekeeping (tick, memory and system monitors, stealing) is slowed down
    in the local cluster, whose processes share the cores with the job: in the workers (the
    nannies pass the configuration on) and in the scheduler's own timers."""
    import dask

    from pipeline.execution.cluster import LOCAL_HOUSEKEEPING

    def worker_view(keys):
        return {k: dask.config.get(k) for k in keys}

    for got in client1.run(worker_view, list(LOCAL_HOUSEKEEPING)).values():
        assert got == LOCAL_HOUSEKEEPING

    def scheduler_view(dask_scheduler):
        return {name: pc.callback_time for name, pc in dask_scheduler.periodic_callbacks.items()}

    timers = client1.run_on_scheduler(scheduler_view)
    assert timers["stealing"] == 500 and timers["monitor"] == 2000     # ms
    assert dask.config.get("distributed.admin.tick.interval") != "500ms"  # this process: untouched


def test_local_workers_keep_glibc_malloc_defaults(client1, client2):
    """Dask's nannies would start workers with MALLOC_TRIM_THRESHOLD_=65536 (and leave it in this
    process's environment for the next cluster): it turned off glibc's dynamic mmap threshold,
    4.6x the page faults and twice the system time."""
    for client in (client1, client2):
        got = client.run(lambda: __import__("os").environ.get("MALLOC_TRIM_THRESHOLD_"))
        assert list(got.values()) and all(v is None for v in got.values())


def test_progress_lines_with_and_without_a_row_total():
    import io

    from pipeline.execution.progress import Progress

    out = io.StringIO()
    plan = Progress(4, None, stream=out, tty=False, interval=0.0, label="plan pass (read, score)", unit="units")
    for _ in range(4):
        plan.update(0)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("plan pass (read, score): 1/4 units ( 25.0%), ETA ")
    assert lines[-1] == "plan pass (read, score): 4/4 units (100.0%), ETA 00:00"
    out = io.StringIO()
    bar = Progress(2, 30, stream=out, tty=False, interval=0.0)
    bar.update(10, skipped=True)
    bar.update(20)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("scoring: 1/2 tasks, 10/30 pairs ( 33.3%), 0 pairs/s")
    assert lines[-1].startswith("scoring: 2/2 tasks, 30/30 pairs (100.0%)") and bar.scored_rows == 20


def test_progress_close_ends_an_open_terminal_line_once():
    import io

    from pipeline.execution.progress import Progress

    out = io.StringIO()
    bar = Progress(3, None, stream=out, tty=True, label="plan pass (read, score)", unit="units")
    bar.update(0)
    bar.close()
    bar.close()
    assert out.getvalue().startswith("\r[") and out.getvalue().endswith("\n")
    assert out.getvalue().count("\n") == 1
    out = io.StringIO()
    done = Progress(1, 5, stream=out, tty=True, t0=0.0)   # a rate counted from an earlier start
    done.update(5)
    done.close()
    assert out.getvalue().count("\n") == 1 and done.rate() < 5   # perf_counter() seconds since 0.0


# ------------------------------------------------------------ issue 17 item 10: honest run records
def _fail_once_after_writing():
    """In this process: the next task's write_task_files writes its files and marker, then fails as a
    worker losing its connection would (Dask retries the task; the retry finds the marker)."""
    from pipeline.job import task as j

    orig = getattr(j, "_unpatched_write_task_files", j.write_task_files)
    j._unpatched_write_task_files = orig
    state = {"failed": False}

    def write_then_fail(prepared, *args, **kwargs):
        r = orig(prepared, *args, **kwargs)
        if not state["failed"]:
            state["failed"] = True
            raise ConnectionError("connection lost after the write")
        return r

    j.write_task_files = write_then_fail


def _unpatch():
    from pipeline.job import task as j

    if hasattr(j, "_unpatched_write_task_files"):
        j.write_task_files = j._unpatched_write_task_files
        del j._unpatched_write_task_files


@pytest.mark.parametrize("mode", ["sync", "dask"])
def test_tasks_rerun_within_a_run_are_not_resumed(corpus, client1, tmp_path, mode):
    """A task retried after it wrote its marker (a worker that died or lost its connection past
    the write) is this run's work: a run that was never resumed reports no resumed task."""
    cfg = _cfg(corpus, tmp_path / "r", execution={"target_cost": 3000, "retries": 2})
    client = None if mode == "sync" else client1
    if client is None:
        _fail_once_after_writing()
    else:
        client.run(_fail_once_after_writing)
    try:
        r = run(cfg, client, progress=False, log=_log)
    finally:
        _unpatch() if client is None else client.run(_unpatch)
    ref = run(_cfg(corpus, tmp_path / "ref", execution={"target_cost": 3000}), None, progress=False, log=_log)
    assert r.summary["tasks"] == ref.summary["tasks"] > 1
    assert r.summary["tasks_resumed"] == 0
    assert r.rows == ref.rows
    again = run(cfg, client, progress=False, log=_log)      # a real resume still counts
    assert again.summary["tasks_resumed"] == again.summary["tasks"]
    assert again.summary["rows_scored"] == 0


def test_a_successful_run_removes_its_own_temp_files_only(corpus, tmp_path):
    """Killed writes leave ``.tmp-<name>-<uuid>`` files; the next successful run in the folder
    deletes those (our writer's names, inside the run folder) and nothing else."""
    out = tmp_path / "r"
    run(_cfg(corpus, out, execution=TARGET), None, progress=False, log=_log)
    part_dir = next((out / "scores").iterdir())
    ours = [part_dir / f".tmp-part-00000-0000.parquet-{'a' * 32}",
            out / f".tmp-_summary.json-{'0123456789abcdef' * 2}", out / "_done" / f".tmp-unit-00003-0001.json-{'f' * 32}"]
    # (a file of another name in scores/ would be refused, not kept: issue 27, test_whole_run.py)
    others = [out / ".tmp-notes.txt", out / f"tmp-part-00000.parquet-{'a' * 32}", out / "keep.tmp-x",
              out / f".tmp-part-1.parquet-{'a' * 31}", tmp_path / f".tmp-_run.json-{'b' * 32}"]
    for p in ours + others:
        p.write_bytes(b"partial")
    run(_cfg(corpus, out, execution=TARGET), None, progress=False, log=_log)
    assert [p.name for p in ours if p.exists()] == []
    assert [p.name for p in others if not p.exists()] == []
    assert (out / "_SUCCESS").exists()


def test_packed_small_shards_give_the_scores_and_statistics_of_one_file(tmp_path, monkeypatch):
    """The same pairs as 1 file, as 300 files one unit each, and as 300 files packed into units:
    identical scores rows and statistics files, each score equal to rouge-score's."""
    from rouge_score import rouge_scorer

    from pipeline.io import records
    from pipeline.io.readers import plan_units

    rng = np.random.default_rng(5)
    words = "the cat sat on a mat dog ran far away".split()

    def text():
        return "\n".join(" ".join(rng.choice(words, size=int(rng.integers(1, 9)))) for _ in range(int(rng.integers(1, 3))))

    recs = [{"id": f"p{i:04d}", "system": "AB"[i % 2], "candidate": text(), "references": [text()]} for i in range(900)]
    recs[700] = dict(recs[3])               # a duplicate id: the first occurrence is kept in both layouts
    lines = [json.dumps(r) for r in recs]
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "all.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "many").mkdir()
    for k in range(300):
        (tmp_path / "many" / f"shard-{k:04d}.jsonl").write_text("\n".join(lines[3 * k:3 * k + 3]) + "\n")
    runs = {}
    for name, glob, pack in (("one", "one/*.jsonl", None), ("each", "many/*.jsonl", 0),
                             ("packed", "many/*.jsonl", 4000), ("default", "many/*.jsonl", None)):
        with monkeypatch.context() as m:
            if pack is not None:
                m.setattr(records, "PACK_BYTES", pack)
            cfg = RunConfig.from_dict(config({"layout": "records", "paths": str(tmp_path / glob)}, tmp_path / "runs" / name))
            runs[name] = len(plan_units(cfg.input_spec()))
            run(cfg, None, progress=False, log=_log)
    assert runs["each"] == 300 > runs["packed"] > runs["default"] == 1 == runs["one"]
    out = tmp_path / "runs"
    want = _sorted_scores(out / "one")
    assert want.num_rows == 899
    for name in ("each", "packed", "default"):
        got = _sorted_scores(out / name)
        assert got.equals(want), name
        # the statistics; the files hold the config hash too, which names the inputs
        assert json.loads((out / name / "stats/stats.json").read_text())["rows"] == \
            json.loads((out / "one/stats/stats.json").read_text())["rows"]
        assert pq.read_table(out / name / "stats/stats.parquet").replace_schema_metadata(None).equals(
            pq.read_table(out / "one/stats/stats.parquet").replace_schema_metadata(None))
        for f in ("stats.json", "stats.parquet"):   # the same inputs whatever the packing: the same bytes
            assert (out / name / "stats" / f).read_bytes() == (out / "each" / "stats" / f).read_bytes(), (name, f)
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"])
    by_id = {r["id"]: r for r in recs[:700] + recs[701:]}
    for row in want.to_pylist():
        oracle = scorer.score(by_id[row["id"]]["references"][0], by_id[row["id"]]["candidate"])
        for ty, s in oracle.items():
            assert (row[f"{ty}_precision"], row[f"{ty}_recall"], row[f"{ty}_fmeasure"]) == tuple(s), (row["id"], ty)


def test_after_the_run_a_wave_1_task_dask_would_rerun_writes_nothing(client2, tmp_path, monkeypatch):
    """A wave-1 result lost with its worker is computed again by Dask while something still
    wants it.  Once the duplicates are known (or the run has ended) such a rerun must not write
    its unit's rows back: the run's stop flags are set, and the rerun writes nothing."""
    from pipeline.execution import driver as drv

    made = []

    class Recording(drv.Waves):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            made.append(self)

    monkeypatch.setattr(drv, "Waves", Recording)
    corpus = _dup_shards(tmp_path / "in")
    cfg = _cfg(corpus, tmp_path / "run", execution={"target_rows": 100})
    r = run(cfg, client2, progress=False, log=_log)
    assert r.summary["duplicate_units"] == 2 and (tmp_path / "run" / "_SUCCESS").exists()
    (w,) = made
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "run").rglob("*")}
    unit = w.units[2]   # c: only duplicates, scored again and now without a score part
    for ctx in (w.ctx1, w.ctx):   # the wave-1 task as Dask would rerun it; any task of the run
        again = client2.submit(job.score_unit, w.spec, unit, ctx, job.UnitWork(w.target_cost), pure=False).result()
        assert again.stopped and again.rows == 0
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "run").rglob("*")} == before
    assert not list((tmp_path / "run" / "scores").glob("*/part-00002-*.parquet"))


def test_a_unit_scored_again_and_killed_half_way_resumes_without_its_duplicates(tmp_path, monkeypatch):
    """A unit holding earlier units' ids is written again without them; killed after its
    first slice, the rerun must not trust the slices of both kinds: the same files as a
    clean run, every id once."""
    from pipeline.job import task as task_module

    root = tmp_path / "in"
    root.mkdir()
    rec = lambda i, cand: json.dumps({"id": i, "candidate": cand, "references": ["the cat sat on the mat"]})  # noqa: E731
    (root / "a.jsonl").write_text("\n".join([rec("x", "the cat"), rec("y", "a mat")]) + "\n")
    # b: x in its first slice, y in its second (one example a slice at this target)
    (root / "b.jsonl").write_text("\n".join([rec("x", "cat sat"), rec("y", "sat on"), rec("z", "on the")]) + "\n")
    corpus = {"records": str(root / "*.jsonl")}
    ex = {"target_rows": 100, "target_cost": 1}   # one example a slice (rouge1: none cut in blocks)
    sc = {"rouge_types": ["rouge1"]}
    clean = run(_cfg(corpus, tmp_path / "clean", execution=ex, scoring=sc), None, progress=False, log=_log)
    assert clean.summary["rows"] == 3 and clean.summary["quarantined"] == 2 and clean.summary["tasks"] == 5
    orig = task_module.write_task_files
    calls = {"n": 0}

    def killed_after_one_slice(prepared, unit_index, k, n, ctx):
        if unit_index == 1 and k == 1 and calls["n"] == 1:
            raise KeyboardInterrupt   # the process dies here (not an error a retry would see)
        calls["n"] += unit_index == 1 and k == 0 and prepared["rows"] == 0   # b's slice 0 without x
        return orig(prepared, unit_index, k, n, ctx)

    monkeypatch.setattr(task_module, "write_task_files", killed_after_one_slice)
    with pytest.raises(KeyboardInterrupt):
        run(_cfg(corpus, tmp_path / "run", execution=ex, scoring=sc), None, progress=False, log=_log)
    monkeypatch.setattr(task_module, "write_task_files", orig)
    assert calls["n"] == 1, "killed after writing b's first slice again, without x"
    r = run(_cfg(corpus, tmp_path / "run", execution=ex, scoring=sc), None, progress=False, log=_log)
    assert (r.summary["rows"], r.summary["quarantined"]) == (3, 2)
    assert _sorted_scores(tmp_path / "run").column("id").to_pylist() == ["x", "y", "z"]
    assert _outputs(tmp_path / "run", markers=True) == _outputs(tmp_path / "clean", markers=True)


def test_a_first_occurrence_scored_away_as_too_long_still_counts_on_resume(tmp_path):
    """Parts hold no row scored away as too long; the resumed unit's key must still count for
    the duplicate search (its marker keeps those keys), or a later unit's copy would be kept."""
    words = [f"w{i % 5000}" for i in range(2_000_000)]   # its rougeLsum pair too long to backtrack
    huge = json.dumps({"id": "x", "candidate": " ".join(words), "references": [" ".join(words[:5000])]})
    root = tmp_path / "in"
    root.mkdir()
    (root / "a.jsonl").write_text(huge + "\n")
    (root / "b.jsonl").write_text(json.dumps({"id": "x", "candidate": "a b", "references": ["a"]}) + "\n"
                                  + json.dumps({"id": "y", "candidate": "a b", "references": ["a"]}) + "\n")
    corpus = {"records": str(root / "*.jsonl")}
    ex = {"target_rows": 100}
    clean = run(_cfg(corpus, tmp_path / "clean", execution=ex), None, progress=False, log=_log)
    assert (clean.summary["rows"], clean.summary["quarantined"]) == (1, 2)   # x too long; b's x a duplicate
    assert json.loads((tmp_path / "clean" / "_done" / "unit-00000-0000.json").read_text())["held"]
    # a resumed, b scored again: as after a kill before b's task
    shutil.copytree(tmp_path / "clean", tmp_path / "run")
    for p in [*(tmp_path / "run").glob("_done/unit-00001-*.json"), tmp_path / "run" / "_SUCCESS"]:
        p.unlink()
    r = run(_cfg(corpus, tmp_path / "run", execution=ex), None, progress=False, log=_log)
    assert r.summary["tasks_resumed"] == 1
    assert (r.summary["rows"], r.summary["quarantined"]) == (1, 2)
    assert _outputs(tmp_path / "run", markers=True) == _outputs(tmp_path / "clean", markers=True)


def test_a_resumed_unit_that_is_scored_again_is_not_reported_resumed(tmp_path, monkeypatch):
    """Killed before wave 2, a rerun resumes every unit from its markers, then scores again the
    one holding an earlier unit's id: the summary counts only what it did not write again."""
    from pipeline.job import task as task_module

    corpus = _dup_shards(tmp_path / "in")
    ex = {"target_rows": 100}
    orig = task_module._score_unit

    def killed_in_wave_2(spec, unit, ctx, work, duplicates, index=None):
        if work.again:
            raise KeyboardInterrupt   # the process dies as wave 2 starts
        return orig(spec, unit, ctx, work, duplicates, index)

    monkeypatch.setattr(task_module, "_score_unit", killed_in_wave_2)
    with pytest.raises(KeyboardInterrupt):
        run(_cfg(corpus, tmp_path / "run", execution=ex), None, progress=False, log=_log)
    monkeypatch.setattr(task_module, "_score_unit", orig)
    r = run(_cfg(corpus, tmp_path / "run", execution=ex), None, progress=False, log=_log)
    assert r.summary["duplicate_units"] == 2 and r.summary["tasks"] == 3
    assert r.summary["tasks_resumed"] == 1, "only a's slice was resumed; b and c were written again"
