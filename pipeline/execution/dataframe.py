"""Dask DataFrame in, Dask DataFrame out, for users who already have a Dask pipeline.

```python
import dask.dataframe as dd
from pipeline.execution.dataframe import score_dataframe, corpus_statistics, read_run

ddf = dd.read_parquet("s3://bucket/corpus/")            # columns: id, system, candidate, references
scored = score_dataframe(ddf, rouge_types=["rouge1", "rougeL"], use_stemmer=True)
rows = corpus_statistics(scored, rouge_types=["rouge1", "rougeL"])   # tree-reduced on the workers
scores = read_run("s3://bucket/runs/nightly")          # a finished run's per-example scores
```
"""
from __future__ import annotations

import ast

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
from dask import delayed

from pipeline import job
from pipeline.config import ConfigError
from pipeline.errors import ColumnError, RunFolderError
from pipeline.runfolder import read as run_folder
from pipeline.scoring.types import DEFAULT_TYPES
from pipeline.stats import StatsAccumulator
from pipeline.stats.keys import DEFAULT_SEED, KEY_SEPARATOR, example_key


def _settings(rouge_types, use_stemmer, tokenizer, sentence_splitter, **options) -> job.ScoringSettings:
    """The run configuration's ``scoring`` settings, validated as a config file's are."""
    if isinstance(rouge_types, str):
        rouge_types = [rouge_types]
    try:
        return job.ScoringSettings(rouge_types=list(rouge_types), use_stemmer=bool(use_stemmer), tokenizer=tokenizer,
                                   sentence_splitter=sentence_splitter, **options)
    except ConfigError as e:
        raise ValueError(str(e)) from None


def _score_columns(settings: job.ScoringSettings) -> dict:
    cols = {"n_refs": "int32", "cand_tokens": "int64", "ref_tokens": "int64"}
    for t in settings.rouge_types:
        for s in job.STATS:
            cols[f"{t}_{s}"] = "float64"
    return cols


def _as_refs(v):
    if isinstance(v, str):
        return v
    return [str(x) for x in v]


def _is_list_text(v) -> bool:
    if not (isinstance(v, str) and len(v) > 1 and v[0] == "[" and v[-1] == "]"):
        return False
    try:
        parsed = ast.literal_eval(v)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return False
    return isinstance(parsed, list) and all(isinstance(x, str) for x in parsed)


def _check_not_stringified(col: pd.Series, column: str) -> None:
    """Refuse references that are the text of Python lists: ``dd.from_pandas`` turns an object
    column of lists into their ``str()`` (``dataframe.convert-string``), which would be scored
    as one reference.  Only a column of a string dtype (what the conversion gives) whose every
    value is such a text is refused: a reference that merely looks like a list is real text."""
    if not isinstance(col.dtype, pd.StringDtype) and not (
            isinstance(col.dtype, pd.ArrowDtype) and pa.types.is_string(col.dtype.pyarrow_dtype)):
        return
    values = [v for v in col if isinstance(v, str)]
    if values and all(_is_list_text(v) for v in values):
        raise ValueError(
            f"the {column!r} column holds the text of a Python list ({values[0][:60]!r}): Dask turned a "
            "column of lists into strings (dataframe.convert-string, e.g. in dd.from_pandas). Keep "
            "it a list column: pass pd.ArrowDtype(pa.list_(pa.string())) before dd.from_pandas, or "
            "dask.config.set({'dataframe.convert-string': False}), or read it with dd.read_parquet")


def score_pandas(df: pd.DataFrame, settings: job.ScoringSettings, candidate: str = "candidate",
                 references: str = "references") -> pd.DataFrame:
    """One partition: ``df`` plus ``n_refs``, token counts and ``<type>_<stat>`` columns."""
    cols = _score_columns(settings)
    out = df.copy()
    if len(df) == 0:
        for name, dtype in cols.items():
            out[name] = pd.Series([], dtype=dtype, index=df.index)
        return out
    scorer = job.scorer_for(settings)
    refs = [_as_refs(r) for r in df[references]]
    _check_not_stringified(df[references], references)
    res = scorer.score_arrays(refs, [str(c) for c in df[candidate]])
    out["n_refs"] = res.n_refs.astype(np.int32)
    out["cand_tokens"] = res.cand_len.astype(np.int64)
    out["ref_tokens"] = res.ref_len.astype(np.int64)
    for t, name in enumerate(settings.rouge_types):
        for k, stat in enumerate(job.STATS):
            out[f"{name}_{stat}"] = res.scores[:, t, k]
    return out


