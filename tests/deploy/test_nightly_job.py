"""Issue 27, items 7 and 9: `rouge-pipeline nightly` as a scheduled job that reaches a person.

Distinct exit statuses for every outcome (a failed scoring never reported with a comparison's
status), `--date` kept inside `output_root`, `config:` read next to the job file, `schedule`
optional and `@daily`-style, `compare: {band: 0}` / `{min_effect: 0}` honoured, and `notify:`
POSTing a Slack-compatible message to a webhook on 127.0.0.1 whose URL (a secret) is in no printed
line and no byte of the run folder; a down or slow webhook prints one warning and keeps the status.
"""
from __future__ import annotations

import argparse
import http.server
import json
import socket
import threading
import time
import uuid
from pathlib import Path

import pytest
import yaml

from pipeline.cli import nightly, notify
from pipeline.cli.main import main

REPO = Path(__file__).parents[2]
SAMPLE = REPO / "configs" / "sample" / "part-0.jsonl"


def _job(tmp_path: Path, **extra) -> Path:
    (tmp_path / "score.yaml").write_text("input: {layout: records, paths: x.jsonl}\n")
    path = tmp_path / "nightly.yaml"
    path.write_text(yaml.safe_dump({"name": "gate", "config": "score.yaml", "schedule": "30 2 * * *",
                                    "output_root": str(tmp_path / "out"), **extra}))
    return path


# ----------------------------------------------------------------------------- exit statuses
def _stub(score_status: int, compare_status: int = 0, result: dict | None = None, calls: list | None = None):
    """A stand-in for the CLI's main: the scoring and the comparison end as told, printing as they do."""
    import sys

    def fake(argv):
        if calls is not None:
            calls.append(argv[0])
        if argv[0] == "score":
            if score_status:
                print(f"rouge-pipeline: the scoring's own line (status {score_status})", file=sys.stderr)
            return score_status
        if result is not None:
            print(json.dumps(result))
        return compare_status

    return fake


def _args(job: Path, date="2026-08-15", dry_run=False):
    return argparse.Namespace(job=str(job), date=date, scheduler=None, sync=True, dry_run=dry_run)


MOVED = {"verdict": "moved", "rows": [{"system": "lead", "type": "rouge1", "stat": "fmeasure", "alarm": True,
                                       "base": 0.45, "new": 0.30, "delta": -0.15, "band": "bootstrap",
                                       "status": "moved down"}], "not_comparable": [], "reasons": ["lead moved"]}


@pytest.mark.parametrize("compare_status, result, expected", [
    (0, None, 0),                                                   # first night: nothing to compare
    (0, {"verdict": "no change", "rows": []}, 0),
    (1, MOVED, 1),
    (3, {"verdict": "not comparable", "rows": [], "not_comparable": ["coverage 50%"]}, 3),
    (4, {"verdict": "inconclusive", "rows": []}, 4),
    (4, {"verdict": "no change", "inconclusive": True, "rows": []}, 4),   # compare's status decides
    (4, None, 2),             # a 4 without a result is a run-folder error of compare, not "inconclusive"
    (1, None, 2),             # a 1 without a result is compare failing unexpectedly, not "moved"
    (2, None, 2),
    (130, None, 130),
])
def test_the_comparison_decides_the_status_of_a_scored_night(tmp_path, capsys, compare_status, result, expected):
    assert nightly.run(_args(_job(tmp_path)), _stub(0, compare_status, result)) == expected


@pytest.mark.parametrize("score_status", [1, 2, 3, 4, 5, 6])
def test_a_failed_scoring_is_never_reported_with_a_comparisons_status(tmp_path, capsys, score_status):
    calls = []
    status = nightly.run(_args(_job(tmp_path)), _stub(score_status, calls=calls))
    assert status == nightly.EXIT_SCORING_FAILED == 10
    assert calls == ["score"]                                     # nothing compared
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("rouge-pipeline: nightly: the scoring of ") and f"its status {score_status}" in err[-1]
    assert f"the scoring's own line (status {score_status})" in err[-1], err


