"""The first run and small runs: kernels compiled once per machine with a notice, and the
``auto`` execution mode (in process below a size, the local cluster above it, same files)."""
from __future__ import annotations

import io
import json

import pytest

from support.pipeline_corpus import config, run_outputs, write_records
from pipeline.execution import warmup
from pipeline.config import RunConfig
from pipeline.execution import driver


def test_kernels_compile_once_with_a_notice(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    calls = []
    monkeypatch.setattr(warmup, "warmup", lambda settings=None, **kw: calls.append((settings, kw)))
    monkeypatch.setattr(warmup, "warm_encoder", lambda: calls.append("encoder"))

    class Helper:
        waited = 0

        def wait(self):
            Helper.waited += 1

    monkeypatch.setattr(warmup, "_start_helpers", lambda settings, scoring: [("a", Helper()), ("b", Helper())])
    lines = []
    progress = io.StringIO()
    assert not warmup.is_compiled()
    assert warmup.ensure_compiled("S", lines.append, file=progress) >= 0
    # this process compiles the encoder, waits for both helpers, then loads their kernels
    assert calls == ["encoder", ("S", {})] and Helper.waited == 2
    assert lines[0] == "compiling the kernels (first run on this machine; cached for the next runs) ..."
    assert lines[1].startswith("kernels compiled in ") and len(lines) == 2
    assert "compiling: 3/3 parts done" in progress.getvalue()   # the wait is shown, part by part
    assert warmup.is_compiled()
    assert warmup.ensure_compiled("S", lines.append) is None and len(calls) == 2 and len(lines) == 2
    # another cache (a cleared one) compiles again
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "other"))
    assert not warmup.is_compiled()


def test_a_small_first_run_compiles_all_but_the_scoring_kernels(tmp_path, monkeypatch):
    """Kernels not compiled and a small run in this process: the encoder's and statistics'
    kernels here, the diagnostics' in a helper, the scoring kernels left to the background
    compile; a stamp says so, and the next small run compiles nothing."""
    from pipeline.scoring import kernel_cache

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    calls = []
    for name in ("warmup", "warm_encoder", "warm_stats", "warm_diagnostics_kernel"):
        monkeypatch.setattr(warmup, name, lambda *a, name=name, **kw: calls.append(name))
    monkeypatch.setattr(kernel_cache, "start_background", lambda: calls.append("background") or True)

    class Helper:
        def wait(self):
            calls.append("helper")

    helpers = []
    monkeypatch.setattr(warmup, "_start_helpers", lambda settings, scoring: helpers.append(scoring) or [("d", Helper())])
    progress = io.StringIO()
    assert warmup.ensure_compiled("S", lambda m: None, file=progress, scoring=False) >= 0
    assert helpers == [False] and calls == ["background", "warm_encoder", "warm_stats", "helper"]
    assert "compiling: 2/2 parts done" in progress.getvalue()
    assert not warmup.is_compiled() and kernel_cache.is_ready(kernel_cache.JOB)
    assert warmup.ensure_compiled("S", lambda m: None, scoring=False) is None and len(calls) == 4
    kernel_cache.mark(kernel_cache.SCORING)   # the background compile's stamp: now every kernel is there
    assert warmup.is_compiled()


