"""Issue 17 (items 1, 3, 4): what a run folder guarantees.

``--overwrite`` deletes only a run folder of ours (and refuses a user's folder, a file, an input);
a resume checks every input file's fingerprint and rescores changed inputs; one run holds a
folder at a time (its lease, driven deterministically by the pause hook); ``_SUCCESS`` is the last
file written and only when every part on disk is this run's.  Every folder-state case asserts the
exit status, the message, and that nothing outside the run folder was touched."""
from __future__ import annotations

import os

# gcsfs reads this once, when it is imported (tests/integration/test_gcs.py): before anything imports gcsfs.
os.environ["GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT"] = "false"

import contextlib  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
import yaml  # noqa: E402

from support.pipeline_corpus import run_outputs  # noqa: E402
from support.storage_servers import gcs_endpoint, moto_endpoint, s3_bucket  # noqa: E402,F401  (fixtures)
from pipeline.cli import main as cli  # noqa: E402
from pipeline import runfolder as outputs  # noqa: E402

REPO = Path(__file__).parents[2]


def _recs(prefix: str, n: int, words: str = "alpha beta gamma delta") -> list[dict]:
    w = words.split()
    return [{"id": f"{prefix}{i:03d}", "system": "s", "candidate": " ".join(w[(i + k) % len(w)] for k in range(5)),
             "references": [" ".join(w[(i * 3 + k) % len(w)] for k in range(6))]} for i in range(n)]


