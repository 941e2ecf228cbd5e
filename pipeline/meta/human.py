"""Human judgments by ``(system, id)`` from a file (JSONL, CSV or Parquet; local or any fsspec
URL; compressed JSONL by its extension), the judged JSONL itself included.

``field`` names the judgment: a column or key as written (``relevance``, or a CSV column literally
named ``human.relevance``), else a dotted path into nested records (``human.relevance``); a list
on the path is walked element by element (``expert_annotations.relevance`` reads every
annotator's score of a SummEval record).  **Aggregation**: every number found for a
``(system, id)`` -- the elements of a list, and the values of several records with the same key
-- is one annotation, and the human score is their mean (``human_agg`` of the signature); how many
records were pooled for a key is its ``n_rows`` (``correlate`` reports the keys with several).
Records without the field (or with null) are not judged; a value that is not a number (or a list
of numbers) is an error naming the record.  A record without ``system`` belongs to the system
``""``, as in the run.
"""
from __future__ import annotations

import json
import math

import pandas as pd

from pipeline.errors import MetaError
from pipeline.io.paths import compression_of, get_fs, split_compression

AGGREGATION = "mean"
_MISSING = object()


def _records(url: str, storage_options: dict | None) -> list[dict]:
    fs, path = get_fs(url, storage_options)
    if not fs.exists(path):
        raise MetaError(f"--human {url}: no such file")
    ext = split_compression(url)[0].rsplit(".", 1)[-1].lower()
    if ext in ("parquet", "pq"):
        import pyarrow.parquet as pq  # Arrow only for a Parquet file

        with fs.open(path, "rb") as f:
            return pq.read_table(f).to_pylist()
    if ext in ("csv", "tsv"):
        with fs.open(path, "rb", compression=compression_of(url)) as f:
            return pd.read_csv(f, sep="\t" if ext == "tsv" else ",", dtype={"id": str, "system": str}).to_dict("records")
    out = []
    with fs.open(path, "rt", encoding="utf-8", compression=compression_of(url)) as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise MetaError(f"--human {url}: line {n}: not JSON ({e.msg})") from None
    return out


def lookup(record, field: str):
    """The value of ``field`` in ``record`` (see the module docstring); ``_MISSING`` when absent."""
    if isinstance(record, dict) and field in record:
        return record[field]
    head, dot, rest = field.partition(".")
    if isinstance(record, list):
        found = [lookup(r, field) for r in record]
        return [v for v in found if v is not _MISSING] or _MISSING
    if not dot or not isinstance(record, dict) or head not in record:
        return _MISSING
    return lookup(record[head], rest)


def numbers(value, where: str) -> list[float]:
    """The annotations in one found value: a number, or (nested) lists of numbers; null: none."""
    if value is None or value is _MISSING:
        return []
    if isinstance(value, list):
        return [v for item in value for v in numbers(item, where)]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MetaError(f"{where}: {value!r} is not a number")
    return [] if math.isnan(value) else [float(value)]


def read_human(url: str, field: str, storage_options: dict | None = None, system_field: str = "system",
               id_field: str = "id") -> pd.DataFrame:
    """``system``, ``id``, ``human`` (the mean annotation), ``n_annotations`` and ``n_rows`` (the
    records pooled), one row per judged ``(system, id)``, sorted."""
    records = _records(str(url), storage_options)
    return judgments(records, field, f"--human {url}", system_field, id_field)


def judgments(records: list[dict], field: str, where: str, system_field: str = "system",
              id_field: str = "id") -> pd.DataFrame:
    """:func:`read_human` on records already read (``where`` names them in errors)."""
    pooled: dict[tuple[str, str], list[float]] = {}
    n_rows: dict[tuple[str, str], int] = {}
    for n, rec in enumerate(records, 1):
        if not isinstance(rec, dict) or rec.get(id_field) is None:
            raise MetaError(f"{where}: record {n} has no {id_field!r}")
        vals = numbers(lookup(rec, field), f"{where}: record {n}: {field}")
        system = rec.get(system_field)
        key = ("" if system is None or system != system else str(system), str(rec[id_field]))
        if vals:
            pooled.setdefault(key, []).extend(vals)
            n_rows[key] = n_rows.get(key, 0) + 1
    if not pooled:
        keys = sorted({k for r in records[:20] if isinstance(r, dict) for k in r})
        raise MetaError(f"{where}: no record has a number in {field!r} (fields: {', '.join(keys) or 'none'})")
    rows = sorted((s, i, sum(v) / len(v), len(v), n_rows[(s, i)]) for (s, i), v in pooled.items())
    return pd.DataFrame(rows, columns=["system", "id", "human", "n_annotations", "n_rows"])