def test_every_outcome_has_its_own_status_and_the_docs_list_them():
    st = nightly.EXIT_STATUSES
    assert (st["no_change"], st["moved"], st["job_error"], st["not_comparable"], st["inconclusive"],
            st["scoring_failed"], st["timed_out"], st["interrupted"]) == (0, 1, 2, 3, 4, 10, 124, 130)
    assert st["compare_failed"] == 2
    doc = (REPO / "docs/errors.md").read_text()
    table = doc.split("| status of `nightly` |", 1)[1].split("\n\n", 1)[0]
    for status in set(st.values()):
        assert f"\n| {status} |" in table, status


def test_a_real_strict_scoring_failure_exits_10_not_3(tmp_path, capsys):
    """Exit 3 is "not comparable"; a strict scoring that quarantined a record is a scoring failure."""
    data = tmp_path / "data.jsonl"
    rows = [json.loads(line) for line in SAMPLE.open()][:6]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"id": "bad", "candidate": 3}\n')
    (tmp_path / "score.yaml").write_text(yaml.safe_dump({
        "input": {"layout": "records", "paths": str(data)}, "output": {"url": str(tmp_path / "unused")},
        "stats": {"n_boot": 20}, "strict": True, "execution": {"mode": "sync"}}))
    job = tmp_path / "nightly.yaml"
    job.write_text(yaml.safe_dump({"name": "gate", "config": str(tmp_path / "score.yaml"), "schedule": "30 2 * * *",
                                   "output_root": str(tmp_path / "n")}))
    assert main(["nightly", str(job), "--date", "2026-08-14", "--sync"]) == 10
    err = capsys.readouterr().err
    assert "its status 3" in err and "quarantined" in err


