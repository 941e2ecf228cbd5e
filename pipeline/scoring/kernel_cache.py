"""Whether this machine's numba cache holds the kernels, and compiling the scoring kernels in the
background (the process :func:`start_background` starts runs :mod:`pipeline.scoring.kernel_compile`).

On an empty cache (a fresh install, a new numba) the scoring kernels cost tens of seconds of
CPU to compile.  So a process that finds them uncompiled scores in pure Python
(:mod:`pipeline.scoring.cold`) while one detached, low-priority process compiles them into the
cache, and moves to the compiled path once a stamp says they are there.  When a call is too
large for pure Python and the kernels are not ready, the wait is shown on stderr
(:func:`wait_ready`).

A stamp file next to numba's cache, keyed by everything that invalidates it (this package's
files, numba, Python, the machine), says a part is compiled: ``scoring`` (the encoder and the
scoring kernel), ``job`` (the others a run needs), ``kernels`` (every kernel: ``python -m
pipeline.execution.warmup``, or both others) or a registered module's name.

**Registered modules.**  A layer above this one whose kernels a first call needs (the
rouge-score bootstrap of ``compute``) adds its module's name with :func:`register` when it is
imported, before anything scores; the background compile imports each such module by name
after the scoring kernels and calls its ``compile_for_cache()``, then stamps it with its name,
and a process waiting for the scoring kernels (idle) compiles them meanwhile the same way.
This layer imports none of them.
"""
from __future__ import annotations

import hashlib
import importlib
import os
import platform
import subprocess
import sys
import time
from importlib.metadata import version

SCORING = "scoring"
JOB = "job"        # every kernel but the scoring ones: a small run's first compile
ALL = "kernels"
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_key: str | None = None
_started: subprocess.Popen | None = None
_registered: dict[str, None] = {}   # module names, in the order added


def register(module: str) -> None:
    """Have the background compile also compile ``module`` (a module with a ``compile_for_cache()``
    function) and stamp it as the part ``module``."""
    _registered.setdefault(module, None)


def registered() -> list[str]:
    return list(_registered)


def _package_version() -> str:
    try:
        return version("rouge-pipeline")
    except Exception:  # noqa: BLE001 - running from a source tree
        return "source"


def key() -> str:
    """Changes whenever numba's cache of this package's kernels would be stale."""
    global _key
    if _key is None:
        try:
            numba_version = version("numba")
        except Exception:  # noqa: BLE001
            numba_version = "unknown"
        h = hashlib.sha256(f"{_package_version()}|{numba_version}|{sys.version}|{platform.machine()}|{_ROOT}"
                           .encode())
        for dirpath, dirnames, files in os.walk(_ROOT):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    st = os.stat(os.path.join(dirpath, name))
                    h.update(f"{os.path.relpath(os.path.join(dirpath, name), _ROOT)}:{st.st_mtime_ns}:{st.st_size}"
                             .encode())
        _key = h.hexdigest()[:16]
    return _key


def cache_dir() -> str:
    """Where numba caches (``NUMBA_CACHE_DIR``, else the package's ``__pycache__`` if writable,
    else a user cache folder): clearing that cache clears the stamps with it."""
    cache = os.environ.get("NUMBA_CACHE_DIR")
    if not cache:
        cache = os.path.join(_ROOT, "execution", "__pycache__")
        if not os.access(os.path.dirname(cache), os.W_OK):
            cache = os.path.join(os.path.expanduser("~"), ".cache", "rouge-pipeline")
    return cache


def stamp_path(part: str = ALL) -> str:
    return os.path.join(cache_dir(), f"rouge-pipeline-{part}-{key()}")


def jit_disabled() -> bool:
    """numba's debugging switch ``NUMBA_DISABLE_JIT=1``: every kernel runs as Python, so nothing
    is compiled or waited for, and no stamp is written that a later compiled process would trust."""
    numba = sys.modules.get("numba")
    if numba is not None:   # what numba read when it was imported
        return bool(numba.config.DISABLE_JIT)
    try:   # read as numba reads it (an int; anything else is off)
        return bool(int(os.environ.get("NUMBA_DISABLE_JIT", "0")))
    except ValueError:
        return False


