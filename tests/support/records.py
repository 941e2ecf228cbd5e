"""Small records and the whole-input read the reader tests share (local and S3)."""
from __future__ import annotations

import pyarrow as pa

from pipeline.io.readers import plan_units, read_unit
from pipeline.io.input_spec import CANONICAL_SCHEMA, QUARANTINE_SCHEMA, InputSpec


def recs(n, start=0, system=None, refs=lambda i: [f"ref {i} a", f"ref {i} b"]):
    out = []
    for i in range(start, start + n):
        r = {"id": f"d{i}", "candidate": f"cand {i}", "references": refs(i)}
        if system is not None:
            r["system"] = system
        out.append(r)
    return out


def read_all(spec, target_rows=None):
    spec = InputSpec.from_config(spec)
    units = plan_units(spec, target_rows)
    tables, quarantines = [], []
    for u in units:
        t, q = read_unit(spec, u)
        assert t.schema == CANONICAL_SCHEMA
        assert q.schema == QUARANTINE_SCHEMA
        tables.append(t)
        quarantines.append(q)
    return units, pa.concat_tables(tables), pa.concat_tables(quarantines)
