"""Issue #5, security: safe YAML only, no pickle in our code or outputs, no path traversal through
system names or ids, local schedulers/workers/dashboards on 127.0.0.1 only.
(Secret redaction is tested in tests/integration/test_secrets.py.)

Note on pickle: Dask itself pickles task arguments and results to move them between the client,
scheduler and workers (that is how ``distributed`` works; run a cluster only on a trusted network).
What rouge-pipeline *stores* (markers, plan, summary, statistics, scores, quarantine) is JSON and
Parquet only, and nothing in the package imports pickle."""
from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path

import psutil
import pyarrow.parquet as pq
import pytest

from support.pipeline_corpus import config
from pipeline import runfolder
from pipeline import job
from pipeline.config import ConfigError, RunConfig, load_config
from pipeline.execution.driver import run
from pipeline.io.writers import escape_system

PKG = Path(__file__).parents[2] / "pipeline"


# --------------------------------------------------------------------------- YAML
@pytest.mark.parametrize("payload", [
    "!!python/object/apply:os.system ['touch {marker}']",
    "!!python/object/new:os.system ['touch {marker}']",
    "!!python/name:os.system",
    "!!python/object:pipeline.config.RunConfig {{}}",
])
def test_yaml_python_tags_are_refused(tmp_path, payload):
    marker = tmp_path / "pwned"
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"input:\n  paths: {payload.format(marker=marker)}\noutput:\n  url: {tmp_path}/run\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(cfg)
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(None, [f"input.paths={payload.format(marker=marker)}", f"output.url={tmp_path}/run"])
    assert not marker.exists()


# --------------------------------------------------------------------------- pickle
_PICKLERS = {"pickle", "cPickle", "_pickle", "cloudpickle", "dill", "marshal", "shelve", "joblib"}


def test_no_pickle_in_the_package():
    offenders = []
    for path in sorted(PKG.rglob("*.py")):
        src = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(src, str(path))):
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [(node.module or "").split(".")[0]]
            else:
                names = []
            offenders += [f"{path}: import {n}" for n in names if n in _PICKLERS]
        for pat in (r"\.to_pickle\(", r"read_pickle\(", r"allow_pickle\s*=\s*True"):
            offenders += [f"{path}: {pat}" for _ in re.finditer(pat, src)]
    assert not offenders, offenders


# --------------------------------------------------------------------------- path traversal
SYSTEMS = ["../../etc", "..", ".", "/etc/passwd", "a/../../b", "..\\..\\win", "%2e%2e%2f", "~root", "-rf",
           "nul\x00byte", "C:\\Windows", "😀/..", "x" * 300, ""]


def test_system_names_and_ids_never_leave_the_run_folder(tmp_path):
    inp = tmp_path / "in"
    inp.mkdir()
    recs = [{"id": f"../../{k}/../id", "system": s, "candidate": "the cat sat", "references": ["the cat sat down"]}
            for k, s in enumerate(SYSTEMS)]
    recs.append({"id": "/etc/shadow", "system": "../../etc", "candidate": "a b", "references": ["a"]})
    (inp / "x.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    run_dir = tmp_path / "deep" / "er" / "run"
    res = run(RunConfig.from_dict(config({"paths": str(inp / "x.jsonl")}, run_dir)), None, progress=False,
              log=lambda _: None)
    assert res.summary["rows"] == len(recs) and res.summary["quarantined"] == 0
    # every file is inside the input or the run folder ...
    for p in tmp_path.rglob("*"):
        if p.is_file():
            rel = p.relative_to(tmp_path)
            assert rel.parts[0] == "in" or p.is_relative_to(run_dir), rel
    # ... one folder per system directly under scores/, named by the escaped system
    folders = sorted(p.name for p in (run_dir / "scores").iterdir())
    assert folders == sorted(f"system-{escape_system(s)}" for s in SYSTEMS)
    for s in SYSTEMS:
        t = runfolder.read_scores(str(run_dir), s)
        want = sorted(r["id"] for r in recs if r["system"] == s)
        assert sorted(t.column("id").to_pylist()) == want and set(t.column("system").to_pylist()) == {s}
    # only JSON and Parquet (and the empty _SUCCESS) were written: no pickle anywhere
    for p in run_dir.rglob("*"):
        if p.is_dir():
            continue
        if p.name == "_SUCCESS":
            assert p.read_bytes() == b""
        elif p.suffix == ".json":
            json.loads(p.read_text(encoding="utf-8"))
        else:
            assert p.suffix == ".parquet", p
            pq.read_table(p)


# --------------------------------------------------------------------------- loopback only
def _listening(pids: set[int]):
    return [(c.pid, c.laddr.ip, c.laddr.port) for c in psutil.net_connections(kind="inet")
            if c.pid in pids and c.status == psutil.CONN_LISTEN]


def test_local_cluster_listens_on_loopback_only():
    """The local mode as the CLI opens it (with its dashboard): every listening socket of the
    scheduler (in this process) and of the worker processes is on 127.0.0.1."""
    pytest.importorskip("distributed")
    from pipeline.execution.cluster import open_client

    me = psutil.Process()
    before = set(_listening({me.pid}))
    with open_client("local", n_workers=1) as client:
        workers = set(client.run(os.getpid).values())
        family = {p.pid for p in me.children(recursive=True)}
        assert workers <= family
        new = [c for c in _listening({me.pid} | family) if c not in before]
        assert any(pid == me.pid for pid, _, _ in new), "the scheduler listens in this process"
        assert any(pid in workers for pid, _, _ in new), "the worker listens"
        assert all(ip == "127.0.0.1" for _, ip, _ in new), new
        link = client.dashboard_link
        if link:
            assert link.startswith("http://127.0.0.1:")
        assert all(a.startswith("tcp://127.0.0.1:") for a in client.scheduler_info()["workers"])
        assert client.scheduler.address.startswith("tcp://127.0.0.1:")
