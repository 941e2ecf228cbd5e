"""Rows of a previous run copied instead of scored (``--reuse RUN``, ``execution.reuse``).

An example's numbers are a function of what its ``text_digest`` covers (its texts, the source
when the diagnostics read it, the run's signature: :mod:`pipeline.job.digest`), so a row of an
earlier run with this run's digest holds this run's numbers.  :func:`open_previous` opens that
run through the one reader (:func:`pipeline.runfolder.read.open_run`: finished and whole, else
refused in one line), refuses one of another run format or version, and says when its settings
differ (nothing can then be reused).  :func:`build_index` reads its ``line_digest`` and ``cost``
columns once (line digest -> (part, row, cost)).  A task reading a clean JSONL unit looks its
lines' digests up (:func:`lookup_lines`) and copies the whole row of each line found, parsing only
the others (:func:`pipeline.job.task._line_input`); a unit read whole looks its rows'
``text_digest`` up (:func:`lookup`; that index is read on first use), copies the rows found
(:func:`take_rows`: every column but the keys, the digests, the cost and the texts, which come
from this run's input) and scores only the others.  The parts are then the bytes a full rescore
writes, and so are the statistics, which are computed from the rows as always.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline import __version__
from pipeline.errors import ConfigError, OldLayoutError, RunFolderError
from pipeline.io.input_spec import InputSpec
from pipeline.io.paths import get_fs
from pipeline.runfolder import RUN_FORMAT
from pipeline.runfolder.names import SUMMARY, describe
from pipeline.runfolder.read import open_run
from pipeline.runfolder.inputs import normalise
from pipeline.runfolder.whole import PART_HASHES_KEY, content_hash

# what a row takes from this run's input, not from the previous run
OWN_COLUMNS = ("id", "system", "text_digest", "line_digest", "cost", "candidate", "references")


@dataclass(frozen=True)
class Previous:
    """A finished, whole run whose rows may be reused: its URL and its ``scores/`` parts as its
    summary lists them (``(name in the folder, rows, content hash)``, in reading order)."""

    url: str
    parts: tuple
    storage_options: dict = field(default_factory=dict, compare=False, repr=False)
    # its rows may be found by their input line: it read its JSONL lines into the same fields
    lines: bool = False


READER_KEYS = ("id", "system", "candidate", "references", "source")


def reader_fields(spec) -> dict:
    """Which JSONL field each canonical column is read from (``input.columns``): a line read
    with other fields is another example, so rows are found by their line only between runs
    that read the same fields."""
    return {k: spec.col(k) for k in READER_KEYS}


def _their_fields(info: dict) -> dict | None:
    try:
        return reader_fields(InputSpec.from_config((info.get("config") or {}).get("input") or {}))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def open_previous(url: str, storage_options: dict | None, signature: str, diagnostics: bool,
                  output_url: str, fields: dict | None = None) -> tuple[Previous | None, str]:
    """``(the run, "")``, or ``(None, why nothing can be reused)`` when its settings differ.
    ``fields``: this run's :func:`reader_fields` (rows are found by their line when the run's are
    the same; by their texts always).
    Raises :class:`ConfigError` (one line) for a run that cannot be trusted: not finished or
    not whole, of another layout, run format or version, or the run folder being written."""
    what = f"--reuse {url}"
    if normalise(str(url)) == normalise(str(output_url)):
        raise ConfigError(f"{what}: that is this run's own folder; give an earlier run")
    try:
        run = open_run(url, storage_options)
    except (RunFolderError, OldLayoutError) as e:
        raise ConfigError(f"{what}: {e}; nothing is reused from a run that is not whole") from None
    info = run.info or {}
    fmt, version = info.get("run_format", 1), info.get("version")
    if fmt != RUN_FORMAT or version != __version__:
        raise ConfigError(f"{what}: written by another rouge-pipeline version (run folder format {fmt}, version "
                          f"{version}; this is format {RUN_FORMAT}, version {__version__}); its rows are not reused")
    theirs = ((info.get("config") or {}).get("scoring") or {}).get("diagnostics", True)
    if info.get("signature") != signature or bool(theirs) != bool(diagnostics):
        return None, (f"{url} was scored with other settings (signature {info.get('signature')}"
                      f"{'' if bool(theirs) == bool(diagnostics) else ', diagnostics ' + str(theirs).lower()}): "
                      "nothing reused")
    hashes = (run.summary_doc or {}).get(PART_HASHES_KEY)
    hashes = hashes if isinstance(hashes, dict) else {}
    parts = tuple((rel, n, hashes.get(rel)) for rel, n in run.part_rows())
    unhashed = [rel for rel, _, h in parts if not isinstance(h, str)]
    if unhashed:
        raise ConfigError(f"{what}: its {SUMMARY} records no content hash of {describe(unhashed)}; "
                          "nothing is reused from a run that is not whole")
    lines = fields is not None and _their_fields(info) == fields
    return Previous(run.url, parts, dict(storage_options or {}), lines), ""


@dataclass(frozen=True)
class Sorted:
    """Rows of a previous run by a digest column: ``digests`` sorted, and for each the part (an
    index into ``previous.parts``) and the row in it (and ``cost``: the row's)."""

    digests: np.ndarray
    part: np.ndarray
    row: np.ndarray
    cost: np.ndarray | None = None

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.digests, self.part, self.row, self.cost) if a is not None)


