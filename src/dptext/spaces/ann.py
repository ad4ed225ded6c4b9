"""Approximate nearest-unit index (faiss HNSW), built once per space and cached on disk.

Two metrics, one index each:

* ``"cosine"``: inner product over the normalised embeddings ``ê_t`` (Stencil:
  ``argmax_t cos(v, E[t]) = argmax_t ⟨v/‖v‖, ê_t⟩``);
* ``"euclidean"``: squared L2 over the raw embeddings (noise mapper:
  ``argmin_t ‖q − E[t]‖``).

The index only proposes candidates: :meth:`AnnIndex.candidates` returns the
``k`` units it finds best for each query; callers re-score those exactly and
apply their own exclusion rule (:func:`dptext.mechanisms._fastnn.ann_best_match`).

Determinism: the graph is built single-threaded (faiss draws HNSW levels from
a fixed seed), so the same space gives the same file on every machine; a
search visits the graph in an order fixed by the query and ``efSearch``
alone (passed per call, never through shared index state), so the same query
gives the same candidates whatever the batch or thread count.

Cache: ``<cache>/spaces/<space>-hnsw-<metric>-<key>.faiss`` (key: the space's
cache key and the build parameters), written atomically and opened with
``faiss.IO_FLAG_MMAP`` where the faiss build supports it for this index type.
"""

from __future__ import annotations

import threading

import numpy as np

from dptext import cache

VERSION = 1
M = 32  # graph degree (2·M links on the base layer)
EF_CONSTRUCTION = 80
METRICS = ("cosine", "euclidean")
_ADD_CHUNK = 2048
_LOADED: dict = {}
_LOCK = threading.Lock()


def index_path(space, metric: str):
    key = cache.key_of(space.cache_key, "hnsw", VERSION, metric, M, EF_CONSTRUCTION)
    return cache.entry_path("spaces", f"{space.name}-hnsw-{metric}", key, ".faiss")


def _vectors(space, metric: str) -> np.ndarray:
    if metric not in METRICS:
        raise ValueError(f"unknown ANN metric {metric!r} (expected one of {', '.join(METRICS)})")
    table = space.normalized if metric == "cosine" else space.embeddings
    return np.ascontiguousarray(table, dtype=np.float32)


def build_index(space, metric: str, progress=None):
    """A fresh HNSW index over ``space`` (single-threaded build: reproducible graph)."""
    import faiss

    from dptext.spaces.neighbours import _Progress

    vec = _vectors(space, metric)
    kind = faiss.METRIC_INNER_PRODUCT if metric == "cosine" else faiss.METRIC_L2
    index = faiss.IndexHNSWFlat(vec.shape[1], M, kind)
    index.hnsw.efConstruction = EF_CONSTRUCTION
    bar = _Progress(progress, f"HNSW index {space.name} ({metric}, M={M})", len(vec))
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        for s in range(0, len(vec), _ADD_CHUNK):
            index.add(vec[s : s + _ADD_CHUNK])
            bar.advance(min(_ADD_CHUNK, len(vec) - s))
    finally:
        faiss.omp_set_num_threads(threads)
    return index


def _save(index, path) -> None:
    import faiss

    from dptext.cache import atomic_path

    with atomic_path(path, ".tmp.faiss") as tmp:
        faiss.write_index(index, tmp)


def _read(path):
    import faiss

    try:
        return faiss.read_index(str(path), faiss.IO_FLAG_MMAP), True
    except RuntimeError:  # this index type has no memory-mapped reader in this faiss build
        return faiss.read_index(str(path)), False


class AnnIndex:
    """A space's HNSW index for one metric (shared per process; search is thread-safe)."""

    def __init__(self, space, metric: str, index, mmapped: bool, built: bool) -> None:
        self.space, self.metric, self.index = space, metric, index
        self.mmapped, self.built = mmapped, built

    @classmethod
    def of(cls, space, metric: str, progress=None) -> "AnnIndex":
        """The cached index of ``space`` (built and saved on first use)."""
        key = (space.name, space.cache_key, metric)
        with _LOCK:
            if key not in _LOADED:
                path = index_path(space, metric)
                built = not path.exists()
                if built:
                    _save(build_index(space, metric, progress), path)
                index, mmapped = _read(path)
                if index.ntotal != space.size or index.d != space.dim:
                    raise RuntimeError(f"ANN index {path} does not match space {space.name}: rebuild it")
                _LOADED[key] = cls(space, metric, index, mmapped, built)
            return _LOADED[key]

    @staticmethod
    def forget(space=None) -> None:
        """Drop loaded indexes (all, or those of ``space``) so the next use reads the file again."""
        with _LOCK:
            for key in [k for k in _LOADED if space is None or k[:2] == (space.name, space.cache_key)]:
                del _LOADED[key]

    def candidates(self, queries: np.ndarray, k: int, ef_search: int) -> np.ndarray:
        """The ``k`` best units the graph search finds for each query [n, k] (-1 pads)."""
        import faiss

        q = np.ascontiguousarray(queries, dtype=np.float32)
        if self.metric == "cosine":
            q = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-30)
        params = faiss.SearchParametersHNSW()
        params.efSearch = max(int(ef_search), k)
        _, ids = self.index.search(q, k, params=params)
        return ids
