"""Start and stop the external processes of the deployment tests (Dask scheduler/workers).

Every process is started in its own session (its own process group), bound to 127.0.0.1, and
stopped by its own PID / process group: never by name.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent
DASK = str(BIN / "dask")


class Proc:
    def __init__(self, args, log: Path, env=None, cwd=None):
        self.log = log
        self._fh = open(log, "wb")
        self.popen = subprocess.Popen(args, stdout=self._fh, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                      start_new_session=True)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def stop(self, timeout: float = 15) -> None:
        """SIGTERM our own process group (the nanny and its worker), then SIGKILL if needed."""
        p = self.popen
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)    # pgid == pid: start_new_session=True
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(5)
        # a worker process left behind in the group (nanny gone first)
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self._fh.close()

    def output(self) -> str:
        self._fh.flush()
        return self.log.read_text(errors="replace")


def worker_env(extra: dict | None = None) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    env.update(extra or {})
    return env


class DaskCluster:
    """``dask scheduler`` + N ``dask worker`` processes on 127.0.0.1 (no dashboards)."""

    def __init__(self, root: Path, n_workers: int = 2, worker_args=(), env=None):
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.procs: list[Proc] = []
        sched_file = root / "scheduler.json"
        self.scheduler = Proc([DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                               "--scheduler-file", str(sched_file)], root / "scheduler.log", env=worker_env(env),
                              cwd=root)
        self.procs.append(self.scheduler)
        self.address = self._wait_address(sched_file)
        for i in range(n_workers):
            args = [DASK, "worker", self.address, "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard",
                    "--memory-limit", "1GB", "--name", f"w{i}", "--local-directory", str(root / f"w{i}")]
            extra = worker_args[i] if i < len(worker_args) else []
            self.procs.append(Proc(args + list(extra), root / f"worker-{i}.log", env=worker_env(env), cwd=root))
        self.n_workers = n_workers

    def _wait_address(self, sched_file: Path, timeout: float = 60) -> str:
        t0 = time.time()
        while time.time() - t0 < timeout:
            if self.scheduler.popen.poll() is not None:
                raise RuntimeError(f"dask scheduler exited:\n{self.scheduler.output()}")
            if sched_file.exists():
                try:
                    addr = json.loads(sched_file.read_text())["address"]
                    assert addr.startswith("tcp://127.0.0.1:"), addr
                    return addr
                except (ValueError, KeyError):
                    pass
            time.sleep(0.1)
        raise RuntimeError(f"no scheduler file after {timeout}s:\n{self.scheduler.output()}")

    def wait_workers(self, timeout: float = 90) -> None:
        from distributed import Client

        with Client(self.address, timeout="20s") as c:
            try:
                c.wait_for_workers(self.n_workers, timeout=timeout)
            except TimeoutError:
                logs = "\n".join(p.output()[-2000:] for p in self.procs[1:])
                raise RuntimeError(f"workers did not join:\n{logs}") from None

    def stop(self) -> None:
        for p in reversed(self.procs):
            p.stop()
