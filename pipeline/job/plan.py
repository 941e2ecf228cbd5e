"""The plan: units cut into tasks by estimated cost (a function of the data and the settings
only, never of the number of workers, so outputs are byte-identical on any cluster).

:func:`estimate_costs` gives every example's estimated cost (about candidate tokens x reference
tokens, from bytes); :func:`drop_duplicates` moves cross-unit duplicates to their unit's
``drop_rows``; :func:`split_by_cost` cuts units into *tasks* of about ``target_cost`` each, so a
few long documents never leave one worker straggling."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.io import readers
from pipeline.io.spec import WorkUnit
from pipeline.stats import poisson

# Estimated cost units per task (~ candidate tokens x reference tokens summed over examples).
# A constant, not a function of the cluster size, so the plan (and every output file) is the
# same on 1 or 100 workers.
DEFAULT_TARGET_COST = 60_000_000
BYTES_PER_TOKEN = 6  # UTF-8 bytes per token, for the cost estimate
# Cost units per source token when diagnostics are on (the suffix automaton, n-gram sorts and
# encoding of the source: ~0.2-0.45 us a token where a cost unit of scoring is ~4 ns).
SOURCE_TOKEN_COST = 64
@dataclass(frozen=True)
class Task:
    """Rows ``[lo, hi)`` of the canonical table of ``unit`` (``hi=None``: to the end).

    The slice with ``lo == 0`` also emits the unit's quarantine rows.
    A single example whose cost exceeds the target is a task of its own (``oversized``);
    its rougeLsum is then computed as blocks of reference sentences on several workers
    (:func:`prepare_split`, :func:`split_block`, :func:`finish_split`;
    :mod:`pipeline.scoring.split`), with the same numbers as unsplit scoring.
    """

    index: int
    unit: WorkUnit
    lo: int = 0
    hi: int | None = None
    n_rows: int = 0
    cost: int = 0
    oversized: bool = False

    @property
    def key(self) -> str:
        return f"{self.index:05d}:{self.unit.key}[{self.lo}:{'' if self.hi is None else self.hi}]"

# --------------------------------------------------------------------------- planning
def estimate_costs(table: pa.Table, source: bool = True) -> np.ndarray:
    """Estimated cost per example: (candidate tokens + 1) x (reference tokens + 1), tokens
    estimated as UTF-8 bytes / 6 (a cheap proxy for the LCS table size), plus, with ``source``
    (diagnostics on), ``SOURCE_TOKEN_COST`` per source token (linear: pipeline.diagnostics).  Bytes, not
    characters: they come from the Arrow offsets without reading the text (counting characters
    was ~2.7 ms per 12,500 short pairs of the plan pass), are the same for ASCII, and are
    nearer the token count for CJK text, whose characters are tokens of their own."""
    if table.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    def n_bytes(arr):
        return pc.binary_length(arr).fill_null(0).to_numpy().astype(np.int64)

    cand = n_bytes(table.column("candidate"))
    refs = table.column("references").combine_chunks()
    offsets = refs.offsets.to_numpy().astype(np.int64)
    csum = np.concatenate([[0], np.cumsum(n_bytes(refs.flatten()))])
    ref_total = csum[offsets[1:]] - csum[offsets[:-1]]
    cost = (cand // BYTES_PER_TOKEN + 1) * (ref_total // BYTES_PER_TOKEN + 1)
    if source and "source" in table.column_names:
        cost += n_bytes(table.column("source")) // BYTES_PER_TOKEN * SOURCE_TOKEN_COST
    return cost

def one_task(costs: np.ndarray, target_cost: float | None) -> bool:
    """Whether :func:`split_by_cost` makes exactly one task ``[0:]`` of a unit with ``costs``
    that is not an oversized example, so what the plan pass scores is exactly that task's rows."""
    tasks = split_by_cost([None], [costs], target_cost)
    return len(tasks) == 1 and not tasks[0].oversized

def plan_tasks(units: list[WorkUnit], target_cost, *planned: dict) -> tuple[list[Task], int, list[int]]:
    """The plan from every unit's plan pass (:func:`plan_unit`): cross-unit duplicates dropped,
    units cut by cost.  Returns (tasks, duplicates dropped, the units whose tasks can be
    served what the plan pass kept).  Runs on a worker in the distributed job, so the ids
    and costs of the corpus never reach the client."""
    units, costs = drop_duplicates(units, list(planned))
    kept = [u.index for u, p in zip(units, planned) if p.get("kept") and not u.drop_rows]
    return split_by_cost(units, costs, target_cost), sum(len(u.drop_rows) for u in units), kept


