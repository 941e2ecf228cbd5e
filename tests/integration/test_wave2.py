"""Wave 2's plain slices (docs/ARCHITECTURE.md, "Work units and slices"): on a cluster, wave 1
scores a unit's first slices and leaves the rest to at most one task a worker, each reading the
unit once; every slice is written exactly once and counted once.  The driver runs here on an
in-process executor that says it is a two-worker cluster, so every read and every slice written
can be counted."""
from __future__ import annotations

import collections
import json

from support.pipeline_corpus import config, examples, run_outputs
from pipeline.config import RunConfig
from pipeline.execution import driver
from pipeline.execution.executors import SyncExecutor
from pipeline.io import readers
from pipeline.job import longdocs, task

WORKERS = 2


class TwoWorkers(SyncExecutor):
    """In process, but planned for as a cluster of two workers (wave 1 leaves slices to wave 2)."""

    distributed = True
    mode = "dask"

    @property
    def n_workers(self) -> int:
        return WORKERS

    def warm(self, *_a, **_k) -> None:
        pass


def test_wave_2_reads_a_unit_at_most_once_a_worker_and_writes_each_slice_once(tmp_path, monkeypatch):
    recs = [{"id": i, "system": s, "candidate": c, "references": refs}
            for i, refs, cands in examples(40) for s, c in cands.items()]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    reads, written = collections.Counter(), collections.Counter()
    read_unit, score_slice = readers.read_unit, task.score_slice

    def counting_read(spec, unit):
        reads[unit.index] += 1
        return read_unit(spec, unit)

    def counting_score(table, quarantine, unit, k, *a, **kw):
        written[(unit.index, k)] += 1
        return score_slice(table, quarantine, unit, k, *a, **kw)

    monkeypatch.setattr(readers, "read_unit", counting_read)
    monkeypatch.setattr(task, "score_slice", counting_score)
    monkeypatch.setattr(longdocs, "score_slice", counting_score)   # oversized slices, from their blocks
    monkeypatch.setattr(driver, "_executor", lambda client, log: TwoWorkers(driver.PERMANENT_ERRORS, log))
    cfg = config({"layout": "records", "paths": str(tmp_path / "a.jsonl")}, tmp_path / "run",
                 execution={"target_cost": 2000})
    res = driver.run(RunConfig.from_dict(cfg), None, progress=False, log=lambda _m: None)
    slices = len(list((tmp_path / "run" / "_done").glob("unit-*.json")))
    assert res.summary["units"] == 1 and slices > driver.WAVE1_SLICES + 2 * WORKERS   # many slices left to wave 2
    # wave 1 reads the unit, then at most one wave-2 task a worker reads it again
    assert reads == {0: 1 + WORKERS}, reads
    # every slice written once, and counted once
    assert sorted(written) == [(0, k) for k in range(slices)] and set(written.values()) == {1}, written
    assert res.summary["tasks"] == slices and res.summary["rows"] == len(recs)

    monkeypatch.setattr(driver, "_executor", lambda client, log: SyncExecutor(driver.PERMANENT_ERRORS, log))
    alone = driver.run(RunConfig.from_dict({**cfg, "output": {"url": str(tmp_path / "sync")}}), None,
                       progress=False, log=lambda _m: None)
    assert run_outputs(tmp_path / "run", markers=True) == run_outputs(tmp_path / "sync", markers=True)
    assert alone.summary["tasks"] == slices
