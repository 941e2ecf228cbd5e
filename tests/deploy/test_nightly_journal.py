"""Issue 28: nightly's steps go through stdlib logging (UTC timestamps and levels, for the cron log),
its one verdict line stays last, and the job file is checked by jsonschema itself."""
from __future__ import annotations

import re

from pipeline.cli import nightly

from test_nightly_job import MOVED, _args, _job, _stub  # noqa: I001 - the same stand-ins

STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ (INFO|WARNING|ERROR) nightly: ")


def test_the_night_is_journaled_with_times_and_levels(tmp_path, capsys):
    assert nightly.run(_args(_job(tmp_path)), _stub(0, 1, MOVED)) == 1
    lines = capsys.readouterr().err.splitlines()
    journal = [m.group(1) for m in map(STAMP.match, lines) if m]
    assert journal[:3] == ["INFO", "INFO", "INFO"]                 # scoring, its status, comparing
    assert journal[-1] == "ERROR" and "moved, exit 1" in [l for l in lines if STAMP.match(l)][-1]
    assert lines[-1].startswith("::error::rouge-pipeline nightly: the outputs of ")   # still the last line


def test_a_quiet_night_logs_at_info_only(tmp_path, capsys):
    assert nightly.run(_args(_job(tmp_path)), _stub(0, 0, {"verdict": "no change", "rows": []})) == 0
    lines = [l for l in capsys.readouterr().err.splitlines() if STAMP.match(l)]
    assert lines and all(" INFO nightly: " in l for l in lines) and "no_change, exit 0" in lines[-1]


def test_the_job_schema_is_checked_by_jsonschema():
    """Every keyword of JSON Schema counts, not only those a hand-written checker knew."""
    assert nightly.schema_errors("abc", {"type": "string", "maxLength": 2})
    assert nightly.schema_errors({"a": 1}, {"type": "object", "propertyNames": {"pattern": "^b"}})
    assert nightly.schema_errors([1, 2], {"type": "array", "contains": {"const": 3}})