def _write_jsonl(path: Path, recs: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")


@pytest.fixture()
def inputs(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    _write_jsonl(d / "a.jsonl", _recs("a", 12))
    _write_jsonl(d / "b.jsonl", _recs("b", 9, "river bridge council budget school"))
    return d


def _cfg(tmp_path, paths, name="c.yaml", **sections) -> Path:
    d = {"input": {"layout": "records", "paths": paths},
         "stats": {"seed": 3, "n_boot": 50}, "execution": {"mode": "sync", "retries": 0}}
    for k, v in sections.items():
        d.setdefault(k, {}).update(v)
    p = tmp_path / name
    p.write_text(yaml.safe_dump(d))
    return p


def score(capsys, cfg: Path, out, *extra) -> tuple[int, str]:
    capsys.readouterr()
    code = cli.main(["score", "--config", str(cfg), "--output", str(out), "--sync", "--no-progress", "--json",
                     *extra])
    return code, capsys.readouterr().err


def snapshot(root: Path, skip: Path | None = None) -> dict:
    """Every file below ``root`` (but ``skip``): bytes and modification time."""
    out = {}
    for p in sorted(root.rglob("*")):
        if skip is not None and (p == skip or skip in p.parents):
            continue
        if p.is_file():
            out[str(p.relative_to(root))] = (p.read_bytes(), p.stat().st_mtime_ns)
    return out


def _summary(run: Path) -> dict:
    return json.loads((run / "_summary.json").read_text())


# --------------------------------------------------------------------------- item 1: --overwrite
def test_overwrite_refuses_a_folder_of_user_files(tmp_path, inputs, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my thesis")
    (out / "data").mkdir()
    (out / "data" / "x.csv").write_text("1,2")
    cfg = _cfg(tmp_path, str(inputs / "*.jsonl"))
    before = snapshot(tmp_path)
    for extra in ((), ("--overwrite",)):
        code, err = score(capsys, cfg, out, *extra)
        assert code == cli.EXIT_RUN_FOLDER, err
        assert "is not a rouge-pipeline run folder (no _run.json)" in err
        assert "--overwrite" not in err   # never suggested for a folder that is not a run folder
        assert err.strip().splitlines()[-1].startswith("rouge-pipeline: ")   # the error is the last line
        assert snapshot(tmp_path) == before    # nothing created, deleted or changed anywhere


def test_overwrite_refuses_a_regular_file(tmp_path, inputs, capsys):
    out = tmp_path / "results.txt"
    out.write_text("keep me")
    cfg = _cfg(tmp_path, str(inputs / "*.jsonl"))
    before = snapshot(tmp_path)
    for extra in ((), ("--overwrite",)):
        code, err = score(capsys, cfg, out, *extra)
        assert code == cli.EXIT_RUN_FOLDER, err
        assert "is a file, not a run folder" in err and "--overwrite" not in err
        assert snapshot(tmp_path) == before


@pytest.mark.parametrize("case", ["the input folder", "inside the input folder", "the parent of the input",
                                  "an input file", "glob matching outputs"])
def test_output_overlapping_an_input_is_refused_at_config_time(tmp_path, inputs, capsys, case):
    paths, out = {
        "the input folder": (str(inputs), inputs),
        "inside the input folder": (str(inputs), inputs / "run"),
        "the parent of the input": (str(inputs / "*.jsonl"), tmp_path),
        "an input file": (str(inputs / "a.jsonl"), inputs / "a.jsonl"),
        "glob matching outputs": (str(tmp_path / "**" / "*.json*"), tmp_path / "runs" / "r1"),
    }[case]
    cfg = _cfg(tmp_path, paths)
    before = snapshot(tmp_path)
    code, err = score(capsys, cfg, out, "--overwrite")
    assert code == cli.EXIT_CONFIG, err
    assert err.startswith("rouge-pipeline: configuration error: output.url")
    assert any(w in err for w in ("contains the input", "inside the input folder", "would match this run's own"))
    assert snapshot(tmp_path) == before


def test_output_next_to_an_input_glob_that_cannot_match_it_is_accepted(tmp_path, inputs, capsys):
    """The glob check is precise: ``in/*.jsonl`` never reads ``in/run/...``."""
    code, err = score(capsys, _cfg(tmp_path, str(inputs / "*.jsonl")), inputs / "run")
    assert code == 0, err
    assert (inputs / "run" / "_SUCCESS").exists()


def test_overlap_check_is_protocol_aware_and_normalised():
    check = outputs.check_output_vs_inputs
    check("s3://bucket/in/run", ["/bucket/in/*.jsonl"])          # another file system
    check("s3://bucket/out", ["s3://bucket/output/*.jsonl"])     # a sibling sharing a name prefix
    for out, inp in (("s3a://bucket/data/", ["s3://bucket/data/in/*.jsonl"]),
                     ("gs://b/x/run", ["gcs://b/x"]),
                     ("s3://bucket/a/./b/../b", ["s3://bucket/a/b/shard.jsonl"]),
                     ("s3://bucket/in/run", ["s3://bucket/in/**"])):
        with pytest.raises(ValueError, match="output.url"):
            check(out, inp)


def test_overwrite_deletes_only_run_files_and_refuses_stray_user_files(tmp_path, inputs, capsys):
    out = tmp_path / "run"
    cfg = _cfg(tmp_path, str(inputs / "*.jsonl"))
    code, err = score(capsys, cfg, out)
    assert code == 0, err
    (out / "notes.txt").write_text("my notes")
    (out / "scores" / "analysis.csv").write_text("1")
    other = _cfg(tmp_path, str(inputs / "*.jsonl"), name="stem.yaml", scoring={"use_stemmer": True})
    before = snapshot(tmp_path)
    code, err = score(capsys, other, out, "--overwrite")
    assert code == cli.EXIT_RUN_FOLDER, err
    assert "holds files rouge-pipeline did not write (notes.txt, scores/analysis.csv)" in err
    assert snapshot(tmp_path) == before        # the whole run, and the user's files, as they were
    (out / "notes.txt").unlink()
    (out / "scores" / "analysis.csv").unlink()
    code, err = score(capsys, other, out, "--overwrite")
    assert code == 0, err
    assert json.loads((out / "_run.json").read_text())["config"]["scoring"]["use_stemmer"] is True
    fresh = tmp_path / "fresh"
    assert score(capsys, other, fresh)[0] == 0
    assert run_outputs(out) == run_outputs(fresh)


@pytest.mark.parametrize("old", [1, 2, 3])
def test_old_format_run_folder_is_refused_not_half_read(tmp_path, inputs, capsys, old):
    out = tmp_path / "run"
    cfg = _cfg(tmp_path, str(inputs / "*.jsonl"))
    assert score(capsys, cfg, out)[0] == 0
    info = json.loads((out / "_run.json").read_text())
    if old == 1:
        del info["run_format"]                  # as every run folder before issue 17
    elif old == 3:
        info["run_format"] = 3                  # scores without text_digest (before issue 27)
    else:
        info["run_format"] = 2                  # parts and markers named by a global task number
        for p in [*out.glob("scores/*/part-*.parquet"), *out.glob("quarantine/part-*.parquet"),
                  *out.glob("_done/unit-*.json")]:
            p.rename(p.with_name(p.name.replace("-0000.", ".")))
    (out / "_run.json").write_text(json.dumps(info))
    (out / "_SUCCESS").unlink()
    before = snapshot(tmp_path)
    code, err = score(capsys, cfg, out)
    assert code == cli.EXIT_RUN_FOLDER, err
    assert f"run folder format {old}, this version writes {outputs.RUN_FORMAT}" in err and "is not resumed" in err
    assert snapshot(tmp_path) == before
    code, err = score(capsys, cfg, out, "--overwrite")
    assert code == 0, err
    assert (out / "_SUCCESS").exists()


def test_a_missing_input_creates_nothing_in_the_output(tmp_path, capsys):
    cfg = _cfg(tmp_path, str(tmp_path / "nope" / "*.jsonl"))
    code, err = score(capsys, cfg, tmp_path / "run")
    assert code == cli.EXIT_CONFIG, err
    assert "matches no file" in err
    assert not (tmp_path / "run").exists()


# --------------------------------------------------------------------------- markers and parts
def _resume_rescores_one_task(tmp_path, capsys, cfg, out):
    """A resume that succeeds, touches nothing outside ``out`` and scores exactly one task again."""
    outside = snapshot(tmp_path, skip=out)
    code, err = score(capsys, cfg, out)
    assert code == 0, err
    assert snapshot(tmp_path, skip=out) == outside
    assert _summary(out)["tasks_resumed"] == _summary(out)["tasks"] - 1


def test_a_truncated_marker_is_scored_again(tmp_path, inputs, capsys):
    out = tmp_path / "run"
    cfg = _cfg(tmp_path, str(inputs / "*.jsonl"))
    assert score(capsys, cfg, out)[0] == 0
    clean = run_outputs(out)
    marker = out / "_done" / "unit-00000-0000.json"
    marker.write_bytes(marker.read_bytes()[:20])
    (out / "_SUCCESS").unlink()
    _resume_rescores_one_task(tmp_path, capsys, cfg, out)
    assert json.loads(marker.read_text())["marker"] == 5
    assert run_outputs(out) == clean


def test_a_part_of_another_config_is_not_resumed(tmp_path, inputs, capsys):
    out, other_out = tmp_path / "run", tmp_path / "other"
    cfg = _cfg(tmp_path, str(inputs / "*.jsonl"))
    other = _cfg(tmp_path, str(inputs / "*.jsonl"), name="stem.yaml", scoring={"use_stemmer": True})
    assert score(capsys, cfg, out)[0] == 0
    assert score(capsys, other, other_out)[0] == 0
    clean = run_outputs(out)
    part = "scores/system-s/part-00000-0000.parquet"
    shutil.copy(other_out / part, out / part)            # same name, same rows, other settings
    (out / "_SUCCESS").unlink()
    _resume_rescores_one_task(tmp_path, capsys, cfg, out)
    assert run_outputs(out) == clean


def test_a_part_that_no_task_of_the_plan_wrote_blocks_success(tmp_path, inputs, capsys):
    out = tmp_path / "run"
    cfg = _cfg(tmp_path, str(inputs / "*.jsonl"))
    assert score(capsys, cfg, out)[0] == 0
    shutil.copy(out / "scores/system-s/part-00000-0000.parquet", out / "scores/system-s/part-00000-0007.parquet")
    outside = snapshot(tmp_path, skip=out)
    code, err = score(capsys, cfg, out)
    assert snapshot(tmp_path, skip=out) == outside
    assert code == cli.EXIT_RUN_FOLDER, err
    assert "holds part files that are not this run's (scores/system-s/part-00000-0007.parquet)" in err
    assert not (out / "_SUCCESS").exists()


def test_parts_holding_other_row_counts_block_success(tmp_path, inputs, capsys):
    """A part of a task of the plan, with this config, that the task's marker does not name (as
    a system folder left by an earlier run): not this run's (issue 27: named as such; before,
    only the rows on disk, not the rows counted, refused it; that count:
    tests/unit/runfolder/test_whole_run.py)."""
    out = tmp_path / "run"
    cfg = _cfg(tmp_path, str(inputs / "*.jsonl"))
    assert score(capsys, cfg, out)[0] == 0
    (out / "scores/system-zz").mkdir()
    shutil.copy(out / "scores/system-s/part-00000-0000.parquet", out / "scores/system-zz/part-00000-0000.parquet")
    code, err = score(capsys, cfg, out)
    assert code == cli.EXIT_RUN_FOLDER, err
    assert "holds part files that are not this run's (scores/system-zz/part-00000-0000.parquet)" in err
    assert not (out / "_SUCCESS").exists()


# --------------------------------------------------------------------------- item 3: inputs changed
@pytest.mark.parametrize("change", ["new shard", "removed shard", "edited shard", "edited in place"])
def test_a_rerun_after_the_inputs_changed_gives_the_new_numbers(tmp_path, inputs, capsys, change):
    out = tmp_path / "run"
    cfg = _cfg(tmp_path, str(inputs / "*.jsonl"))
    assert score(capsys, cfg, out)[0] == 0
    rows_before, stats_before = _summary(out)["rows"], (out / "stats" / "stats.json").read_bytes()
    if change == "new shard":
        _write_jsonl(inputs / "c.jsonl", _recs("c", 5, "stone water light green road"))
    elif change == "removed shard":
        (inputs / "b.jsonl").unlink()
    else:   # same size, same modification time, other content: a new inode, or the same one
        a = inputs / "a.jsonl"
        st = a.stat()
        recs = _recs("a", 12)
        for r in recs:   # other candidates, same sizes
            r["candidate"] = r["candidate"].replace("alpha", "omega")
        if change == "edited shard":
            _write_jsonl(inputs / "a.new", recs)
            os.replace(inputs / "a.new", a)
        else:   # rewritten through the same inode, its mtime put back (as `cp -p`, `rsync -t` do)
            _write_jsonl(a, recs)
            assert a.stat().st_ino == st.st_ino
        os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert a.stat().st_size == st.st_size
    code, err = score(capsys, cfg, out)
    assert code == 0, err
    assert "the inputs changed since" in err and "scoring them again" in err
    fresh = tmp_path / "fresh"
    assert score(capsys, cfg, fresh)[0] == 0
    assert run_outputs(out) == run_outputs(fresh)           # the new numbers, nothing stale
    assert _summary(out)["rows"] == _summary(fresh)["rows"]
    assert (_summary(out)["rows"] != rows_before) == (change not in ("edited shard", "edited in place"))
    assert (out / "stats" / "stats.json").read_bytes() != stats_before
    assert (out / "_SUCCESS").exists() and _summary(out)["tasks_resumed"] == 0


def test_an_edited_file_is_never_cut_at_old_byte_offsets(tmp_path, capsys):
    """``target_rows`` cuts a JSONL file at byte offsets; an edit between an interrupted run and
    its resume must not be read at the old ones (records lost, rows invented as malformed)."""
    d = tmp_path / "in"
    d.mkdir()
    f = d / "a.jsonl"
    _write_jsonl(f, _recs("a", 20))
    cfg = _cfg(tmp_path, str(f), execution={"target_rows": 4})
    out = tmp_path / "run"
    assert score(capsys, cfg, out)[0] == 0
    for m in sorted((out / "_done").glob("*.json"))[2:]:      # "interrupted" after two tasks
        m.unlink()
    (out / "_SUCCESS").unlink()
    _write_jsonl(f, _recs("longer-id-", 3) + _recs("a", 20))   # every later line moves
    code, err = score(capsys, cfg, out)
    assert code == 0, err
    s = _summary(out)
    assert s["rows"] == 23 and s["quarantined"] == 0, s
    fresh = tmp_path / "fresh"
    assert score(capsys, cfg, fresh)[0] == 0
    assert run_outputs(out) == run_outputs(fresh)


def test_plan_records_every_input_fingerprint(tmp_path, inputs, capsys):
    out = tmp_path / "run"
    assert score(capsys, _cfg(tmp_path, str(inputs / "*.jsonl")), out)[0] == 0
    plan = json.loads((out / "_plan.json").read_text())
    assert sorted(plan["inputs"]) == [f"file://{inputs}/a.jsonl", f"file://{inputs}/b.jsonl"]
    fp = plan["inputs"][f"file://{inputs}/a.jsonl"]
    st = (inputs / "a.jsonl").stat()
    assert fp["size"] == st.st_size and fp["ino"] == st.st_ino and float(fp["time"]) == st.st_mtime
    markers = [json.loads(p.read_text()) for p in (out / "_done").glob("*.json")]
    assert markers and {m["plan"] for m in markers} == {plan["plan_id"]}


def test_fingerprint_falls_back_to_a_content_hash_only_without_metadata(tmp_path):
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.pipe("/fp/x", b"abc")
    fp = outputs.fingerprint({"size": 3}, fs, "/fp/x")
    assert fp == {"size": 3, "sha256": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}
    assert outputs.fingerprint({"size": 3, "ETag": '"e"', "LastModified": "t"}, fs, "/fp/x") == \
        {"size": 3, "version": '"e"', "time": "t"}


# --------------------------------------------------------------------------- item 4: the lease
def _lease(run: Path, **kw) -> dict:
    body = {"run_id": "0123456789ab", "host": "other-host", "pid": 4242, "started": "2026-01-01T00:00:00Z",
            "heartbeat": time.time(), "timeout_s": outputs.LEASE_TIMEOUT_S, **kw}
    (run / outputs.LEASE).write_text(json.dumps(body))
    return body


def test_a_live_lease_refuses_a_second_run(tmp_path, inputs, capsys):
    out = tmp_path / "run"
    cfg = _cfg(tmp_path, str(inputs / "*.jsonl"))
    assert score(capsys, cfg, out)[0] == 0
    _lease(out)
    before = snapshot(tmp_path)
    for extra in ((), ("--overwrite",)):
        code, err = score(capsys, cfg, out, *extra)
        assert code == cli.EXIT_BUSY, err
        assert err.strip().splitlines()[-1].startswith("rouge-pipeline: ")   # the error is the last line
        assert "in use by run 0123456789ab (host other-host, pid 4242" in err
        assert snapshot(tmp_path) == before


@pytest.mark.parametrize("why", ["old heartbeat", "dead process on this host"])
def test_a_stale_lease_is_broken(tmp_path, inputs, capsys, why):
    out = tmp_path / "run"
    out.mkdir()
    if why == "old heartbeat":
        _lease(out, heartbeat=time.time() - outputs.LEASE_TIMEOUT_S - 60)
    else:
        gone = subprocess.Popen([sys.executable, "-c", "pass"])
        gone.wait()
        _lease(out, host=socket.gethostname(), pid=gone.pid)
    cfg = _cfg(tmp_path, str(inputs / "*.jsonl"))
    outside = snapshot(tmp_path, skip=out)
    code, err = score(capsys, cfg, out)
    assert code == 0, err
    assert snapshot(tmp_path, skip=out) == outside
    assert "breaking the stale lease of run 0123456789ab" in err
    assert (out / "_SUCCESS").exists() and not (out / outputs.LEASE).exists()


@pytest.mark.parametrize("body", ['{"run_id": "x", "hea', '{"run_id": "x", "heartbeat": "soon"}', '[]'])
def test_a_lease_without_a_heartbeat_is_stale_by_its_modification_time(tmp_path, inputs, capsys, body):
    out = tmp_path / "run"
    out.mkdir()
    lease = out / outputs.LEASE
    lease.write_text(body)
    cfg = _cfg(tmp_path, str(inputs / "*.jsonl"))
    code, err = score(capsys, cfg, out)          # just written: perhaps a run mid-write; refused
    assert code == cli.EXIT_BUSY and "_LEASE.json is unreadable" in err, err
    assert lease.read_text() == body
    old = time.time() - outputs.LEASE_TIMEOUT_S - 60
    os.utime(lease, (old, old))
    code, err = score(capsys, cfg, out)
    assert code == 0, err
    assert "breaking the stale lease of an unreadable _LEASE.json: it has no readable heartbeat" in err
    assert (out / "_SUCCESS").exists() and not lease.exists()


def test_two_runs_breaking_one_stale_lease_one_wins(tmp_path):
    """Both saw the lease stale; the second breaks it and takes the folder while the first is
    between its look and its removal: the first must not remove the second's lease."""
    run = tmp_path / "run"
    run.mkdir()
    _lease(run, heartbeat=time.time() - outputs.LEASE_TIMEOUT_S - 60)
    second = outputs.Lease(str(run))
    taken = []

    def log(msg):  # the first run's "breaking the stale lease" message: the second runs now
        if "breaking the stale lease" in msg and not taken:
            taken.append(second.acquire())

    first = outputs.Lease(str(run), log=log)
    try:
        with pytest.raises(outputs.RunFolderBusyError, match=f"in use by run {second.run_id}"):
            first.acquire()
        assert taken and json.loads((run / outputs.LEASE).read_text())["run_id"] == second.run_id
        second.check()
    finally:
        second.release()
        first.release()
    assert not (run / outputs.LEASE).exists()
    assert sorted(p.name for p in run.iterdir()) == []     # nothing moved aside is left behind


def test_the_heartbeat_never_overwrites_a_lease_another_run_took(tmp_path, monkeypatch):
    monkeypatch.setattr(outputs.lease, "LEASE_HEARTBEAT_S", 0.02)
    run = tmp_path / "run"
    lease = outputs.Lease(str(run)).acquire()
    body = lease._data
    taken = []

    def data():  # another run broke this one's lease and took the folder just before this beat writes
        if not taken:
            (run / outputs.LEASE).unlink()
            taken.append(_lease(run))
        return body()

    monkeypatch.setattr(lease, "_data", data)
    try:
        deadline = time.monotonic() + 30
        while lease.lost is None:
            assert time.monotonic() < deadline, "the heartbeat never noticed the lease was taken"
            time.sleep(0.01)
        lease.stop_heartbeat()
        assert json.loads((run / outputs.LEASE).read_text()) == taken[0]
        with pytest.raises(outputs.RunFolderBusyError, match="lost its lease"):
            lease.check()
    finally:
        lease.release()
    assert json.loads((run / outputs.LEASE).read_text()) == taken[0]    # left alone


def _start_paused(tmp_path, cfg: Path, out: Path, step: str, *extra):
    gate = tmp_path / f"gate-{step}"
    env = {**os.environ, outputs.TEST_PAUSE_ENV: f"{step}:{gate}", "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "pipeline", "score", "--config", str(cfg), "--output", str(out),
                             "--sync", "--no-progress", "--json", *extra], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reached = Path(f"{gate}.reached")
    deadline = time.monotonic() + 120
    while not reached.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"the run did not reach {step}: {proc.communicate()[1][-2000:]}")
        time.sleep(0.02)
    return proc, gate


@contextlib.contextmanager
def _paused(tmp_path, cfg: Path, out: Path, step: str, *extra):
    """A run stopped at ``step``: ``(process, gate)``; the process is killed if it still runs after."""
    proc, gate = _start_paused(tmp_path, cfg, out, step, *extra)
    try:
        yield proc, gate
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _release(proc, gate) -> tuple[str, str]:
    """Let a paused run go on; its (stdout, stderr) once it ends."""
    gate.touch()
    return proc.communicate(timeout=180)


def test_two_runs_on_one_folder_the_second_exits_6(tmp_path, inputs, capsys):
    out = tmp_path / "run"
    cfg = _cfg(tmp_path, str(inputs / "*.jsonl"))
    other = _cfg(tmp_path, str(inputs / "*.jsonl"), name="stem.yaml", scoring={"use_stemmer": True})
    with _paused(tmp_path, cfg, out, "prepared") as (first, gate):
        holder = json.loads((out / outputs.LEASE).read_text())
        assert holder["pid"] == first.pid
        for c, extra in ((cfg, ()), (other, ()), (other, ("--overwrite",))):
            code, err = score(capsys, c, out, *extra)
            assert code == cli.EXIT_BUSY, err
            assert f"in use by run {holder['run_id']} (host {socket.gethostname()}, pid {first.pid}" in err
        stdout, stderr = _release(first, gate)
    assert first.returncode == 0, stderr
    assert not (out / outputs.LEASE).exists()
    fresh = tmp_path / "fresh"
    assert score(capsys, cfg, fresh)[0] == 0
    assert run_outputs(out) == run_outputs(fresh)
    assert json.loads(stdout)["rows"] == _summary(fresh)["rows"]


def test_a_file_cut_short_before_its_unit_reads_it_stops_the_run_naming_it(tmp_path, inputs, capsys):
    # a.jsonl in 3 byte ranges; units 1 and 2 find it 3 records shorter than planned
    out = tmp_path / "run"
    cfg = _cfg(tmp_path, str(inputs / "a.jsonl"), execution={"target_rows": 4})
    with _paused(tmp_path, cfg, out, "task>=1") as (proc, gate):
        _write_jsonl(inputs / "a.jsonl", _recs("a", 9))
        _, err = _release(proc, gate)
    assert proc.returncode == cli.EXIT_RUN_FOLDER, err
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"rouge-pipeline: file://{inputs / 'a.jsonl'}: the file changed since planning (")
    assert not (out / "_SUCCESS").exists()
    code, err = score(capsys, cfg, out)            # the rerun plans it again and scores it as it is
    assert code == 0, err
    assert _summary(out)["rows"] == 9


def test_inputs_changed_during_the_run_give_no_success(tmp_path, inputs, capsys):
    out = tmp_path / "run"
    cfg = _cfg(tmp_path, str(inputs / "*.jsonl"))
    with _paused(tmp_path, cfg, out, "prepared") as (proc, gate):
        _write_jsonl(inputs / "c.jsonl", _recs("c", 4))          # a new shard after the listing
        _, err = _release(proc, gate)
    assert proc.returncode == cli.EXIT_RUN_FOLDER, err
    assert "the inputs changed while this run was running" in err and "c.jsonl (new)" in err
    assert not (out / "_SUCCESS").exists()
    code, err = score(capsys, cfg, out)            # the rerun scores them
    assert code == 0, err
    assert _summary(out)["rows"] == 25


def test_lease_heartbeat_refreshes_and_a_lost_lease_is_noticed(tmp_path, monkeypatch):
    monkeypatch.setattr(outputs.lease, "LEASE_HEARTBEAT_S", 0.02)
    lease = outputs.Lease(str(tmp_path / "run")).acquire()
    try:
        first = json.loads((tmp_path / "run" / outputs.LEASE).read_text())["heartbeat"]
        deadline = time.monotonic() + 30
        while json.loads((tmp_path / "run" / outputs.LEASE).read_text())["heartbeat"] == first:
            assert time.monotonic() < deadline, "the heartbeat never refreshed the lease"
            time.sleep(0.01)
        with pytest.raises(outputs.RunFolderBusyError, match="in use by run"):
            outputs.Lease(str(tmp_path / "run")).acquire()
        lease.stop_heartbeat()
        _lease(tmp_path / "run")            # broken as stale by another run and taken
        with pytest.raises(outputs.RunFolderBusyError, match="lost its lease"):
            lease.check()
    finally:
        lease.release()
    assert (tmp_path / "run" / outputs.LEASE).exists()    # not ours any more: left alone


# --------------------------------------------------------------------------- object stores
def test_lease_is_an_exclusive_create_on_s3(moto_endpoint, s3_bucket):
    from support.storage_servers import S3_KEY_ID, S3_SECRET

    so = {"key": S3_KEY_ID, "secret": S3_SECRET, "client_kwargs": {"endpoint_url": moto_endpoint},
          "skip_instance_cache": True, "use_listings_cache": False}
    url = f"s3://{s3_bucket}/run"
    a, b = outputs.Lease(url, so), outputs.Lease(url, so)
    a._create()
    with pytest.raises(FileExistsError):   # the race itself: If-None-Match: * refused by the store
        b._create()
    a_fs = __import__("s3fs").S3FileSystem(**so)
    a_fs.rm(f"{s3_bucket}/run/{outputs.LEASE}")
    a.acquire()
    try:
        with pytest.raises(outputs.RunFolderBusyError, match=f"in use by run {a.run_id}"):
            b.acquire()
    finally:
        a.release()
    b.acquire().release()


def test_lease_changes_on_s3_are_conditional(moto_endpoint, s3_bucket):
    """Breaking a stale lease deletes it only if unchanged (If-Match ETag); the heartbeat
    rewrites only the version this run wrote: another run's lease is never touched."""
    from support.storage_servers import S3_KEY_ID, S3_SECRET

    so = {"key": S3_KEY_ID, "secret": S3_SECRET, "client_kwargs": {"endpoint_url": moto_endpoint},
          "skip_instance_cache": True, "use_listings_cache": False}
    fs = __import__("s3fs").S3FileSystem(**so)
    key = f"{s3_bucket}/cond/{outputs.LEASE}"
    stale = {"run_id": "0123456789ab", "host": "h", "pid": 1, "heartbeat": time.time() - 1000}
    fs.pipe_file(key, json.dumps(stale).encode())
    first, second = outputs.Lease(f"s3://{s3_bucket}/cond", so), outputs.Lease(f"s3://{s3_bucket}/cond", so)
    seen, version = first._read_versioned()
    assert outputs.lease_is_stale(seen)
    second.acquire()                       # broke it and took the folder first
    try:
        second.stop_heartbeat()
        assert first._break(version) is False
        assert json.loads(fs.cat_file(key))["run_id"] == second.run_id
        assert second._refresh() is None   # its own version: rewritten
        fs.pipe_file(key, json.dumps({**stale, "run_id": "fedcba987654", "heartbeat": time.time()}).encode())
        assert "taken over by run fedcba987654" in second._refresh()
        assert json.loads(fs.cat_file(key))["run_id"] == "fedcba987654"
    finally:
        second.release()
    assert json.loads(fs.cat_file(key))["run_id"] == "fedcba987654"    # not its lease: left alone


def test_lease_on_gcs(gcs_endpoint, monkeypatch):
    """The GCS emulator ignores ifGenerationMatch=0 (the real service honours it): checked here
    is that a held lease refuses a second run and is released."""
    gcsfs = pytest.importorskip("gcsfs")
    if "Extended" in gcsfs.GCSFileSystem.__name__:
        pytest.skip("gcsfs was imported before GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=false was set")
    from support.storage_servers import GCS_OPTIONS, gcs_env

    for k, v in gcs_env(gcs_endpoint).items():
        monkeypatch.setenv(k, v)
    so = {**GCS_OPTIONS, "skip_instance_cache": True}
    fs = gcsfs.GCSFileSystem(**so)
    bucket = f"rouge-{os.urandom(6).hex()}"
    fs.mkdir(bucket)
    url = f"gs://{bucket}/run"
    a = outputs.Lease(url, so).acquire()
    try:
        with pytest.raises(outputs.RunFolderBusyError, match=f"in use by run {a.run_id}"):
            outputs.Lease(url, so).acquire()
        a.stop_heartbeat()
        before = json.loads(fs.cat_file(f"{bucket}/run/{outputs.LEASE}"))["heartbeat"]
        assert a._refresh() is None        # the heartbeat's generation-matched rewrite
        assert json.loads(fs.cat_file(f"{bucket}/run/{outputs.LEASE}"))["heartbeat"] > before
        a.check()
    finally:
        a.release()
    assert not fs.exists(f"{bucket}/run/{outputs.LEASE}")
    outputs.Lease(url, so).acquire().release()


# --------------------------------------------------------------------------- _SUCCESS is last
@pytest.fixture()
def write_log(monkeypatch):
    """Every file the run writes, in order (the one atomic-write function all writes go through)."""
    from pipeline.io import writers

    log = []
    orig = writers._write_bytes_atomic

    def recording(url, write, so):
        r = orig(url, write, so)
        log.append(url)
        return r

    monkeypatch.setattr(writers, "_write_bytes_atomic", recording)
    return log


@pytest.mark.parametrize("variant", ["default", "exact bootstrap", "rouge155"])
def test_success_is_the_last_file_written(tmp_path, inputs, write_log, variant):
    from pipeline.config import load_config
    from pipeline.execution.driver import run

    sections = {"default": {}, "exact bootstrap": {"stats": {"bootstrap": "exact"}},
                "rouge155": {"scoring": {"profile": "rouge155", "rouge_types": ["rouge1", "rougeL"]}}}[variant]
    cfg = load_config(_cfg(tmp_path, str(inputs / "*.jsonl"), **sections), [f"output.url={tmp_path / 'run'}"])
    run(cfg, None, progress=False, log=lambda _m: None)
    names = [u.rsplit("/run/", 1)[-1] for u in write_log]
    assert names[-1] == "_SUCCESS" and names.count("_SUCCESS") == 1
    expected = {"stats/stats.parquet", "stats/stats.json", "_summary.json"}
    expected |= {"stats/bootstrap_exact.parquet"} if variant == "exact bootstrap" else set()
    expected |= {"rouge155_corpus.json"} if variant == "rouge155" else set()
    assert expected <= set(names[:-1])
    on_disk = {str(p.relative_to(tmp_path / "run")) for p in (tmp_path / "run").rglob("*") if p.is_file()}
    assert on_disk <= set(names)        # every file there was written, and before _SUCCESS


@pytest.mark.parametrize("what", ["statistics", "summary", "rouge155 corpus"])
def test_a_final_write_that_fails_leaves_no_success(tmp_path, inputs, monkeypatch, what):
    from pipeline.config import load_config
    from pipeline.execution import driver
    from pipeline.io import writers
    from pipeline.rouge155 import family

    def broken(*_a, **_k):
        raise PermissionError("disk says no")

    sections = {}
    if what == "statistics":
        monkeypatch.setattr(outputs, "write_stats", broken)
    elif what == "rouge155 corpus":
        sections = {"scoring": {"profile": "rouge155", "rouge_types": ["rouge1"]}}
        monkeypatch.setattr(family, "corpus_outputs", broken)
    else:
        orig = writers.write_json_atomic

        def no_summary(obj, url, so=None):
            if url.endswith("/_summary.json") and obj.get("status") == "ok":
                raise PermissionError("disk says no")
            return orig(obj, url, so)

        monkeypatch.setattr(writers, "write_json_atomic", no_summary)
    cfg = load_config(_cfg(tmp_path, str(inputs / "*.jsonl"), **sections), [f"output.url={tmp_path / 'run'}"])
    with pytest.raises(PermissionError):
        driver.run(cfg, None, progress=False, log=lambda _m: None)
    assert not (tmp_path / "run" / "_SUCCESS").exists()
    assert not (tmp_path / "run" / outputs.LEASE).exists()       # released on failure too



def test_an_edited_s3_object_of_the_same_size_is_scored_again(moto_endpoint, s3_bucket, tmp_path, monkeypatch,
                                                               capsys):
    """On S3 the fingerprint is the listing's ETag: a regenerated object of the same size gives
    the new numbers on the rerun (the same-day nightly rerun)."""
    from support.storage_servers import s3_env, s3_fs

    for k, v in s3_env(moto_endpoint).items():
        monkeypatch.setenv(k, v)
    fs = s3_fs(moto_endpoint)
    data = "".join(json.dumps(r) + "\n" for r in _recs("a", 10))
    fs.pipe(f"{s3_bucket}/in/a.jsonl", data.encode())
    cfg = _cfg(tmp_path, f"s3://{s3_bucket}/in/*.jsonl")
    out = f"s3://{s3_bucket}/run"
    assert score(capsys, cfg, out)[0] == 0
    first = fs.cat_file(f"{s3_bucket}/run/stats/stats.json")
    recs = _recs("a", 10)
    for r in recs:   # other candidates, same sizes
        r["candidate"] = r["candidate"].replace("alpha", "omega")
    edited = "".join(json.dumps(r) + "\n" for r in recs)
    assert len(edited) == len(data) and edited != data
    fs.pipe(f"{s3_bucket}/in/a.jsonl", edited.encode())
    code, err = score(capsys, cfg, out)
    assert code == 0, err
    assert "a.jsonl (changed)" in err
    fresh = f"s3://{s3_bucket}/fresh"
    assert score(capsys, cfg, fresh)[0] == 0
    fs.invalidate_cache()
    again = fs.cat_file(f"{s3_bucket}/run/stats/stats.json")
    assert again != first and again == fs.cat_file(f"{s3_bucket}/fresh/stats/stats.json").replace(b"/fresh", b"/run")


def test_folders_and_paired_layouts_rescore_a_new_reference_file(tmp_path, capsys):
    """Every side of every layout is fingerprinted: a model file added to a ``folders`` input,
    and a references shard edited in a ``paired`` input, give the new numbers on the rerun."""
    sys_dir, model_dir = tmp_path / "system", tmp_path / "model"
    sys_dir.mkdir()
    model_dir.mkdir()
    (sys_dir / "1.txt").write_text("the cat sat on the mat\n")
    (sys_dir / "2.txt").write_text("a dog barked\n")
    (model_dir / "1.A.txt").write_text("the cat sat on the mat\n")
    (model_dir / "2.A.txt").write_text("the dog barked loudly\n")
    folders = tmp_path / "folders.yaml"
    folders.write_text(yaml.safe_dump({"input": {"layout": "folders", "candidates": str(sys_dir),
                                                 "references": str(model_dir)},
                                       "stats": {"n_boot": 0}, "execution": {"mode": "sync", "retries": 0}}))
    pdir = tmp_path / "paired"
    pdir.mkdir()
    _write_jsonl(pdir / "c.jsonl", [{"id": r["id"], "candidate": r["candidate"]} for r in _recs("p", 6)])
    _write_jsonl(pdir / "r.jsonl", [{"id": r["id"], "references": r["references"]} for r in _recs("p", 6)])
    paired = tmp_path / "paired.yaml"
    paired.write_text(yaml.safe_dump({"input": {"layout": "paired", "candidates": str(pdir / "c.jsonl"),
                                                "references": str(pdir / "r.jsonl")},
                                      "stats": {"n_boot": 0}, "execution": {"mode": "sync", "retries": 0}}))
    for cfg, change in ((folders, lambda: (model_dir / "2.B.txt").write_text("a dog barked\n")),
                        (paired, lambda: _write_jsonl(pdir / "r.jsonl", [
                            {"id": r["id"], "references": ["omega " + r["references"][0]]} for r in _recs("p", 6)]))):
        out, fresh = tmp_path / f"run-{cfg.stem}", tmp_path / f"fresh-{cfg.stem}"
        assert score(capsys, cfg, out)[0] == 0
        before = (out / "stats" / "stats.json").read_bytes()
        change()
        code, err = score(capsys, cfg, out)
        assert code == 0 and "the inputs changed since" in err, err
        assert score(capsys, cfg, fresh)[0] == 0
        assert run_outputs(out) == run_outputs(fresh) and (out / "stats" / "stats.json").read_bytes() != before


def test_a_run_that_loses_its_lease_stops_writing_at_once(tmp_path, monkeypatch):
    """Another run takes the folder (it broke this run's lease as stale): the heartbeat notices,
    the run's stop flag is set, the slices left write nothing, and the run exits 6, not at the
    check before _SUCCESS after writing everything."""
    from pipeline.config import load_config
    from pipeline.execution import driver
    from pipeline.job import task as task_module

    monkeypatch.setattr(outputs.lease, "LEASE_HEARTBEAT_S", 0.02)
    inp = tmp_path / "in"
    inp.mkdir()
    for k in range(6):
        (inp / f"s{k}.jsonl").write_text(json.dumps({"id": f"d{k}", "candidate": "a b", "references": ["a"]}) + "\n")
    out = tmp_path / "run"
    orig = task_module.write_task_files
    taken = []

    def write_then_lose(prepared, unit_index, *args):
        r = orig(prepared, unit_index, *args)
        if unit_index == 1 and not taken:   # another run takes the folder after this unit
            (out / outputs.LEASE).unlink()   # as a run that broke a stale lease: a new file, not this one
            taken.append(_lease(out))
            deadline = time.monotonic() + 30
            while not taken or not getattr(driver_lease[0], "lost", None):
                assert time.monotonic() < deadline, "the heartbeat never noticed"
                time.sleep(0.01)
        return r

    driver_lease = []
    orig_lease = outputs.Lease

    def recording_lease(*a, **k):
        driver_lease.append(orig_lease(*a, **k))
        return driver_lease[-1]

    monkeypatch.setattr(outputs, "Lease", recording_lease)
    monkeypatch.setattr(task_module, "write_task_files", write_then_lose)
    monkeypatch.setattr("pipeline.io.records.PACK_BYTES", 0)   # one unit a file
    cfg = load_config(_cfg(tmp_path, str(inp / "*.jsonl"), execution={"mode": "sync"}), [f"output.url={out}"])
    with pytest.raises(outputs.RunFolderBusyError, match="lost its lease"):
        driver.run(cfg, None, progress=False, log=lambda _m: None)
    written = sorted(p.name for p in (out / "_done").glob("unit-*.json"))
    assert written == ["unit-00000-0000.json", "unit-00001-0000.json"], written
    assert not (out / "_SUCCESS").exists()
    assert json.loads((out / outputs.LEASE).read_text()) == taken[0]   # the other run's lease, left alone


# --------------------------------------------------------------------------- issue 27: the lease at the very end
@pytest.mark.parametrize("how", ["deleted", "taken"])
def test_a_run_that_loses_its_lease_at_the_very_end_writes_no_success(tmp_path, inputs, capsys, how):
    """Paused just before ``_SUCCESS`` (every other file written, the heartbeat stopped), its lease
    is deleted, or broken and taken by another run: the run must not write ``_SUCCESS``.
    (Mutations: the driver's ``lease.check()`` removed, or back before the pause as on main:
    both cases fail.)"""
    out = tmp_path / "run"
    cfg = _cfg(tmp_path, str(inputs / "*.jsonl"))
    with _paused(tmp_path, cfg, out, "success") as (proc, gate):
        (out / outputs.LEASE).unlink()
        if how == "taken":
            other = _lease(out)
        _, err = _release(proc, gate)
    assert proc.returncode == cli.EXIT_BUSY, err
    assert "this run lost its lease" in err and "no _SUCCESS written" in err
    assert not (out / "_SUCCESS").exists()
    if how == "taken":
        assert json.loads((out / outputs.LEASE).read_text()) == other     # left alone