# ----------------------------------------------------------------------------- the job file
@pytest.mark.parametrize("date", ["../../x", "a/b", "..", "x\\..\\y", "/abs", "2026-08-15/../../x", ".hidden", ""])
def test_a_date_that_leaves_output_root_is_refused_in_one_line(tmp_path, capsys, date):
    job = _job(tmp_path)
    calls = []
    assert nightly.run(_args(job, date), _stub(0, calls=calls)) == 2
    assert main(["nightly", str(job), "--date", date, "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(l.startswith("rouge-pipeline: nightly: --date ") for l in err), err
    assert calls == [] and sorted(p.name for p in tmp_path.iterdir()) == ["nightly.yaml", "score.yaml"]


def test_the_config_is_read_next_to_the_job_file_from_any_directory(tmp_path, capsys, monkeypatch):
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    job = _job(jobs)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["nightly", str(job), "--date", "2026-08-15", "--dry-run"]) == 0
    assert f"--config {jobs / 'score.yaml'} " in capsys.readouterr().out
    calls = []
    assert nightly.run(_args(job), _stub(0, calls=calls)) == 0 and calls == ["score", "compare"]
    # a missing config: the dry run says so as the real run would
    (jobs / "score.yaml").unlink()
    for argv in (["--dry-run"], []):
        assert main(["nightly", str(job), "--date", "2026-08-15", *argv]) == 2
        assert "score.yaml: no such file (a relative config is read next to the job file)" in capsys.readouterr().err


def test_schedule_is_optional_documentation_and_accepts_daily_and_cron():
    import jsonschema

    sch = nightly.schema()
    base = {"name": "gate", "config": "score.yaml", "output_root": "/runs/nightly"}
    good = [base, {**base, "schedule": "@daily"}, {**base, "schedule": "@hourly"}, {**base, "schedule": "30 2 * * *"},
            {**base, "schedule": "0 3 * * 1-5"}]
    bad = [{**base, "schedule": "every night"}, {**base, "schedule": "@reboot"}, {**base, "schedule": "30 2 * *"}]
    for case in good + bad:
        ours = nightly.schema_errors(case, sch)
        theirs = list(jsonschema.Draft202012Validator(sch).iter_errors(case))
        assert bool(ours) == bool(theirs) == (case in bad), (case, ours)


def test_zero_in_compare_options_is_a_value_not_unset(tmp_path, capsys):
    import jsonschema

    job = {"name": "gate", "config": "score.yaml", "output_root": "/runs/n",
           "compare": {"band": 0, "min_effect": 0}}
    assert nightly.schema_errors(job, nightly.schema()) == []
    jsonschema.validate(job, nightly.schema())
    argv = nightly.compare_argv(job, "/runs/n/d")
    assert argv[argv.index("--band") + 1] == "0" and argv[argv.index("--min-effect") + 1] == "0"
    path = _job(tmp_path, compare={"band": 0, "min_effect": 0.0})
    assert main(["nightly", str(path), "--date", "2026-08-15", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert " --band 0 " in out and " --min-effect 0.0 " in out


def test_notify_refuses_a_url_in_the_job_file_without_repeating_it(tmp_path, capsys):
    secret = f"https://hooks.example.invalid/services/T0/B0/{uuid.uuid4().hex}"
    for spec in ({"webhook_env": secret}, {"webhook_env": "X", "url": secret}, {"webhook": secret}):
        path = _job(tmp_path, notify=spec)
        assert main(["nightly", str(path), "--date", "2026-08-15", "--dry-run"]) == 2
        err = capsys.readouterr().err
        assert "a URL in the job file is refused" in err and secret not in err and "hooks.example" not in err


def test_notify_needs_its_variable_before_anything_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("ROUGE_TEST_WEBHOOK", raising=False)
    calls = []
    path = _job(tmp_path, notify={"webhook_env": "ROUGE_TEST_WEBHOOK"})
    assert nightly.run(_args(path), _stub(0, calls=calls)) == 2 and calls == []
    assert "ROUGE_TEST_WEBHOOK is not set" in capsys.readouterr().err


# ----------------------------------------------------------------------------- the webhook, end to end
class _Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.seen.append({"path": self.path, "type": self.headers["Content-Type"], "body": json.loads(body)})
        time.sleep(self.server.delay)
        try:
            self.send_response(self.server.code)
            self.end_headers()
            self.wfile.write(b"ok")
        except OSError:     # the slow case: the client gave up before the answer
            pass

    def log_message(self, *args):
        pass


@pytest.fixture
def webhook():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    server.seen, server.delay, server.code = [], 0.0, 200
    server.daemon_threads = True
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def two_nights(tmp_path_factory):
    """A nightly job on the bundled sample: night 1 scored, night 2's outputs truncated and scored."""
    root = tmp_path_factory.mktemp("notify")
    rows = [json.loads(line) for line in SAMPLE.open()][:80]
    data = root / "data.jsonl"

    def write(truncate: bool):
        with data.open("w") as f:
            for r in rows:
                cand = " ".join(r["candidate"].split()[:5]) if truncate else r["candidate"]
                f.write(json.dumps({**r, "candidate": cand}) + "\n")

    (root / "score.yaml").write_text(yaml.safe_dump({
        "input": {"layout": "records", "paths": str(data)}, "output": {"url": str(root / "unused")},
        "stats": {"n_boot": 100}, "execution": {"mode": "sync"}}))
    job = {"name": "gate", "config": "score.yaml", "schedule": "@daily", "output_root": str(root / "nightly"),
           "compare": {"min_effect": 0.002},
           "notify": {"webhook_env": "ROUGE_TEST_WEBHOOK", "timeout_seconds": 1}}
    (root / "nightly.yaml").write_text(yaml.safe_dump(job))
    write(truncate=False)
    with pytest.MonkeyPatch.context() as mp:     # a first night: nothing to compare, nothing posted
        mp.setenv("ROUGE_TEST_WEBHOOK", "http://127.0.0.1:9/unused")
        assert main(["nightly", str(root / "nightly.yaml"), "--date", "2026-08-14", "--sync"]) == 0
    write(truncate=True)
    return root


def _secret_url(port: int) -> tuple[str, str]:
    token = f"s3cr3t-{uuid.uuid4().hex}"
    return f"http://127.0.0.1:{port}/services/T000/B000/{token}", token


def _nowhere_holds(token: str, root: Path, *texts: str) -> None:
    assert not any(token in t for t in texts)
    for p in root.rglob("*"):
        if p.is_file():
            assert token.encode() not in p.read_bytes(), p


def test_a_moved_night_posts_the_systems_rows_and_report_and_no_secret(two_nights, webhook, capsys, monkeypatch):
    url, token = _secret_url(webhook.server_address[1])
    monkeypatch.setenv("ROUGE_TEST_WEBHOOK", url)
    assert main(["nightly", str(two_nights / "nightly.yaml"), "--date", "2026-08-15", "--sync"]) == 1
    out, err = capsys.readouterr()
    assert len(webhook.seen) == 1
    hit = webhook.seen[0]
    assert hit["path"] == f"/services/T000/B000/{token}" and hit["type"] == "application/json"
    body = hit["body"]
    run = str(two_nights / "nightly" / "2026-08-15")
    assert body["verdict"] == "moved" and body["exit_status"] == 1 and body["job"] == "gate"
    assert body["date"] == "2026-08-15" and body["run"] == run and body["report"] == f"{run}/compare.html"
    assert body["systems"] and set(body["systems"]) <= {"lead", "abstractive"}
    assert body["rows"] and all(r["system"] in body["systems"] and r["delta"] < 0 for r in body["rows"])
    text = body["text"]
    assert text.startswith("rouge-pipeline nightly gate 2026-08-15: MOVED (exit 1)")
    assert f"report: {run}/compare.html" in text and body["rows"][0]["type"] in text
    assert "warning" not in err
    _nowhere_holds(token, two_nights, out, err)


def test_a_quiet_night_is_not_posted_by_default(tmp_path, webhook, capsys, monkeypatch):
    url, _ = _secret_url(webhook.server_address[1])
    monkeypatch.setenv("ROUGE_TEST_WEBHOOK", url)
    path = _job(tmp_path, notify={"webhook_env": "ROUGE_TEST_WEBHOOK"})
    assert nightly.run(_args(path), _stub(0, 0, {"verdict": "no change", "rows": []})) == 0
    assert webhook.seen == []
    assert nightly.run(_args(path), _stub(5)) == 10                       # a failed scoring is posted
    body = webhook.seen[0]["body"]
    assert body["verdict"] == "scoring_failed" and body["scoring_status"] == 5 and body["report"] is None
    assert "its status 5" in body["line"] and "the scoring's own line (status 5)" in body["text"]


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize("how", ["down", "slow", "refuses"])
def test_a_failing_webhook_keeps_the_exit_status_with_one_warning(two_nights, webhook, capsys, monkeypatch, how):
    port = _free_port() if how == "down" else webhook.server_address[1]
    webhook.delay = 3.0 if how == "slow" else 0.0                     # timeout_seconds: 1
    webhook.code = 500 if how == "refuses" else 200
    url, token = _secret_url(port)
    monkeypatch.setenv("ROUGE_TEST_WEBHOOK", url)
    t0 = time.monotonic()
    assert main(["nightly", str(two_nights / "nightly.yaml"), "--date", "2026-08-15", "--sync"]) == 1
    out, err = capsys.readouterr()
    warnings = [l for l in err.splitlines() if "warning" in l]
    assert len(warnings) == 1, err
    assert warnings[0].startswith("rouge-pipeline: nightly: warning: notify: the POST to $ROUGE_TEST_WEBHOOK failed")
    assert warnings[0].endswith("the exit status (1) is unchanged")
    assert "::error::rouge-pipeline nightly: the outputs of" in err           # the alarm itself still printed
    _nowhere_holds(token, two_nights, out, err)
    if how == "slow":
        assert time.monotonic() - t0 < 60


def test_the_message_is_slack_compatible():
    night = notify.Night(job="gate", date="2026-08-15", run="/r/2026-08-15", verdict="moved", status=1,
                         report="/r/2026-08-15/compare.html", result=MOVED)
    body = notify.message(night)
    assert isinstance(body["text"], str) and body["text"].count("\n") >= 2
    assert "lead rouge1 F: 0.4500 -> 0.3000 (-0.1500, moved down)" in body["text"]
    json.dumps(body)
