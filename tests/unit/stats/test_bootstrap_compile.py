"""A fresh kernel cache: the background compile also compiles the rouge-score bootstrap kernel
(registered by name by the statistics layer, which the scoring layer does not import) after the
scoring kernels, a process waiting for the scoring kernels compiles it meanwhile, and a first
large bootstrap waits for that kernel alone when the background compile is on it; a small one
takes NumPy's path (the same numbers) instead of a compile."""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from pipeline.scoring import kernel_cache, kernel_compile
from pipeline.stats import rouge_score_bootstrap as rb

MODULE = "pipeline.stats.mt_bootstrap"


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(kernel_cache, "_started", None)
    return tmp_path


def test_the_statistics_layer_registers_its_kernel_module_by_name():
    import subprocess

    code = ("import sys, pipeline.api; from pipeline.scoring import kernel_cache; "
            "print(kernel_cache.registered(), 'numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == [f"['{MODULE}']", "False"]   # registered on import, no numba loaded


class _Proc:
    def __init__(self, args, **kw):
        self.args, self.pid = args, 4242

    def poll(self):
        return None


def test_the_background_compile_is_given_the_registered_modules(empty_cache, monkeypatch):
    started = []
    monkeypatch.setattr(kernel_cache.subprocess, "Popen", lambda args, **kw: started.append(args) or _Proc(args))
    assert kernel_cache.start_background()
    assert started[0][started[0].index("pipeline.scoring.kernel_compile") + 1:] == kernel_cache.registered()
    # scoring compiled and the module stamped: nothing left to start
    monkeypatch.setattr(kernel_cache, "_started", None)
    kernel_cache.release_lock()
    kernel_cache.mark(kernel_cache.SCORING)
    for m in kernel_cache.registered():
        kernel_cache.mark(m)
    assert not kernel_cache.start_background()


def test_the_compile_process_compiles_and_stamps_each_module_after_scoring(empty_cache, monkeypatch):
    order = []
    fake = types.ModuleType("fake_kernels_for_test")
    fake.compile_for_cache = lambda: order.append("module")
    monkeypatch.setitem(sys.modules, "fake_kernels_for_test", fake)
    monkeypatch.setattr(kernel_compile, "compile_scoring", lambda: order.append("scoring"))
    monkeypatch.setattr(kernel_compile.os, "nice", lambda n: 0)
    monkeypatch.setattr(kernel_compile.cold, "disable", lambda: None)
    assert kernel_compile.main(["fake_kernels_for_test"]) == 0
    assert order == ["scoring", "module"] and kernel_cache.is_ready("fake_kernels_for_test")
    kernel_cache.mark(kernel_cache.SCORING)
    order.clear()
    kernel_compile.main(["fake_kernels_for_test"])
    assert order == []   # both in the cache already: nothing compiled again


def test_waiting_for_the_scoring_kernels_compiles_the_registered_modules_meanwhile(empty_cache, monkeypatch):
    done = []
    fake = types.ModuleType("fake_kernels_for_test")
    fake.compile_for_cache = lambda: done.append("module")
    monkeypatch.setitem(sys.modules, "fake_kernels_for_test", fake)
    monkeypatch.setattr(kernel_cache, "_registered", {"fake_kernels_for_test": None})
    monkeypatch.setattr(kernel_cache, "start_background", lambda: True)
    monkeypatch.setattr(kernel_cache, "compiling", lambda: True)
    monkeypatch.setattr(kernel_cache.time, "sleep", lambda s: kernel_cache.mark(kernel_cache.SCORING))
    assert kernel_cache.wait_ready(file=open(empty_cache / "bar.txt", "w")) is True
    assert done == ["module"] and kernel_cache.is_ready("fake_kernels_for_test")


def test_a_large_first_bootstrap_waits_for_its_kernel_alone(empty_cache, monkeypatch):
    waits = []
    monkeypatch.setattr(kernel_cache, "wait_ready", lambda file=None, part=kernel_cache.SCORING, what=None:
                        waits.append(part) or True)
    monkeypatch.setattr(rb.cold, "compiles_here", lambda: False)
    assert rb._use_compiled(rb._COMPILED_MIN_DRAWS, 1, 3)
    assert waits == [MODULE]


def test_the_wait_is_for_this_processs_compile_of_the_module_only(empty_cache, monkeypatch):
    monkeypatch.setattr(kernel_cache, "start_background", lambda: True)
    monkeypatch.setattr(kernel_cache, "_started", None)   # another process's compile: may lack it
    assert kernel_cache.wait_ready(part=MODULE) is False
    monkeypatch.setattr(kernel_cache, "_started", _Proc(["python", "-m", "pipeline.scoring.kernel_compile", MODULE]))
    assert kernel_cache.wait_ready(part=MODULE) is False   # still on the scoring kernels: compile it here
    kernel_cache.mark(kernel_cache.SCORING)
    polls = []
    monkeypatch.setattr(kernel_cache, "compiling", lambda: polls.append(1) or len(polls) < 3)
    monkeypatch.setattr(kernel_cache.time, "sleep", lambda s: None)
    monkeypatch.setattr(kernel_cache, "is_ready", lambda part=kernel_cache.ALL: part == "scoring" or len(polls) >= 2)
    assert kernel_cache.wait_ready(part=MODULE, file=open(empty_cache / "bar.txt", "w")) is True
    shown = (empty_cache / "bar.txt").read_text()
    assert f"compiling the kernels of {MODULE}" in shown and "scoring kernels" not in shown


def test_a_small_bootstrap_with_numba_loaded_takes_numpy_until_the_kernel_is_cached(empty_cache, monkeypatch):
    import numba  # noqa: F401 - loaded, as after the compiled scoring path

    from pipeline.stats import mt_bootstrap

    monkeypatch.setattr(mt_bootstrap, "_stamped", False)  # an earlier test's call stamped another cache
    monkeypatch.setattr(rb.cold, "compiles_here", lambda: False)
    monkeypatch.setattr(kernel_cache, "wait_ready", lambda **kw: pytest.fail("a small bootstrap waited"))
    assert not rb._use_compiled(100, 1000, 3)
    m = np.random.default_rng(2).random((100, 3))
    got = rb._resample_means(np.random.RandomState(5), m, 50, [0, 1, 2])
    from pipeline.stats.mt_bootstrap import bootstrap_means

    want = bootstrap_means(np.random.RandomState(5), m, 50, [0, 1, 2])
    assert got.tobytes() == want.tobytes()
    assert kernel_cache.is_ready(MODULE)   # the compiled call stamped it
    assert rb._use_compiled(100, 1000, 3)
