"""Progress: a bar with pairs/s and ETA on a terminal, periodic log lines otherwise."""
from __future__ import annotations

import sys
import time


def _fmt_eta(seconds: float) -> str:
    if seconds != seconds or seconds == float("inf"):
        return "?"
    seconds = int(seconds)
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


class Progress:
    """``update(rows)`` after every finished task.  Rows of resumed (skipped) tasks count toward
    completion but not toward the pairs/s rate.  With ``total_rows=None`` (a pass whose row
    count is not known beforehand) it counts tasks (``unit`` names them) and estimates the ETA
    from them."""

    def __init__(self, total_tasks: int, total_rows: int | None, stream=None, interval: float = 10.0,
                 tty: bool | None = None, enabled: bool = True, label: str = "scoring", unit: str = "tasks",
                 t0: float | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self.tty = (hasattr(self.stream, "isatty") and self.stream.isatty()) if tty is None else tty
        self.total_tasks, self.total_rows = total_tasks, total_rows
        self.tasks = self.rows = self.scored_rows = 0
        self.interval = interval if not self.tty else 0.2
        self.enabled = enabled
        self.label = label
        self.unit = unit
        self.t0 = time.perf_counter() if t0 is None else t0  # time.perf_counter() of the rate's start
        self._last = 0.0
        self._open_line = False  # a terminal line written without its newline

    def rate(self) -> float:
        dt = time.perf_counter() - self.t0
        return self.scored_rows / dt if dt > 0 else 0.0

    def line(self) -> str:
        if self.total_rows is None:
            dt = time.perf_counter() - self.t0
            left = self.total_tasks - self.tasks
            eta = dt * left / self.tasks if self.tasks else float("nan")
            pct = 100.0 * self.tasks / max(1, self.total_tasks)
            return (f"{self.label}: {self.tasks}/{self.total_tasks} {self.unit} ({pct:5.1f}%), "
                    f"ETA {_fmt_eta(eta)}")
        rate = self.rate()
        left = self.total_rows - self.rows
        eta = left / rate if rate > 0 else float("nan")
        pct = 100.0 * self.rows / self.total_rows if self.total_rows else 100.0 * self.tasks / max(1, self.total_tasks)
        return (f"{self.label}: {self.tasks}/{self.total_tasks} tasks, {self.rows}/{self.total_rows} pairs "
                f"({pct:5.1f}%), {rate:,.0f} pairs/s, ETA {_fmt_eta(eta)}")

    def update(self, rows: int, skipped: bool = False) -> None:
        self.tasks += 1
        self.rows += rows
        if not skipped:
            self.scored_rows += rows
        if not self.enabled:
            return
        now = time.perf_counter()
        done = self.tasks >= self.total_tasks
        if now - self._last < self.interval and not done:
            return
        self._last = now
        if self.tty:
            width = 30
            frac = self.rows / self.total_rows if self.total_rows else self.tasks / max(1, self.total_tasks)
            bar = "#" * int(width * frac) + "-" * (width - int(width * frac))
            self.stream.write(f"\r[{bar}] {self.line()}")
            self._open_line = not done
            if done:
                self.stream.write("\n")
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End a terminal line left open (a pass that stopped before its last task)."""
        if self._open_line:
            self.stream.write("\n")
            self.stream.flush()
            self._open_line = False