def drop_duplicates(units: list[WorkUnit], planned: list[dict]):
    """``(units, costs)`` with cross-unit duplicates moved to ``WorkUnit.drop_rows`` (so each
    ``(system, id)`` is scored exactly once, by the unit holding its first occurrence) and
    their costs removed (so the task slices match the tables the units will read); the costs
    as int64 arrays."""
    hashes = [p.get("key_hashes") for p in planned]
    if all(h is not None for h in hashes):
        if not poisson.any_equal(np.concatenate([np.zeros(0, dtype=np.uint64), *hashes])):
            # no two keys share a hash, so none is a duplicate: the exact search (an Arrow
            # group-by over every id, ~0.1-0.2 s of the plan's serial step) is not needed
            return list(units), [np.asarray(p["costs"], dtype=np.int64) for p in planned]
    drops = readers.find_duplicates(units, [p["keys"] for p in planned])
    new_units, costs = [], []
    for k, (u, p) in enumerate(zip(units, planned)):
        c = np.asarray(p["costs"], dtype=np.int64)
        d = drops.get(k)
        if d:
            dropped = {r for r, _ in d}
            rows = p["keys"].column("row").to_numpy()
            c = c[~np.isin(rows, list(dropped))]
            u = dataclasses.replace(u, drop_rows=tuple(d))
        new_units.append(u)
        costs.append(c)
    return new_units, costs


def split_by_cost(units: list[WorkUnit], costs: list,
                  target_cost: int | float | None = None) -> list[Task]:
    """Cut every unit into contiguous slices of about ``target_cost`` (deterministic).

    A unit always gives at least one task (it may hold only quarantine rows).  An example
    costing more than the target on its own becomes a task of its own, marked ``oversized``
    (the hook for per-sentence splitting)."""
    target = float(target_cost or DEFAULT_TARGET_COST)
    # Greedy cuts, found per task rather than per example (a Python loop per example cost
    # ~2.5 us/pair): a task ends where its running cost first reaches the target (an
    # integer sum, so ">= ceil(target)"), or just before the next oversized example.
    need = max(1, math.ceil(target))
    tasks: list[Task] = []
    for unit, c in zip(units, costs):
        c = np.asarray(c, dtype=np.int64)
        n = len(c)
        cs = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(c, out=cs[1:])
        big = np.flatnonzero(c >= target)
        start = 0
        bounds = []
        while start < n:
            stop = int(np.searchsorted(cs, cs[start] + need, side="left"))  # first cs[stop] >= ...
            nxt = int(np.searchsorted(big, start, side="right"))
            if nxt < len(big) and big[nxt] < min(stop, n + 1):
                stop = int(big[nxt])  # an oversized example starts its own task
            stop = min(stop, n)
            bounds.append((start, stop))
            start = stop
        if not bounds:
            bounds.append((0, 0))
        for lo, hi in bounds:
            cost = int(cs[hi] - cs[lo])
            tasks.append(Task(index=len(tasks), unit=unit, lo=lo, hi=None if hi == n else hi, n_rows=hi - lo,
                              cost=cost, oversized=(hi - lo == 1 and cost >= target)))
    return tasks


def unit_to_dict(u: WorkUnit) -> dict:
    return asdict(u)


def unit_from_dict(d: dict) -> WorkUnit:
    d = dict(d)
    d["ref_files"] = tuple(d.get("ref_files") or ())
    d["ref_ranges"] = tuple(tuple(r) for r in d.get("ref_ranges") or ())
    d["ref_report"] = tuple(tuple(r) for r in d.get("ref_report") or ())
    d["ref_bytes"] = None if d.get("ref_bytes") is None else tuple(d["ref_bytes"])
    d["extra_quarantine"] = tuple(tuple(q) for q in d.get("extra_quarantine") or ())
    d["drop_rows"] = tuple(tuple(q) for q in d.get("drop_rows") or ())
    d["files"] = tuple(d.get("files") or ())
    return WorkUnit(**d)


def task_to_dict(t: Task) -> dict:
    d = {f.name: getattr(t, f.name) for f in dataclasses.fields(t)}
    d["unit"] = unit_to_dict(t.unit)
    return d


def task_from_dict(d: dict) -> Task:
    d = dict(d)
    d["unit"] = unit_from_dict(d["unit"])
    return Task(**d)


def plan_hash(tasks: list[Task]) -> str:
    blob = json.dumps([task_to_dict(t) for t in tasks], sort_keys=True, separators=(",", ":"), default=list)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]

