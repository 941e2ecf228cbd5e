"""``--reuse RUN`` (issue 30): the rows of a previous run whose ``text_digest`` is unchanged are copied,
the others scored, and the run folder is byte for byte a full rescore's (parts, quarantine,
statistics, markers); a previous run that cannot be trusted is refused in one line."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support.pipeline_corpus import config, examples, run_outputs
from support.storage_servers import download_tree, moto_endpoint, s3_bucket, s3_env, s3_fs, upload_tree  # noqa: F401
from pipeline.cli.main import main
from pipeline.config import ConfigError, RunConfig
from pipeline.execution.driver import run

EX = {"target_cost": 3000, "target_rows": 40}   # several units, several slices each


def _records(n_docs: int = 40) -> list[dict]:
    return [{"id": i, "system": s, "candidate": c, "references": refs, "source": f"source of {i}: {refs[0]}"}
            for i, refs, cands in examples(n_docs) for s, c in cands.items()]


def _write(root: Path, recs: list[dict], files: int = 3) -> str:
    """``recs`` in ``files`` JSONL files (round robin when ``files`` < 0: every row moves)."""
    root.mkdir(parents=True, exist_ok=True)
    n = abs(files)
    chunks = [recs[k::n] for k in range(n)] if files < 0 else [recs[k * len(recs) // n:(k + 1) * len(recs) // n]
                                                               for k in range(n)]
    for k, chunk in enumerate(chunks):
        (root / f"in-{k}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in chunk), encoding="utf-8")
    return str(root / "in-*.jsonl")


def _run(paths: str, out: Path, client=None, reuse=None, **kw):
    ex = {**EX, **({"reuse": str(reuse)} if reuse is not None else {}), **kw.pop("execution", {})}
    return run(RunConfig.from_dict(config({"layout": "records", "paths": paths}, out, execution=ex, **kw)), client,
               progress=False, log=lambda _m: None)


@pytest.fixture(scope="module")
def previous(tmp_path_factory):
    root = tmp_path_factory.mktemp("reuse")
    recs = _records()
    paths = _write(root / "in", recs)
    res = _run(paths, root / "prev")
    assert res.summary["units"] > 1 and res.summary["tasks"] > res.summary["units"]
    return {"root": root, "recs": recs, "run": root / "prev", "paths": paths}


def _changed(recs: list[dict], how: str) -> tuple[list[dict], int]:
    """``recs`` with every 7th example changed ``how``; and how many changed."""
    out = [dict(r, references=list(r["references"])) for r in recs]
    hit = out[::7]
    for k, r in enumerate(hit):
        if how == "candidates":
            r["candidate"] += f" and one more clause {k}"
        elif how == "references":
            r["references"][-1] += f" plus a new reference word {k}"
        elif how == "source":
            r["source"] = f"an edited source {k}"
        elif how == "no source":
            del r["source"]
    return out, len(hit)


@pytest.mark.parametrize("how", ["candidates", "references", "source", "no source"])
def test_reuse_is_byte_identical_to_a_full_rescore(previous, tmp_path, how):
    recs, n_changed = _changed(previous["recs"], how)
    paths = _write(tmp_path / "in", recs)
    full = _run(paths, tmp_path / "full")
    again = _run(paths, tmp_path / "reused", reuse=previous["run"])
    assert run_outputs(tmp_path / "reused", markers=True) == run_outputs(tmp_path / "full", markers=True)
    assert again.rows == full.rows
    assert again.summary["rows"] == len(recs) and full.summary["rows_reused"] == 0
    assert again.summary["rows_reused"] == len(recs) - n_changed
    assert again.summary["reuse"] == str(previous["run"])


def test_rows_moved_between_shards_are_all_reused(previous, tmp_path):
    paths = _write(tmp_path / "in", previous["recs"][::-1], files=-4)   # other files, other units, other order
    full = _run(paths, tmp_path / "full")
    again = _run(paths, tmp_path / "reused", reuse=previous["run"])
    assert run_outputs(tmp_path / "reused", markers=True) == run_outputs(tmp_path / "full", markers=True)
    assert again.summary["rows_reused"] == again.summary["rows"] == len(previous["recs"])
    assert again.rows == full.rows
    # oversized examples are copied too, not cut in blocks of reference sentences again
    assert full.summary["split_examples"] > 0 and again.summary["split_examples"] == 0


def test_kept_texts_come_from_this_runs_input(previous, tmp_path):
    recs, n_changed = _changed(previous["recs"], "candidates")
    paths = _write(tmp_path / "in", recs)
    full = _run(paths, tmp_path / "full", output={"keep_texts": True})
    again = _run(paths, tmp_path / "reused", reuse=previous["run"], output={"keep_texts": True})
    assert again.summary["rows_reused"] == len(recs) - n_changed
    assert run_outputs(tmp_path / "reused", markers=True) == run_outputs(tmp_path / "full", markers=True)
    assert again.rows == full.rows


@pytest.mark.parametrize("change", [{"scoring": {"use_stemmer": True}}, {"scoring": {"diagnostics": False}},
                                    {"stats": {"seed": 4}}])
def test_a_settings_change_reuses_nothing(previous, tmp_path, change):
    full = _run(previous["paths"], tmp_path / "full", **change)
    again = _run(previous["paths"], tmp_path / "reused", reuse=previous["run"], **change)
    assert again.summary["rows_reused"] == 0 and again.summary["reuse"] is None
    assert run_outputs(tmp_path / "reused", markers=True) == run_outputs(tmp_path / "full", markers=True)


def _refused(previous, tmp_path, capsys, damage) -> str:
    prev = tmp_path / "prev"
    shutil.copytree(previous["run"], prev)
    damage(prev)
    out = tmp_path / "new"
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(config({"layout": "records", "paths": previous["paths"]}, out, execution=EX)))
    assert main(["score", "--config", str(cfg), "--reuse", str(prev), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"rouge-pipeline: configuration error: --reuse {prev}: "), err
    assert not out.exists(), "nothing is written for a refused reuse"
    return err


def _set_format(prev: Path, **kv) -> None:
    info = json.loads((prev / "_run.json").read_text())
    info.update(kv)
    (prev / "_run.json").write_text(json.dumps(info))


@pytest.mark.parametrize("damage, says", [
    (lambda p: (p / "_SUCCESS").unlink(), "is not a finished run (no _SUCCESS)"),
    (lambda p: next((p / "scores").rglob("part-*.parquet")).unlink(), "part files the run wrote are missing"),
    (lambda p: shutil.copy(next((p / "scores").rglob("part-*.parquet")), p / "scores" / "system-sysA" / "part-99999-0000.parquet"),
     "holds part files the run did not write"),
    (lambda p: _set_format(p, run_format=4), "written by another rouge-pipeline version (run folder format 4"),
    (lambda p: _set_format(p, version="0.0.1"), "version 0.0.1"),
])
def test_a_previous_run_that_cannot_be_trusted_is_refused_in_one_line(previous, tmp_path, capsys, damage, says):
    assert says in _refused(previous, tmp_path, capsys, damage)


def test_a_refused_reuse_compiles_no_kernel_first(previous, tmp_path, capsys, monkeypatch):
    """The refusal comes before the kernels' compile (on a new machine: seconds to minutes, and a
    notice on stderr before the one line)."""
    from pipeline.execution import warmup

    compiles = []
    monkeypatch.setattr(warmup, "ensure_compiled", lambda *a, **k: compiles.append(a))
    _refused(previous, tmp_path, capsys, lambda p: (p / "_SUCCESS").unlink())
    assert compiles == []


def test_reusing_the_run_folder_itself_is_refused(previous, tmp_path):
    with pytest.raises(ConfigError, match="this run's own folder"):
        _run(previous["paths"], previous["run"], reuse=previous["run"])


def test_reuse_on_two_dask_worker_processes(previous, tmp_path):
    distributed = pytest.importorskip("distributed")
    from pipeline.execution.cluster import local_cluster

    recs, n_changed = _changed(previous["recs"], "candidates")
    paths = _write(tmp_path / "in", recs)
    full = _run(paths, tmp_path / "full")
    with local_cluster(2, dashboard_address=None, memory_limit="1GB") as cluster, distributed.Client(cluster) as client:
        again = _run(paths, tmp_path / "reused", client=client, reuse=previous["run"])
    assert again.summary["workers"] == 2 and again.summary["mode"] == "dask"
    assert again.summary["rows_reused"] == len(recs) - n_changed
    assert run_outputs(tmp_path / "reused", markers=True) == run_outputs(tmp_path / "full", markers=True)


def test_reuse_on_object_storage(previous, tmp_path, monkeypatch, moto_endpoint, s3_bucket):  # noqa: F811
    for k, v in s3_env(moto_endpoint).items():
        monkeypatch.setenv(k, v)
    fs, bucket = s3_fs(moto_endpoint), s3_bucket
    recs, n_changed = _changed(previous["recs"], "references")
    _write(tmp_path / "one", previous["recs"])
    _write(tmp_path / "two", recs)
    upload_tree(fs, tmp_path / "one", f"{bucket}/one")
    upload_tree(fs, tmp_path / "two", f"{bucket}/two")
    base = f"s3://{bucket}/runs"
    _run(f"s3://{bucket}/one/in-*.jsonl", f"{base}/prev")
    full = _run(f"s3://{bucket}/two/in-*.jsonl", f"{base}/full")
    again = _run(f"s3://{bucket}/two/in-*.jsonl", f"{base}/reused", reuse=f"{base}/prev")
    assert again.summary["rows_reused"] == len(recs) - n_changed and again.rows == full.rows

    def outputs(url):
        return {k: v for k, v in download_tree(fs, url).items()
                if k.startswith(("scores/", "quarantine/", "stats/", "_done/"))}

    assert outputs(f"{base}/reused") == outputs(f"{base}/full")
    fs.rm(f"{bucket}/runs/prev/_SUCCESS")   # the same trust on object storage
    with pytest.raises(ConfigError, match="not a finished run"):
        _run(f"s3://{bucket}/two/in-*.jsonl", f"{base}/refused", reuse=f"{base}/prev")


def test_nightly_reuses_the_previous_in_control_night_by_default(previous, tmp_path, capsys):
    import yaml

    from pipeline.gate.control import reuse_base
    from pipeline.runfolder import records

    data = tmp_path / "outputs"
    cfg = tmp_path / "score.yaml"
    cfg.write_text(yaml.safe_dump(config({"layout": "records", "paths": str(data / "in-*.jsonl")}, tmp_path / "x",
                                         execution=EX)))
    job = tmp_path / "nightly.yaml"
    root = tmp_path / "nightly"
    job.write_text(yaml.safe_dump({"name": "n", "config": str(cfg), "schedule": "30 2 * * *",
                                   "output_root": str(root), "compare": False}))
    recs, n_changed = _changed(previous["recs"], "candidates")

    def night(date, rows, *extra):
        shutil.rmtree(data, ignore_errors=True)
        _write(data, rows)
        assert main(["nightly", str(job), "--date", date, "--sync", *extra]) == 0
        capsys.readouterr()
        return json.loads((root / date / "_summary.json").read_text())

    assert night("2026-08-14", previous["recs"])["reuse"] is None            # nothing earlier
    second = night("2026-08-15", recs)
    assert second["reuse"] == str(root / "2026-08-14") and second["rows_reused"] == len(recs) - n_changed
    _run(str(data / "in-*.jsonl"), tmp_path / "full")    # the same input, scored whole
    assert run_outputs(root / "2026-08-15", markers=True) == run_outputs(tmp_path / "full", markers=True)
    assert main(["nightly", str(job), "--date", "2026-08-16", "--dry-run"]) == 0
    assert f"--reuse {root / '2026-08-15'}" in capsys.readouterr().out
    assert night("2026-08-16", recs, "--no-reuse")["rows_reused"] == 0
    # a night the gate judged moved is no base: the last night in control is
    records.write_verdict(str(root / "2026-08-16"), {"verdict": "moved"})
    sig = second["signature"]
    assert reuse_base(str(root / "2026-08-17"), sig) == str(root / "2026-08-15")
    assert reuse_base(str(root / "2026-08-17"), "rouge:1|v:other") is None   # other settings: none



def _edit_keeping_the_listing(prev: Path) -> None:
    """One score of a part changed (a valid Parquet file, its footer's metadata kept) and its
    size in ``_summary.json`` set to the new file's: what a size check cannot tell from the run's."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    part = sorted((prev / "scores").rglob("part-*.parquet"))[0]
    table = pq.read_table(part)
    col = table.schema.get_field_index("rouge1_fmeasure")
    table = table.set_column(col, table.field(col), pc.multiply(table.column(col), 0.5))
    pq.write_table(table, part, compression="zstd")
    summary = json.loads((prev / "_summary.json").read_text())
    summary["parts"][str(part.relative_to(prev))][1] = part.stat().st_size
    (prev / "_summary.json").write_text(json.dumps(summary))


def _stops_on(prev: Path, previous, tmp_path, capsys) -> str:
    """The one error line of a --reuse of ``prev`` that stops with exit 4, writing no _SUCCESS."""
    out = tmp_path / "new"
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(config({"layout": "records", "paths": previous["paths"]}, out, execution=EX)))
    status = main(["score", "--config", str(cfg), "--reuse", str(prev), "--no-progress"])
    err = capsys.readouterr().err
    assert status == 4 and not (out / "_SUCCESS").exists(), err
    line = [ln for ln in err.splitlines() if ln.startswith("rouge-pipeline: ")]
    assert len(line) == 1, err
    return line[0]


