"""The job's graph, as plain waves on an executor (:mod:`pipeline.execution.executors`).

Wave 1 maps :func:`pipeline.job.score_unit` over the units; its results feed the statistics tree
(:func:`pipeline.job.merge_results`, on the workers), the duplicate search
(:func:`pipeline.job.later_duplicates`, one task) and, through a small :func:`pipeline.job.brief`
each, the client, which holds only the futures still pending and three integers per unit (its
slice count, rows and slices resumed: the part check, the progress and the summary).  Wave 2 scores what wave 1 left:
slices past a unit's first few, oversized examples (:mod:`pipeline.job.longdocs`) and the units
holding a later duplicate, scored again with it dropped.  Every task that writes checks the run's
stop flag first; a failure sets it and waits for what still runs (:func:`stop`).
"""
from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass, field

from pipeline import job
from pipeline.execution.executors import Permanent, value
from pipeline.job.results import Brief, Totals

FAN_IN = 8


@dataclass
class Outcome:
    """What the waves leave the driver."""

    final: Totals | None = None                   # finalize_results: counts and statistics rows
    slices: dict = field(default_factory=dict)    # unit -> its slice count (the part check)
    tasks: int = 0                                # slices written or resumed
    resumed: int = 0                              # slices an earlier run had written
    split: int = 0                                # oversized examples scored in blocks
    duplicate_units: int = 0                      # units scored again without their later duplicates
    reused: int = 0                               # rows copied from the previous run (--reuse)


class TaskFailed(Exception):
    """A task failed after its retries: ``what`` it was, and its exception."""

    def __init__(self, what: str, error: BaseException):
        super().__init__(what)
        self.what, self.error = what, error


class Tree:
    """The statistics tree, built as results arrive: every ``FAN_IN`` finished futures of a
    level become one :func:`job.merge_results` of the next, so the client holds at most
    ``FAN_IN - 1`` futures a level, and results are merged on the workers while others score."""

    def __init__(self, submit, name: str, eager: bool):
        self.submit, self.name, self.eager = submit, name, eager
        self.levels: list[list] = []
        self.n = 0

    def add(self, fut, depth: int = 0) -> None:
        while len(self.levels) <= depth:
            self.levels.append([])
        level = self.levels[depth]
        level.append(fut)
        if len(level) == FAN_IN:
            self.levels[depth] = []
            self.n += 1
            merged = self.submit(job.merge_results, *level, key=f"{self.name}-{depth}-{self.n:05d}")
            if self.eager:   # in process: merge now, so the results merged are let go
                merged.status
            self.add(merged, depth + 1)

    def top(self) -> list:
        """What is left unmerged (at most FAN_IN - 1 futures a level), for the finalisation."""
        return [f for level in self.levels for f in level]


