"""What the gate records in a finished run folder (issue 27): its verdict on the run
(``_gate.json``, written by ``compare``) and a person's acceptance of the run's change
(``_accepted.json``, written by ``rouge-pipeline accept``).  Small JSON documents, written
atomically next to the run's files; a run without them is read as unrecorded (``None``)."""
from __future__ import annotations

from pipeline.io.writers import read_json, write_json_atomic
from pipeline.runfolder.names import ACCEPTED, GATE, url


def read_verdict(run_url: str, storage_options: dict | None = None) -> dict | None:
    """The gate's recorded verdict on the run (``{"verdict", "base", ...}``), or None."""
    return read_json(url(run_url, GATE), storage_options)


def write_verdict(run_url: str, record: dict, storage_options: dict | None = None) -> str:
    return write_json_atomic(record, url(run_url, GATE), storage_options)


def read_accepted(run_url: str, storage_options: dict | None = None) -> dict | None:
    """Who accepted the run's change, when and why (``{"by", "at", "reason"}``), or None."""
    return read_json(url(run_url, ACCEPTED), storage_options)


def write_accepted(run_url: str, record: dict, storage_options: dict | None = None) -> str:
    return write_json_atomic(record, url(run_url, ACCEPTED), storage_options)
