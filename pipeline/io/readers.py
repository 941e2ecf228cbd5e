"""Every input layout -> the canonical example table (fsspec + Arrow; never Dask).

Layouts (``InputSpec.layout``):

``records``
    One dataset (``paths``: URLs, globs or folders) whose records hold ``id``,
    ``candidate``, ``references`` (a string or a list of strings) and optionally
    ``system`` and ``source``.  JSONL (plain, .gz, .bz2, .xz, .zst when
    ``zstandard`` is installed; compressed content without the extension is found by its
    magic bytes) or Parquet.  Column names are mapped with ``columns``.
    Without ``target_rows``, runs of small files of one format (in listing order) are packed
    into units of about ``records.PACK_BYTES`` listed bytes (``WorkUnit.files``); each row keeps
    its file and row, and quarantine reasons name them.

``paired``
    ``candidates`` and ``references`` are separate datasets joined by id (the
    references side's id column is ``columns["reference_id"]``, default
    ``columns["id"]``).  References are shared by every system of the candidate side.
    A references-side id that occurs on several rows contributes all of them, in
    (file, row) order: one-reference-per-row datasets work as they are.
    **Join strategy**: :func:`plan_units` reads the id column of both sides once
    (only that column for Parquet; JSONL lines must be parsed), builds an
    ``id -> (file, row)`` index of the references side and makes one unit per
    candidate shard (or row slice of it, with ``target_rows``).  Each unit carries the
    exact row ranges of the reference rows it needs (run-length encoded, so an aligned
    sharding costs one range per unit), and :func:`read_unit` reads only those.  The
    index lives in the planner's memory only (about 100 bytes per reference row).
    Ids present on one side only are reported as quarantine rows:
    ``no references for id`` (by the unit reading that candidate row) and
    ``no candidate for id`` (planned, emitted by one deterministic unit).  A reference row
    with a good id but bad references or source is a quarantine row of its own, emitted by
    the first unit that reads it (``WorkUnit.ref_report``), also when its id has good rows.

``lines``
    The rouge-score CLI layout: plain text files, one example per line.  Candidate
    files and reference files are sorted and paired by position (as rouge-score's
    ``glob`` + ``sorted``), within each system.  ``system_from``: ``None`` (no
    system), ``"stem"`` (each candidate file is one system, named by its file stem)
    or ``"folder"`` (system = the candidate file's folder name).  Line ``k`` of the
    candidate file pairs with line ``k`` of the reference file; the id is
    ``"<reference file stem>:<k>"`` with ``k`` 1-based (the reference name, so the
    same example has the same id in every system); where two reference files share a
    stem, their path relative to the folder holding every reference file replaces the
    stem (``testA/ref:3``, :func:`line_id_prefixes`).  Different line counts are an
    error naming both files, raised at plan time.  Lines are split on ``"\\n"``
    (a trailing ``"\\r"`` is removed, as Python's text mode does); a final newline
    does not start a record.

``folders``
    ROUGE-1.5.5 / pyrouge folders: ``candidates`` (system summary folders) and one
    ``references`` folder, files matched by ``system_filename_pattern`` and
    ``model_filename_pattern`` (``#ID#``), one sentence per line: :mod:`pipeline.io.folders`.

Rows: ``row`` is the 0-based row index in its file (for JSONL and text the line
number is ``row + 1``; messages say ``line N``).  Blank JSONL lines are skipped (they
are not records).  Bad records (malformed JSON, wrong types, null/missing candidate or
references, empty reference list, invalid UTF-8, duplicate ``(system, id)`` within the
unit: the later rows) become quarantine rows whose reason names the file and line,
never a crash.  Duplicates *across* units (shards, or row slices of one shard) are
found from the key hashes the job's wave 1 returns (:mod:`pipeline.job.dedup`; the exact
search :func:`find_duplicates` is its specification, checked against it in the tests), which
keeps the first occurrence in (file, row) order and passes the later rows to their unit as
``WorkUnit.drop_rows``.  Integer ids (and systems) are accepted and converted to strings.
Configuration errors (unknown column, missing Parquet column, glob matching nothing,
different line counts) raise, as do files that cannot be decoded at all (corrupt or
truncated compression, not Parquet, a folder where a file is expected):
:class:`UnreadableFileError` (a ``ValueError`` naming the file).  Storage errors stay
``OSError`` so that callers can retry them.
"""
from __future__ import annotations