@dataclass(frozen=True)
class ReuseIndex:
    """Every row of a previous run read from one JSONL line, by its ``line_digest``
    (:attr:`lines`), and every row by its ``text_digest`` (:meth:`texts`)."""

    previous: Previous
    lines: tuple[Sorted, ...]   # one per group of parts (built in parallel: :func:`join_index`)
    _texts: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def has_lines(self) -> bool:
        """Whether any row can be found by its line."""
        return any(len(g.digests) for g in self.lines)

    def texts(self) -> Sorted:
        """Read and sorted on first use, where a unit is read whole: a run whose units are all
        read by their lines never reads the text digests."""
        if "texts" not in self._texts:
            col, part, row = _columns(self.previous, ["text_digest"])
            digests = np.asarray(col["text_digest"].to_numpy(), dtype=np.uint64)
            order = np.argsort(digests, kind="stable")
            self._texts["texts"] = Sorted(digests[order], part[order], row[order])
        return self._texts["texts"]

    def __sizeof__(self) -> int:   # for Dask's memory accounting (it sizes unknown objects by getsizeof)
        return object.__sizeof__(self) + sum(t.nbytes for t in (*self.lines, *self._texts.values()))


def _read(previous: Previous, k: int, columns, check: bool = True) -> pa.Table:
    """Part ``k``'s ``columns``; ``check``: its bytes are those the run wrote (content hash)."""
    rel, rows, digest = previous.parts[k]
    fs, path = get_fs(f"{previous.url.rstrip('/')}/{rel}", previous.storage_options)
    with fs.open(path, "rb") as f:
        if not check:
            try:
                table = pq.read_table(f, columns=columns)
            except (pa.ArrowException, OSError) as e:   # the index reads parts unhashed: say what it is
                raise RunFolderError(f"--reuse {previous.url}: {rel} cannot be read as the run wrote it ({e}); "
                                     "the run is not whole: nothing is reused from it") from None
        else:
            data = f.read()
            # the bytes first: a changed part is refused in one line, never parsed
            if content_hash(data) != digest:
                raise RunFolderError(f"--reuse {previous.url}: {rel} changed since the run wrote it (its content "
                                     "hash differs); the run is not whole: nothing is reused from it")
            if columns is not None:   # those it holds: the caller's schema check names a missing one
                held = set(pq.read_schema(pa.BufferReader(data)).names)
                columns = [c for c in columns if c in held]
            table = pq.read_table(pa.BufferReader(data), columns=columns)
    if rows is not None and table.num_rows != rows:
        raise RunFolderError(f"--reuse {previous.url}: {rel} holds {table.num_rows} rows, the run wrote {rows}; "
                             "the run is not whole: nothing is reused from it")
    return table


def _columns(previous: Previous, names: list[str], which: range | None = None) -> tuple[dict, np.ndarray, np.ndarray]:
    """``names`` of the parts ``which`` (default: all), read once (in parallel), one array each,
    and each row's part and row."""
    which = range(len(previous.parts)) if which is None else which
    n = len(which)
    with ThreadPoolExecutor(max_workers=min(16, max(1, n))) as pool:
        # these columns only: a part rows are copied out of is checked when it is read whole
        tables = list(pool.map(lambda k: _read(previous, k, names, check=False), which))
    part = np.repeat(np.asarray(which, dtype=np.int32), [t.num_rows for t in tables])
    row = np.concatenate([np.arange(t.num_rows, dtype=np.int64) for t in tables]) if n else np.zeros(0, np.int64)
    col = {c: (pa.concat_arrays([a for t in tables for a in t.column(c).chunks]) if n else
               pa.array([], pa.int64() if c == "cost" else pa.uint64())) for c in names}
    return col, part, row


