"""Real object-storage servers on 127.0.0.1 for the S3 / GCS / secrets tests.

* S3: moto's ``ThreadedMotoServer(ip_address="127.0.0.1", port=0)`` (a real HTTP server; the CLI and
  its worker processes reach it over TCP through ``AWS_ENDPOINT_URL_S3``).
* GCS: ``gcp-storage-emulator`` (in memory) with ``STORAGE_EMULATOR_HOST``.

Both run in a thread of the pytest process, started once per session by the fixtures below
(import them into a test module with ``from support.storage_servers import ...``).
"""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).parents[2]

# Recognisable, made-up credentials: the secrets tests grep for them.
S3_KEY_ID = "AKIAROUGETESTKEY0001"
S3_SECRET = "rouge-s3-secret-9f8e7d6c5b4a"


@pytest.fixture(scope="session")
def moto_endpoint():
    moto_server = pytest.importorskip("moto.server")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    assert host == "127.0.0.1"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def s3_env(endpoint: str, key_id: str = S3_KEY_ID, secret: str = S3_SECRET) -> dict:
    return {"AWS_ENDPOINT_URL_S3": endpoint, "AWS_ACCESS_KEY_ID": key_id, "AWS_SECRET_ACCESS_KEY": secret,
            "AWS_DEFAULT_REGION": "us-east-1"}


def s3_fs(endpoint: str):
    """An s3fs filesystem for the test's own reads and writes (explicit options, no cache)."""
    import s3fs

    return s3fs.S3FileSystem(key=S3_KEY_ID, secret=S3_SECRET, client_kwargs={"endpoint_url": endpoint},
                             skip_instance_cache=True, use_listings_cache=False)


@pytest.fixture()
def s3_bucket(moto_endpoint):
    """A fresh bucket (moto's state is process-global: isolate by name, not by server)."""
    fs = s3_fs(moto_endpoint)
    name = f"rouge-{uuid.uuid4().hex[:12]}"
    fs.mkdir(name)
    return name


@pytest.fixture(scope="session")
def gcs_endpoint():
    emulator = pytest.importorskip("gcp_storage_emulator.server")
    pytest.importorskip("gcsfs")
    logging.getLogger("gcp_storage_emulator").setLevel(logging.WARNING)
    # The emulator's own server is a single-threaded http.server: one client's keep-alive
    # connection blocks every other client (our worker processes).  Served threaded, its
    # in-memory storage is not thread-safe (a full-suite run hung in a read).  So: one request
    # at a time, and HTTP/1.0, so that every response closes its connection and no client
    # can hold the server.
    import threading
    from functools import partial
    from http.server import HTTPServer

    class Handler(emulator.RequestHandler):
        protocol_version = "HTTP/1.0"

    server = emulator.create_server("127.0.0.1", 0, in_memory=True)
    httpd = HTTPServer(("127.0.0.1", 0), partial(Handler, server._storage))
    thread = threading.Thread(target=httpd.serve_forever, name="gcs-emulator", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def gcs_env(endpoint: str) -> dict:
    # gcsfs >= 2026.10 would otherwise probe bucket types over gRPC (60 s timeout per bucket).
    return {"STORAGE_EMULATOR_HOST": endpoint, "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false"}


GCS_OPTIONS = {"token": "anon", "project": "test"}


def upload_tree(fs, local_root: Path, remote_root: str) -> list[str]:
    """Copy every file below ``local_root`` to ``remote_root`` (no trailing slash); returns the keys."""
    keys = []
    for p in sorted(local_root.rglob("*")):
        if p.is_file():
            key = f"{remote_root}/{p.relative_to(local_root).as_posix()}"
            fs.pipe(key, p.read_bytes())
            keys.append(key)
    return keys


def download_tree(fs, remote_root: str) -> dict[str, bytes]:
    """Every object below ``remote_root``: relative name -> bytes."""
    root = remote_root.split("://", 1)[-1].rstrip("/")
    fs.invalidate_cache()
    return {p[len(root) + 1:]: fs.cat_file(p) for p in sorted(fs.find(root))}


def cli(*args, env: dict | None = None, drop_env=(), cwd=None, timeout=240):
    """Run ``python -m pipeline`` with the given environment additions (and removals)."""
    e = {k: v for k, v in os.environ.items() if k not in drop_env}
    e.update(PYTHONUNBUFFERED="1")
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "pipeline", *args], capture_output=True, text=True,
                          cwd=cwd or REPO, env=e, timeout=timeout)


AWS_VARS = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION", "AWS_PROFILE")
