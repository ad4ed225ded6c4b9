"""Inverted-file (IVF) index for the approximate nearest-unit search of Stencil and the noise mapper.

Both searches are ``best(q) = argmax_t ⟨q', e_t⟩ + b_t`` over a table ``e``:

* ``"cosine"`` (Stencil): ``e = ê`` the normalised embeddings, ``q' = q``, ``b = 0``
  (``argmax_t cos(q, E[t])``);
* ``"euclidean"`` (noise mapper): ``e = E``, ``q' = 2q``, ``b_t = −‖E[t]‖²``
  (``argmin_t ‖q − E[t]‖``, since ``‖q − e‖² = ‖q‖² − 2⟨q, e⟩ + ‖e‖²``).

Index: k-means (``L`` lists, faiss, fixed seed, single-threaded so the same
space gives the same lists everywhere) partitions the table; the rows are
stored list by list in one float32 ``.npy`` that is memory-mapped, beside a
small ``.npz`` (centroids ``c_ℓ``, list offsets, unit ids).

Search (:meth:`IvfIndex.search`): each query probes the ``nprobe`` lists whose
centroids are nearest to ``q̃`` (``q̂ = q/‖q‖`` for cosine, ``q`` for Euclidean),
ranked by ``2⟨q̃, c_ℓ⟩ − ‖c_ℓ‖²``. The queries of a batch are grouped by list so that each
list costs one float32 GEMM (queries × list rows), scored exactly as the full
search scores them; ``exclude[i]`` is removed; ties go to the smaller unit id
(as ``argmax`` over the full table). The answer is the exact arg-max whenever
the true winner lies in a probed list; otherwise it is the best unit of the
probed lists. Work is about ``nprobe/L`` of the full search. It is approximate:
agreement with exact search is measured, never assumed (``benchmarks/bench_tokenmanip.py``).

Cache: ``<cache>/spaces/<space>-ivf-<metric>-<key>{.npz,-rows.npy}`` (key: the
space's cache key and ``L``), both written atomically.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from dptext import cache

VERSION = 1
METRICS = ("cosine", "euclidean")
MAX_LISTS = 1024
ROWS_PER_LIST = 39  # faiss k-means wants at least 39 training points per centroid
BATCH = 4096
WORKERS = max(1, min(2, os.cpu_count() or 1))  # threads scanning lists (each single-threaded)
_LOADED: dict = {}
_LOCK = threading.Lock()


def n_lists(size: int) -> int:
    return int(max(1, min(MAX_LISTS, size // ROWS_PER_LIST)))


def search_form(space, metric: str) -> tuple[float, np.ndarray, np.ndarray | None]:
    """``(s, e, b)`` with ``best(q) = argmax_t ⟨s·q, e_t⟩ + b_t`` for ``metric`` (the module docstring's table).

    The one statement of each metric's nearest-unit search: the index, the exact
    search and its fallback all take it from here.
    """
    if metric not in METRICS:
        raise ValueError(f"unknown ANN metric {metric!r} (expected one of {', '.join(METRICS)})")
    if metric == "cosine":
        return 1.0, np.ascontiguousarray(space.normalized, dtype=np.float32), None
    return (2.0, np.ascontiguousarray(space.embeddings, dtype=np.float32),
            -np.asarray(space.sq_norms, dtype=np.float32))


def index_paths(space, metric: str):
    key = cache.key_of(space.cache_key, "ivf", VERSION, metric, n_lists(space.size))
    meta = cache.entry_path("spaces", f"{space.name}-ivf-{metric}", key, ".npz", version=VERSION)
    return meta, meta.with_name(meta.name[: -len(".npz")] + "-rows.npy")


def build(space, metric: str, progress=None) -> None:
    """k-means over the space's table, then the rows written list by list (both files, atomically)."""
    import faiss

    from dptext.spaces.neighbours import _Progress

    _, table, _ = search_form(space, metric)
    nlist = n_lists(len(table))
    bar = _Progress(progress, f"IVF index {space.name} ({metric}, {nlist} lists)", 2)
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)  # reproducible centroids
    try:
        km = faiss.Kmeans(table.shape[1], nlist, niter=20, seed=1234, spherical=False, verbose=False)
        km.train(table)
        bar.advance(1)
        _, assign = km.index.search(table, 1)
    finally:
        faiss.omp_set_num_threads(threads)
    assign = assign[:, 0].astype(np.int64)
    ids = np.argsort(assign, kind="stable")  # list by list, unit ids ascending inside a list
    offsets = np.concatenate([[0], np.cumsum(np.bincount(assign, minlength=nlist))]).astype(np.int64)
    meta, rows = index_paths(space, metric)
    cache.save_npy(rows, np.ascontiguousarray(table[ids]))
    cache.save_npz(meta, centroids=km.centroids.astype(np.float32), offsets=offsets, ids=ids.astype(np.int64))
    bar.advance(1)


