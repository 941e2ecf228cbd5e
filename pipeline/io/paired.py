"""Layout ``paired``: candidates and references in separate JSONL/Parquet datasets, joined by
id (see :mod:`pipeline.io.readers` for the join strategy).
"""
from __future__ import annotations

import bisect

from pipeline.io.canonical import BadRecord, Out, get_id, get_refs, get_str, location
from pipeline.io.paths import expand, infer_format, listed_size
from pipeline.io.records import each_record, iter_records, shard_units
from pipeline.io.input_spec import InputSpec, WorkUnit
from pipeline.io.streams import row_ranges


def _runs(positions: list[tuple[int, int]]) -> tuple[tuple[int, int, int], ...]:
    """Sorted ``(file, row)`` positions -> ``(file, start, stop)`` runs."""
    out: list[list[int]] = []
    for fi, row in sorted(set(positions)):
        if out and out[-1][0] == fi and out[-1][2] == row:
            out[-1][2] = row + 1
        else:
            out.append([fi, row, row + 1])
    return tuple(tuple(r) for r in out)


def plan_paired(spec: InputSpec, target_rows):
    so = spec.storage_options
    cand_info: dict = {}
    ref_info: dict = {}   # the listing's entries: each file's size, checked by the readers
    cand_files = expand(spec.candidates, so, "input.candidates", info=cand_info)
    ref_files = expand(spec.references, so, "input.references", info=ref_info)
    ref_sizes = tuple(listed_size(ref_info, u) for u in ref_files)
    id_col, ref_id_col = spec.col("id"), spec.col("reference_id")

    # 1. references side: id -> [(file index, row)]; unreadable rows are reported now.
    ref_index: dict[str, list[tuple[int, int]]] = {}
    extra: list[tuple[int, tuple]] = []   # (ref file index, quarantine row)
    ref_fmts = []
    for fi, url in enumerate(ref_files):
        fmt = infer_format(url, spec.reference_format)
        if fmt not in ("jsonl", "parquet"):
            raise ValueError(f"{url}: layout 'paired' reads jsonl or parquet, not {fmt}")
        ref_fmts.append(fmt)
        for row, rec, err in iter_records(url, fmt, so, [ref_id_col],
                                           [("reference_id", ref_id_col)]):
            where = location(url, row, fmt)
            if err is not None:
                extra.append((fi, (None, None, url, row, f"{where}: references side: {err}")))
                continue
            try:
                rid = get_id(rec, ref_id_col)
            except BadRecord as b:
                extra.append((fi, (None, None, url, row, f"{where}: references side: {b.reason}")))
                continue
            ref_index.setdefault(rid, []).append((fi, row))
    if len(set(ref_fmts)) > 1:
        raise ValueError("input.references: mixed formats on the references side "
                         f"({', '.join(sorted(set(ref_fmts)))}); use one format")
    ref_fmt = ref_fmts[0]

    # 2. candidates side: ids per row, sliced into units.
    used: set[str] = set()
    planned = []
    for url in cand_files:
        fmt = infer_format(url, spec.format)
        if fmt not in ("jsonl", "parquet"):
            raise ValueError(f"{url}: layout 'paired' reads jsonl or parquet, not {fmt}")
        ids: list[str | None] = []
        for row, rec, err in iter_records(url, fmt, so, [id_col], [("id", id_col)]):
            while len(ids) < row:
                ids.append(None)   # blank lines
            rid = None
            if err is None:
                try:
                    rid = get_id(rec, id_col)
                except BadRecord:
                    pass
            ids.append(rid)
        n = len(ids)
        if fmt == "jsonl" and target_rows:
            slices = shard_units(url, fmt, so, target_rows)
        else:
            slices = [(a, b, None, None, b - a) for a, b in row_ranges(n, target_rows)]
        for a, b, ba, bb, n_rows in slices:
            b_eff = n if b is None else b
            need, report = [], []
            for rid in ids[a:b_eff]:
                if rid is not None and rid in ref_index:
                    if rid not in used:
                        used.add(rid)
                        report.extend(ref_index[rid])
                    need.extend(ref_index[rid])
            planned.append(dict(layout="paired", file=url, format=fmt, row_start=a,
                                row_stop=None if (a == 0 and b_eff == n) else b_eff,
                                byte_start=ba, byte_stop=bb, ref_files=tuple(ref_files), ref_format=ref_fmt,
                                ref_ranges=_runs(need), ref_report=_runs(report),
                                n_rows=n_rows if n_rows is not None else b_eff - a,
                                n_bytes=listed_size(cand_info, url), ref_sizes=ref_sizes))
    extras = _extras(extra, ref_index, used, ref_files, ref_fmt, len(planned))
    return [WorkUnit(index=i, extra_quarantine=tuple(extras.get(i, ())), **p) for i, p in enumerate(planned)]


