"""Feedback on long work, for library code: a progress bar on a terminal, log lines otherwise.

``progress(enabled)`` yields an object with the subset of ``rich.progress.Progress``
that dptext uses (``add_task``, ``advance``, ``update``), or ``None`` when disabled:

* stderr is a terminal: a transient rich progress bar;
* otherwise (CI logs, pipes): :class:`LogProgress`, which writes one line when a
  task starts, then one line per ``interval`` seconds (``$DPTEXT_LOG_INTERVAL``,
  default 10) per running task with its count and elapsed time, even while
  nothing advances it, and one line when it completes.

Tasks without a known total (``total=None``) are stages ("loading dataset tweets").
"""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager


class LogProgress:
    """Periodic one-line progress reports on a text stream (no terminal control codes)."""

    def __init__(self, stream=None, interval: float | None = None, prefix: str = "dptext") -> None:
        self.stream = stream or sys.stderr
        self.interval = float(interval if interval is not None else os.environ.get("DPTEXT_LOG_INTERVAL", 10))
        self.prefix = prefix
        self.tasks: dict[int, dict] = {}
        self.t0 = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, name="dptext-progress", daemon=True)
        self._beat.start()

    def _heartbeat(self) -> None:
        """A line per running task every ``interval`` seconds, even when nothing advances it."""
        while not self._stop.wait(max(self.interval, 0.2)):
            with self._lock:
                for task in self.tasks.values():
                    if not task["finished"] and time.monotonic() - task["last"] >= self.interval:
                        self._line(task, "running")

    def close(self) -> None:
        self._stop.set()

    def _line(self, task: dict, what: str) -> None:
        done, total = task["completed"], task["total"]
        count = f" {done:g}/{total:g}" if total else (f" {done:g}" if done else "")
        took = time.monotonic() - task["start"]
        print(f"{self.prefix}: {task['description']}{count} {what} ({took:.1f} s)", file=self.stream, flush=True)
        task["last"] = time.monotonic()

    def add_task(self, description: str, total: float | None = None, **_) -> int:
        with self._lock:
            return self._add(description, total)

    def _add(self, description: str, total: float | None) -> int:
        tid = len(self.tasks)
        now = time.monotonic()
        self.tasks[tid] = {"description": description, "total": total, "completed": 0, "start": now, "last": now,
                           "finished": False}
        print(f"{self.prefix}: {description}" + (f" (0/{total:g})" if total else " ..."), file=self.stream,
              flush=True)
        return tid

    def update(self, task_id: int, *, advance: float | None = None, completed: float | None = None,
               description: str | None = None, total: float | None = None, **_) -> None:
        with self._lock:
            self._update(self.tasks[task_id], advance, completed, description, total)

    def _update(self, task: dict, advance, completed, description, total) -> None:
        if description is not None:
            task["description"] = description
        if total is not None:
            task["total"] = total
        if completed is not None:
            task["completed"] = completed
        if advance:
            task["completed"] += advance
        if task["total"] and task["completed"] >= task["total"] and not task["finished"]:
            task["finished"] = True
            self._line(task, "done")
        elif time.monotonic() - task["last"] >= self.interval:
            self._line(task, "running")

    def advance(self, task_id: int, advance: float = 1) -> None:
        self.update(task_id, advance=advance)

    def stage_done(self, task_id: int) -> None:
        """Close a stage (a task without a total)."""
        with self._lock:
            task = self.tasks[task_id]
            if not task["finished"]:
                task["finished"] = True
                self._line(task, "done")


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@contextmanager
def progress(enabled: bool = True, stream=None):
    """A rich bar when ``stream`` (default stderr) is a terminal, else :class:`LogProgress`."""
    if not enabled:
        yield None
        return
    stream = stream or sys.stderr
    if not _is_terminal(stream):
        log = LogProgress(stream)
        try:
            yield log
        finally:
            log.close()
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                  TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                  console=Console(file=stream), transient=True) as bar:
        bar.stage_done = lambda tid: bar.update(tid, total=1, completed=1, visible=False)
        yield bar


@contextmanager
def stage(prog, description: str):
    """A stage of work shown while it runs (``prog`` may be None)."""
    if prog is None:
        yield
        return
    tid = prog.add_task(description, total=None)
    try:
        yield
    finally:
        prog.stage_done(tid)
