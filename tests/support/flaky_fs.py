"""A local file system whose opens fail on demand (tests only), for tests/integration/test_faults.py.

It replaces fsspec's ``file`` implementation in the test process and, through a worker plugin
(which the scheduler also runs on restarted workers), in every Dask worker.  Failures are
driven by files in the folder named by ``$ROUGE_PIPELINE_TEST_FLAKY_DIR``, so they are shared
by every process:

* ``transient/<token>``: each token is consumed (deleted) by exactly one ``open``, which then
  fails with ``OSError(EIO)``: "the first N opens fail", whichever process makes them;
* ``permanent``: a text file holding a path fragment; every open *for writing* of a path
  containing it fails, forever.
"""
from __future__ import annotations

import errno
import os

import fsspec
from fsspec.implementations.local import LocalFileSystem

ENV = "ROUGE_PIPELINE_TEST_FLAKY_DIR"


class FlakyLocalFileSystem(LocalFileSystem):
    def _open(self, path, mode="rb", **kwargs):
        d = os.environ.get(ENV)
        if d:
            perm = os.path.join(d, "permanent")
            if "w" in mode and os.path.exists(perm):
                with open(perm, encoding="utf-8") as f:
                    frag = f.read().strip()
                if frag and frag in str(path):
                    raise OSError(errno.EIO, f"injected permanent storage error writing {path}")
            tdir = os.path.join(d, "transient")
            if os.path.isdir(tdir):
                for name in sorted(os.listdir(tdir)):
                    try:
                        os.remove(os.path.join(tdir, name))
                    except FileNotFoundError:
                        continue        # another process took this token
                    raise OSError(errno.EIO, f"injected transient storage error ({name}) opening {path}")
        return super()._open(path, mode, **kwargs)


def install() -> bool:
    fsspec.register_implementation("file", FlakyLocalFileSystem, clobber=True)
    return True


def uninstall() -> bool:
    fsspec.register_implementation("file", LocalFileSystem, clobber=True)
    return True


try:
    from distributed.diagnostics.plugin import WorkerPlugin
except ImportError:  # pragma: no cover
    WorkerPlugin = object


class FlakyPlugin(WorkerPlugin):
    name = "rouge-pipeline-test-flaky-fs"

    def setup(self, worker):
        install()

    def teardown(self, worker):
        uninstall()