class Waves:
    """One run's graph.  ``first``: slices wave 1 scores per unit (None: all; in process).
    ``ctx.stop``: the run's stop flag (wave 1 gets a flag of its own, set when its units'
    statistics are no longer wanted, so a wave-1 task that Dask reruns then writes nothing)."""

    def __init__(self, ex, spec, units: list, ctx, target_cost: float, retries: int, done: dict,
                 confidence: float, first: int | None, bar=None, log=None, previous=None):
        self.ex, self.spec, self.units, self.ctx = ex, spec, units, ctx
        self.target_cost, self.retries, self.done, self.confidence = target_cost, retries, done, confidence
        self.first, self.bar, self.log = first, bar, log or (lambda _m: None)
        self.nonce = uuid.uuid4().hex[:8]
        self.wave1_flag = ex.new_flag(f"rouge-stop-wave1-{self.nonce}")
        self.ctx1 = dataclasses.replace(ctx, stop=self.wave1_flag)
        # every task that writes, until it ends: its brief -> (what, unit index, its result's future)
        self.pending: dict = {}
        self.counts: dict = {}      # unit -> [slices, rows, slices resumed, rows reused]
        self.by_index = {u.index: u for u in units}
        self.eager = not ex.distributed
        self.workers = max(1, ex.n_workers)
        # a previous run's rows by digest (--reuse): built by one task, sent to every unit's
        self.index = None if previous is None else self._reuse_index(previous)

    def _reuse_index(self, previous):
        """The index of a previous run's rows: its parts in one group a worker, built in
        parallel (every unit's task waits for it), then joined."""
        # (one task when no row can be found by its line: that index is empty)
        n = max(1, min(self.workers if self.ex.distributed and previous.lines else 1, len(previous.parts)))
        pieces = [self._submit(job.build_index, previous, k, n, key=self._key("reuse-index", k)) for k in range(n)]
        return pieces[0] if n == 1 else self._submit(job.join_index, *pieces, key=self._key("reuse-index"))

    # ------------------------------------------------------------------ submitting
    def _key(self, kind: str, *parts) -> str:
        return f"rouge-{kind}-{self.nonce}-" + "-".join(f"{p:05d}" if isinstance(p, int) else str(p) for p in parts)

    def _submit(self, fn, *args, key: str, **hints):
        return self.ex.submit(fn, *args, key=key, retries=self.retries, **hints)

    def _track(self, fut, what: str, u: int, key: str):
        """``fut``'s brief, tracked until it ends."""
        brief = self._submit(job.brief, fut, key=key)
        self.pending[brief] = (what, u, fut)
        return brief

    def _unit(self, unit, work, kind: str, *key_parts, ctx=None, duplicates=None):
        """A :func:`job.score_unit`, tracked by its brief: (its future, the brief's)."""
        args = (self.spec, unit, ctx or self.ctx, work) + (() if duplicates is None and self.index is None
                                                           else (duplicates, self.index))
        fut = self._submit(job.score_unit, *args, key=self._key(kind, unit.index, *key_parts), priority=-unit.index)
        return fut, self._track(fut, f"unit {unit.key}", unit.index, self._key(f"{kind}-brief", unit.index, *key_parts))

    def _blocks(self, unit, k: int, n_blocks: int, source):
        """An oversized slice from its rows in ``source`` (the future of the unit's result that
        kept them): prepared, its rougeLsum in ``n_blocks`` blocks, finished (the brief's future)."""
        base = self._key("split", unit.index, k)
        pre = self._submit(job.split_input, source, k, key=f"{base}-rows")
        prep = self._submit(job.prepare_split, pre, self.ctx, key=f"{base}-prep")
        blocks = [self._submit(job.split_block, prep, b, n_blocks, self.ctx.scoring, key=f"{base}-block-{b:03d}")
                  for b in range(n_blocks)]
        fut = self._submit(job.finish_split, unit, k, self.ctx, pre, prep, *blocks, key=base)
        return self._track(fut, f"unit {unit.key} slice {k}", unit.index, f"{base}-brief")

    def _left(self, unit, slices: list) -> int:
        """Wave 2 for the plain slices a unit left: at most one task a worker, each reading the
        unit once.  Returns how many tasks."""
        per = -(-len(slices) // self.workers)
        groups = [tuple(slices[i:i + per]) for i in range(0, len(slices), per)]
        for g in groups:
            self._unit(unit, job.UnitWork(self.target_cost, slices=g), "slices", g[0])
        return len(groups)

    # ------------------------------------------------------------------ running
    def _drain(self, on_brief) -> None:
        """Wait for every tracked task, in completion order: ``on_brief(brief, unit, future)``
        for each, which may return futures it tracked meanwhile.  The first failure raises
        :class:`TaskFailed`."""
        completed = self.ex.as_completed(list(self.pending))
        for f in completed:
            what, u, fut = self.pending[f]
            status = f.status
            if status == "lost":   # its worker died after it finished: Dask computes it again
                completed.add(f)
                continue
            if status != "finished":
                e = f.exception() if status == "error" else None
                raise TaskFailed(what, e if e is not None else RuntimeError(
                    f"its task was {status} (the scheduler or another client cancelled it, "
                    "or the connection was lost)"))
            b: Brief = f.result()
            if isinstance(b, Permanent):   # an error retrying cannot fix: not retried
                raise TaskFailed(what, b.error)
            del self.pending[f]
            if b.stopped:
                raise TaskFailed(what, RuntimeError("it was stopped (the run's stop flag is set)"))
            for extra in on_brief(b, u, fut) or ():
                completed.add(extra)

    def run(self) -> Outcome:
        """Wave 1, the duplicate search, wave 2, the statistics' last merge."""
        out = Outcome()
        tree1 = Tree(self._submit, self._key("merge-1"), self.eager)
        dup, plain, oversized = self._wave1(out, tree1)
        again = self._duplicates(dup)
        out.duplicate_units = len(again)
        if again:
            tree1 = None   # wave 1's statistics hold the rows wave 2 drops: not merged further
        tree2 = self._wave2(out, plain, oversized, again, dup)
        dup = plain = oversized = None   # their futures released before the last merge
        out.slices = {u: c[0] for u, c in self.counts.items()}
        out.final = self._statistics(out, again, tree1, tree2)
        return out

    def _wave1(self, out: Outcome, tree1: Tree) -> tuple:
        """:func:`job.score_unit` per unit, each unit's key hashes into the duplicate search, its
        statistics into ``tree1``.  Returns (the search's future, the plain slices each unit
        left, the oversized ones: ``(unit, slice, blocks, the future of the result holding its rows)``)."""
        hashes, position = [], {}
        for u in self.units:
            work = job.UnitWork(self.target_cost, self.first, self.done.get(u.index, frozenset()))
            fut, _ = self._unit(u, work, "unit", ctx=self.ctx1)
            if self.eager:
                position[u.index] = len(hashes)
            hashes.append(self._submit(job.hashes_of, fut, key=self._key("hashes", u.index)))
        dup = self._submit(job.later_duplicates, self.units, *hashes, key=self._key("duplicates"))
        if not self.eager:
            hashes = None   # held by the scheduler for the duplicate search; nothing per unit here
        plain: dict = {}   # unit -> the plain slices wave 1 left
        oversized: list = []

        def on_brief(b: Brief, u: int, fut) -> None:
            self.counts[u] = [b.slices, b.rows, b.skipped, b.reused]
            out.tasks += b.tasks
            out.resumed += b.skipped
            out.reused += b.reused
            for k, blocks in b.left:
                if blocks > 1:
                    oversized.append((self.by_index[u], k, blocks, fut))
                else:
                    plain.setdefault(u, []).append(k)
            tree1.add(fut)
            if self.eager:  # in process: its hashes taken now, so the unit's result is let go
                hashes[position[u]].status
            if self.bar is not None:
                self.bar.update(b.rows, skipped=bool(b.tasks) and b.skipped == b.tasks)

        self._drain(on_brief)
        return dup, plain, oversized

    def _duplicates(self, dup) -> set:
        """The units holding a later duplicate (:func:`job.later_duplicates`), scored again in wave 2."""
        try:
            again = set(value(self._submit(job.duplicate_units, dup, key=self._key("duplicate-units"))))
        except Exception as e:  # noqa: BLE001
            raise TaskFailed("finding duplicate ids across units", e) from e
        if again:
            self.log(f"{len(again)} unit(s) hold ids that earlier units hold: scored again without them")
            # a wave-1 task Dask reruns must not write its unit's rows back
            self.ex.stop([], flags=(self.wave1_flag,), drain=False)
        return again

    def _wave2(self, out: Outcome, plain: dict, oversized: list, again: set, dup) -> Tree:
        """What wave 1 left, and the units holding a later duplicate (scored whole, without it).
        Returns the tree of its statistics (not fed when units were scored again)."""
        tree2 = Tree(self._submit, self._key("merge-2"), self.eager)
        n2 = 0
        for u, ks in sorted(plain.items()):
            if u not in again:   # a unit scored again is scored whole
                n2 += self._left(self.by_index[u], ks)
        for unit, k, blocks, fut in oversized:
            if unit.index not in again:
                self._blocks(unit, k, blocks, fut)
                n2 += 1
        for u in sorted(again):
            self._unit(self.by_index[u], job.UnitWork(self.target_cost, again=True), "again", duplicates=dup)
            n2 += 1
        if self.bar is not None:
            self.bar.total_tasks += n2

        def on_brief(b: Brief, u: int, fut) -> list:
            extra = []
            if b.left is not None and u in again:
                # the unit scored again: its oversized slices now, from the rows that task kept
                for k, blocks in b.left:
                    extra.append(self._blocks(self.by_index[u], k, blocks, fut))
                rows = b.rows - self.counts[u][1]
                out.resumed -= self.counts[u][2]   # what wave 1 resumed of it is written again
                out.reused += b.reused - self.counts[u][3]
                self.counts[u] = [b.slices, b.rows, 0, b.reused]
            else:
                out.tasks += b.tasks
                out.reused += b.reused
                out.split += b.split_examples
                rows = b.rows
                if not again:
                    tree2.add(fut)
            if self.bar is not None:
                self.bar.total_tasks += len(extra)
                self.bar.update(rows)
            return extra

        self._drain(on_brief)
        return tree2

    def _statistics(self, out: Outcome, again: set, tree1: Tree | None, tree2: Tree) -> Totals:
        """The statistics trees' last merge, finalised on a worker (:func:`job.finalize_results`)."""
        if again:
            # wave 1's statistics hold the dropped rows: every unit's, from the files it wrote
            top = Tree(self._submit, self._key("merge-reload"), self.eager)
            for u, n in sorted(out.slices.items()):
                top.add(self._submit(job.reload_unit, self.by_index[u], n, self.ctx, key=self._key("reload", u)))
            tops = top.top()
            out.tasks = sum(out.slices.values())
        else:
            tops = tree1.top() + tree2.top()
        root = self._submit(job.finalize_results, self.confidence, *tops, key=self._key("final"))
        try:
            return value(root)
        except Exception as e:  # noqa: BLE001
            raise TaskFailed("merging the statistics", e) from e

    def halt(self) -> None:
        """Set the run's stop flags (the lease was lost): every task stops at its next write."""
        self.ex.stop([], flags=(self.ctx.stop, self.wave1_flag), drain=False)

    def close(self) -> None:
        """After a run: its stop flags set, so a task Dask would still run (a result lost with
        its worker) writes nothing into the folder."""
        self.ex.stop([], flags=(self.ctx.stop, self.wave1_flag), drain=False)

    def stop(self, drain: bool) -> None:
        """Stop every task still tracked: the run's stop flags set, then (``drain``; not on Ctrl-C,
        when the user asked to stop now) a wait for those still running, which stop at their next
        write; then their futures released."""
        futures = [f for brief, (_w, _u, f) in self.pending.items() for f in (brief, f)]
        self.pending.clear()
        self.ex.stop(futures, flags=(self.ctx.stop, self.wave1_flag), drain=drain)