class IvfIndex:
    """A space's IVF index for one metric (shared per process; search is read-only, thread-safe)."""

    def __init__(self, space, metric: str, centroids, offsets, ids, rows, built: bool) -> None:
        self.space, self.metric, self.built = space, metric, built
        self.centroids, self.offsets, self.ids, self.rows = centroids, offsets, ids, rows
        self.c_sq = (centroids.astype(np.float64) ** 2).sum(axis=1).astype(np.float32)
        self.scale, _, bias = search_form(space, metric)
        self.bias = None if bias is None else bias[ids]
        self.list_of = np.empty(len(ids), dtype=np.int64)  # unit id -> its list and place in it
        self.list_of[ids] = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
        self.place = np.empty(len(ids), dtype=np.int64)
        self.place[ids] = np.arange(len(ids)) - offsets[self.list_of[ids]]

    @property
    def nlist(self) -> int:
        return len(self.offsets) - 1

    @property
    def mmapped(self) -> bool:
        return isinstance(self.rows, np.memmap)

    @classmethod
    def of(cls, space, metric: str, progress=None) -> "IvfIndex":
        """The cached index of ``space`` (built and saved on first use; rows memory-mapped)."""
        key = (space.name, space.cache_key, metric)
        with _LOCK:
            if key not in _LOADED:
                meta, rows = index_paths(space, metric)
                built = not (meta.exists() and rows.exists())
                if built:
                    build(space, metric, progress)
                m = cache.load_npz(meta)
                r = cache.load_npy(rows, mmap=True)
                if r.shape != (space.size, space.dim) or len(m["ids"]) != space.size:
                    raise RuntimeError(f"IVF index {meta} does not match space {space.name}: rebuild it")
                _LOADED[key] = cls(space, metric, m["centroids"], m["offsets"], m["ids"], r, built)
            return _LOADED[key]

    @staticmethod
    def forget(space=None) -> None:
        """Drop loaded indexes (all, or those of ``space``) so the next use reads the files again."""
        with _LOCK:
            for key in [k for k in _LOADED if space is None or k[:2] == (space.name, space.cache_key)]:
                del _LOADED[key]

    def probes(self, queries: np.ndarray, nprobe: int) -> np.ndarray:
        """The ``nprobe`` lists each query visits [n, nprobe] (nearest centroids to ``q̃``)."""
        q = np.asarray(queries, dtype=np.float32)
        if self.metric == "cosine":
            q = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-30)
        s = 2.0 * (q @ self.centroids.T) - self.c_sq[None, :]
        nprobe = min(int(nprobe), self.nlist)
        if nprobe == self.nlist:
            return np.broadcast_to(np.arange(self.nlist), s.shape)
        return np.argpartition(-s, nprobe - 1, axis=1)[:, :nprobe]

    def search(self, queries: np.ndarray, nprobe: int, exclude: np.ndarray | None = None) -> np.ndarray:
        """Best unit of the probed lists for each query (``-1`` if every probed unit is excluded)."""
        q = np.ascontiguousarray(queries, dtype=np.float32)
        out = np.empty(len(q), dtype=np.int64)
        for s in range(0, len(q), BATCH):
            ex = None if exclude is None else np.asarray(exclude[s : s + BATCH], dtype=np.int64)
            out[s : s + BATCH] = self._search_batch(q[s : s + BATCH], nprobe, ex)
        return out

    def _tensors(self):
        import warnings

        import torch

        if not hasattr(self, "_t"):
            with warnings.catch_warnings():  # read-only memory map: the tensor is never written
                warnings.simplefilter("ignore", UserWarning)
                rows = torch.from_numpy(self.rows)
            self._t = (rows, None if self.bias is None else torch.from_numpy(self.bias))
        return self._t

    def _search_batch(self, q: np.ndarray, nprobe: int, ex: np.ndarray | None) -> np.ndarray:
        import torch

        n = len(q)
        probes = self.probes(q, nprobe)
        lists = probes.ravel().astype(np.int16 if self.nlist <= 32767 else np.int64)
        order = np.argsort(lists, kind="stable")  # radix sort on int16: (query, list) pairs grouped by list
        qidx = torch.from_numpy(np.repeat(np.arange(n), probes.shape[1])[order])
        bounds = np.concatenate([[0], np.cumsum(np.bincount(lists, minlength=self.nlist))])
        qq = torch.from_numpy(q if self.scale == 1.0 else (self.scale * q).astype(np.float32))
        rows_t, bias_t = self._tensors()
        ex_list = None if ex is None else np.where(ex >= 0, self.list_of[np.maximum(ex, 0)], -1)
        todo = [ell for ell in np.flatnonzero(np.diff(bounds)) if self.offsets[ell + 1] > self.offsets[ell]]
        workers = max(1, min(WORKERS, len(todo)))
        parts = [todo[w::workers] for w in range(workers)]

        def scan(part):
            best_v = np.full(n, -np.inf, dtype=np.float32)
            best_i = np.full(n, -1, dtype=np.int64)
            for ell in part:
                rows = qidx[bounds[ell] : bounds[ell + 1]]
                a, b = int(self.offsets[ell]), int(self.offsets[ell + 1])
                sc = torch.mm(qq.index_select(0, rows), rows_t[a:b].T)
                if bias_t is not None:
                    sc += bias_t[a:b]
                r = rows.numpy()
                if ex_list is not None:
                    hit = np.flatnonzero(ex_list[r] == ell)
                    if len(hit):
                        sc[torch.from_numpy(hit), torch.from_numpy(self.place[ex[r[hit]]])] = -float("inf")
                v, j = sc.max(dim=1)
                v, ids = v.numpy(), self.ids[a + j.numpy()]
                bv, bi = best_v[r], best_i[r]
                better = (v > bv) | ((v == bv) & (ids < bi) & np.isfinite(v))
                best_v[r[better]] = v[better]
                best_i[r[better]] = ids[better]
            return best_v, best_i

        with _single_threaded_ops():
            if workers == 1:
                results = [scan(parts[0])]
            else:
                from concurrent.futures import ThreadPoolExecutor

                with ThreadPoolExecutor(workers) as pool:
                    results = list(pool.map(scan, parts))
        best_v, best_i = results[0]
        for v, ids in results[1:]:  # merge: larger score, then smaller id
            better = (v > best_v) | ((v == best_v) & (ids < best_i) & np.isfinite(v))
            best_v, best_i = np.where(better, v, best_v), np.where(better, ids, best_i)
        return best_i


_THREADS_LOCK = threading.Lock()


class _single_threaded_ops:
    """torch's intra-op threads set to 1 for the block: the per-list GEMMs are small, and a shared
    thread team waiting on a descheduled member costs ~10x their work on a loaded machine; the
    block runs its own workers instead. The previous count is restored on exit."""

    def __enter__(self):
        import torch

        _THREADS_LOCK.acquire()
        self.prev = torch.get_num_threads()
        torch.set_num_threads(1)

    def __exit__(self, *exc):
        import torch

        torch.set_num_threads(self.prev)
        _THREADS_LOCK.release()
