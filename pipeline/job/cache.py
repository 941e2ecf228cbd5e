"""What a worker's plan pass kept of the units it read, for this run's tasks."""
from __future__ import annotations

import collections
import threading

import pyarrow as pa

from pipeline.io.spec import WorkUnit

class UnitTables:
    """Units read by the plan pass, kept in the worker process for their tasks: as tables, or,
    for a unit that is one task, as that task's output, scored and encoded (:func:`plan_unit`).

    The plan pass must read every unit (costs, ids); without this the tasks read and parse
    every unit a second time (4-8 us a pair, mostly JSON parsing).  The driver asks the
    scheduler to run a kept unit's tasks where its plan ran (a preference, not a
    restriction).  Bounded by a budget in bytes: past it units are not kept and their tasks
    read them again, as they also do elsewhere (a stolen task, a restarted worker, a resume).
    A unit is dropped when the task holding its last rows has read it, when its tasks must
    read it anew (``drop_rows``: cross-unit duplicates, known only after the plan), and at
    the end of the run (:func:`release_unit_tables`).  Entries belong to one run (its
    ``token``): a worker that outlives a run never serves one run's reading of a file to
    another, and the first unit kept for a new run drops whatever an earlier run left.
    """

    def __init__(self):
        self.used = 0
        self._tables: dict[int, tuple] = {}  # unit index -> (tables, bytes), for self._token's run
        self._token = ""
        # runs already released here: a plan task still running when its run failed (Dask
        # cannot stop a running task) must not keep tables that nothing will release
        self._ended: collections.deque = collections.deque(maxlen=256)
        self._lock = threading.Lock()

    def put(self, token: str, unit: WorkUnit, tables: tuple[pa.Table, pa.Table] | None, budget: int,
            prepared: dict | None = None) -> bool:
        """Keep ``tables`` -- or ``prepared``, the unit's task output (:func:`encode_outputs`, made
        by :func:`plan_unit`), with ``tables`` None -- for ``token``'s run if it fits in
        ``budget`` bytes; True if kept."""
        if not token:
            return False
        n = prepared["nbytes"] if prepared is not None else sum(t.nbytes for t in tables)
        with self._lock:
            if token in self._ended:
                return False
            if token != self._token:
                self._tables.clear()
                self.used = 0
                self._token = token
            if unit.index in self._tables or self.used + n > budget:
                return False
            self._tables[unit.index] = (tables, n, prepared)
            self.used += n
            return True

    def take(self, token: str, unit: WorkUnit, release: bool):
        """What is kept of ``unit`` for ``token``'s run (dropped if ``release``), as
        ``(tables, prepared)`` with one of them None, or None."""
        with self._lock:
            if not token or token != self._token:
                return None
            if unit.drop_rows:  # the plan's table still holds the duplicates: read anew
                release = True
                hit, found = None, self._tables.get(unit.index)
            else:
                hit = found = self._tables.get(unit.index)
            if found is not None and release:
                del self._tables[unit.index]
                self.used -= found[1]
            return None if hit is None else (hit[0], hit[2])

    def kept(self, token: str) -> list[int]:
        """The indices of the units kept here for ``token``'s run."""
        with self._lock:
            return sorted(self._tables) if token and token == self._token else []

    def release(self, token: str) -> None:
        """Drop everything kept for ``token``'s run; nothing more is kept for it afterwards."""
        with self._lock:
            if token and token not in self._ended:
                self._ended.append(token)
            if token == self._token:
                self.clear_locked()

    def clear(self) -> None:
        with self._lock:
            self.clear_locked()

    def clear_locked(self) -> None:
        self._tables.clear()
        self.used = 0


UNIT_TABLES = UnitTables()


def kept_units(token: str) -> list[int]:
    """The units this process kept for ``token``'s run (the driver asks every worker, so each
    unit's tasks prefer the worker that holds it)."""
    return UNIT_TABLES.kept(token)


def release_unit_tables(token: str) -> None:
    """The end of a run (on every worker): drop what its plan pass kept here."""
    UNIT_TABLES.release(token)

