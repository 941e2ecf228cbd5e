"""What a run folder guarantees (fsspec only; never Dask).

* **What is ours.** :func:`is_run_file` names every file the run format writes; ``--overwrite``
  deletes only those, and refuses a folder that holds anything else (:func:`foreign_files`),
  a folder without a run record (``_run.json``) and a regular file.
* **Inputs and the output never overlap** (:func:`check_output_vs_inputs`, at config time):
  no input inside the run folder (``--overwrite`` would delete it), no run folder inside an
  input folder, no input glob that matches the run's own files.
* **Input fingerprints** (:func:`list_inputs`): every input file's size and version
  (ETag / generation / modification time, whatever the file system's listing gives; a content
  hash only where it gives neither) from the listing, recorded in the plan, compared on
  resume and again before ``_SUCCESS``.
* **One run per folder** (:class:`Lease`): ``_LEASE.json`` created exclusively (local:
  ``link``, which fails if the name exists; S3 / GCS: a conditional PUT, ``If-None-Match: *``
  / ``ifGenerationMatch=0``), refreshed by a heartbeat, removed at the end, broken only when
  stale (heartbeat older than :data:`LEASE_TIMEOUT_S`, or its process is gone on this host; no
  readable heartbeat: the file's modification time), every change conditional on the version read.
"""
from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import socket
import threading
import time
import uuid

from pipeline.io.paths import get_fs, has_glob, is_local, list_folder
from pipeline.io.writers import write_bytes_atomic

# Written into _run.json; a folder with another (or none: before issue 17) is not resumed.
RUN_FORMAT = 2
LEASE = "_LEASE.json"
# A lease whose heartbeat is older than this is stale (the run holding it is gone).
LEASE_TIMEOUT_S = 120.0
LEASE_HEARTBEAT_S = 10.0

_RUN_FILE = re.compile(r"""^(?:
      _run\.json | _plan\.json | _summary\.json | _SUCCESS | _LEASE\.json | rouge155_corpus\.json
    | _done/unit-\d{5,}\.json
    | scores/system[-=][^/]*/part-\d{5,}\.parquet
    | quarantine/part-\d{5,}\.parquet
    | stats/(?:stats|bootstrap_exact)\.(?:parquet|json)
)$""", re.X)
# a killed atomic write's temp file (writers._write_bytes_atomic), in a folder of ours
_TMP_FILE = re.compile(r"^(?:(?:_done|quarantine|stats|scores/system[-=][^/]*)/)?\.tmp-[^/]+$")
# what the run writes, for the input-glob check (a system folder, a part, every fixed name)
SAMPLE_FILES = ("_run.json", "_plan.json", "_summary.json", "_SUCCESS", LEASE, "rouge155_corpus.json",
                "_done/unit-00000.json", "scores/system-/part-00000.parquet", "scores/system-x/part-00000.parquet",
                "quarantine/part-00000.parquet", "stats/stats.parquet", "stats/stats.json",
                "stats/bootstrap_exact.parquet", "stats/bootstrap_exact.json")


class RunFolderBusyError(RuntimeError):
    """Another live run holds the run folder (its lease)."""


def is_run_file(rel: str) -> bool:
    """Whether ``rel`` (relative to the run folder) is a file the run format writes."""
    return bool(_RUN_FILE.match(rel) or _TMP_FILE.match(rel))


def folder_files(fs, path: str) -> list[str]:
    """Every file below ``path``, relative to it (hidden ones too)."""
    root = path.rstrip("/")
    try:
        fs.invalidate_cache(root)
    except Exception:  # noqa: BLE001 - not every file system caches
        pass
    out = []
    for p in fs.find(root, withdirs=False):
        p = p.rstrip("/")
        if p.startswith(root + "/"):
            out.append(p[len(root) + 1:])
    return sorted(out)


def foreign_files(rels) -> list[str]:
    return [r for r in rels if not is_run_file(r)]


def remove_run_files(fs, path: str, rels, keep=(LEASE,)) -> int:
    """Delete the run-format files ``rels`` below ``path`` (not ``keep``); the caller has checked
    that every file there is ours.  Returns how many were deleted."""
    root = path.rstrip("/")
    doomed = [f"{root}/{r}" for r in rels if is_run_file(r) and r not in keep]
    if doomed:
        fs.rm(doomed)
    if is_local(fs):  # empty folders of ours (object stores have none)
        for sub in sorted({posixpath.dirname(r) for r in rels if "/" in r}, key=len, reverse=True):
            for d in (sub, posixpath.dirname(sub)):
                try:
                    os.rmdir(f"{root}/{d}") if d else None
                except OSError:
                    pass
    fs.invalidate_cache()
    return len(doomed)


