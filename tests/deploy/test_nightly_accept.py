"""Issue 27, through the scheduled job: a persistent regression alarms every night until a person
accepts it with ``rouge-pipeline nightly JOB --accept DATE --reason ...`` (the alarm line and the
notification name that exact command), then the next nights are quiet: end to end through
``nightly`` on small generated outputs (the bundled sample, truncated from the third night on).
"""
from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path

import pytest
import yaml

from pipeline.cli import nightly
from pipeline.cli.main import main

REPO = Path(__file__).parents[2]
SAMPLE = REPO / "configs" / "sample" / "part-0.jsonl"


class _Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (http.server's name)
        self.server.seen.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def webhook():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    server.seen = []
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def _nightly_job(root: Path, compare: dict, **extra) -> tuple[Path, callable]:
    """A job on 80 rows of the bundled sample; ``write(truncate)`` sets tonight's outputs."""
    rows = [json.loads(line) for line in SAMPLE.open()][:80]
    data = root / "data.jsonl"

    def write(truncate: bool) -> None:
        with data.open("w") as f:
            for r in rows:
                f.write(json.dumps({**r, "candidate": " ".join(r["candidate"].split()[:5]) if truncate
                                    else r["candidate"]}) + "\n")

    (root / "score.yaml").write_text(yaml.safe_dump({
        "input": {"layout": "records", "paths": str(data)}, "output": {"url": str(root / "unused")},
        "stats": {"n_boot": 50}, "execution": {"mode": "sync"}}))
    job = root / "nightly.yaml"
    job.write_text(yaml.safe_dump({"name": "gate", "config": "score.yaml", "output_root": str(root / "nightly"),
                                   "compare": compare, **extra}))
    return job, write


def _night(job: Path, date: str, capsys) -> tuple[int, str]:
    status = main(["nightly", str(job), "--date", date, "--sync"])
    out, err = capsys.readouterr()
    return status, out + err


@pytest.mark.parametrize("compare", [{"band": 0.01}, {"min_effect": 0.002}], ids=["fixed-band", "noise-band"])
def test_a_persistent_regression_alarms_every_night_until_accepted_then_the_nights_are_quiet(
        tmp_path, capsys, webhook, monkeypatch, compare):
    monkeypatch.setenv("ROUGE_TEST_WEBHOOK", f"http://127.0.0.1:{webhook.server_address[1]}/hook")
    job, write = _nightly_job(tmp_path, compare,
                              notify={"webhook_env": "ROUGE_TEST_WEBHOOK", "when": ["moved", "no_change"]})
    root = tmp_path / "nightly"
    statuses, logs = {}, {}
    for date, truncate in (("2026-08-01", False), ("2026-08-02", False), ("2026-08-03", True),
                           ("2026-08-04", True)):
        write(truncate)
        statuses[date], logs[date] = _night(job, date, capsys)
    assert statuses == {"2026-08-01": 0, "2026-08-02": 0, "2026-08-03": 1, "2026-08-04": 1}, logs
    # the regression persists: night 4 is compared with night 2 (the last in control), not night 3
    assert json.loads((root / "2026-08-04" / "_gate.json").read_text())["base"].endswith("2026-08-02")
    for date in ("2026-08-03", "2026-08-04"):
        command = f"rouge-pipeline nightly {job} --accept {date} --reason \"...\""
        assert command == nightly.accept_command(str(job), date)
        alarm = [line for line in logs[date].splitlines() if line.startswith("::error::")]
        assert len(alarm) == 1 and alarm[0].endswith(f"until accepted on purpose: {command}"), logs[date]
        posted = [b for b in webhook.seen if b["date"] == date]
        assert posted[0]["accept"] == command and command in posted[0]["text"]
    assert all("accept" not in b for b in webhook.seen if b["verdict"] == "no_change")

    # accepting tonight's run from the scheduled job's own command line: nothing is scored
    assert main(["nightly", str(job), "--accept", "2026-08-04", "--reason", "shorter outputs: new prompt",
                 "--by", "ana"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"accepted {root / '2026-08-04'} by ana")
    rec = json.loads((root / "2026-08-04" / "_accepted.json").read_text())
    assert rec["by"] == "ana" and rec["reason"] == "shorter outputs: new prompt" and rec["verdict"] == "moved"
    assert sorted(p.name for p in root.iterdir()) == [f"2026-08-0{i}" for i in range(1, 5)]

    for date in ("2026-08-05", "2026-08-06"):       # the same (accepted) outputs: quiet again
        status, log = _night(job, date, capsys)
        assert status == 0 and "::error::" not in log, log
    assert json.loads((root / "2026-08-05" / "_gate.json").read_text())["base"].endswith("2026-08-04")
    assert json.loads((root / "2026-08-06" / "_gate.json").read_text())["verdict"] == "no change"


@pytest.mark.parametrize("argv, message", [
    (["--accept", "2026-08-04"], "--accept needs --reason"),
    (["--accept", "2026-08-04", "--reason", " "], "--accept needs --reason"),
    (["--reason", "why"], "--reason goes with --accept"),
    (["--accept", "2026-08-04", "--reason", "why", "--date", "2026-08-05"], "--accept runs nothing"),
    (["--accept", "..", "--reason", "why"], "the run folder's date is one folder name"),
    (["--accept", "2026-08-04", "--reason", "why"], "not a finished run"),     # no such night
])
def test_accept_from_the_job_refuses_in_one_line(tmp_path, capsys, argv, message):
    job, _ = _nightly_job(tmp_path, {"band": 0.01})
    assert main(["nightly", str(job), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("rouge-pipeline: "), err
    if message != "not a finished run":
        assert message in err, err
    assert not (tmp_path / "nightly").exists() or not any((tmp_path / "nightly").iterdir())