import difflib
from typing import Callable, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.io import folders, lines, paired, records
from pipeline.io.canonical import Out, location, parse_json_line
from pipeline.io.paths import expand, infer_format, list_folder, listed_size
from pipeline.io.input_spec import ROW_KEY_BITS, InputSpec, WorkUnit
from pipeline.io.streams import iter_lines, open_input, reading


class Layout(NamedTuple):
    """One input layout (``input_spec.LAYOUTS`` names them): how its files become units, and how a
    unit becomes rows."""
    plan: Callable[[InputSpec, int | None], list[WorkUnit]]
    read: Callable[[InputSpec, WorkUnit, Out], None]


READERS = {
    "records": Layout(records.plan_records, records.read_records),
    "paired": Layout(paired.plan_paired, paired.read_paired),
    "lines": Layout(lines.plan_lines, lines.read_lines),
    "folders": Layout(folders.plan_folders, folders.read_folders),
}


def _check_target_rows(target_rows):
    if target_rows is not None and (isinstance(target_rows, bool) or not isinstance(target_rows, int)
                                    or target_rows <= 0):
        raise ValueError(f"target_rows: expected a positive integer or None, got {target_rows!r}")


def plan_units(spec: InputSpec | dict, target_rows: int | None = None) -> list["WorkUnit"]:
    """Deterministic list of work units for ``spec`` (see the module docstring)."""
    spec = InputSpec.from_config(spec)
    _check_target_rows(target_rows)
    return READERS[spec.layout].plan(spec, target_rows)


def listed_sizes(spec: InputSpec | dict) -> dict[str, int | None]:
    """``{file URL: size in bytes}`` of every file the input names (layout ``folders``: every
    file of its folders), from the listing alone: no file is opened, nothing is planned."""
    spec = InputSpec.from_config(spec)
    so = spec.storage_options
    out: dict[str, int | None] = {}
    for field in ("paths", "candidates", "references"):
        urls = getattr(spec, field)
        if spec.layout == "folders":
            for folder in urls:
                out.update((url, entry.get("size")) for _, url, entry in list_folder(folder, so, f"input.{field}"))
        elif urls:
            info: dict = {}
            out.update((url, listed_size(info, url)) for url in expand(urls, so, f"input.{field}", info=info))
    return out


# --------------------------------------------------------------------------- duplicates across units
def unit_keys(table: pa.Table, unit: WorkUnit | None = None) -> pa.Table:
    """The ``(system, id, row)`` columns of a unit's canonical table (what the duplicate search
    across units hashes and compares: :mod:`pipeline.job.dedup`); for a pack, ``row`` holds the row
    keys (:meth:`WorkUnit.row_key`)."""
    keys = table.select(["system", "id", "row"])
    if unit is None or not unit.files:
        return keys
    position = pc.index_in(table.column("file"), value_set=pa.array(unit.files, pa.string())).cast(pa.int64())
    row_key = pc.bit_wise_or(pc.shift_left(position, ROW_KEY_BITS), keys.column("row"))
    return keys.set_column(2, "row", row_key)


