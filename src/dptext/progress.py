"""Feedback on long work: a progress bar on a terminal, periodic log lines otherwise.

Library functions that take ``progress=`` accept any object with rich's
``Progress`` task API (``add_task(description, total=)``, ``advance(task, n)``,
``update(task, ...)``); they never decide how it is shown. Front ends open one
with :func:`progress_reporter`:

* stderr is a terminal: a transient rich bar;
* otherwise (CI logs, pipes): :class:`LogProgress`: a task that is still
  running after ``interval`` seconds (``$DPTEXT_PROGRESS_INTERVAL``, default
  5 s) gets one line on stderr, then one line per further ``interval`` (from a
  heartbeat thread, so a step that never advances is still reported), and a
  last line when it completes. Work that finishes within ``interval`` prints
  nothing, except a *stage* (a task without a total, opened with :func:`stage`),
  which is announced when it starts;
* disabled: ``None``.

``$DPTEXT_PROGRESS_INTERVAL`` (or its older name ``$DPTEXT_LOG_INTERVAL``) sets the interval.

A stage has no count of its own: while it runs it shows its elapsed time (never "0 done" or "0/None"),
and the counted tasks opened inside it show the counts. One-time builds (a space, a neighbour table, a
noise calibration) open a stage with :func:`build_stage`, which says what is built, about how long it
takes and where it is cached. Library code that was not handed a ``progress`` reports to the one the
front end opened (:func:`current`), so a build deep inside a call is never silent.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

DEFAULT_INTERVAL = 5.0


def _interval_from_env() -> float:
    raw = os.environ.get("DPTEXT_PROGRESS_INTERVAL", os.environ.get("DPTEXT_LOG_INTERVAL"))
    if raw is None:
        return DEFAULT_INTERVAL
    try:
        value = float(raw)
    except ValueError:
        from dptext.errors import ParameterError

        raise ParameterError("DPTEXT_PROGRESS_INTERVAL", "must be a number of seconds >= 0", value=raw) from None
    if not value >= 0:
        from dptext.errors import ParameterError

        raise ParameterError("DPTEXT_PROGRESS_INTERVAL", "must be a number of seconds >= 0", value=raw)
    return value


class LogProgress:
    """rich-``Progress``-compatible task tracker that writes plain log lines (no cursor control).

    A line reads ``dptext: <description>: 1200/5000 (24%), 3.1 s``; tasks with no
    total print the count only. ``write`` defaults to stderr. Used as a context
    manager it runs a heartbeat thread (see the module docstring).
    """

    def __init__(self, interval: float | None = None, write: Callable[[str], None] | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.interval = _interval_from_env() if interval is None else float(interval)
        self._write = write or (lambda line: print(line, file=sys.stderr, flush=True))
        self._clock = clock
        self._tasks: dict[int, dict] = {}
        self._next = 0
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add_task(self, description: str, total: float | None = None, completed: float = 0, **_) -> int:
        with self._lock:
            tid = self._next
            self._next += 1
            now = self._clock()
            self._tasks[tid] = {"description": description, "total": total, "completed": completed,
                                "start": now, "last": now, "shown": False, "done": False,
                                "stage": total is None}
            if total is None:  # a stage: say what is starting, however short it turns out
                self._write(f"dptext: {description}")
                self._tasks[tid]["shown"] = True
            return tid

    def advance(self, task_id: int, advance: float = 1) -> None:
        self.update(task_id, advance=advance)

    def update(self, task_id: int, *, total: float | None = None, completed: float | None = None,
               advance: float | None = None, description: str | None = None, **_) -> None:
        with self._lock:
            t = self._tasks.get(task_id)
            if t is None or t["done"]:
                return
            if total is not None:
                t["total"] = total
            if description is not None:
                t["description"] = description
            if completed is not None:
                t["completed"] = completed
            if advance:
                t["completed"] += advance
            if t["total"] is not None and t["completed"] >= t["total"]:
                t["done"] = True
                if t["shown"] or self._clock() - t["start"] >= self.interval:
                    self._emit(t)  # a long task says it finished; a short one stays silent
            else:
                self._tick(t)

    def remove_task(self, task_id: int) -> None:
        with self._lock:
            self._tasks.pop(task_id, None)

    def _tick(self, t: dict) -> None:
        if t["done"] or self._clock() - t["last"] < self.interval:
            return
        if t["stage"] and self._counted_inside(t):
            t["last"] = self._clock()  # the counted task inside says how far it is; no bare clock line
            return
        self._emit(t)

    def _counted_inside(self, stage: dict) -> bool:
        return any(not u["stage"] and not u["done"] and u["start"] >= stage["start"] for u in self._tasks.values())

    def _emit(self, t: dict) -> None:
        now = self._clock()
        t["last"], t["shown"] = now, True
        done, total = t["completed"], t["total"]
        if t["stage"]:  # no count of its own: how long it has run, and that it finished
            count = "done" if t["done"] else "running"
        else:
            count = f"{done:g}/{total:g} ({100 * done / total:.0f}%)" if total else f"{done:g} done"
        self._write(f"dptext: {t['description']}: {count}, {now - t['start']:.1f} s")

    def _heartbeat(self) -> None:
        while not self._stop.wait(min(1.0, max(self.interval / 4, 0.05))):
            with self._lock:
                for t in list(self._tasks.values()):
                    self._tick(t)

    def __enter__(self):
        self._stop.clear()
        self._thread = threading.Thread(target=self._heartbeat, name="dptext-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        return False


def is_terminal(stream) -> bool:
    """Whether ``stream`` is an open terminal (a closed or replaced stream is not)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def stderr_is_terminal() -> bool:
    return is_terminal(sys.stderr)


