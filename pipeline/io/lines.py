"""Layout ``lines`` (the rouge-score CLI layout): plain text files, one example per line,
candidate and reference files paired by sorted name (see :mod:`pipeline.io.readers`).
"""
from __future__ import annotations

import collections
import itertools
import posixpath

from pipeline.errors import InputChangedError
from pipeline.io.canonical import Out
from pipeline.io.paths import compression_of, expand, file_stem, infer_format, listed_size, parent_name
from pipeline.io.input_spec import InputSpec, WorkUnit
from pipeline.io.streams import iter_lines, row_ranges, scan_lines


def plan_lines(spec: InputSpec, target_rows):
    so = spec.storage_options
    info: dict = {}   # the listing's entries: each file's size, checked by the reader
    cand_files = expand(spec.candidates, so, "input.candidates", info=info)
    ref_files = expand(spec.references, so, "input.references", info=info)
    groups: dict[str, list[str]] = {}
    for url in cand_files:
        if spec.system_from == "stem":
            system = file_stem(url)
        elif spec.system_from == "folder":
            system = parent_name(url)
        else:
            system = ""
        groups.setdefault(system, []).append(url)
    for url in cand_files + ref_files:
        infer_format(url, spec.format, default="text")
        compression_of(url)
    units = []
    ref_scans: dict[str, tuple[int, list[int] | None]] = {}
    prefixes = line_id_prefixes(ref_files)
    for system in sorted(groups):
        cands = groups[system]
        if len(cands) != len(ref_files):
            raise ValueError(
                f"layout 'lines': {len(cands)} candidate file(s)"
                + (f" for system {system!r}" if spec.system_from is not None else "")
                + f" but {len(ref_files)} reference file(s); they are paired by sorted name "
                f"(candidates: {cands[:3]}{'…' if len(cands) > 3 else ''}; "
                f"references: {ref_files[:3]}{'…' if len(ref_files) > 3 else ''})")
        for c_url, r_url in zip(cands, ref_files):
            n_c, c_starts = scan_lines(c_url, so, target_rows)
            if r_url not in ref_scans:
                ref_scans[r_url] = scan_lines(r_url, so, target_rows)
            n_r, r_starts = ref_scans[r_url]
            if n_c != n_r:
                raise ValueError(f"layout 'lines': {c_url} has {n_c} lines but {r_url} has {n_r}; "
                                 "line k of the candidates must pair with line k of the references")
            for k, (a, b) in enumerate(row_ranges(n_c, target_rows)):
                split = target_rows is not None and n_c > target_rows
                units.append(WorkUnit(
                    index=len(units), layout="lines", file=c_url, format="text", row_start=a,
                    row_stop=b if split else None,
                    byte_start=c_starts[k] if split and c_starts else None,
                    byte_stop=c_starts[k + 1] if split and c_starts else None,
                    ref_files=(r_url,), ref_format="text", ref_ranges=((0, a, b),),
                    ref_bytes=(r_starts[k], r_starts[k + 1]) if split and r_starts else None,
                    system=system, n_rows=b - a, id_prefix=prefixes[r_url],
                    n_bytes=listed_size(info, c_url), ref_sizes=(listed_size(info, r_url),)))
    return units


def line_id_prefixes(ref_files: list[str]) -> dict[str, str]:
    """The id prefix of each reference file of layout ``lines``: its stem where no other
    reference file has that stem, else its path relative to the folder that holds every
    reference file (``testA/ref``; with the extensions where even that is ambiguous), so
    ids stay unique when two test sets' reference files share a name."""
    stems = {u: file_stem(u) for u in ref_files}
    count = collections.Counter(stems.values())
    clash = [u for u in ref_files if count[stems[u]] > 1]
    if not clash:
        return stems
    root = posixpath.commonpath([posixpath.dirname(u.split("://", 1)[-1]) for u in ref_files])

    def rel(u: str) -> str:
        return posixpath.relpath(u.split("://", 1)[-1], root)

    def no_ext(u: str) -> str:
        r = rel(u)
        return posixpath.join(posixpath.dirname(r), stems[u])

    short = collections.Counter(no_ext(u) for u in clash)
    out = dict(stems)
    for u in clash:
        out[u] = no_ext(u) if short[no_ext(u)] == 1 else rel(u)
    return out


def read_lines(spec: InputSpec, unit: WorkUnit, out: Out) -> None:
    so = spec.storage_options
    r_url = unit.ref_files[0]
    _, a, b = unit.ref_ranges[0]
    rb = unit.ref_bytes or (None, None)
    r_size = unit.ref_sizes[0] if unit.ref_sizes else None
    c_lines = iter_lines(unit.file, so, unit.row_start, unit.row_stop, unit.byte_start, unit.byte_stop, unit.n_bytes,
                         planned=True)
    r_lines = iter_lines(r_url, so, a, b if unit.row_stop is not None else None, rb[0], rb[1], r_size, planned=True)
    stem = file_stem(r_url) if unit.id_prefix is None else unit.id_prefix
    sentinel = (None, None)
    for (c_row, c_raw), (r_row, r_raw) in itertools.zip_longest(c_lines, r_lines, fillvalue=sentinel):
        if c_row is None or r_row is None:
            raise InputChangedError(f"layout 'lines': {unit.file} and {r_url} have different line counts "
                                    "(changed since planning?)")
        id_ = f"{stem}:{c_row + 1}"
        try:
            cand = c_raw.decode("utf-8")
        except UnicodeDecodeError as e:
            out.quarantine(id_, unit.system, unit.file, c_row,
                           f"{unit.file} line {c_row + 1}: invalid UTF-8 at byte {e.start}")
            continue
        try:
            ref = r_raw.decode("utf-8")
        except UnicodeDecodeError as e:
            out.quarantine(id_, unit.system, unit.file, c_row,
                           f"references {r_url} line {r_row + 1}: invalid UTF-8 at byte {e.start}")
            continue
        out.add(id_, unit.system, cand, [ref], None, c_row, unit.file, f"{unit.file} line {c_row + 1}")