def score_dataframe(ddf, rouge_types=DEFAULT_TYPES, use_stemmer: bool = False, tokenizer: str = "default",
                    sentence_splitter: str = "newline", candidate: str = "candidate",
                    references: str = "references", *, profile: str = "rouge-score-0.1.2", language: str = "en",
                    multi_ref: str | None = None, alpha: float = 0.5, stemming: str = "none", cjk: str = "chars"):
    """``ddf`` (a column of candidates and one of references: a string or a list of strings per
    row) -> the same Dask DataFrame plus score columns, via ``map_partitions`` with ``meta``.

    The scoring options are :func:`pipeline.compute`'s and a run's ``scoring`` section's
    (``tokenizer``: ``default`` | ``whitespace``).  With ``dataframe.convert-string`` on (Dask's
    default), ``dd.from_pandas`` turns a pandas *object* column of Python lists into strings;
    such a column is refused (ValueError, when the partition is scored) with how to keep it a
    list column (``pd.ArrowDtype(pa.list_(pa.string()))``, as ``read_parquet`` gives)."""
    settings = _settings(rouge_types, use_stemmer, tokenizer, sentence_splitter, profile=profile,
                         language=language, multi_ref=multi_ref, alpha=alpha, stemming=stemming, cjk=cjk)
    meta = ddf._meta.copy()
    for name, dtype in _score_columns(settings).items():
        meta[name] = pd.Series([], dtype=dtype, index=meta.index)
    return ddf.map_partitions(score_pandas, settings, candidate, references, meta=meta)


def _partition_stats(df: pd.DataFrame, rouge_types, seed, n_boot, id_col, system_col) -> dict:
    types = list(rouge_types)
    n = len(df)
    systems = [""] * n if system_col is None or system_col not in df else [str(s) for s in df[system_col]]
    ids = [str(i) for i in df[id_col]]
    mat = np.empty((n, len(types), 3), dtype=np.float64)
    for t, name in enumerate(types):
        for k, stat in enumerate(job.STATS):
            mat[:, t, k] = df[f"{name}_{stat}"].to_numpy(dtype=np.float64)
    bad = next((s for s in systems if KEY_SEPARATOR in s), None)
    if bad is not None:  # two different (system, id) pairs could then share one example key
        raise ValueError(f"system name {bad!r} contains U+001F, which separates system and id in example keys")
    keys = [example_key(s, i) for s, i in zip(systems, ids)]
    return StatsAccumulator.from_scores(keys, systems, mat, types, seed=seed, n_boot=n_boot).to_dict()


def _merge_dicts(*ds: dict) -> dict:
    return StatsAccumulator.merge_all(StatsAccumulator.from_dict(d) for d in ds).to_dict()


def corpus_statistics(scored, rouge_types=DEFAULT_TYPES, seed: int = DEFAULT_SEED, n_boot: int = 1000,
                      confidence: float = 0.95, id_col: str = "id", system_col: str | None = "system",
                      split_every: int = 8) -> list[dict]:
    """Corpus statistics of a scored Dask DataFrame: one accumulator per partition, merged as a
    tree of ``split_every`` on the workers; the same rows whatever the partitioning."""
    if isinstance(rouge_types, str):
        rouge_types = [rouge_types]
    level = [delayed(_partition_stats)(p, tuple(rouge_types), seed, n_boot, id_col, system_col)
             for p in scored.to_delayed()]
    while len(level) > 1:
        level = [delayed(_merge_dicts)(*level[i:i + split_every]) for i in range(0, len(level), split_every)]
    (final,) = dask.compute(level[0])
    return StatsAccumulator.from_dict(final).finalize(confidence)


def _read_part(url: str, listed: tuple, run_url: str, storage_options: dict, keep: list | None = None):
    # not named ``columns``: Dask passes a function with that argument its own column projection
    table = run_folder.read_part(url, storage_options)
    rel, rows = listed
    if rows is not None and table.num_rows != rows:
        raise RunFolderError(f"{run_url}: {rel} holds {table.num_rows} rows, the run wrote {rows}; "
                             "the run is not whole: score it again")
    return table.to_pandas() if keep is None else table.select(keep).to_pandas()


def read_run(run_url: str, storage_options: dict | None = None, columns: list | None = None):
    """A finished, whole run's per-example scores as a Dask DataFrame (one partition per part
    file); ``columns``: only these (as ``pandas.read_parquet``'s; one the run does not hold is a
    :class:`pipeline.errors.ColumnError` naming the ones it does).  Refused
    (:class:`pipeline.errors.RunFolderError`) without ``_SUCCESS`` or when the
    folder is not what its ``_summary.json`` lists (:func:`pipeline.runfolder.read.open_run`);
    each partition checks its rows when it is read.  Duplicate ``(system, id)`` are not looked
    for here (that needs every id: the gate's reader does it)."""
    so = storage_options or {}
    opened = run_folder.open_run(run_url, so)
    urls = opened.part_urls()
    if not urls:
        raise FileNotFoundError(f"{run_url}: no per-example scores")
    meta = run_folder.part_schema(urls[0], so).empty_table().to_pandas()
    if columns is not None:
        columns = [columns] if isinstance(columns, str) else list(columns)
        missing = [c for c in columns if c not in meta.columns]
        if missing:
            raise ColumnError(f"{run_url}: the run's scores have no column {', '.join(map(repr, missing))}; "
                              f"they have: {', '.join(meta.columns)}")
        meta = meta[columns]
    return dd.from_map(_read_part, urls, opened.part_rows(), args=(str(run_url), so, columns), meta=meta)
