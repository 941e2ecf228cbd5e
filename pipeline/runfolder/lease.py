"""One run per folder: ``_LEASE.json`` created exclusively (local: ``link``, which fails if the
name exists; S3 / GCS: a conditional PUT, ``If-None-Match: *`` / ``ifGenerationMatch=0``),
refreshed by a heartbeat, removed at the end, broken only when stale (heartbeat older than
:data:`LEASE_TIMEOUT_S`, or its process is gone on this host; no readable heartbeat: the file's
modification time), every change conditional on the version read.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import posixpath
import socket
import threading
import time
import uuid

from pipeline.errors import RunFolderBusyError
from pipeline.io.paths import get_fs, is_local
from pipeline.io.writers import temp_path
from pipeline.runfolder.inputs import TIME_KEYS as _TIME_KEYS
from pipeline.runfolder.names import LEASE, url

# A lease whose heartbeat is older than this is stale (the run holding it is gone).
LEASE_TIMEOUT_S = 120.0
LEASE_HEARTBEAT_S = 10.0
# A heartbeat up to this far in the future is another host's clock running ahead; further, it is
# not a time a live run wrote, and the lease is judged by its file's modification time.
LEASE_CLOCK_SKEW_S = 30.0


def _pid_alive(pid) -> bool:
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, TypeError, OverflowError):
        return True
    return True


def usable_heartbeat(beat, now: float) -> bool:
    """Whether ``beat`` is a time a live run could have written: a finite number, not later than
    ``now`` plus :data:`LEASE_CLOCK_SKEW_S` (NaN, Infinity or a time in the future would keep a
    lease live for ever)."""
    return (isinstance(beat, (int, float)) and not isinstance(beat, bool) and math.isfinite(beat)
            and beat <= now + LEASE_CLOCK_SKEW_S)


def lease_is_stale(holder: dict, now: float | None = None) -> str | None:
    """Why ``holder``'s lease is stale, or None while it is live.  A lease without a usable
    heartbeat (corrupt, hand-edited, NaN, Infinity, in the future: :func:`usable_heartbeat`) is
    judged by the file's modification time (``mtime``, filled in by :meth:`Lease._read`): a live
    run rewrites it every few seconds.  A process on this host is gone only when signalling it
    says it does not exist: another user's live process (``EPERM``) is alive."""
    now = time.time() if now is None else now
    beat = holder.get("heartbeat")
    if not usable_heartbeat(beat, now):
        mtime = holder.get("mtime")
        if isinstance(mtime, (int, float)) and now - mtime > LEASE_TIMEOUT_S:
            what = "no readable heartbeat" if not isinstance(beat, (int, float)) else f"a heartbeat of {beat!r}"
            return (f"it has {what} and the file was last written {now - mtime:.0f}s ago "
                    f"(timeout {LEASE_TIMEOUT_S:.0f}s)")
        return None
    if now - beat > LEASE_TIMEOUT_S:
        return f"its heartbeat is {now - beat:.0f}s old (timeout {LEASE_TIMEOUT_S:.0f}s)"
    if holder.get("host") == socket.gethostname() and holder.get("pid") != os.getpid() \
            and not _pid_alive(holder.get("pid")):
        return f"its process {holder.get('pid')} on this host is gone"
    return None


def holder_text(holder: dict) -> str:
    if holder.get("unreadable"):
        return f"an unreadable {LEASE}"
    beat = holder.get("heartbeat")
    now = time.time()
    age = (f", heartbeat {now - beat:.0f}s ago" if usable_heartbeat(beat, now)
           else f", heartbeat {beat!r}" if isinstance(beat, (int, float)) else "")
    return (f"run {holder.get('run_id')} (host {holder.get('host')}, pid {holder.get('pid')}, "
            f"started {holder.get('started')}{age})")


def _store(fs) -> str:
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    return "local" if is_local(fs) else {"s3a": "s3", "gcs": "gs"}.get(protocol, protocol)


