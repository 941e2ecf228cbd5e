"""Issue 27: "``<redacted>`` values passed back to fsspec as options".  A run folder records its
storage options and input URLs with secrets redacted (pipeline.redaction); whatever reads a run back
and opens its inputs again -- the gate reading the movers' texts (``pipeline.gate.runs.run_texts``,
reached from ``compare`` and from ``nightly``) -- drops every placeholder, never passes it on: not as
an option value, not inside an ``endpoint_url``, not as a URL's user or password (fsspec turns a URL's
userinfo into options), not as a query value.  The reader's own options supply the credentials.

A fake filesystem protocol (``recordfs://``, a memory filesystem) records the options of every
instance made, so what reached fsspec is seen, whatever code path made it.
"""
from __future__ import annotations

import json

import fsspec
import pytest
import yaml
from fsspec.implementations.memory import MemoryFileSystem
from fsspec.utils import infer_storage_options

from pipeline.cli.main import main
from pipeline.gate.runs import read_texts
from pipeline.redaction import REDACTED, redact_options, redact_record, without_redacted

SECRET = "pw-9f3a7c-secret"


class RecordingFS(MemoryFileSystem):
    """memory://, under its own protocol, recording each instance's options (URL userinfo included,
    as sftp/ftp/smb take it)."""

    protocol = ("recordfs",)
    cachable = False
    seen: list[dict] = []

    def __init__(self, *args, **options):
        RecordingFS.seen.append(options)
        super().__init__(*args, **options)

    @classmethod
    def _strip_protocol(cls, path):
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        path = str(path).removeprefix("recordfs://").split("?", 1)[0]
        head, sep, rest = path.partition("/")
        if "@" in head:
            path = head.rsplit("@", 1)[1] + sep + rest
        return MemoryFileSystem._strip_protocol("memory://" + path)

    @staticmethod
    def _get_kwargs_from_urls(path):
        opts = infer_storage_options(path)
        return {k: opts[k] for k in ("username", "password") if opts.get(k)}


@pytest.fixture
def recordfs(monkeypatch):
    from pipeline.io import paths

    monkeypatch.setattr(paths, "ALLOWED_SCHEMES", (*paths.ALLOWED_SCHEMES, "recordfs"))
    fsspec.register_implementation("recordfs", RecordingFS, clobber=True)
    RecordingFS.seen.clear()
    yield RecordingFS
    RecordingFS.seen.clear()
    for key in [k for k in MemoryFileSystem.store if k.startswith("/bucket")]:
        del MemoryFileSystem.store[key]
    MemoryFileSystem.pseudo_dirs[:] = [d for d in MemoryFileSystem.pseudo_dirs if not d.startswith("/bucket")]


def _placeholders(options: list[dict]) -> list[str]:
    return [json.dumps(o, default=str) for o in options if REDACTED in json.dumps(o, default=str)]


OPTIONS = {"password": SECRET, "anon": False, "token": {"refresh_token": SECRET},
           "auth": ["u", SECRET], "headers": {"Authorization": f"Bearer {SECRET}"},
           "client_kwargs": {"endpoint_url": f"http://ak:{SECRET}@127.0.0.1:9/?X-Amz-Signature={SECRET}&v=2",
                             "region_name": "eu-west-1"}}


def test_what_a_reader_takes_from_a_record_holds_no_placeholder():
    kept = without_redacted(redact_options(OPTIONS))
    assert REDACTED not in json.dumps(kept)
    assert kept == {"anon": False, "client_kwargs": {"endpoint_url": "http://127.0.0.1:9/",
                                                     "region_name": "eu-west-1"}}
    assert without_redacted(REDACTED) == {} and without_redacted(None) == {}
    from pipeline.redaction import redact_url, without_redacted_url

    for url, reopened in [("s3://AKIA:sk@bucket/x.jsonl", "s3://bucket/x.jsonl"),
                          ("https://tok@host/a?sig=s&sv=1#f", "https://host/a#f"),
                          ("abfs://container@acct.dfs.core.windows.net/x", "abfs://container@acct.dfs.core.windows.net/x"),
                          ("/local/path?.jsonl", "/local/path?.jsonl")]:
        assert without_redacted_url(redact_url(url)) == reopened, url