_CURRENT: list = []  # the reporters front ends have open, innermost last


def current(progress=None):
    """``progress`` if given, else the reporter the front end opened (None when there is none)."""
    if progress is not None:
        return progress
    return _CURRENT[-1] if _CURRENT else None


@contextmanager
def _opened(reporter):
    _CURRENT.append(reporter)
    try:
        yield reporter
    finally:
        _CURRENT.remove(reporter)


def _rich_progress():
    """A transient rich display: description, bar, ``done/total`` for counted tasks (nothing for a stage,
    which has no count), elapsed time."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
    from rich.text import Text

    class _Count(ProgressColumn):
        def render(self, task):
            return Text("" if task.total is None else f"{task.completed:g}/{task.total:g}")

    return Progress(TextColumn("{task.description}"), BarColumn(), _Count(), TimeElapsedColumn(),
                    console=Console(stderr=True), transient=True)


@contextmanager
def progress_reporter(enabled: bool = True) -> Iterator[object | None]:
    """A rich bar on a terminal, :class:`LogProgress` otherwise, ``None`` when disabled."""
    if not enabled:
        yield None
        return
    if not stderr_is_terminal():
        with LogProgress() as log, _opened(log):
            yield log
        return
    with _rich_progress() as p, _opened(p):
        yield p


def about(seconds: float) -> str:
    """``12`` -> ``"about 10 s"``, ``75`` -> ``"about a minute"``: a rough duration for a one-time build."""
    if seconds < 60:
        return f"about {max(5, int(round(seconds / 5.0)) * 5)} s"
    minutes = int(round(seconds / 60.0))
    return "about a minute" if minutes <= 1 else f"about {minutes} minutes"


def build_stage(progress, what: str, seconds: float, where) -> "contextmanager":
    """A stage for a one-time build: ``building <what> (one time, about N s; cached in <where>)``.
    ``progress`` None: the front end's reporter (:func:`current`)."""
    return stage(current(progress), f"building {what} (one time, {about(seconds)}; cached in {where})")


@contextmanager
def stage(progress, description: str):
    """A named stage of work, shown while it runs (``progress`` may be None)."""
    if progress is None:
        yield
        return
    tid = progress.add_task(description, total=None)
    try:
        yield
    finally:
        progress.update(tid, total=1, completed=1, visible=False)