def _extras(extra: list, ref_index: dict, used: set, ref_files: list, ref_fmt: str, n_units: int) -> dict:
    """``{unit index: quarantine rows}``: the references side's bad rows (``extra``) and those
    of ids no candidate asks for, each reported once, spread over the units by reference file."""
    extra = list(extra)
    for rid, positions in ref_index.items():
        if rid not in used:
            for fi, row in positions:
                url = ref_files[fi]
                extra.append((fi, (rid, None, url, row,
                                   f"{location(url, row, ref_fmt)}: no candidate for id {rid!r}")))
    extras: dict[int, list[tuple]] = {}
    for fi, q in sorted(extra, key=lambda e: (e[0], e[1][3])):
        extras.setdefault(fi % n_units, []).append(q)
    return extras


def read_paired(spec: InputSpec, unit: WorkUnit, out: Out) -> None:
    so = spec.storage_options
    c = {k: spec.col(k) for k in ("references", "source", "reference_id")}
    # references side: only the planned rows
    refs: dict[str, list[str]] = {}
    ref_err: dict[str, str] = {}
    ref_source: dict[str, str | None] = {}
    rfmt = unit.ref_format
    for fi, a, b in unit.ref_ranges:
        r_url = unit.ref_files[fi]
        size = unit.ref_sizes[fi] if unit.ref_sizes else None
        for row, rec, err in iter_records(r_url, rfmt, so, [c["reference_id"], c["references"], c["source"]],
                                           [("reference_id", c["reference_id"]), ("references", c["references"])],
                                           a, b, size=size):
            if err is not None:
                continue   # reported at plan time
            try:
                rid = get_id(rec, c["reference_id"])
            except BadRecord:
                continue   # reported at plan time
            where = location(r_url, row, rfmt)
            try:
                r = get_refs(rec, c["references"])
                src = get_str(rec, c["source"], "source", False)
            except BadRecord as bad:
                ref_err.setdefault(rid, f"references side {where}: {bad.reason}")
                if _in_runs(unit.ref_report, fi, row):
                    out.quarantine(rid, None, r_url, row, f"{where}: references side: {bad.reason}")
                continue
            refs.setdefault(rid, []).extend(r)
            if ref_source.get(rid) is None:
                ref_source[rid] = src
    url = unit.file
    for row, where, id_, system, cand, _, source in each_record(spec, unit, out, False):
        if id_ in ref_err and id_ not in refs:
            out.quarantine(id_, system, url, row, f"{where}: {ref_err[id_]}")
            continue
        r = refs.get(id_)
        if r is None:
            out.quarantine(id_, system, url, row, f"{where}: no references for id {id_!r}")
            continue
        out.add(id_, system, cand, list(r), source if source is not None else ref_source.get(id_),
                row, url, where)


def _in_runs(runs: tuple[tuple[int, int, int], ...], fi: int, row: int) -> bool:
    """Is ``(fi, row)`` in the sorted ``(file, start, stop)`` runs?"""
    k = bisect.bisect_right(runs, (fi, row, float("inf"))) - 1
    return k >= 0 and runs[k][0] == fi and runs[k][1] <= row < runs[k][2]