def test_run_config_leaves_the_scoring_kernels_to_the_background_for_a_small_run(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(warmup, "is_compiled", lambda: False)
    monkeypatch.setattr(warmup, "ensure_compiled", lambda settings=None, log=None, **kw: seen.append(kw["scoring"]))
    inp = write_records(tmp_path / "in", 4, bad=False)
    for mode in ("sync", "local"):
        cfg = RunConfig.from_dict(config({"layout": "records", "paths": inp}, tmp_path / mode, execution={"mode": mode}))
        if mode == "local":
            monkeypatch.setattr(driver.cluster, "open_client", lambda *a, **k: (_ for _ in ()).throw(KeyError("x")))
            with pytest.raises(KeyError):
                driver.run_config(cfg, progress=False, log=lambda m: None)
        else:
            driver.run_config(cfg, progress=False, log=lambda m: None)
    assert seen == [False, True]   # in process and small: not the scoring kernels; a cluster: all


def test_a_run_scored_while_the_kernels_compile_writes_the_same_files(tmp_path, monkeypatch):
    """A small run scored in pure Python (the scoring kernels not compiled yet) writes files
    byte-identical to the compiled path's, and calls no scoring kernel."""
    from pipeline.scoring import batch, cold, kernel_cache

    inp = write_records(tmp_path / "in", 30, bad=True)

    def go(out):
        cfg = RunConfig.from_dict(config({"layout": "records", "paths": inp}, out, execution={"mode": "sync"}))
        return driver.run(cfg, None, progress=False, log=lambda m: None)

    with monkeypatch.context() as m:
        m.setenv("ROUGE_PIPELINE_COLD_START", "0")   # the compiled path
        go(tmp_path / "compiled")
    with monkeypatch.context() as m:
        m.setenv("ROUGE_PIPELINE_COLD_START", "1")
        m.setattr(cold, "_off", False)
        m.setattr(cold, "kernels_ready", lambda: False)
        m.setattr(kernel_cache, "start_background", lambda: True)
        m.setattr(batch, "score_batch_kernel", lambda *a: (_ for _ in ()).throw(AssertionError("a kernel ran")))
        go(tmp_path / "python")
    a, b = run_outputs(tmp_path / "compiled", markers=True), run_outputs(tmp_path / "python", markers=True)
    assert a.keys() == b.keys() and len(a) > 3 and a == b


def test_run_config_compiles_before_the_cluster_starts(tmp_path, monkeypatch):
    order = []
    monkeypatch.setattr(warmup, "ensure_compiled", lambda settings=None, log=None, **kw: order.append("compile"))

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


def _four_layouts(root):
    """``{layout: (input section, the files it names)}``: every layout over a few small files."""
    from support.pipeline_corpus import write_lines, write_paired

    out = {"records": ({"layout": "records", "paths": write_records(root / "records")},
                       sorted((root / "records").glob("shard-*")))}
    c, r = write_paired(root / "paired")
    out["paired"] = ({"layout": "paired", "candidates": c, "references": r},
                     sorted((root / "paired").glob("*/*")))
    c, r = write_lines(root / "lines")
    out["lines"] = ({"layout": "lines", "candidates": c, "references": r, "system_from": "folder"},
                    sorted((root / "lines").glob("*/*.txt")))
    for sub, text in (("sys", "a cat sat\n"), ("models", "the cat sat\n")):
        (root / "folders" / sub).mkdir(parents=True)
        for i in range(3):
            (root / "folders" / sub / (f"{i}.txt" if sub == "sys" else f"{i}.A.txt")).write_text(text * 50)
    out["folders"] = ({"layout": "folders", "candidates": str(root / "folders" / "sys"),
                       "references": str(root / "folders" / "models")}, sorted((root / "folders").glob("*/*")))
    return out


@pytest.mark.parametrize("layout", ["records", "paired", "lines", "folders"])
def test_auto_mode_estimates_every_layout_from_its_listing(tmp_path, monkeypatch, layout):
    import fsspec

    inp, files = _four_layouts(tmp_path)[layout]
    cfg = RunConfig.from_dict(config(inp, tmp_path / "run", execution={"mode": "auto"}))
    expected = sum(p.stat().st_size * (driver.COMPRESSION_RATIO if p.suffix == ".gz" else 1) for p in files)

    def no_reading(*a, **kw):
        raise AssertionError(f"the estimate opened a file: {a}")

    with monkeypatch.context() as m:
        m.setattr(fsspec, "open", no_reading)  # the listing's sizes only: no input file is read
        assert driver.estimate_input_bytes(cfg) == expected
        m.setattr(driver, "AUTO_LOCAL_MIN_BYTES", expected - 1)
        assert driver.choose_mode(cfg, lambda m: None)[0] == "local"
        m.setattr(driver, "AUTO_LOCAL_MIN_BYTES", expected + 1)
        assert driver.choose_mode(cfg, lambda m: None)[0] == "sync"


def test_the_summary_counts_the_whole_command_and_names_the_compile(tmp_path, monkeypatch, capsys):
    """The summary's seconds run from the command's start, the first run's compile included, and
    the printed line says how much of them the compile took."""
    import time

    from pipeline.cli import main as cli

    monkeypatch.setattr(warmup, "ensure_compiled", lambda settings=None, log=None, **kw: 42.0)
    monkeypatch.setattr(cli, "_STARTED", time.perf_counter() - 1000)   # as if the command began long ago
    inp = write_records(tmp_path / "in", 4, bad=False)
    assert cli.main(["score", inp, "-o", str(tmp_path / "run"), "--sync", "--no-progress"]) == 0
    summary = json.loads((tmp_path / "run" / "_summary.json").read_text())
    assert summary["seconds"] >= 1000 and summary["compile_seconds"] == 42.0
    assert "s (42.0s of it compiling the kernels), " in capsys.readouterr().out
