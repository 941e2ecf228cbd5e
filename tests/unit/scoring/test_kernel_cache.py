"""The background compile's lock and the cold tier's end (pipeline.scoring.kernel_cache, cold)."""
from __future__ import annotations

import os
import time

from pipeline.scoring import cold, engine, kernel_cache


def test_a_lock_older_than_any_compile_is_stale_even_if_its_process_id_lives(monkeypatch, tmp_path):
    """A lock left by a killed compile whose process id now belongs to another live process (here:
    this one) must not make every later call wait for a compile that never ends."""
    lock = tmp_path / "lock"
    monkeypatch.setattr(kernel_cache, "_lock_path", lambda: str(lock))
    lock.write_text(str(os.getpid()))
    assert kernel_cache.compiling()                       # fresh, its process alive: a compile runs
    old = time.time() - kernel_cache.MAX_COMPILE_S - 1
    os.utime(lock, (old, old))
    assert not kernel_cache.compiling()


def test_once_the_compiled_path_is_loaded_here_the_cold_tier_ends(monkeypatch):
    """A cache no stamp can be written to (read-only) must not send every later batch back to
    pure Python after this process loaded the compiled path."""
    monkeypatch.setattr(cold, "_ready", False)
    monkeypatch.setattr(kernel_cache, "is_ready", lambda name: False)   # no stamp, ever
    monkeypatch.setattr(engine, "_waited", True)
    assert not cold.kernels_ready()
    engine._compiled()
    assert cold.kernels_ready()


def test_with_numba_jit_disabled_nothing_waits_for_a_compile_and_no_stamp_is_written(monkeypatch, tmp_path):
    """NUMBA_DISABLE_JIT=1 runs every kernel as Python: a stamp written then would tell a later,
    compiled process that the kernels are in the cache when none was compiled."""
    import numba

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(numba.config, "DISABLE_JIT", 1)
    kernel_cache.mark(kernel_cache.SCORING)
    assert not (tmp_path / "cache").exists()
    assert kernel_cache.is_ready(kernel_cache.ALL) and kernel_cache.is_ready(kernel_cache.SCORING)
    monkeypatch.setattr(numba.config, "DISABLE_JIT", 0)
    assert not kernel_cache.is_ready(kernel_cache.SCORING)
