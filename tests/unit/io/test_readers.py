"""Every common Parquet reader opens ``RUN/scores`` whole and gets the right ``system`` column.

Real run folders (``--sync`` runs), with systems and without; the expected values are the
records written as input, never the run's own output."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from support.pipeline_corpus import config
from pipeline.config import RunConfig
from pipeline.execution.driver import RunFolderError, run

SYSTEMS = ["sysA", "1", "_under", "a b/c"]  # a number, a leading "_", characters escaped in the folder


def _run(tmp_path, name, records):
    src = tmp_path / f"{name}.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    out = tmp_path / name
    run(RunConfig.from_dict(config({"layout": "records", "paths": str(src)}, out)), None, progress=False,
        log=lambda m: None)
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("readers")
    with_systems = [{"id": f"d{i}", "system": s, "candidate": f"the cat {i} sat", "references": ["the cat sat"]}
                    for i in range(3) for s in SYSTEMS]
    no_system = [{"id": f"d{i}", "candidate": f"the cat {i} sat", "references": ["the cat sat"]} for i in range(4)]
    return {"systems": (_run(root, "systems", with_systems), with_systems),
            "none": (_run(root, "none", no_system), no_system)}


def _expected(records):
    return sorted((r.get("system", ""), r["id"]) for r in records)


def _readers():
    import dask.dataframe as dd
    import duckdb
    import pandas as pd
    import polars as pl
    import pyarrow.dataset as ds

    def pairs(systems, ids):
        return sorted(zip(map(str, systems), map(str, ids)))

    return {
        "pandas": lambda d: (lambda df: (df["system"].dtype, pairs(df["system"], df["id"])))(pd.read_parquet(d)),
        "pyarrow.parquet": lambda d: (lambda t: (t.schema.field("system").type,
                                                 pairs(t["system"].to_pylist(), t["id"].to_pylist())))(
            pq.read_table(d)),
        "pyarrow.dataset": lambda d: (lambda t: (t.schema.field("system").type,
                                                 pairs(t["system"].to_pylist(), t["id"].to_pylist())))(
            ds.dataset(d, format="parquet", partitioning="hive").to_table()),
        "dask": lambda d: (lambda df: (df["system"].dtype, pairs(df["system"], df["id"])))(
            dd.read_parquet(d).compute()),
        "polars": lambda d: (lambda df: (df.schema["system"], pairs(df["system"].to_list(), df["id"].to_list())))(
            pl.read_parquet(d)),
        "duckdb": lambda d: (lambda rel: (dict(zip(rel.columns, rel.types))["system"],
                                          pairs(*zip(*rel.fetchall()))))(
            duckdb.sql(f"select system, id from read_parquet('{d}/**/*.parquet')")),
    }


@pytest.mark.parametrize("case", ["systems", "none"])
@pytest.mark.parametrize("reader", ["pandas", "pyarrow.parquet", "pyarrow.dataset", "dask", "polars", "duckdb"])
def test_every_reader_reads_the_scores_folder(runs, case, reader):
    out, records = runs[case]
    dtype, got = _readers()[reader](str(out / "scores"))
    assert got == _expected(records)
    # a string column in every reader (no partition value typed as a number or a dictionary)
    assert "str" in str(dtype).lower() or str(dtype) in ("VARCHAR", "object"), dtype


def test_scores_folders_are_not_hive_partitions(runs):
    out, _ = runs["none"]
    assert [p.name for p in (out / "scores").iterdir()] == ["system-"]
    assert json.loads((out / "_run.json").read_text())["layout"] == 2


def test_a_folder_of_the_old_layout_is_refused(runs, tmp_path):
    import shutil

    from pipeline.gate.runs import CompareError, load_run
    from pipeline.execution.dataframe import read_run

    src, records = runs["systems"]
    old = tmp_path / "old"
    shutil.copytree(src, old)
    info = json.loads((old / "_run.json").read_text())
    del info["layout"]  # what rouge-pipeline wrote before layout 2
    (old / "_run.json").write_text(json.dumps(info))
    with pytest.raises(CompareError, match="older rouge-pipeline"):
        load_run(str(old))
    with pytest.raises(ValueError, match="older rouge-pipeline"):
        read_run(str(old))
    src_file = src.parent / "systems.jsonl"
    cfg = RunConfig.from_dict(config({"layout": "records", "paths": str(src_file)}, old))
    with pytest.raises(RunFolderError, match="older rouge-pipeline"):
        run(cfg, None, progress=False, log=lambda m: None)