def _precondition_failed(e: Exception) -> bool:
    """The store refused a conditional request (HTTP 412: the object changed or is gone)."""
    code = getattr(e, "code", None) or getattr(e, "status", None)
    resp = getattr(e, "response", None)
    if isinstance(resp, dict):
        code = code or resp.get("Error", {}).get("Code") or resp.get("ResponseMetadata", {}).get("HTTPStatusCode")
    text = f"{code} {e}".lower().replace("-", "")
    return ("412" in text or "precondition" in text or "404" in text or "nosuchkey" in text
            or isinstance(e, FileNotFoundError))


def _info_time(info: dict) -> float | None:
    """A listing entry's modification time in seconds since the epoch (None if it has none)."""
    import datetime

    for k in _TIME_KEYS:
        v = info.get(k)
        if isinstance(v, (int, float)):
            return float(v)
        if isinstance(v, datetime.datetime):
            return v.timestamp()
        if isinstance(v, str):
            try:
                return datetime.datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
    return None


def _local_version(f) -> tuple[tuple, bytes, float]:
    """(version, content, mtime) of an open local file; the version holds the content's hash
    as well as the inode, since a removed file's inode number is soon reused."""
    st = os.fstat(f.fileno())
    raw = f.read()
    return (st.st_ino, st.st_mtime_ns, hashlib.sha256(raw).hexdigest()), raw, st.st_mtime


def _object_version(info: dict) -> str | None:
    """An object's version for a conditional request: S3 ETag, GCS generation (as text)."""
    v = info.get("ETag") or info.get("etag") or info.get("generation")
    return None if v is None else str(v)


def _gcs_parts(path: str) -> tuple[str, str]:
    bucket, _, key = path.partition("/")
    return bucket, key


