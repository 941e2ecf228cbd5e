"""Duplicate ids across units: found from the key hashes wave 1 returns, confirmed on the texts.

Each ``(system, id)`` is scored once, by the unit holding its first occurrence in (file, row)
order; a later occurrence becomes a ``duplicate id`` quarantine row naming where the first is.
Within a unit the reader does this (:class:`pipeline.io.canonical.Out`).  Across units,
:func:`later_duplicates` (one task, on a worker) sorts every unit's key hashes (8 bytes an
example; no id reaches the client) and names, for each unit holding a hash an earlier unit
holds too, those hashes and the earlier unit.  That unit is scored again in wave 2 by
:func:`confirm_drops`, which compares the ids themselves (two different keys may share a
hash) and gives the reader its ``drop_rows``.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.io import readers
from pipeline.io.canonical import location
from pipeline.io.input_spec import WorkUnit
from pipeline.job.scores import key_hashes
from pipeline.stats.poisson import any_equal


class HashCollisionError(RuntimeError):
    """Two different ``(system, id)`` keys share a 64-bit key hash (about 3e-6 for 10 million
    examples): reported, never resolved by guessing."""


def later_duplicates(units: list, *hashes: np.ndarray) -> dict[int, tuple]:
    """``{unit index: (hashes, first unit indices, {index: WorkUnit})}`` for every unit holding a
    key hash that an earlier unit (in ``units`` order, the input order) holds too: those hashes,
    for each the earliest unit holding it, and those units.  ``units``: WorkUnits (or indices);
    ``hashes[k]``: unit ``units[k]``'s key hashes (within a unit, keys are distinct)."""
    if len(units) != len(hashes):
        raise ValueError(f"{len(units)} units but {len(hashes)} hash arrays")
    sizes = np.array([len(h) for h in hashes], dtype=np.int64)
    if sizes.sum() < 2:
        return {}
    h = np.concatenate([np.asarray(x, dtype=np.uint64) for x in hashes])
    if not any_equal(h):
        return {}   # the usual case, found by one plain sort (the lexsort below costs several)
    owner = np.repeat(np.arange(len(hashes), dtype=np.int64), sizes)  # position in ``units``
    order = np.lexsort((owner, h))   # by hash, then by unit: a run's first is its earliest unit
    h, owner = h[order], owner[order]
    same = h[1:] == h[:-1]
    if not same.any():
        return {}
    # the start of each run of equal hashes, carried to every member of the run
    start = np.flatnonzero(np.concatenate([[True], ~same]))
    run_first = np.repeat(owner[start], np.diff(np.append(start, len(h))))
    later = np.flatnonzero(owner != run_first)
    def index(u):
        return u if isinstance(u, int) else u.index

    out: dict[int, tuple[list, list, dict]] = {}
    for i in later.tolist():
        hs, firsts, by_index = out.setdefault(index(units[int(owner[i])]), ([], [], {}))
        first = units[int(run_first[i])]
        hs.append(h[i])
        firsts.append(index(first))
        by_index[index(first)] = first
    return {u: (np.array(hs, dtype=np.uint64), np.array(fs, dtype=np.int64), by_index)
            for u, (hs, fs, by_index) in sorted(out.items())}


def duplicate_units(found: dict) -> list[int]:
    """The units :func:`later_duplicates` found (what the client needs of it)."""
    return sorted(found)


def _keys(table: pa.Table, unit: WorkUnit):
    """(hashes, systems, ids, row keys) of a canonical table's rows."""
    keys = readers.unit_keys(table, unit)
    hashes = key_hashes(keys)
    if hashes is None:  # null keys never reach a canonical table
        raise ValueError(f"{unit.key}: a canonical table holds a null system or id")
    return (hashes, keys.column("system").to_pylist(), keys.column("id").to_pylist(),
            keys.column("row").to_numpy())


def confirm_drops(spec, unit: WorkUnit, table: pa.Table, candidates: tuple) -> WorkUnit:
    """``unit`` with ``drop_rows``: the rows of ``table`` (its canonical table, read without
    drops) whose key the earlier unit named in ``candidates`` (its :func:`later_duplicates`
    entry) holds, each with where that first occurrence is.  Raises :class:`HashCollisionError`
    if a hash is shared by different keys."""
    cand_hashes, cand_first, firsts = candidates
    first_of = dict(zip(np.asarray(cand_hashes, dtype=np.uint64).tolist(), np.asarray(cand_first).tolist()))
    hashes, systems, ids, rows = _keys(table, unit)
    mine = np.flatnonzero(np.isin(hashes, np.asarray(cand_hashes, dtype=np.uint64)))
    wanted: dict[int, list[int]] = {}
    for i in mine.tolist():
        wanted.setdefault(first_of[int(hashes[i])], []).append(i)
    drops = []
    for first_index, mine_rows in sorted(wanted.items()):
        fu = firsts[first_index]
        f_table, _ = readers.read_unit(spec, dataclasses.replace(fu, drop_rows=()))
        f_hashes, f_systems, f_ids, f_rows = _keys(f_table, fu)
        where = {}
        for j in np.flatnonzero(np.isin(f_hashes, hashes[mine_rows])).tolist():
            where[(f_systems[j], f_ids[j])] = location(*fu.locate(int(f_rows[j])), fu.format)
        for i in mine_rows:
            first = where.get((systems[i], ids[i]))
            if first is None:
                raise HashCollisionError(
                    f"{unit.key}: the key of id {ids[i]!r} shares its 64-bit hash with a different key of "
                    f"{fu.key}; duplicate ids cannot be told apart by hash here: rename one of the ids")
            drops.append((int(rows[i]), first))
    return dataclasses.replace(unit, drop_rows=tuple(sorted(drops)))


def positions_in(table: pa.Table, unit: WorkUnit, full: pa.Table) -> np.ndarray:
    """For each row of ``table`` (``full`` without some rows, in the same order), its position
    in ``full``: to cut ``table`` where ``full``'s cost split cut."""
    rows = readers.unit_keys(table, unit).column("row")
    full_rows = readers.unit_keys(full, unit).column("row")
    return pc.index_in(rows, value_set=full_rows).to_numpy(zero_copy_only=False).astype(np.int64)
