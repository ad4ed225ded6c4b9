"""1-Diffractor's 1-D lists: a greedy nearest-neighbour chain through an embedding matrix (docs/algorithms.md).

The chain starts at row ``start`` and repeatedly appends the nearest row not yet in it
(Euclidean, float64 distances, ties to the smaller row id) until every row is in it, so
the result is a permutation of ``0..n−1``. Built once per (space, embedding model) and
kept in the cache (:func:`chain_for`), memory-mapped.

How it is fast without a loop over pairs:

* every row's ``K`` nearest neighbours, sorted by exact float64 distance (preselected among
  ``K + 8`` by a given sorted table, such as the space's own neighbour table, else by faiss's
  flat index when installed, else by float32 GEMM blocks; then re-ranked in float64), so most
  steps are one lookup: the first unvisited entry of the current row's
  list is the nearest unvisited row (every closer row is before it in the list, and visited);
* when all ``K`` are visited, one exact search of the current row against a compacted pool of
  the unvisited rows (float32 GEMV preselecting 8, float64 re-rank); the pool is compacted
  whenever half of it has been visited, so a search costs ``O(|unvisited|·dim)``.

The loop runs over the ``n`` chain steps only (each a few array operations).
"""

from __future__ import annotations

import numpy as np

K = 32  # neighbours kept per row
EXTRA = 8  # float32 preselection margin before the float64 re-rank
BLOCK = 512


def _exact_sq(E64: np.ndarray, rows: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """``‖E_r − E_c‖²`` in float64 for ``rows[i]`` against each of ``cand[i, :]`` (direct differences)."""
    diff = E64[cand] - E64[rows][:, None, :]
    return np.einsum("ijk,ijk->ij", diff, diff)


def _ranked(E64: np.ndarray, rows: np.ndarray, cand: np.ndarray, k: int) -> np.ndarray:
    """``cand`` re-ranked per row by (float64 distance, id), the first ``k`` kept."""
    d = _exact_sq(E64, rows, cand)
    return np.take_along_axis(cand, _lexsort_rows(cand, d), axis=1)[:, :k]


def _lexsort_rows(ids: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Per-row order by ``d`` then ``ids`` (a stable argsort on ids, then a stable argsort on d)."""
    o1 = np.argsort(ids, axis=1, kind="stable")
    d1 = np.take_along_axis(d, o1, axis=1)
    o2 = np.argsort(d1, axis=1, kind="stable")
    return np.take_along_axis(o1, o2, axis=1)


def neighbour_table(E: np.ndarray, k: int = K, preselected: np.ndarray | None = None) -> np.ndarray:
    """``[n, k]`` int64: each row's ``k`` nearest other rows, nearest first (float64 order, ties by id).

    ``preselected``: an ``[n, w]`` table of each row's nearest rows in Euclidean order (itself
    included), ``w ≥ k + EXTRA + 1``; its first ``k + EXTRA + 1`` columns replace the search."""
    E32 = np.ascontiguousarray(E, dtype=np.float32)
    E64 = np.asarray(E, dtype=np.float64)
    n = len(E32)
    k = min(k, n - 1)
    want = min(k + EXTRA, n - 1)
    if preselected is not None and preselected.shape[1] < want + 1:
        preselected = None
    faiss = None
    if preselected is None:
        try:
            import faiss
        except ImportError:
            pass
    out = np.empty((n, k), dtype=np.int64)
    sq = np.einsum("ij,ij->i", E32, E32)
    ix = None
    if faiss is not None:
        ix = faiss.IndexFlatL2(E32.shape[1])
        ix.add(E32)
    for s in range(0, n, BLOCK):
        rows = np.arange(s, min(s + BLOCK, n))
        if preselected is not None:
            cand = np.asarray(preselected[rows, : want + 1], dtype=np.int64)
        elif ix is not None:
            cand = ix.search(E32[rows], want + 1)[1].astype(np.int64)
        else:
            sc = E32[rows] @ E32.T
            sc *= -2.0
            sc += sq[None, :]
            cand = np.argpartition(sc, want, axis=1)[:, : want + 1]
        # drop the row itself (present unless duplicates pushed it out): replace it by a far sentinel
        self_hit = cand == rows[:, None]
        keep = np.where(self_hit.any(axis=1, keepdims=True), ~self_hit, np.arange(want + 1) < want)
        cand = cand[keep].reshape(len(rows), want)
        out[rows] = _ranked(E64, rows, cand, k)
    return out


def greedy_chain(E: np.ndarray, start: int = 0, k: int = K, preselected: np.ndarray | None = None) -> np.ndarray:
    """The greedy nearest-neighbour chain through the rows of ``E`` from ``start`` (module docstring;
    ``preselected`` as in :func:`neighbour_table`)."""
    E64 = np.ascontiguousarray(E, dtype=np.float64)
    E32 = np.ascontiguousarray(E, dtype=np.float32)
    n = len(E64)
    order = np.empty(n, dtype=np.int64)
    if n == 0:
        return order
    nbr = neighbour_table(E, k, preselected) if n > 1 else np.zeros((1, 0), dtype=np.int64)
    visited = np.zeros(n, dtype=bool)
    pool = np.arange(n)  # compacted candidates for exhausted rows (may hold visited ids until compaction)
    pool_E, pool_sq = E32, np.einsum("ij,ij->i", E32, E32)
    cur = int(start)
    for step in range(n):
        order[step] = cur
        visited[cur] = True
        if step == n - 1:
            break
        row = nbr[cur]
        free = ~visited[row]
        if free.any():
            cur = int(row[free.argmax()])
            continue
        if visited[pool].sum() * 2 >= len(pool):  # compact: drop visited ids
            pool = pool[~visited[pool]]
            pool_E, pool_sq = E32[pool], np.einsum("ij,ij->i", E32[pool], E32[pool])
        sc = pool_sq - 2.0 * (pool_E @ E32[cur])
        sc[visited[pool]] = np.inf
        m = min(EXTRA, int((~visited[pool]).sum()))
        near = np.argpartition(sc, m - 1)[:m] if m < len(sc) else np.arange(len(sc))
        near = near[np.isfinite(sc[near])]
        cand = pool[near]
        d = _exact_sq(E64, np.array([cur]), cand[None, :])[0]
        cur = int(cand[np.lexsort((cand, d))[0]])
    return order
