"""Processes as tests see them in /proc (Linux): the ones a run tagged, their family tree, their command lines,
and what a child writes to a pseudo-terminal."""

from __future__ import annotations

import os
from pathlib import Path


def tagged_processes(tag: str) -> list[int]:
    """Live processes whose environment holds ``DPTEXT_TEST_TAG=tag``."""
    needle = f"DPTEXT_TEST_TAG={tag}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


def cmdline(pid: int) -> bytes:
    """The process's command line (arguments joined by NUL), ``(gone)`` once it has exited."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b"(gone)"


def proc_stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time) of a live process, None once it is gone or a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == b"Z" else (int(fields[1]), int(fields[19]))


def _all_stats() -> dict[int, tuple[int, int] | None]:
    return {int(e.name): proc_stat(int(e.name)) for e in Path("/proc").iterdir() if e.name.isdigit()}


def children(pid: int) -> list[int]:
    """The live children of ``pid``."""
    return [c for c, st in _all_stats().items() if st and st[0] == pid]


def with_descendants(pids: list[int]) -> set[tuple[int, int]]:
    """(pid, start time) of ``pids`` and every descendant: a renamed process may no longer show its environment."""
    stats = _all_stats()
    found, todo = set(), [p for p in pids if stats.get(p)]
    while todo:
        pid = todo.pop()
        found.add((pid, stats[pid][1]))
        todo += [c for c, st in stats.items() if st and st[0] == pid and (c, st[1]) not in found]
    return found


def read_pty(master: int, chunk: int = 65536) -> bytes:
    """Everything a child writes to the pseudo-terminal ``master`` until it closes its end."""
    seen = b""
    while True:
        try:
            got = os.read(master, chunk)
        except OSError:  # the child closed the terminal
            return seen
        if not got:
            return seen
        seen += got