def _recorded_info(tmp_path, recordfs) -> dict:
    fs = recordfs()
    fs.pipe_file("/bucket/data.jsonl", b'{"id": "a", "system": "s", "candidate": "the cat sat", '
                                      b'"references": ["the cat sat down"]}\n')
    cfg = {"input": {"layout": "records", "paths": f"recordfs://reader:{SECRET}@bucket/data.jsonl?sig={SECRET}",
                     "storage_options": {"username": "reader", "password": SECRET}},
           "storage_options": OPTIONS, "output": {"url": str(tmp_path / "run")}}
    return {"config": redact_record(cfg)}


def test_reading_a_runs_texts_again_passes_no_placeholder_and_the_readers_own_options(tmp_path, recordfs):
    info = _recorded_info(tmp_path, recordfs)
    assert REDACTED in json.dumps(info)                 # the record really holds placeholders
    recordfs.seen.clear()
    got = read_texts(info, {("s", "a")})
    assert got[("s", "a")]["candidate"] == "the cat sat"
    assert recordfs.seen and _placeholders(recordfs.seen) == []
    assert not any(SECRET in json.dumps(o, default=str) for o in recordfs.seen)
    recordfs.seen.clear()
    read_texts(info, {("s", "a")}, storage_options={"password": "mine"})     # the caller's credentials
    assert recordfs.seen and all(o.get("password") == "mine" for o in recordfs.seen)
    assert _placeholders(recordfs.seen) == []


def test_the_nightly_gate_reads_the_movers_texts_without_passing_a_placeholder(tmp_path, recordfs, capsys):
    """End to end: two nights scored from recordfs:// inputs given with a user, a password, a
    signed URL and secret options; the second night moves, and the gate reads the movers' texts back."""
    rows = [{"id": f"d{i}", "system": "lead", "candidate": f"the cat number {i} sat on the mat today",
             "references": [f"the cat number {i} sat on the mat"]} for i in range(12)]
    fs = recordfs()

    def write(truncate: bool) -> None:
        fs.pipe_file("/bucket/data.jsonl", "".join(json.dumps(
            {**r, "candidate": " ".join(r["candidate"].split()[:3]) if truncate else r["candidate"]}) + "\n"
            for r in rows).encode())

    (tmp_path / "score.yaml").write_text(yaml.safe_dump({
        "input": {"layout": "records", "paths": f"recordfs://reader:{SECRET}@bucket/data.jsonl?sig={SECRET}",
                  "storage_options": {"password": SECRET}},
        "storage_options": OPTIONS, "output": {"url": str(tmp_path / "unused")},
        "stats": {"n_boot": 20}, "execution": {"mode": "sync"}}))
    job = tmp_path / "nightly.yaml"
    job.write_text(yaml.safe_dump({"name": "gate", "config": "score.yaml", "output_root": str(tmp_path / "n"),
                                   "compare": {"band": 0.01}}))
    write(False)
    assert main(["nightly", str(job), "--date", "2026-08-01", "--sync"]) == 0
    run_json = (tmp_path / "n" / "2026-08-01" / "_run.json").read_text()
    assert SECRET not in run_json and REDACTED in run_json
    write(True)
    recordfs.seen.clear()
    assert main(["nightly", str(job), "--date", "2026-08-02", "--sync"]) == 1
    out = capsys.readouterr().out
    # the scoring itself opens the input with the config's real options; the gate never with a placeholder
    assert recordfs.seen and _placeholders(recordfs.seen) == []
    assert "the cat number" in out             # the movers' texts were read back and shown
    for f in (tmp_path / "n").rglob("*"):     # and no run folder holds the secret (URL, options, plan)
        assert not f.is_file() or SECRET.encode() not in f.read_bytes(), f
