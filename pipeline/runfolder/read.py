"""The run folder's one reader: every consumer of a run (the gate, ``show``, ``read_run``, the
run's own end) reads it through this module, which takes every name from :mod:`.names`.

* :func:`open_run` opens a run for reading: finished (``_SUCCESS``), with a ``_run.json`` of this
  layout, whole (:mod:`.whole`: its folder against its ``_summary.json``, from one listing);
  :meth:`OpenedRun.scores` checks the rows it reads (per part, in all, no ``(system, id)``
  twice).  Every consumer gets these checks by reading through here.
* The pieces, each None when its file is not there: :func:`read_summary`, :func:`read_stats`,
  :func:`read_exact`, :func:`read_scores` (one system's), :func:`read_all_scores` (every
  system's); :func:`score_files` lists the part files in the order they are read.

fsspec and Arrow only; never Dask (``read_run`` hands :func:`score_part_urls` and
:func:`read_part` to Dask itself).
"""
from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.io import writers
from pipeline.io.paths import check_scheme, get_fs
from pipeline.runfolder import names, whole
from pipeline.errors import RunFolderError
from pipeline.runfolder.folder import check_layout, read_run_info
from pipeline.runfolder.names import EXACT_JSON, RUN_INFO, SCORES, STATS_JSON, SUCCESS, SUMMARY, url


# --------------------------------------------------------------------------- is it finished
def is_complete(run_url: str, storage_options: dict | None = None) -> bool:
    """Whether the run at ``run_url`` finished (its ``_SUCCESS`` is there)."""
    check_scheme(run_url, "output")
    fs, path = get_fs(url(run_url, SUCCESS), storage_options)
    return bool(fs.exists(path))


def has_success(fs, path: str) -> bool:
    """:func:`is_complete` for a folder already resolved to ``fs`` and its ``path`` (a listing's)."""
    return bool(fs.exists(f"{path.rstrip('/')}/{SUCCESS}"))


def is_unfinished(fs, path: str) -> bool:
    """A run folder that never finished: its ``_run.json`` is there, its ``_SUCCESS`` is not."""
    path = path.rstrip("/")
    return bool(fs.exists(f"{path}/{RUN_INFO}")) and not has_success(fs, path)


def not_finished(run_url: str) -> str:
    """What a reader says of a folder that is not a finished run."""
    return f"{run_url} is not a finished run (no {SUCCESS})"


# --------------------------------------------------------------------------- its documents
def read_summary(run_url: str, storage_options: dict | None = None) -> dict | None:
    """``_summary.json``: rows, quarantined, systems, status (also of a failed run), timings."""
    return writers.read_json(url(run_url, SUMMARY), storage_options)


def read_stats(run_url: str, storage_options: dict | None = None) -> dict | None:
    """``stats/stats.json``: the corpus statistics (``rows``), signature, config hash, confidence."""
    return writers.read_json(url(run_url, STATS_JSON), storage_options)


def read_exact(run_url: str, storage_options: dict | None = None) -> dict | None:
    """``stats/bootstrap_exact.json`` (``stats.bootstrap: exact`` only)."""
    return writers.read_json(url(run_url, EXACT_JSON), storage_options)


# --------------------------------------------------------------------------- its per-example scores
def score_files(run_url: str, storage_options: dict | None = None, system: str | None = None) -> tuple:
    """``(fs, paths)``: the part files of one system's folder of ``scores/`` (every system's
    when ``system`` is None), in the order they are read (:func:`names.part_sort_key`)."""
    folder = url(run_url, SCORES) if system is None else names.partition_path(run_url, SCORES, system)
    fs, path = get_fs(folder, storage_options)
    if not fs.exists(path):
        return fs, []
    found = [p for p in fs.find(path) if names.is_part_name(p.rsplit("/", 1)[-1])]
    return fs, sorted(found, key=names.part_sort_key)


def _tables(fs, paths, columns=None) -> list[pa.Table]:
    tables = []
    for p in paths:
        with fs.open(p, "rb") as f:
            tables.append(pq.read_table(f, columns=columns))
    return tables


def read_scores(run_url: str, system: str, columns=None, storage_options: dict | None = None) -> pa.Table | None:
    """One system's per-example scores, in input order (part files in (unit, slice) order)."""
    tables = _tables(*score_files(run_url, storage_options, system), columns)
    return pa.concat_tables(tables) if tables else None