def test_a_part_edited_since_the_previous_run_wrote_it_is_not_reused(previous, tmp_path, capsys):
    prev = tmp_path / "prev"
    shutil.copytree(previous["run"], prev)
    _edit_keeping_the_listing(prev)
    assert "changed since the run wrote it (its content hash differs)" in _stops_on(prev, previous, tmp_path, capsys)


def test_a_part_damaged_in_place_is_refused_as_not_whole(previous, tmp_path, capsys):
    """Bytes overwritten at the end of a part (its size unchanged): the index, which reads parts
    without hashing them, refuses the run in one line (it printed Arrow's error, exit 2)."""
    prev = tmp_path / "prev"
    shutil.copytree(previous["run"], prev)
    part = sorted((prev / "scores").rglob("part-*.parquet"))[0]
    data = bytearray(part.read_bytes())
    data[-12:-4] = b"XXXXXXXX"   # the footer's length
    part.write_bytes(bytes(data))
    line = _stops_on(prev, previous, tmp_path, capsys)
    assert "cannot be read as the run wrote it" in line and "is not whole" in line


def _nightly_job(tmp_path: Path) -> tuple[Path, Path, Path]:
    import yaml

    data = tmp_path / "outputs"
    cfg = tmp_path / "score.yaml"
    cfg.write_text(yaml.safe_dump(config({"layout": "records", "paths": str(data / "in-*.jsonl")}, tmp_path / "x",
                                         execution=EX)))
    job = tmp_path / "nightly.yaml"
    root = tmp_path / "nightly"
    job.write_text(yaml.safe_dump({"name": "n", "config": str(cfg), "schedule": "30 2 * * *",
                                   "output_root": str(root), "compare": False}))
    return data, job, root