def find_duplicates(units: list["WorkUnit"], keys: list[pa.Table]) -> dict[int, tuple[tuple[int, str], ...]]:
    """Cross-unit duplicate ``(system, id)``: ``{unit index: ((row, where the first is), ...)}``.

    ``keys[k]`` is :func:`unit_keys` of unit ``k``'s canonical table (within-unit duplicates
    are already gone; ``row``: the row keys that ``WorkUnit.drop_rows`` takes).  The first occurrence in (unit order = file order, row order) is
    kept; every later one is listed for its unit.  Deterministic: depends on the data only.
    Memory: the ids of the whole corpus, as Arrow columns (no Python object per row).
    """
    if len(units) != len(keys):
        raise ValueError(f"{len(units)} units but {len(keys)} key tables")
    if not keys:
        return {}
    parts = []
    for k, t in enumerate(keys):
        t = t.select(["system", "id", "row"]).cast(pa.schema([("system", pa.string()), ("id", pa.string()),
                                                             ("row", pa.int64())]))
        parts.append(t.append_column("unit", pa.array(np.full(t.num_rows, k, dtype=np.int64))))
    allk = pa.concat_tables(parts).combine_chunks()
    if allk.num_rows < 2:
        return {}
    allk = allk.append_column("pos", pa.array(np.arange(allk.num_rows, dtype=np.int64)))
    groups = allk.group_by(["system", "id"], use_threads=False).aggregate([("pos", "min"), ("pos", "count")])
    dup = groups.filter(pc.greater(groups.column("pos_count"), 1))
    if dup.num_rows == 0:
        return {}
    joined = allk.join(dup.select(["system", "id", "pos_min"]), keys=["system", "id"], use_threads=False)
    later = joined.filter(pc.not_equal(joined.column("pos"), joined.column("pos_min")))
    unit_col = allk.column("unit").to_numpy()
    row_col = allk.column("row").to_numpy()
    out: dict[int, list[tuple[int, str]]] = {}
    for u, row, first in sorted(zip(later.column("unit").to_pylist(), later.column("row").to_pylist(),
                                    later.column("pos_min").to_pylist())):
        fu = units[int(unit_col[first])]
        out.setdefault(int(u), []).append((int(row), location(*fu.locate(int(row_col[first])), fu.format)))
    return {u: tuple(v) for u, v in out.items()}


def read_unit(spec: InputSpec | dict, unit: WorkUnit) -> tuple[pa.Table, pa.Table]:
    """``(canonical table, quarantine table)`` for one work unit."""
    spec = InputSpec.from_config(spec)
    out = Out(unit.drop_rows, unit.files)
    for q in unit.extra_quarantine:
        out.quarantine(*q)
    layout = READERS.get(unit.layout)
    if layout is None:
        raise ValueError(f"unknown unit layout {unit.layout!r}")
    layout.read(spec, unit, out)
    return out.tables()


def read_lines(spec: InputSpec | dict, unit: WorkUnit) -> records.Lines | None:
    """A clean JSONL unit's lines and their digests, unparsed (:func:`records.read_lines`); None
    for any other unit (read it with :func:`read_unit`)."""
    if unit.layout != "records" or unit.extra_quarantine:
        return None
    return records.read_lines(InputSpec.from_config(spec), unit)


def parse_lines(spec: InputSpec | dict, unit: WorkUnit, lines: records.Lines, which) -> pa.Table | None:
    """The canonical rows of lines ``which`` of :func:`read_lines`, or None (read the unit whole)."""
    return records.parse_lines(InputSpec.from_config(spec), unit, lines, which)


# --------------------------------------------------------------------------- a run that scored nothing
# names a column mapping often has in other datasets (after difflib's close matches)
_COLUMN_SYNONYMS = {
    "id": ("id", "key", "uid", "guid", "example_id", "doc_id", "idx", "index"),
    "candidate": ("candidate", "prediction", "predictions", "pred", "hypothesis", "hyp", "output", "generated",
                  "summary", "generation", "system_output"),
    "references": ("references", "reference", "refs", "ref", "target", "targets", "gold", "highlights",
                   "summary", "summaries", "label", "abstract"),
    # optional: suggested only from these names (difflib would take "system_output" for it)
    "system": ("system", "model", "model_name", "model_id", "system_name", "system_id", "sys", "method",
               "engine", "generator", "checkpoint", "run", "run_name"),
}


def first_fields(urls: tuple[str, ...], declared: str, so: dict, n_records: int = 5) -> list[str]:
    """The fields of the first records of the first non-empty file among ``urls`` (best effort)."""
    try:
        files = expand(urls, so)
    except (OSError, ValueError):
        return []
    for url in files[:5]:
        try:
            fmt = infer_format(url, declared)
            if fmt == "parquet":
                with reading(url, parquet=True), open_input(url, so) as f:
                    return list(pq.ParquetFile(f).schema_arrow.names)
            if fmt != "jsonl":
                return []
            fields: dict[str, None] = {}
            seen = 0
            for k, (row, raw) in enumerate(iter_lines(url, so, 0, 200)):
                rec, _ = parse_json_line(raw, row)
                if isinstance(rec, dict):
                    fields.update(dict.fromkeys(map(str, rec)))
                    seen += 1
                    if seen >= n_records:
                        break
            if fields:
                return list(fields)
        except (OSError, ValueError):
            continue
    return []


