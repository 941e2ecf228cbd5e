"""Issue 27, item 7: the deployed nightly jobs reach a person, on every platform.

cron: the wrapper prints only when a person is needed (so MAILTO mails those nights) and logs the
rest; no CRON_TZ (Debian's cron has none).  Kubernetes: a podFailurePolicy fails a verdict night
at once (no rerun of a "moved" night) and retries only a failed scoring; deadlines above the
job's own timeout so its clean exit 124 comes first.  DaskJob and Slurm: how they are scheduled
every night (a launcher CronJob; scrontab or cron + sbatch), with the directories they need.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from pipeline.cli.nightly import EXIT_STATUSES

REPO = Path(__file__).parents[2]
JOB = yaml.safe_load((REPO / "jobs/nightly.yaml").read_text())
TIMEOUT_S = JOB["timeout_minutes"] * 60
VERDICT_STATUSES = {s for v, s in EXIT_STATUSES.items() if v not in ("no_change", "scoring_failed")}


# ----------------------------------------------------------------------------- cron
def _cron_entries(text: str) -> tuple[dict, list[str]]:
    env, lines = {}, []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = re.match(r"^([A-Z_]+)=(.*)$", line)
        if m:
            env[m.group(1)] = m.group(2)
        else:
            lines.append(line)
    return env, lines


def test_the_cron_file_mails_through_the_wrapper_and_has_no_cron_tz():
    env, lines = _cron_entries((REPO / "jobs/cron/rouge-nightly.cron").read_text())
    assert "CRON_TZ" not in env and "TZ" not in env            # Debian's cron: the host's local time
    assert env.get("MAILTO")
    assert len(lines) == 1
    fields = lines[0].split()
    assert fields[:5] == ["30", "2", "*", "*", "*"] and fields[5] == "rouge"
    command = " ".join(fields[6:])
    assert command.split()[0].endswith("/jobs/cron/rouge-nightly.sh")
    assert ">" not in command and "2>&1" not in command        # output is not thrown into a log here
    assert "Time zone" in (REPO / "jobs/cron/rouge-nightly.cron").read_text()


def _stub(tmp_path: Path, status: int, sleep: float = 0) -> Path:
    stub = tmp_path / "rouge-pipeline"
    stub.write_text("#!/bin/bash\n"
                    f"echo 'scored 120 rows'; echo 'AWS_SECRET=$AWS_SECRET_ACCESS_KEY' >/dev/null\n"
                    f"echo 'rouge-pipeline: compare: the line of status {status}' >&2\n"
                    f"sleep {sleep}\nexit {status}\n")
    stub.chmod(0o755)
    return stub


def _wrapper(tmp_path: Path, stub: Path, *args) -> subprocess.CompletedProcess:
    env = dict(os.environ, ROUGE_PIPELINE=str(stub), ROUGE_NIGHTLY_LOG=str(tmp_path / "nightly.log"),
               ROUGE_NIGHTLY_LOCK=str(tmp_path / "lock"), ROUGE_NIGHTLY_ENV=str(tmp_path / "env"))
    return subprocess.run(["bash", str(REPO / "jobs/cron/rouge-nightly.sh"), "jobs/nightly.yaml", *args],
                          capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.skipif(shutil.which("flock") is None, reason="flock (util-linux) is not installed")
@pytest.mark.parametrize("status", sorted(set(EXIT_STATUSES.values())))
def test_the_cron_wrapper_prints_only_when_a_person_is_needed(tmp_path, status):
    (tmp_path / "env").write_text("AWS_SECRET_ACCESS_KEY=from-the-env-file\n")
    r = _wrapper(tmp_path, _stub(tmp_path, status), "--scheduler", "tcp://h:8786")
    assert r.returncode == status
    log = (tmp_path / "nightly.log").read_text()
    assert "scored 120 rows" in log and f"the line of status {status}" in log and f"exit {status}" in log
    assert "rouge-pipeline nightly jobs/nightly.yaml --scheduler tcp://h:8786" in log
    if status == 0:
        assert r.stdout == "" and r.stderr == ""               # a quiet night: cron sends no mail
    else:
        assert f"(exit {status})" in r.stdout.splitlines()[0]
        assert f"the line of status {status}" in r.stdout and "full output: " in r.stdout
        assert "scored 120 rows" not in r.stdout               # the rest stays in the log


@pytest.mark.skipif(shutil.which("flock") is None, reason="flock (util-linux) is not installed")
def test_a_night_still_running_makes_the_next_one_skip_loudly(tmp_path):
    first = subprocess.Popen(["bash", "-c", f"exec 9>>{tmp_path / 'lock'}; flock -n 9; sleep 5"])
    try:
        import time

        time.sleep(0.5)
        r = _wrapper(tmp_path, _stub(tmp_path, 0))
    finally:
        first.kill()
        first.wait()
    assert r.returncode == 75 and "still holds" in r.stdout      # not 1 ("moved"): flock's own status


# ----------------------------------------------------------------------------- Kubernetes
def _docs(path: str) -> list[dict]:
    return list(yaml.safe_load_all((REPO / path).read_text()))


def test_the_cronjob_fails_a_verdict_at_once_and_retries_only_a_failed_scoring():
    cj = _docs("jobs/k8s/cronjob.yaml")[0]["spec"]["jobTemplate"]["spec"]
    pod = cj["template"]["spec"]
    assert pod["restartPolicy"] == "Never"                      # required by podFailurePolicy
    rules = cj["podFailurePolicy"]["rules"]
    fail = [r for r in rules if r["action"] == "FailJob"]
    assert len(fail) == 1 and fail[0]["onExitCodes"]["operator"] == "In"
    codes = set(fail[0]["onExitCodes"]["values"])
    assert VERDICT_STATUSES <= codes                            # moved, not comparable, ... : no rerun
    assert EXIT_STATUSES["scoring_failed"] not in codes and 0 not in codes
    assert fail[0]["onExitCodes"]["containerName"] in [c["name"] for c in pod["containers"]]
    # the deadline covers the whole Job, retry included: each pod's own timeout ends first
    attempts = cj["backoffLimit"] + 1
    assert cj["backoffLimit"] <= 1
    assert cj["activeDeadlineSeconds"] >= attempts * (TIMEOUT_S + 600)
    assert {"secretRef": {"name": "rouge-nightly-webhook"}} in pod["containers"][0]["envFrom"]


def test_the_daskjob_is_scheduled_by_a_launcher_and_its_deadlines_exceed_the_timeout():
    dj = _docs("jobs/k8s/daskjob.yaml")[0]
    runner = dj["spec"]["job"]["spec"]
    assert runner["activeDeadlineSeconds"] >= TIMEOUT_S + 600
    assert {"secretRef": {"name": "rouge-nightly-webhook"}} in runner["containers"][0]["envFrom"]
    docs = {d["kind"]: d for d in _docs("jobs/k8s/daskjob-cron.yaml")}
    assert {"ServiceAccount", "Role", "RoleBinding", "CronJob"} <= set(docs)
    rule = docs["Role"]["rules"][0]
    assert rule["apiGroups"] == ["kubernetes.dask.org"] and {"create", "delete"} <= set(rule["verbs"])
    job = docs["CronJob"]["spec"]["jobTemplate"]["spec"]
    assert job["activeDeadlineSeconds"] > runner["activeDeadlineSeconds"]
    pod = job["template"]["spec"]
    assert pod["serviceAccountName"] == docs["ServiceAccount"]["metadata"]["name"]
    script = pod["containers"][0]["args"][0]
    name = dj["metadata"]["name"]
    assert f"kubectl delete daskjob {name} --ignore-not-found" in script and "kubectl create -f /spec/" in script
    assert f"pod={name}-runner" in script and script.rstrip().endswith('exit "${code:-1}"')
    assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0


def test_the_daskjob_launcher_validates_strictly():
    from test_deploy_files import kubernetes_validate

    r = kubernetes_validate(REPO / "jobs/k8s/daskjob-cron.yaml")
    assert r.returncode == 0, r.stdout + r.stderr


# ----------------------------------------------------------------------------- Slurm
def _sbatch_option(text: str, name: str) -> str:
    m = re.search(rf"^#SBATCH --{name}=(\S+)$", text, re.M)
    assert m, name
    return m.group(1)


def _seconds(t: str) -> int:
    days, _, hms = t.rpartition("-")
    h, m, s = (int(x) for x in hms.split(":"))
    return int(days or 0) * 86400 + h * 3600 + m * 60 + s


def test_slurm_time_exceeds_the_timeout_and_its_directories_are_made():
    text = (REPO / "jobs/slurm/score.sbatch").read_text()
    assert _seconds(_sbatch_option(text, "time")) >= TIMEOUT_S + 600
    assert _sbatch_option(text, "mail-type") in ("FAIL", "END,FAIL", "ALL")
    out = _sbatch_option(text, "output")
    assert out.startswith("logs/") and "mkdir -p logs && sbatch jobs/slurm/score.sbatch" in text


def test_slurm_is_scheduled_with_scrontab_or_cron_and_sbatch():
    text = (REPO / "jobs/slurm/rouge-nightly.scrontab").read_text()
    options = re.findall(r"^#SCRON (--[a-z-]+)=(\S+)$", text, re.M)
    assert {"--chdir", "--time", "--output"} <= {k for k, _ in options}
    entries = [l for l in text.splitlines() if l.strip() and not l.startswith("#")]
    assert len(entries) == 1
    fields = entries[0].split(maxsplit=5)
    assert len(fields) == 6 and fields[5] == "mkdir -p logs && sbatch jobs/slurm/score.sbatch"
    assert "crontab" in text                                     # the cron + sbatch alternative is named


def test_every_spec_says_what_the_statuses_mean():
    for path in ("jobs/cron/rouge-nightly.sh", "jobs/k8s/cronjob.yaml", "jobs/slurm/score.sbatch",
                 "jobs/nightly.yaml"):
        text = (REPO / path).read_text()
        assert "10 scoring failed" in text or "10) what=" in text, path
        assert "124" in text, path


def test_the_deployment_doc_takes_each_platform_to_a_person():
    doc = (REPO / "docs/deployment.md").read_text()
    sections = doc.split("\n### ")[1:]
    titles = [s.splitlines()[0] for s in sections]
    for platform in ("cron", "Kubernetes CronJob", "Kubernetes DaskJob", "Slurm"):
        body = next(s for s, t in zip(sections, titles) if t.startswith(platform)).split("\n## ", 1)[0]
        assert re.search(r"^1\. ", body, re.M) and re.search(r"^3\. ", body, re.M), platform   # step by step
        assert "webhook" in body and "person" in body, platform
        assert "Try" in body, platform                                                   # a night by hand
    for path in set(re.findall(r"\bjobs/[\w./-]+\.(?:yaml|sh|sbatch|cron|scrontab)\b", doc)):
        assert (REPO / path).is_file(), path
    assert "CRON_TZ" in doc and "local time" in doc                       # the time zone, said plainly
    for status in sorted(set(EXIT_STATUSES.values()) - {0}):
        assert re.search(rf"(?<![\w.-]){status}(?![\w.-])", doc.split("**What the night comes to**")[1][:600]), status