def test_nightly_opens_the_previous_night_once(previous, tmp_path, monkeypatch, capsys):
    from pipeline.runfolder import whole

    data, job, root = _nightly_job(tmp_path)
    _write(data, previous["recs"])
    assert main(["nightly", str(job), "--date", "2026-08-14", "--sync"]) == 0
    opened = []
    listing = whole.check_listing
    monkeypatch.setattr(whole, "check_listing", lambda url, *a: (opened.append(url), listing(url, *a))[1])
    assert main(["nightly", str(job), "--date", "2026-08-15", "--sync"]) == 0
    capsys.readouterr()
    assert json.loads((root / "2026-08-15" / "_summary.json").read_text())["rows_reused"] == len(previous["recs"])
    assert opened.count(str(root / "2026-08-14")) == 1, opened


def test_nightly_scores_the_night_whole_when_the_previous_night_is_not(previous, tmp_path, capsys):
    data, job, root = _nightly_job(tmp_path)
    _write(data, previous["recs"])
    assert main(["nightly", str(job), "--date", "2026-08-14", "--sync"]) == 0
    next((root / "2026-08-14" / "scores").rglob("part-*.parquet")).unlink()
    capsys.readouterr()
    assert main(["nightly", str(job), "--date", "2026-08-15", "--sync"]) == 0
    err = capsys.readouterr().err
    summary = json.loads((root / "2026-08-15" / "_summary.json").read_text())
    assert summary["rows_reused"] == 0 and summary["reuse"] is None and summary["rows"] == len(previous["recs"])
    said = [ln for ln in err.splitlines() if "nothing reused" in ln]
    assert len(said) == 1 and "part files the run wrote are missing" in said[0], err