def likely_field(col: str, key: str, fields: list[str]) -> str | None:
    """The field among ``fields`` that probably holds ``key`` (named ``col`` by the mapping):
    difflib's closest, then a name common in other datasets; for ``system``, only the latter."""
    close = [] if key == "system" else difflib.get_close_matches(col, fields, n=1, cutoff=0.6)
    if not close:
        close = [f for f in fields if f.lower() in _COLUMN_SYNONYMS.get(key.replace("reference_id", "id"), ())]
    return close[0] if close else None


def _system_hint(spec: InputSpec, fields: list[str], taken: set) -> str | None:
    """``input.columns.system=FIELD`` when the records have a field that looks like a system name
    and the mapping names none of theirs."""
    if spec.col("system") in fields:
        return None
    guess = likely_field(spec.col("system"), "system", [f for f in fields if f not in taken])
    return None if guess is None else f"input.columns.system={guess}"


def field_hints(spec: InputSpec | dict) -> list[str]:
    """For a run that scored no row: the fields found in the first records of each side and,
    for each column the mapping asks for that is not there, a "did you mean" (difflib, then
    names common in other datasets).  Empty for the text layouts."""
    spec = InputSpec.from_config(spec)
    if spec.layout == "records":
        sides = [("input.paths", spec.paths, spec.format, ("id", "candidate", "references"))]
    elif spec.layout == "paired":
        sides = [("input.candidates", spec.candidates, spec.format, ("id", "candidate")),
                 ("input.references", spec.references, spec.reference_format, ("reference_id", "references"))]
    else:
        return []
    out, sets = [], []
    for name, urls, declared, keys in sides:
        fields = first_fields(urls, declared, spec.storage_options)
        if not fields:
            continue
        shown = ", ".join(fields[:12]) + (", …" if len(fields) > 12 else "")
        out.append(f"fields in the first records of {name}: {shown}")
        taken = {spec.col(k) for k in keys}
        for key in keys:
            col = spec.col(key)
            if col in fields:
                continue
            guess = likely_field(col, key, [f for f in fields if f != col])
            out.append(f"no field {col!r} for {key}" + (f"; did you mean --set input.columns.{key}={guess}?"
                                                          if guess else ""))
            if guess:
                sets.append(f"input.columns.{key}={guess}")
                taken.add(guess)
        system = _system_hint(spec, fields, taken) if "candidate" in keys else None
        if system:
            out.append(f"the records may hold several systems: did you mean --set {system}?")
            sets.append(system)
    if len(sets) > 1:
        out.append("all together: " + " ".join(f"--set {x}" for x in sets))
    return out


def duplicate_warning(spec: InputSpec | dict, rows: int, reasons: dict) -> str | None:
    """For a run whose quarantine is mostly ``duplicate id`` rows: how many, and that a system
    field is probably unmapped (with the ``--set`` naming it, when the records have a likely one).
    None otherwise."""
    dups = reasons.get("duplicate id", 0)
    if not dups or 2 * dups <= sum(reasons.values()):
        return None
    spec = InputSpec.from_config(spec)
    head = (f"{dups} of {rows + sum(reasons.values())} records were quarantined as a repeated (system, id): "
            "their scores are in no statistic")
    if spec.layout not in ("records", "paired"):
        return head
    urls = spec.paths if spec.layout == "records" else spec.candidates
    fields = first_fields(urls, spec.format, spec.storage_options)
    if spec.col("system") in fields:
        return head + f"; each (system, id) must be unique (system field {spec.col('system')!r})"
    taken = {spec.col(k) for k in ("id", "candidate", "references")}
    system = _system_hint(spec, fields, taken)
    if system:
        return head + f"; a system field is probably unmapped: did you mean --set {system}?"
    shown = f" (fields: {', '.join(fields[:12])})" if fields else ""
    return head + f"; if the input holds several systems, a system field is probably unmapped: " \
                  f"--set input.columns.system=FIELD{shown}"