class Lease:
    """``_LEASE.json`` in the run folder, held by this run from :meth:`acquire` to :meth:`release`.

    Every change of a lease that may be another run's is conditional on the version read, so
    that of two runs racing only one wins: breaking a stale lease moves it aside under a unique
    name first (local) or deletes it only if unchanged (S3 ``If-Match`` ETag, GCS
    ``ifGenerationMatch``); the heartbeat rewrites only this run's own file (local: in place,
    through the open file, after reading this run's id from it; S3 / GCS: only the version it
    last wrote) and marks the lease lost otherwise."""

    def __init__(self, run_url: str, storage_options: dict | None = None, log=None):
        self.run_url = run_url.rstrip("/")
        self.so = dict(storage_options or {})
        self.url = url(self.run_url, LEASE)
        self.log = log or (lambda _m: None)
        self.run_id = uuid.uuid4().hex[:12]
        self.started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.lost: str | None = None
        # called (from the heartbeat thread) once the lease is found lost: the run stops writing
        self.on_lost = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.held = False
        self._version = None  # of the lease file this run last wrote

    def _body(self) -> dict:
        return {"run_id": self.run_id, "host": socket.gethostname(), "pid": os.getpid(),
                "started": self.started, "heartbeat": time.time(), "timeout_s": LEASE_TIMEOUT_S}

    def _data(self) -> bytes:
        return (json.dumps(self._body(), sort_keys=True, indent=2) + "\n").encode("utf-8")

    def _read_versioned(self) -> tuple[dict | None, object]:
        """The lease document (``{"unreadable": True}`` if it does not parse; with the file's
        ``mtime``) and its version (local inode, S3 ETag, GCS generation), or ``(None, None)``."""
        fs, path = get_fs(self.url, self.so)
        kind = _store(fs)
        if kind == "local":
            try:
                with open(path, "rb") as f:
                    version, raw, mtime = _local_version(f)
            except FileNotFoundError:
                return None, None
        else:
            try:
                fs.invalidate_cache(posixpath.dirname(path))
            except Exception:  # noqa: BLE001
                pass
            try:
                # the version before the content: the content read is then that version or newer,
                # so a lease judged stale is never removed under a newer (live) version's ETag
                info = fs.info(path)
                with fs.open(path, "rb") as f:
                    raw = f.read()
            except FileNotFoundError:
                return None, None
            version = _object_version(info)
            mtime = _info_time(info)
        try:
            doc = json.loads(raw)
        except ValueError:
            doc = None
        beat = doc.get("heartbeat") if isinstance(doc, dict) else None
        if not isinstance(beat, (int, float)) or isinstance(beat, bool):  # corrupt or hand-edited
            doc = {"unreadable": True}
        doc["mtime"] = mtime
        return doc, version

    def _read(self) -> dict | None:
        return self._read_versioned()[0]

    def _create(self) -> None:
        """Create the lease; ``FileExistsError`` if there is one."""
        fs, path = get_fs(self.url, self.so)
        data = self._data()
        kind = _store(fs)
        if kind == "local":
            os.makedirs(posixpath.dirname(path), exist_ok=True)
            tmp = temp_path(path)
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, path)  # fails if the name exists: the lease appears whole or not at all
            finally:
                os.unlink(tmp)
            return
        out = fs.pipe_file(path, data, mode="create")  # If-None-Match: * (s3fs) / ifGenerationMatch=0 (gcsfs)
        self._version = self._written_version(fs, path, out)

    def _written_version(self, fs, path: str, out) -> object:
        if isinstance(out, dict) and _object_version(out) is not None:
            return _object_version(out)
        fs.invalidate_cache(path)
        return _object_version(fs.info(path))

    def _break(self, version) -> bool:
        """Remove the lease if it is still the version read; False if another run changed or
        removed it first (then nothing is touched)."""
        fs, path = get_fs(self.url, self.so)
        kind = _store(fs)
        if kind == "local":
            aside = temp_path(f"{path}-broken")
            try:
                os.rename(path, aside)  # of two breakers, one moves it; the other finds no file
            except FileNotFoundError:
                return False
            try:
                with open(aside, "rb") as f:
                    if _local_version(f)[0] == version:
                        return True
                try:  # moved a lease taken meanwhile: put it back, unless a third run took the name
                    os.link(aside, path)
                except FileExistsError:
                    pass
                return False
            finally:
                os.unlink(aside)
        try:
            if kind == "s3":
                bucket, key = _gcs_parts(path)
                fs.call_s3("delete_object", Bucket=bucket, Key=key, IfMatch=version)
            elif kind == "gs":
                bucket, key = _gcs_parts(path)
                fs.call("DELETE", "b/{}/o/{}", bucket, key, ifGenerationMatch=str(version))
            else:  # no conditional delete known: the read just before is all the check there is
                fs.rm(path)
        except Exception as e:  # noqa: BLE001
            if _precondition_failed(e):
                return False
            raise
        finally:
            try:
                fs.invalidate_cache(path)
            except Exception:  # noqa: BLE001
                pass
        return True

    def _refresh(self) -> str | None:
        """Rewrite this run's lease with a new heartbeat; why not, if it is no longer this run's."""
        fs, path = get_fs(self.url, self.so)
        kind = _store(fs)
        data = self._data()
        if kind == "local":
            try:
                f = open(path, "r+b")
            except FileNotFoundError:
                return f"{LEASE} was removed"
            with f:
                try:
                    holder = json.loads(f.read())
                except ValueError:
                    holder = None
                if not isinstance(holder, dict) or holder.get("run_id") != self.run_id:
                    return (f"{LEASE} was taken over by {holder_text(holder)}" if isinstance(holder, dict)
                            else f"{LEASE} was replaced")
                # in place, through the open file: were it moved aside by a breaker meanwhile, the
                # write lands in the moved file, never in another run's lease
                f.seek(0)
                f.write(data)
                f.truncate()
                f.flush()
                os.fsync(f.fileno())
            return None
        holder, version = self._read_versioned()
        if holder is None or holder.get("run_id") != self.run_id or version != self._version:
            return f"{LEASE} was taken over by {holder_text(holder)}" if holder else f"{LEASE} was removed"
        try:
            if kind == "s3":
                out = fs.pipe_file(path, data, IfMatch=version)
            elif kind == "gs":
                bucket, key = _gcs_parts(path)
                out = fs.call("POST", f"{fs._location}/upload/storage/v1/b/{bucket}/o", uploadType="media",
                              name=key, ifGenerationMatch=str(version), data=data, json_out=True)
            else:
                out = fs.pipe_file(path, data)
        except Exception as e:  # noqa: BLE001
            if _precondition_failed(e):
                return f"{LEASE} was changed by another run"
            raise
        self._version = self._written_version(fs, path, out)
        return None

    def acquire(self) -> "Lease":
        fs, path = get_fs(self.run_url, self.so)
        if is_local(fs):  # the folder first: an error then names it, not the lease
            os.makedirs(path, exist_ok=True)
        for _ in range(5):
            try:
                # look first: a store that ignores the create condition (an emulator) still
                # refuses a folder whose lease is there already
                if self._read() is not None:
                    raise FileExistsError(self.url)
                self._create()
            except FileExistsError:
                holder, version = self._read_versioned()
                if holder is None:
                    continue  # released meanwhile: try again
                why = lease_is_stale(holder)
                if why is None:
                    if holder.get("unreadable") or not usable_heartbeat(holder.get("heartbeat"), time.time()):
                        what = "is unreadable" if holder.get("unreadable") else "has no usable heartbeat"
                        raise RunFolderBusyError(
                            f"{self.run_url}: {LEASE} {what} and was written in the last "
                            f"{LEASE_TIMEOUT_S:.0f}s; wait, or remove it if no run is using the folder") from None
                    raise RunFolderBusyError(f"{self.run_url}: in use by {holder_text(holder)}; wait for it to "
                                             f"end (a lease is stale after {LEASE_TIMEOUT_S:.0f}s without a "
                                             "heartbeat)") from None
                if self._break(version):  # only the run whose conditional removal succeeds goes on
                    self.log(f"breaking the stale lease of {holder_text(holder)}: {why}")
                continue
            # Read back: a store that ignored the condition (an emulator) shows the last writer.
            mine = self._read()
            if mine is None or mine.get("run_id") != self.run_id:
                raise RunFolderBusyError(f"{self.run_url}: in use by "
                                         f"{holder_text(mine or {})}; wait for it to end")
            self.held = True
            self._thread = threading.Thread(target=self._beat, name="rouge-lease", daemon=True)
            self._thread.start()
            return self
        raise RunFolderBusyError(f"{self.run_url}: could not take {LEASE} (other runs keep taking it)")

    def _beat(self) -> None:
        while not self._stop.wait(LEASE_HEARTBEAT_S):
            try:
                lost = self._refresh()
            except Exception as e:  # noqa: BLE001 - a missed beat; the next one retries
                self.log(f"lease heartbeat: {type(e).__name__}: {e}")
                continue
            if lost is not None:
                self.lost = lost
                self.log(f"lease lost: {lost}")
                if self.on_lost is not None:
                    try:
                        self.on_lost()
                    except Exception as e:  # noqa: BLE001 - the check before _SUCCESS still refuses
                        self.log(f"lease lost: could not stop the run's tasks: {type(e).__name__}: {e}")
                return

    def stop_heartbeat(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def check(self) -> None:
        """Raise if the lease is no longer this run's (broken as stale, or removed)."""
        holder = self._read()
        if self.lost is None and (holder is None or holder.get("run_id") != self.run_id):
            self.lost = f"{LEASE} was taken over by {holder_text(holder)}" if holder else f"{LEASE} was removed"
        if self.lost is not None:
            raise RunFolderBusyError(f"{self.run_url}: this run lost its lease ({self.lost}); "
                                     "no _SUCCESS written")

    def release(self) -> None:
        self.stop_heartbeat()
        if not self.held:
            return
        self.held = False
        try:
            holder, version = self._read_versioned()
            if holder is not None and holder.get("run_id") == self.run_id:
                self._break(version)  # conditional: never removes a lease another run took meanwhile
        except Exception:  # noqa: BLE001 - a stale lease is broken by the next run
            pass

