"""The first run and small runs: kernels compiled once per machine with a notice, and the
``auto`` execution mode (in process below a size, the local cluster above it, same files)."""
from __future__ import annotations

import json

import pytest

from support.pipeline_corpus import config, run_outputs, write_records
from pipeline import warmup
from pipeline.config import RunConfig
from pipeline.execution import driver


def test_kernels_compile_once_with_a_notice(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    calls = []
    monkeypatch.setattr(warmup, "warmup", lambda settings=None, **kw: calls.append((settings, kw)))

    class Helper:
        waited = False

        def wait(self):
            Helper.waited = True

    monkeypatch.setattr(warmup, "_start_helper", lambda settings: Helper())
    lines = []
    assert not warmup.is_compiled()
    assert warmup.ensure_compiled("S", lines.append) >= 0
    # this process leaves the helper's kernels to it, waits for it, then loads them
    assert calls == [("S", {"diagnostics": False, "stats": False}), ("S", {})] and Helper.waited
    assert lines[0] == "compiling the scoring kernels (first run only) ..."
    assert lines[1].startswith("scoring kernels compiled in ") and len(lines) == 2
    assert warmup.is_compiled()
    assert warmup.ensure_compiled("S", lines.append) is None and len(calls) == 2 and len(lines) == 2
    # another cache (a cleared one) compiles again
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "other"))
    assert not warmup.is_compiled()


def test_run_config_compiles_before_the_cluster_starts(tmp_path, monkeypatch):
    order = []
    monkeypatch.setattr(warmup, "ensure_compiled", lambda settings=None, log=None: order.append("compile"))

    class Boom(Exception):
        pass

    def open_client(*a, **k):
        order.append("cluster")
        raise Boom

    import pipeline.execution.cluster as cluster

    monkeypatch.setattr(cluster, "open_client", open_client)
    cfg = RunConfig.from_dict(config({"layout": "records", "paths": write_records(tmp_path / "in", 4)},
                                     tmp_path / "run", execution={"mode": "local"}))
    with pytest.raises(Boom):
        driver.run_config(cfg, progress=False, log=lambda m: None)
    assert order == ["compile", "cluster"]


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return write_records(tmp_path_factory.mktemp("auto") / "in", 30, bad=False)


def _auto(small, out, log):
    cfg = RunConfig.from_dict(config({"layout": "records", "paths": small}, out,
                                     execution={"mode": "auto", "n_workers": 1}))
    return driver.run_config(cfg, progress=False, log=log)


def test_auto_mode_small_in_process_large_on_the_cluster_same_files(small, tmp_path, monkeypatch):
    logs = []
    res = _auto(small, tmp_path / "a", logs.append)
    assert res.summary["execution"] == "auto: in process" and res.summary["mode"] == "sync"
    assert any(m.startswith("execution: in process (auto: input ~") for m in logs)
    monkeypatch.setattr(driver, "AUTO_LOCAL_MIN_BYTES", 1)
    logs.clear()
    res = _auto(small, tmp_path / "b", logs.append)
    assert res.summary["execution"] == "auto: local cluster" and res.summary["mode"] == "dask"
    assert any(m.startswith("execution: local cluster (auto:") for m in logs)
    a, b = run_outputs(tmp_path / "a", markers=True), run_outputs(tmp_path / "b", markers=True)
    assert a.keys() == b.keys() and a == b
    assert json.loads((tmp_path / "b" / "_summary.json").read_text())["execution"] == "auto: local cluster"


def test_estimate_counts_compressed_files_larger(tmp_path):
    import gzip

    (tmp_path / "a.jsonl").write_bytes(b'{"id": 1, "candidate": "a", "references": ["a"]}\n' * 100)
    (tmp_path / "b.jsonl.gz").write_bytes(gzip.compress(b'{"id": 2, "candidate": "a", "references": ["a"]}\n'))
    cfg = RunConfig.from_dict(config({"layout": "records", "paths": str(tmp_path / "*.jsonl*")}, tmp_path / "r"))
    plain = (tmp_path / "a.jsonl").stat().st_size
    gz = (tmp_path / "b.jsonl.gz").stat().st_size
    assert driver.estimate_input_bytes(cfg) == plain + driver.COMPRESSION_RATIO * gz
