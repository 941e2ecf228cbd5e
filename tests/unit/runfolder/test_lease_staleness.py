"""Issue 27 item 9 and its mutation gaps: when a lease is stale (pipeline/runfolder/lease.py).

A heartbeat that is NaN, Infinity or in the future is no time a live run wrote: such a lease is
judged by its file's modification time, like a corrupt one, and never holds a folder for good.
Another user's live run on this host (signalling it says ``EPERM``) is alive: its lease is never
broken as stale (mutation: ``_pid_alive`` returning False on ``PermissionError`` fails
``test_another_users_live_process_on_this_host_is_alive``)."""
from __future__ import annotations

import json
import os
import socket
import time

import pytest

from pipeline import runfolder as outputs
from pipeline.runfolder import lease as lease_mod

OLD = outputs.LEASE_TIMEOUT_S + 60


@pytest.mark.parametrize("beat", [float("nan"), float("inf"), float("-inf"), "future"])
def test_an_unusable_heartbeat_is_judged_by_the_files_modification_time(beat):
    now = time.time()
    beat = now + 3600 if beat == "future" else beat
    assert outputs.lease_is_stale({"heartbeat": beat, "mtime": now - 5}, now) is None      # perhaps a live run
    why = outputs.lease_is_stale({"heartbeat": beat, "mtime": now - OLD}, now)
    assert why is not None and f"a heartbeat of {beat!r}" in why and f"last written {OLD:.0f}s ago" in why


def test_a_heartbeat_a_little_ahead_is_another_hosts_clock():
    now = time.time()
    ahead = now + lease_mod.LEASE_CLOCK_SKEW_S / 2
    assert outputs.lease_is_stale({"heartbeat": ahead, "host": "other", "mtime": now - OLD}, now) is None
    assert outputs.lease_is_stale({"heartbeat": now - OLD, "host": "other", "mtime": now}, now) is not None


@pytest.mark.parametrize("text", ['NaN', 'Infinity', 'FUTURE'])
def test_a_lease_file_with_such_a_heartbeat_is_broken_once_old(tmp_path, text):
    run = tmp_path / "run"
    run.mkdir()
    beat = str(time.time() + 86400) if text == "FUTURE" else text
    path = run / outputs.LEASE
    path.write_text(f'{{"run_id": "0123456789ab", "host": "other-host", "pid": 1, "heartbeat": {beat}}}')
    with pytest.raises(outputs.RunFolderBusyError, match="written in the last 120s"):
        outputs.Lease(str(run)).acquire()                 # just written: perhaps a live run's
    os.utime(path, (time.time() - OLD, time.time() - OLD))
    logged = []
    lease = outputs.Lease(str(run), log=logged.append).acquire()
    try:
        assert json.loads(path.read_text())["run_id"] == lease.run_id
        assert any("breaking the stale lease" in m for m in logged), logged
    finally:
        lease.release()


def test_another_users_live_process_on_this_host_is_alive(monkeypatch):
    """Not this user's: ``kill(pid, 0)`` raises PermissionError (EPERM), which means it exists."""
    def kill(pid, sig):
        assert sig == 0
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(lease_mod.os, "kill", kill)
    holder = {"heartbeat": time.time(), "host": socket.gethostname(), "pid": 4242}
    assert outputs.lease_is_stale(holder) is None


def test_a_gone_process_on_this_host_is_stale(monkeypatch):
    def kill(pid, sig):
        raise ProcessLookupError(3, "No such process")

    monkeypatch.setattr(lease_mod.os, "kill", kill)
    holder = {"heartbeat": time.time(), "host": socket.gethostname(), "pid": 4242}
    assert outputs.lease_is_stale(holder) == "its process 4242 on this host is gone"
    assert outputs.lease_is_stale({**holder, "host": "other-host"}) is None     # not ours to judge