# --------------------------------------------------------------------------- inputs vs output
_CANONICAL = {"s3a": "s3", "gcs": "gs", "local": "file", "az": "abfs", "abfss": "abfs"}


def normalise(url: str) -> tuple[str, str]:
    """``(protocol, path)`` of ``url`` without a trailing slash: local paths absolute with
    symlinks resolved; ``s3a``/``gcs``/``local``/``az`` under their usual names."""
    from fsspec.core import split_protocol

    protocol, rest = split_protocol(url)
    protocol = _CANONICAL.get((protocol or "file").lower(), (protocol or "file").lower())
    if protocol == "file":
        path = os.path.realpath(os.path.expanduser(rest))
        return protocol, path.replace(os.sep, "/").rstrip("/") or "/"
    path = rest.split("?", 1)[0]
    return protocol, posixpath.normpath("/" + path.strip("/")).lstrip("/")


def glob_prefix(path: str) -> str:
    """The folder of a glob before its first segment with a glob character."""
    head = []
    for seg in path.split("/"):
        if has_glob(seg):
            break
        head.append(seg)
    return "/".join(head)


def _under(child: str, parent: str) -> bool:
    return child == parent or child.startswith(parent.rstrip("/") + "/")


def check_output_vs_inputs(output: str, inputs) -> None:
    """Refuse an output that is an input, contains an input, lies inside an input folder, or
    whose files an input glob would match (``ValueError`` naming both)."""
    from fsspec.utils import glob_translate

    o_proto, o_path = normalise(output)
    for inp in inputs:
        i_proto, i_path = normalise(inp)
        if i_proto != o_proto:
            continue
        prefix = glob_prefix(i_path) if has_glob(i_path) else i_path
        if _under(prefix, o_path):
            raise ValueError(f"output.url {output!r} contains the input {inp!r}: a run folder must not "
                             "hold its inputs (--overwrite would delete them); choose another output")
        if not _under(o_path, prefix):
            continue
        if not has_glob(i_path):
            raise ValueError(f"output.url {output!r} is inside the input folder {inp!r}: a later run would "
                             "read this run's files as input; choose an output outside it")
        rx = re.compile(glob_translate(i_path))
        hit = next((s for s in SAMPLE_FILES if rx.match(f"{o_path}/{s}")), None)
        if hit is not None:
            raise ValueError(f"output.url {output!r}: the input glob {inp!r} would match this run's own "
                             f"files (e.g. {hit}); choose an output the glob cannot match")


# --------------------------------------------------------------------------- input fingerprints
_VERSION_KEYS = ("ETag", "etag", "generation")
_TIME_KEYS = ("mtime", "LastModified", "last_modified", "updated")


def fingerprint(info: dict, fs=None, path: str | None = None) -> dict:
    """What identifies one version of a file, from its listing entry: the size and the
    object's version (ETag / generation) or modification time (and inode on a local disk);
    a SHA-256 of the content only where the listing gives neither."""
    fp = {"size": info.get("size")}
    for k in _VERSION_KEYS:
        if info.get(k) is not None:
            fp["version"] = str(info[k])
            break
    for k in _TIME_KEYS:
        if info.get(k) is not None:
            fp["time"] = str(info[k])
            break
    if info.get("ino") is not None:
        fp["ino"] = int(info["ino"])
    if "version" not in fp and "time" not in fp and fs is not None and path is not None:
        with fs.open(path, "rb") as f:
            fp["sha256"] = hashlib.sha256(f.read()).hexdigest()
    return fp


def _folder_listing(url: str, so: dict) -> dict:
    """The fingerprints of the files a ``folders``-layout folder holds (the files its reader reads)."""
    fs, _ = get_fs(url, so)
    return {u: fingerprint(info, fs, info["name"]) for _, u, info in list_folder(url, so, "input")}


def input_urls(spec) -> list[str]:
    """The URLs / globs / folders an input spec reads."""
    return list(spec.paths) + list(spec.candidates) + list(spec.references)