def is_ready(part: str = ALL) -> bool:
    """True when this machine's numba cache holds ``part`` (every kernel, or the scoring ones)."""
    if jit_disabled():
        return True
    try:
        if os.path.exists(stamp_path(part)):
            return True
        if part != ALL:   # scoring, job, a registered module: every kernel covers it
            return os.path.exists(stamp_path(ALL))
        return os.path.exists(stamp_path(JOB)) and os.path.exists(stamp_path(SCORING))
    except OSError:
        return False


def mark(part: str = ALL) -> None:
    if jit_disabled():
        return
    try:
        path = stamp_path(part)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write("kernels compiled\n")
    except OSError:  # a read-only cache: the next process compiles (or loads) again
        pass


# The longest a background compile may hold its lock (it takes ~30 CPU-s; minutes on busy cores).
MAX_COMPILE_S = 900


def _lock_path() -> str:
    return stamp_path("compiling")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True


def compiling() -> bool:
    """True while some process compiles the scoring kernels in the background (its lock)."""
    path = _lock_path()
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read().strip()
        age = time.time() - os.stat(path).st_mtime
    except OSError:
        return False
    if text.isdigit():
        # a lock older than any compile is stale even if its process id was reused since
        return age < MAX_COMPILE_S and _alive(int(text))
    return age < 30  # just created: its process id is being written


def start_background() -> bool:
    """Start the background compile of the scoring kernels and the registered modules not ready
    yet, unless a process compiles already; True when one runs (this call's or another's)."""
    global _started
    if _started is not None and _started.poll() is None:
        return True
    modules = [m for m in _registered if not is_ready(m)]
    if is_ready(SCORING) and not modules:
        return False
    path = _lock_path()
    for _ in range(2):
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            break
        except FileExistsError:
            if compiling():
                return True
            try:
                os.remove(path)  # its process died: take the lock over
            except OSError:
                pass
        except OSError:  # an unwritable cache: the compiled path compiles in process
            return False
    else:
        return False
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    try:
        _started = subprocess.Popen([sys.executable, "-m", "pipeline.scoring.kernel_compile", *modules], env=env,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        os.close(fd)
        os.remove(path)
        return False
    os.write(fd, str(_started.pid).encode())
    os.close(fd)
    return True


def wait_ready(file=None, part: str = SCORING, what: str | None = None) -> bool:
    """Wait, showing the wait on ``file`` (stderr), until the background compile has put
    ``part`` (the scoring kernels, or a registered module) in the cache; False when no process
    compiles it (the caller compiles).  Waiting for the scoring kernels, this process compiles
    the registered modules meanwhile; a module is waited for only once this process's compile
    is past the scoring kernels (it compiles the modules after them), else the caller compiles."""
    if is_ready(part):
        return True
    if not start_background():
        return False
    if part != SCORING and not (is_ready(SCORING) and _started is not None and _started.poll() is None
                                and part in _started.args):
        return False
    from tqdm import tqdm  # start-up: only when a wait is shown

    what = what or ("the scoring kernels" if part == SCORING else f"the kernels of {part}")
    with tqdm(file=file or sys.stderr, leave=True, mininterval=0.5, bar_format="{desc}: {elapsed}{postfix}",
              desc=f"compiling {what} (first use on this machine; cached after)") as bar:
        if part == SCORING:
            compile_registered()
        while not is_ready(part):
            if not compiling():
                return is_ready(part)
            time.sleep(0.2)
            bar.refresh()
        bar.set_postfix_str(", done")
    return True


def compile_registered() -> None:
    """Compile the registered modules not in the cache yet (by name: this layer imports none of
    them), each stamped."""
    for module in registered():
        if not is_ready(module):
            importlib.import_module(module).compile_for_cache()
            mark(module)


def release_lock() -> None:
    """The background process's end: its lock removed (if it is still its own)."""
    try:
        with open(_lock_path(), encoding="utf-8") as f:
            mine = f.read().strip() in ("", str(os.getpid()))
        if mine:
            os.remove(_lock_path())
    except OSError:
        pass
