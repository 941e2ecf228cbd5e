"""A unit's slices: its rows cut by estimated cost (a function of the unit's own data and the
settings only, never of the number of workers, so outputs are byte-identical on any cluster).

:func:`estimate_costs` gives every example's estimated cost (about candidate tokens x reference
tokens, from bytes); :func:`split_by_cost` cuts a unit into *slices* of about ``target_cost``
each, so a few long documents never leave one worker straggling.  Slice ``k`` of unit ``u`` is
written as ``part-UUUUU-KKKK`` by whoever scores it (:mod:`pipeline.job.task`)."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.io.input_spec import WorkUnit

# Estimated cost units per task (~ candidate tokens x reference tokens summed over examples).
# A constant, not a function of the cluster size, so the plan (and every output file) is the
# same on 1 or 100 workers.
DEFAULT_TARGET_COST = 60_000_000
BYTES_PER_TOKEN = 6  # UTF-8 bytes per token, for the cost estimate
# Cost units per source token when diagnostics are on (the suffix automaton, n-gram sorts and
# encoding of the source: ~0.2-0.45 us a token where a cost unit of scoring is ~4 ns).
SOURCE_TOKEN_COST = 64
@dataclass(frozen=True)
class Slice:
    """Rows ``[lo, hi)`` of the canonical table of ``unit`` (``hi=None``: to the end): the unit's
    ``index``-th slice of its cost split (:func:`split_by_cost`).

    Slice 0 also emits the unit's quarantine rows.  A single example whose cost exceeds the
    target is a slice of its own (``oversized``); its rougeLsum may then be computed as blocks
    of reference sentences on several workers (:mod:`pipeline.job.longdocs`;
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
        return f"{self.unit.key}#{self.index}[{self.lo}:{'' if self.hi is None else self.hi}]"


# --------------------------------------------------------------------------- planning
def estimate_costs(table: pa.Table, source: bool = True) -> np.ndarray:
    """Estimated cost per example: (candidate tokens + 1) x (reference tokens + 1), tokens
    estimated as UTF-8 bytes / 6 (a cheap proxy for the LCS table size), plus, with ``source``
    (diagnostics on), ``SOURCE_TOKEN_COST`` per source token (linear: pipeline.scoring.diagnostics).  Bytes, not
    characters: they come from the Arrow offsets without reading the text (counting characters
    would read every text before it is scored), are the same for ASCII, and are
    nearer the token count for CJK text, whose characters are tokens of their own."""
    if table.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    def n_bytes(arr):
        return pc.binary_length(arr).fill_null(0).to_numpy().astype(np.int64)

    cand = n_bytes(table.column("candidate"))
    refs = table.column("references")
    # one chunk (a unit as read) is used as it is: combine_chunks would copy every reference
    refs = refs.chunk(0) if refs.num_chunks == 1 else refs.combine_chunks()
    offsets = refs.offsets.to_numpy().astype(np.int64)
    offsets -= offsets[0]   # a sliced list array's offsets point into all its values; flatten() gives its own
    csum = np.concatenate([[0], np.cumsum(n_bytes(refs.flatten()))])
    ref_total = csum[offsets[1:]] - csum[offsets[:-1]]
    cost = (cand // BYTES_PER_TOKEN + 1) * (ref_total // BYTES_PER_TOKEN + 1)
    if source and "source" in table.column_names:
        cost += n_bytes(table.column("source")) // BYTES_PER_TOKEN * SOURCE_TOKEN_COST
    return cost

def split_by_cost(units: list[WorkUnit], costs: list,
                  target_cost: int | float | None = None) -> list[Slice]:
    """Cut every unit into contiguous slices of about ``target_cost`` (deterministic; each
    unit's slices numbered from 0).

    A unit always gives at least one slice (it may hold only quarantine rows).  An example
    costing more than the target on its own becomes a slice of its own, marked ``oversized``
    (the hook for per-sentence splitting)."""
    target = float(target_cost or DEFAULT_TARGET_COST)
    # Greedy cuts, found per task rather than per example (a Python loop per example cost
    # ~2.5 us/pair): a task ends where its running cost first reaches the target (an
    # integer sum, so ">= ceil(target)"), or just before the next oversized example.
    need = max(1, math.ceil(target))
    tasks: list[Slice] = []
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
        for k, (lo, hi) in enumerate(bounds):
            cost = int(cs[hi] - cs[lo])
            tasks.append(Slice(index=k, unit=unit, lo=lo, hi=None if hi == n else hi, n_rows=hi - lo,
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
    d["ref_sizes"] = tuple(d.get("ref_sizes") or ())
    d["file_sizes"] = tuple(d.get("file_sizes") or ())
    return WorkUnit(**d)