def list_inputs(spec) -> dict[str, dict]:
    """``{file URL: fingerprint}`` of every input file of ``spec`` (raises, naming the pattern,
    for a missing input: called before anything is created in the output)."""
    from pipeline.io.paths import expand

    so = spec.storage_options
    out: dict[str, dict] = {}
    for url in input_urls(spec):  # a listing cached by an earlier run in this process is stale
        try:
            get_fs(url, so)[0].invalidate_cache()
        except Exception:  # noqa: BLE001 - not every file system caches
            pass
    if spec.layout == "folders":
        for url in input_urls(spec):
            out.update(_folder_listing(url, so))
        return dict(sorted(out.items()))
    for field, urls in (("paths", spec.paths), ("candidates", spec.candidates), ("references", spec.references)):
        if not urls:
            continue
        info: dict = {}
        files = expand(urls, so, f"input.{field}", info=info)
        for u in files:
            fs, path = get_fs(u, so)
            out[u] = fingerprint(info.get(u) or fs.info(path), fs, path)
    return dict(sorted(out.items()))


def changed_inputs(before: dict, now: dict) -> list[str]:
    """The files added, removed or changed between two :func:`list_inputs`, each marked."""
    out = []
    for u in sorted(set(before) | set(now)):
        if u not in now:
            out.append(f"{u} (removed)")
        elif u not in before:
            out.append(f"{u} (new)")
        elif before[u] != now[u]:
            out.append(f"{u} (changed)")
    return out


def describe(files: list[str], limit: int = 5) -> str:
    more = f" and {len(files) - limit} more" if len(files) > limit else ""
    return ", ".join(files[:limit]) + more


def plan_id(config_hash: str, settings: dict, inputs: dict) -> str:
    """The plan's identity: the settings and every input file's fingerprint (markers carry it,
    so a resume accepts only the markers of its own plan)."""
    blob = json.dumps([config_hash, settings, inputs], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


# --------------------------------------------------------------------------- the lease
# TEST HOOK (tests/test_run_folder_trust.py only): "<step>:<file>" pauses the run at ``step``
# (see pause_point) until ``file`` exists, after creating ``<file>.reached``.
TEST_PAUSE_ENV = "ROUGE_PIPELINE_TEST_PAUSE"


def pause_point(step: str) -> None:
    spec = os.environ.get(TEST_PAUSE_ENV)
    if not spec:
        return
    name, _, path = spec.partition(":")
    if name != step:
        return
    with open(path + ".reached", "w"):
        pass
    deadline = time.monotonic() + 120
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise RuntimeError(f"test pause at {step}: {path} never appeared")
        time.sleep(0.01)


def _pid_alive(pid) -> bool:
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, TypeError, OverflowError):
        return True
    return True


def lease_is_stale(holder: dict, now: float | None = None) -> str | None:
    """Why ``holder``'s lease is stale, or None while it is live.  A lease without a numeric
    heartbeat (corrupt or hand-edited) is judged by the file's modification time (``mtime``,
    filled in by :meth:`Lease._read`): a live run rewrites it every few seconds."""
    now = time.time() if now is None else now
    beat = holder.get("heartbeat")
    if not isinstance(beat, (int, float)) or isinstance(beat, bool):
        mtime = holder.get("mtime")
        if isinstance(mtime, (int, float)) and now - mtime > LEASE_TIMEOUT_S:
            return (f"it has no readable heartbeat and the file was last written {now - mtime:.0f}s ago "
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
    age = f", heartbeat {time.time() - beat:.0f}s ago" if isinstance(beat, (int, float)) else ""
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
        self.url = f"{self.run_url}/{LEASE}"
        self.log = log or (lambda _m: None)
        self.run_id = uuid.uuid4().hex[:12]
        self.started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.lost: str | None = None
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
            parent = posixpath.dirname(path)
            os.makedirs(parent, exist_ok=True)
            tmp = f"{parent}/.tmp-{LEASE}-{uuid.uuid4().hex}"
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
            aside = f"{posixpath.dirname(path)}/.tmp-{LEASE}-broken-{uuid.uuid4().hex}"
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
                    if holder.get("unreadable"):
                        raise RunFolderBusyError(
                            f"{self.run_url}: {LEASE} is unreadable and was written in the last "
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