def build_index(previous: Previous | None, k: int = 0, n: int = 1) -> ReuseIndex | None:
    """The previous run's rows by their ``line_digest`` (with their ``cost``), sorted, of the
    ``k``-th of ``n`` groups of its parts (:func:`join_index` joins the groups); by their
    ``text_digest`` on first use (:meth:`ReuseIndex.texts`)."""
    if previous is None:
        return None
    parts = len(previous.parts)
    if not previous.lines:
        none = np.zeros(0, np.int64)
        return ReuseIndex(previous, (Sorted(none.astype(np.uint64), none.astype(np.int32), none, none),))
    col, part, row = _columns(previous, ["line_digest", "cost"], range(k * parts // n, (k + 1) * parts // n))
    valid = np.flatnonzero(np.asarray(col["line_digest"].is_valid().to_numpy(zero_copy_only=False), dtype=bool))
    lines = np.asarray(col["line_digest"].fill_null(0).to_numpy(), dtype=np.uint64)[valid]
    order = np.argsort(lines)   # one line, one row: the lines of a run's rows differ (their keys do)
    by_line = valid[order]
    cost = np.asarray(col["cost"].to_numpy(), dtype=np.int64)
    return ReuseIndex(previous, (Sorted(lines[order], part[by_line], row[by_line], cost[by_line]),))


def join_index(*pieces: ReuseIndex) -> ReuseIndex:
    """One index of :func:`build_index`'s groups (their sorted arrays kept apart: no merge)."""
    return ReuseIndex(pieces[0].previous, tuple(s for p in pieces for s in p.lines))


def _find(index: Sorted, digests: np.ndarray, order: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(found, at)``: whether each digest is in ``index``, and where (the first such entry);
    ``order``: the digests' argsort, if known."""
    digests = np.asarray(digests, dtype=np.uint64)
    order = np.argsort(digests) if order is None else order   # ascending queries: searches stay in cache
    pos = np.empty(len(digests), dtype=np.int64)
    pos[order] = np.searchsorted(index.digests, digests[order])
    inside = pos < len(index.digests)
    found = np.zeros(len(digests), dtype=bool)
    found[inside] = index.digests[pos[inside]] == digests[inside]
    return found, pos[found]


def lookup(index: ReuseIndex, digests: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(found, part, row)``: whether each text digest is a row of the previous run, and where
    the found ones are (the first such row: rows of one digest hold the same numbers)."""
    texts = index.texts()
    found, at = _find(texts, digests)
    return found, texts.part[at], texts.row[at]


def lookup_lines(index: ReuseIndex, digests: np.ndarray):
    """``(found, part, row, cost)``: whether each line digest is a row of the previous run, and
    the found ones' row (the first such: an unchanged line is the same example) and cost."""
    digests = np.asarray(digests, dtype=np.uint64)
    order = np.argsort(digests)
    found = np.zeros(len(digests), dtype=bool)
    part, row, cost = (np.zeros(len(digests), dtype=t) for t in (np.int32, np.int64, np.int64))
    for group in index.lines:   # groups hold different rows; a line is in one group at most
        hit, at = _find(group, digests, order)
        new = hit & ~found
        at = at[new[hit]]
        part[new], row[new], cost[new] = group.part[at], group.row[at], group.cost[at]
        found |= hit
    return found, part[found], row[found], cost[found]


def take_rows(index: ReuseIndex, part: np.ndarray, row: np.ndarray, schema: pa.Schema, cache: dict,
              digests: np.ndarray | None = None, by: str = "text_digest") -> pa.Table:
    """The previous run's rows at ``(part, row)``, in that order, with the columns of ``schema``
    (this run's scores without :data:`OWN_COLUMNS`, or all of them for rows found by their
    line), out of parts whose bytes are the run's (content hash); ``digests``: the rows' ``by``
    digests (``text_digest`` or ``line_digest``), checked against the copied rows' own.
    ``cache``: ``{part: table}`` kept by the caller between its slices; parts this call does not
    use are let go."""
    wanted = [int(p) for p in np.unique(part)]
    for k in [k for k in cache if k not in wanted]:
        del cache[k]
    pieces, where = [], []
    for k in wanted:
        if k not in cache:
            table = _read(index.previous, k, [*schema.names, *([by] if by not in schema.names else [])])
            if table.select([n for n in schema.names if n in table.column_names]).schema.remove_metadata() != schema:
                raise RunFolderError(f"--reuse {index.previous.url}: {index.previous.parts[k][0]} has other "
                                     "columns than this run writes; its rows are not reused")
            cache[k] = table
        at = np.flatnonzero(part == k)
        piece = cache[k].take(pa.array(row[at]))
        if digests is not None and not np.array_equal(piece.column(by).fill_null(0).to_numpy(), digests[at]):
            raise RunFolderError(f"--reuse {index.previous.url}: {index.previous.parts[k][0]} does not hold the "
                                 "rows its digests were read from; the run is not whole: nothing is reused from it")
        pieces.append(piece.select(schema.names))
        where.append(at)
    if not pieces:
        return schema.empty_table()
    out = pa.concat_tables(pieces)
    where = np.concatenate(where)
    if len(where) < 2 or (np.diff(where) > 0).all():
        return out   # the parts' rows came in this order (rows that did not move)
    return out.take(pa.array(np.argsort(where, kind="stable")))