def read_all_scores(run_url: str, storage_options: dict | None = None) -> pa.Table | None:
    """Every system's per-example scores as one table (the files' metadata dropped, columns
    unified), or None when there is none."""
    tables = [t.replace_schema_metadata(None) for t in _tables(*score_files(run_url, storage_options))]
    return pa.concat_tables(tables, promote_options="default") if tables else None


def score_part_urls(run_url: str, storage_options: dict | None = None) -> list[str]:
    """Every part file of ``scores/`` as a URL, in :func:`score_files` order (one Dask partition each)."""
    fs, paths = score_files(run_url, storage_options)
    return [fs.unstrip_protocol(p) for p in paths]


def read_part(part_url: str, storage_options: dict | None = None) -> pa.Table:
    fs, path = get_fs(part_url, storage_options)
    with fs.open(path, "rb") as f:
        return pq.read_table(f)


def part_schema(part_url: str, storage_options: dict | None = None) -> pa.Schema:
    fs, path = get_fs(part_url, storage_options)
    with fs.open(path, "rb") as f:
        return pq.read_schema(f)


# --------------------------------------------------------------------------- a run opened for reading
@dataclass(frozen=True)
class OpenedRun:
    """A run folder :func:`open_run` let through: its ``_run.json`` (``info``), its pieces, and
    the parts its ``_summary.json`` lists (``parts``: ``{part: [rows, bytes]}``), against which
    every part read is checked (:mod:`.whole`)."""

    url: str
    info: dict | None
    storage_options: dict | None = None
    parts: dict | None = None
    summary_doc: dict | None = None

    def summary(self) -> dict | None:
        return read_summary(self.url, self.storage_options)

    def stats(self) -> dict | None:
        return read_stats(self.url, self.storage_options)

    def exact(self) -> dict | None:
        return read_exact(self.url, self.storage_options)

    def scores(self) -> pa.Table | None:
        """Every system's per-example scores (:func:`read_all_scores`), each part's rows checked
        against the run's list, their sum against its summary, no ``(system, id)`` twice."""
        fs, paths = score_files(self.url, self.storage_options)
        tables = _tables(fs, paths)
        if self.parts is not None:
            root = get_fs(self.url, self.storage_options)[1].rstrip("/")
            for p, t in zip(paths, tables):
                whole.check_rows(self.url, p[len(root) + 1:], t.num_rows, self.parts)
        tables = [t.replace_schema_metadata(None) for t in tables]
        table = pa.concat_tables(tables, promote_options="default") if tables else None
        if self.summary_doc is not None and table is not None:
            whole.check_scores(self.url, table, self.summary_doc)
        return table

    def part_urls(self) -> list[str]:
        return score_part_urls(self.url, self.storage_options)

    def part_rows(self) -> list[tuple[str, int | None]]:
        """Each of :meth:`part_urls` as (its name in the run folder, the rows the run wrote
        there; None: not known)."""
        fs, paths = score_files(self.url, self.storage_options)
        root = get_fs(self.url, self.storage_options)[1].rstrip("/")
        rels = [p[len(root) + 1:] for p in paths]
        return [(r, ((self.parts or {}).get(r) or [None])[0]) for r in rels]


def open_run(run_url: str, storage_options: dict | None = None, *, finished: bool = True) -> OpenedRun:
    """The run at ``run_url`` for reading, after the checks every reader of a finished run shares.

    Raises :class:`RunFolderError` when the run did not finish (:func:`not_finished`), has no
    ``_run.json``, or is not whole (:func:`whole.check_listing`: a file it did not write in its
    folders, a part missing, extra or changed since), :class:`OldLayoutError` when an older
    layout wrote it.  ``finished=False`` checks the layout only (a run's own end, tests).
    Messages name ``run_url`` as given."""
    base = str(run_url).rstrip("/")
    if finished and not is_complete(base, storage_options):
        raise RunFolderError(not_finished(run_url))
    info = read_run_info(base, storage_options)
    if finished and info is None:
        raise RunFolderError(f"{run_url}: no {RUN_INFO}")
    check_layout(run_url, info)
    if not finished:
        return OpenedRun(base, info, storage_options)
    summary = read_summary(base, storage_options)
    fs, path = get_fs(base, storage_options)
    parts = whole.check_listing(str(run_url).rstrip("/"), fs, path.rstrip("/"), summary)
    return OpenedRun(base, info, storage_options, parts, summary)
