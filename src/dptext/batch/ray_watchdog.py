"""Tear down the local Ray instance a driver started, however the driver ends.

``ray.init()`` starts a GCS server, a raylet and agents as child processes;
when the driver is killed outright (``kill -9``) nothing runs its shutdown,
and some agents (the dashboard and runtime-env agents) live on, orphaned.

:class:`RayReaper` therefore marks every process of the instance and starts
a small watchdog process before Ray:

* the marker is an environment variable, ``DPTEXT_RAY_OWNER=<driver pid>-<random>``,
  set while ``ray.init()`` runs, which every Ray process inherits (the GCS
  server and raylet from the driver, workers and agents from the raylet).
  A process that renames itself (``ray::...``) may write its title over its
  original environment block, which is what ``/proc/<pid>/environ`` shows;
  the agents do, and lost the marker. ``SPT_NOENV=1``, set with the marker,
  makes Ray's title code keep within the argument area (Ray sets it for its
  workers itself). A sweep also takes every descendant of a marked process,
  so a process that hides its environment some other way is still found
  while its parent lives;
* the watchdog runs in its own session (Ctrl-C to the driver's terminal does
  not reach it) and blocks reading a pipe whose only writer is the driver.
  The kernel closes that pipe when the driver exits for any reason, SIGKILL
  included; the watchdog then sends SIGTERM to every marked process, waits
  ``grace`` seconds, and sends SIGKILL to the rest.

On a normal run the driver shuts Ray down itself, writes ``CLEAN`` and closes
the pipe, so the watchdog sweeps once, finds nothing (or the odd straggler)
and exits. After a driver died it keeps sweeping until nothing marked has been
seen for ``SETTLE`` seconds: a driver killed early in Ray's start-up leaves
agents that the raylet was still launching.

Linux only (``/proc``); elsewhere the watchdog is not started.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

MARKER_VAR = "DPTEXT_RAY_OWNER"
CLEAN = b"shutdown"  # written by the driver before it closes the pipe after ray.shutdown()
SETTLE = 2.0  # after a driver died: nothing marked for this long before the watchdog stops sweeping


def _parent(entry: Path) -> int | None:
    try:  # /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces and parentheses
        return int((entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def marked_processes(marker: str) -> list[int]:
    """Pids of this user's processes whose environment holds ``DPTEXT_RAY_OWNER=<marker>``, and their descendants."""
    needle = f"{MARKER_VAR}={marker}".encode()
    me = os.getpid()
    marked, children = set(), {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        pid = int(entry.name)
        children.setdefault(_parent(entry), []).append(pid)
        try:
            env = (entry / "environ").read_bytes()
        except OSError:  # gone, or another user's process
            continue
        if needle in env.split(b"\0"):
            marked.add(pid)
    todo = list(marked)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in marked:  # the watchdog itself was never listed
                marked.add(child)
                todo.append(child)
    return sorted(marked)


def teardown(marker: str, grace: float = 3.0) -> int:
    """SIGTERM every marked process, SIGKILL what is left after ``grace`` s; return how many were found."""
    pids = marked_processes(marker)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):  # gone, or a descendant that is not this user's
                pass
        if sig == signal.SIGKILL:
            break
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and marked_processes(marker):
            time.sleep(0.1)
        pids = marked_processes(marker)
        if not pids:
            break
    return len(pids)


class RayReaper:
    """Marks the Ray processes started between :meth:`mark` and :meth:`unmark`; reaps them when the driver ends."""

    def __init__(self, grace: float = 3.0):
        self.marker = f"{os.getpid()}-{secrets.token_hex(8)}"
        self.grace = grace
        self.proc: subprocess.Popen | None = None
        self._spt: str | None = None  # the caller's SPT_NOENV, put back by unmark()

    def start(self) -> "RayReaper":
        if not Path("/proc/self/environ").exists():
            return self
        env = {k: v for k, v in os.environ.items() if k != MARKER_VAR}
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), self.marker, str(self.grace)],  # stdlib only: starts fast
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, env=env, close_fds=True)
        return self

    def mark(self) -> None:
        self._spt = os.environ.get("SPT_NOENV")
        os.environ[MARKER_VAR] = self.marker
        os.environ["SPT_NOENV"] = "1"  # a renamed Ray process keeps its environment, marker included, readable

    def unmark(self) -> None:
        if os.environ.pop(MARKER_VAR, None) is None:
            return
        if self._spt is None:
            os.environ.pop("SPT_NOENV", None)
        else:
            os.environ["SPT_NOENV"] = self._spt

    def close(self, wait: float = 15.0) -> None:
        """Let the watchdog sweep now (after ``ray.shutdown()``) and wait for it."""
        if self.proc is None:
            return
        try:
            try:
                self.proc.stdin.write(CLEAN)  # an orderly end: Ray is shut down, one sweep is enough
                self.proc.stdin.close()
            except OSError:  # the watchdog is already gone
                pass
            self.proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:  # it carries on alone; the driver does not hang on it
            pass
        self.proc = None


def main(argv: list[str]) -> int:
    marker, grace = argv[0], float(argv[1]) if len(argv) > 1 else 3.0
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    got = b""
    try:
        while chunk := sys.stdin.buffer.read(4096):  # returns b"" once the driver's end is closed
            got += chunk
    except OSError:
        pass
    # sweep until nothing marked is left; after a driver died (no CLEAN), until nothing has been marked
    # for SETTLE seconds: an agent the raylet was still starting appears after a sweep
    settle = 0.0 if got.endswith(CLEAN) else SETTLE
    deadline = time.monotonic() + 10 * grace
    clear_since = None
    while time.monotonic() <= deadline:
        teardown(marker, grace)
        time.sleep(0.2)
        if marked_processes(marker):
            clear_since = None
        elif clear_since is None:
            clear_since = time.monotonic()
        if clear_since is not None and time.monotonic() - clear_since >= settle:
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
