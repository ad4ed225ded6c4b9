"""Sorted nearest-neighbour tables, built once per space and memory-mapped.

For every unit ``x`` of a space the table holds its ``K`` nearest units in
increasing distance, ties broken by index (``order[x]``), and their
distances (``dist[x]``). Two more arrays describe where the table stops:

* ``edge[x] = dist[x, K-1]``, the largest distance kept;
* ``near[x]``: the number of leading entries with ``d < edge[x]``, so the
  *near part* ``order[x, :near[x]]`` is exactly ``{t : d(x, t) < edge[x]}``
  and every unit outside it has ``d(x, t) ≥ edge[x]``.

Samplers use the near part directly and reach the rest of the vocabulary
through :meth:`EmbeddingSpace.pair_distances`, the same function that gave the
table its values, so both sides of ``edge`` agree. When ``K = |V|`` there is
no far part (``edge = +inf``, ``near = |V|``).

The table is ε-independent, stored in the cache as plain ``.npy`` files keyed
by the space, and opened with ``mmap_mode="r"``, so every process and worker
on a machine shares one copy through the page cache. Width: the largest
power of two with ``|V|·K·(4 + 2)`` bytes ≤ 320 MiB (capped at ``|V|``).

Build: one float64 GEMM per chunk of rows (``exact_distances``),
``argpartition`` to the ``K`` nearest, then a sort of those ``K`` only; chunks run on
two threads (each writes its own rows, so the table is the same as one thread's).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

import numpy as np

from dptext import cache
from dptext.progress import stderr_is_terminal

TABLE_BYTES = 320 * 2**20
VERSION = 1


def table_width(n_units: int, budget: int = TABLE_BYTES) -> int:
    k = 1
    while k * 2 <= n_units and n_units * k * 2 * 6 <= budget:
        k *= 2
    return n_units if n_units * n_units * 6 <= budget else k


@dataclass
class NeighbourTable:
    dist: np.ndarray  # [|V|, K] float32, increasing along a row
    order: np.ndarray  # [|V|, K] unit indices (uint16 or int32)
    near: np.ndarray  # [|V|] int32
    edge: np.ndarray  # [|V|] float32 (+inf for a full table)

    @property
    def width(self) -> int:
        return int(self.dist.shape[1])

    @property
    def full(self) -> bool:
        return self.width == len(self.near)

    def nbytes(self) -> int:
        return sum(int(a.nbytes) for a in (self.dist, self.order, self.near, self.edge))


class _Progress:
    """Progress for long builds: a rich task when given one, else log lines on a non-terminal stderr."""

    def __init__(self, progress, label: str, total: int) -> None:
        self.progress, self.label, self.total, self.done = progress, label, total, 0
        self.task = progress.add_task(label, total=total) if progress is not None else None
        self.log = progress is None and not stderr_is_terminal()
        self.t0 = self.last = time.monotonic()

    def advance(self, n: int) -> None:
        self.done += n
        if self.task is not None:
            self.progress.advance(self.task, n)
        elif self.log and (time.monotonic() - self.last >= 5 or self.done >= self.total):
            self.last = time.monotonic()
            print(f"dptext: {self.label}: {self.done}/{self.total} ({100 * self.done / self.total:.0f}%, "
                  f"{self.last - self.t0:.0f} s)", file=sys.stderr, flush=True)


def table_rows(space, rows: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """``(dist, order)`` of the given rows: the ``width`` nearest units by (distance, index)."""
    n = space.size
    d = space.exact_distances(rows)
    cand = np.argpartition(d, width - 1, axis=1)[:, :width] if width < n else np.broadcast_to(np.arange(n), d.shape)
    dc = np.take_along_axis(d, cand, axis=1)
    srt = np.lexsort((cand, dc), axis=1)  # by distance, then index
    return np.take_along_axis(dc, srt, axis=1), np.take_along_axis(cand, srt, axis=1)


def finish(dist: np.ndarray, order: np.ndarray, n_units: int) -> NeighbourTable:
    """Add ``near`` and ``edge`` to sorted rows."""
    if dist.shape[1] == n_units:
        return NeighbourTable(dist, order, np.full(len(dist), n_units, dtype=np.int32),
                              np.full(len(dist), np.inf, dtype=np.float32))
    edge = dist[:, -1].copy()
    return NeighbourTable(dist, order, (dist < edge[:, None]).sum(axis=1).astype(np.int32), edge)


def build_table(space, width: int | None = None, progress=None, chunk: int = 256) -> NeighbourTable:
    """Build the table in memory (vectorised per chunk of rows)."""
    n = space.size
    k = min(n, width or table_width(n))
    dist = np.empty((n, k), dtype=np.float32)
    order = np.empty((n, k), dtype=np.uint16 if n <= 2**16 else np.int32)
    bar = _Progress(progress, f"neighbour table {space.name} (K={k})", n)

    def fill(start: int) -> int:
        rows = np.arange(start, min(start + chunk, n))
        dist[rows], order[rows] = table_rows(space, rows, k)
        return len(rows)

    starts = range(0, n, chunk)
    workers = min(os.cpu_count() or 1, 2, len(starts))  # two: each chunk holds ~0.2 GB of float64 temporaries
    if workers < 2:
        for start in starts:
            bar.advance(fill(start))
        return finish(dist, order, n)
    # chunks are independent and numpy releases the GIL in the GEMM, the element-wise passes and argpartition,
    # so threads overlap the single-threaded passes of one chunk with the others'; each chunk writes its own rows
    from concurrent.futures import ThreadPoolExecutor, as_completed

    with ThreadPoolExecutor(workers, thread_name_prefix="dptext-table") as pool:
        for fut in as_completed([pool.submit(fill, start) for start in starts]):
            bar.advance(fut.result())
    return finish(dist, order, n)


def _paths(space, width: int) -> dict:
    key = cache.key_of(space.cache_key, "neighbours", VERSION, width)
    return {a: cache.entry_path("spaces", f"{space.name}-nn-{a}", key, ".npy", version=VERSION)
            for a in ("dist", "order", "near", "edge")}


def load_table(space, progress=None, width: int | None = None) -> NeighbourTable:
    """The space's table from the cache (memory-mapped), built and saved on first use."""
    k = min(space.size, width or table_width(space.size))
    paths = _paths(space, k)
    if not all(p.exists() for p in paths.values()):
        from dptext.progress import build_stage, current

        progress = current(progress)
        with build_stage(progress, f"neighbour table of {space.name} ({space.size:,} units x {k} nearest)",
                         space.size ** 2 * space.dim * 2.5e-10 + 5, paths["dist"].parent):  # cost ~ |V|^2 dim
            t = build_table(space, k, progress)
        for a, p in paths.items():
            cache.save_npy(p, getattr(t, a))
    # plain ndarray views of the maps: indexing an np.memmap subclass costs more per call
    return NeighbourTable(**{a: np.asarray(cache.load_npy(p, mmap=True)) for a, p in paths.items()})


def _default_paths(space) -> dict:
    return _paths(space, min(space.size, table_width(space.size)))


def cached_table(space) -> NeighbourTable | None:
    """The space's table if it is already in the cache (memory-mapped), else ``None``; never builds."""
    return load_table(space) if all(p.exists() for p in _default_paths(space).values()) else None


def table_paths(space) -> list:
    """Cached table files of ``space`` that exist (for size reports)."""
    return [p for p in _default_paths(space).values() if p.exists()]
