"""Embedding spaces (docs/algorithms.md).

A space bundles a tokenizer, a vocabulary ``V`` (unit strings), an embedding
matrix ``E`` (float32, ``|V| x N``) and unit frequencies. Concrete spaces only
say how to *build* those arrays from installed assets and how to tokenize;
this base class caches the arrays on disk (a directory of ``.npy`` files keyed
by a hash of the inputs, memory-mapped on load, so a fresh process reads only
the pages it touches and every process on a machine shares them) and provides
the vectorised lookup and distance work every mechanism shares.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from functools import cached_property

import numpy as np

from dptext import cache
from dptext.errors import DPTextError
from dptext.text import Segmentation


PAIR_CHUNK = 512  # pairs per block in pair_distances
DMAX_VERSION = 1  # bump when d_max's computation changes (cache entries)


class EmbeddingSpace(ABC):
    #: registry name, e.g. ``"glove-50d"``
    name: str = ""
    description: str = ""
    #: look units up case-insensitively (word vectors trained on lower-cased text)
    case_insensitive: bool = False
    #: bump when the construction changes, to invalidate caches
    version: int = 1
    #: rough seconds of a first build on a laptop CPU (only for the "about N s" a user is told)
    build_estimate_s: float = 60.0

    def __init__(self) -> None:
        self._arrays: dict[str, np.ndarray] | None = None
        self.build_seconds: float | None = None  # set when built (not loaded) in this process
        self.load_seconds: float | None = None

    # ----- what a concrete space provides -------------------------------------------------
    @abstractmethod
    def inputs(self) -> dict:
        """Everything the build depends on (asset fingerprints, parameters): the cache key."""

    @abstractmethod
    def build(self, progress=None) -> dict[str, np.ndarray]:
        """Build ``units`` (str array), ``embeddings`` (float32) and ``freq`` (float64) arrays."""

    @abstractmethod
    def segment(self, text: str) -> Segmentation:
        """Split text into units with their leading whitespace."""

    # ----- cache ---------------------------------------------------------------------------
    @cached_property
    def cache_key(self) -> str:
        return cache.key_of(self.name, self.version, self.inputs())

    @property
    def cache_path(self):
        """The cache entry: a directory of ``.npy`` arrays (units, embeddings, freq, lookup tables, ...)."""
        return cache.entry_path("spaces", self.name, self.cache_key, "", version=self.version)

    def is_cached(self) -> bool:
        return self.cache_path.is_dir()

    def load(self, progress=None) -> "EmbeddingSpace":
        if self._arrays is not None:
            return self
        path = self.cache_path
        t0 = time.perf_counter()
        if not path.is_dir():
            legacy = path.with_name(path.name + ".npz")  # the older one-archive entry: convert, do not rebuild
            if legacy.exists():
                cache.save_arrays(path, **_with_lookup(cache.load_npz(legacy)))
                legacy.unlink(missing_ok=True)
            else:
                from dptext.progress import build_stage

                with build_stage(progress, f"embedding space {self.name}", self.build_estimate_s, path):
                    arrays = self.build(progress=progress)
                arrays["embeddings"] = np.ascontiguousarray(arrays["embeddings"], dtype=np.float32)
                arrays["freq"] = np.asarray(arrays["freq"], dtype=np.float64)
                arrays["units"] = np.asarray(arrays["units"], dtype=str)
                cache.save_arrays(path, **_with_lookup(arrays))
                self.build_seconds = time.perf_counter() - t0
        self._arrays = cache.load_arrays(path)
        if self.build_seconds is None:
            self.load_seconds = time.perf_counter() - t0
        return self

    @property
    def arrays(self) -> dict[str, np.ndarray]:
        if self._arrays is None:
            self.load()
        return self._arrays

    # ----- vocabulary ------------------------------------------------------------------------
    @cached_property
    def units(self) -> list[str]:
        return self.arrays["units"].tolist()

    def unit_strings(self, idx) -> np.ndarray:
        """The units at indices ``idx`` (a fixed-width string array; ``.tolist()`` gives ``str``)."""
        return self.arrays["units"][idx]

    @cached_property
    def embeddings(self) -> np.ndarray:
        return self.arrays["embeddings"]

    @cached_property
    def freq(self) -> np.ndarray:
        return self.arrays["freq"]

    @property
    def size(self) -> int:
        return len(self.arrays["units"])

    @property
    def dim(self) -> int:
        return int(self.embeddings.shape[1])

    @cached_property
    def index(self) -> dict[str, int]:
        return dict(zip(self.units, range(len(self.units))))

    def key(self, unit: str) -> str:
        """Normalised lookup key of a unit."""
        return unit.lower() if self.case_insensitive else unit

    def lookup(self, unit: str) -> int:
        """Index of ``unit`` in V, or -1 when out of vocabulary."""
        return self.index.get(self.key(unit), -1)

    @cached_property
    def _lookup_tables(self) -> tuple[np.ndarray, np.ndarray]:
        a = self.arrays if "lookup_ids" in self.arrays else _with_lookup(self.arrays)
        return a["lookup_units"], a["lookup_ids"]

    def lookup_many(self, units) -> np.ndarray:
        """Indices of many units (-1 where out of vocabulary): a binary search in the cached sorted
        vocabulary, so no per-process dictionary of V has to be built first."""
        keys = list(map(self.key, units))
        if not keys:
            return np.empty(0, dtype=np.int64)
        if "\x00" in "".join(keys):  # fixed-width numpy strings drop trailing NULs: compare as str
            get = self.index.get
            return np.fromiter((get(k, -1) for k in keys), dtype=np.int64, count=len(keys))
        srt, ids = self._lookup_tables
        q = np.asarray(keys, dtype=str)
        pos = np.minimum(np.searchsorted(srt, q), len(srt) - 1)
        return np.where(srt[pos] == q, ids[pos], -1).astype(np.int64)

    # ----- geometry (vectorised) ----------------------------------------------------------------
    @cached_property
    def sq_norms(self) -> np.ndarray:
        e = self.embeddings
        return np.einsum("ij,ij->i", e, e, dtype=np.float64).astype(np.float32)

    @cached_property
    def normalized(self) -> np.ndarray:
        n = np.sqrt(self.sq_norms)[:, None]
        return self.embeddings / np.where(n > 0, n, 1.0)

    @cached_property
    def dim_range(self) -> np.ndarray:
        """``Δφ``: per-dimension range (max - min) of E over V (docs/algorithms.md)."""
        e = self.embeddings
        return (e.max(axis=0) - e.min(axis=0)).astype(np.float64)

    def distances(self, rows, cols=None) -> np.ndarray:
        """Euclidean distances ``d(rows[i], cols[j])`` as float32 (one GEMM).

        ``cols=None`` means all of V. The distance of a unit to itself is exactly 0. A row's
        values do not depend on which other rows share the call (seeded runs reproduce
        whatever order units are first met in).
        """
        rows = np.atleast_1d(np.asarray(rows, dtype=np.int64))
        if len(rows) == 1:  # BLAS gemv rounds differently from gemm: keep every row batch-invariant
            return self.distances(np.repeat(rows, 2), cols)[:1]
        e = self.embeddings
        ec = e if cols is None else e[cols]
        nc = self.sq_norms if cols is None else self.sq_norms[cols]
        d2 = self.sq_norms[rows][:, None] + nc[None, :] - 2.0 * (e[rows] @ ec.T)
        np.maximum(d2, 0.0, out=d2)
        d = np.sqrt(d2, out=d2)
        if cols is None:
            d[np.arange(len(rows)), rows] = 0.0
        else:
            cols = np.asarray(cols)
            hit = rows[:, None] == cols[None, :]
            d[hit] = 0.0
        return d

    @cached_property
    def sq_norms64(self) -> np.ndarray:
        e = self.embeddings
        return np.einsum("ij,ij->i", e, e, dtype=np.float64)

    def exact_distances(self, rows, cols=None) -> np.ndarray:
        """``d(rows[i], t)`` for every ``t`` in V (or in ``cols``, in that order): float64 GEMM rounded
        to float32; ``d(x, x) = 0``. Passing ``cols`` costs a product with those columns only, not V.

        The definition used by the neighbour tables, the samplers that use them and their
        exact rows: ``d = f32(sqrt(max(‖x‖² + ‖t‖² − 2·x·t, 0)))`` with every term in float64
        (products of float32 values are exact in float64). :meth:`pair_distances` computes
        the same value for single pairs; the two agree to the bit except when a float64
        result lies within its own rounding error of a float32 rounding boundary.
        """
        rows = np.atleast_1d(np.asarray(rows, dtype=np.int64))
        e = self.embeddings
        if cols is None:
            t_vecs, t_sq = e, self.sq_norms64
        else:
            cols = np.asarray(cols, dtype=np.int64)
            t_vecs, t_sq = e[cols], self.sq_norms64[cols]
        d2 = e[rows].astype(np.float64) @ t_vecs.T.astype(np.float64)
        d2 *= -2.0
        d2 += self.sq_norms64[rows][:, None]
        d2 += t_sq[None, :]
        np.maximum(d2, 0.0, out=d2)
        d = np.sqrt(d2).astype(np.float32)
        if cols is None:
            d[np.arange(len(rows)), rows] = 0.0
        else:  # the diagonal, wherever a row's own unit is among the columns
            d[rows[:, None] == cols[None, :]] = 0.0
        return d

    def pair_distances(self, x, t) -> np.ndarray:
        """``d(x[i], t[i])`` for paired index arrays, as :meth:`exact_distances` defines it."""
        x = np.asarray(x, dtype=np.int64)
        t = np.asarray(t, dtype=np.int64)
        e = self.embeddings
        dot = np.empty(len(x))
        for a in range(0, len(x), PAIR_CHUNK):  # small blocks: no large temporaries (row values are unchanged)
            dot[a : a + PAIR_CHUNK] = np.einsum("ij,ij->i", e[x[a : a + PAIR_CHUNK]], e[t[a : a + PAIR_CHUNK]],
                                                dtype=np.float64)
        d2 = self.sq_norms64[x] + self.sq_norms64[t] - 2.0 * dot
        d = np.sqrt(np.maximum(d2, 0.0)).astype(np.float32)
        d[x == t] = 0.0
        return d

    def neighbours(self, progress=None):
        """The space's sorted neighbour table (built once, cached on disk, memory-mapped)."""
        tab = self.__dict__.get("_neighbours")
        if tab is None:
            from dptext.spaces.neighbours import load_table

            tab = self.__dict__["_neighbours"] = load_table(self, progress=progress)
        return tab

    def cosine(self, rows, cols=None) -> np.ndarray:
        rows = np.atleast_1d(np.asarray(rows, dtype=np.int64))
        n = self.normalized
        return n[rows] @ (n if cols is None else n[cols]).T

    def nearest(self, vectors: np.ndarray, k: int = 1, exclude=None, metric: str = "cosine") -> np.ndarray:
        """Top-``k`` vocabulary indices for each query vector, best first.

        ``exclude[i]`` (optional) is a vocabulary index that query ``i`` may not return.
        """
        q = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        if metric == "cosine":
            qn = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
            score = qn @ self.normalized.T
        else:
            score = -(self.sq_norms[None, :] - 2.0 * (q @ self.embeddings.T))
        if exclude is not None:
            ex = np.asarray(exclude)
            ok = ex >= 0
            score[np.nonzero(ok)[0], ex[ok]] = -np.inf
        k = min(k, score.shape[1])
        part = np.argpartition(-score, k - 1, axis=1)[:, :k]
        order = np.take_along_axis(score, part, axis=1).argsort(axis=1)[:, ::-1]
        return np.take_along_axis(part, order, axis=1)

    @cached_property
    def d_max(self) -> float:
        """Largest pairwise distance in V, exact (cached on disk with the space).

        Rows are scanned from the unit farthest from the centroid inward and the
        scan stops once ``‖φ_i − c‖ + max_j ‖φ_j − c‖`` (an upper bound on any
        distance from row ``i`` on) cannot beat the best distance found.
        """
        path = cache.entry_path("spaces", self.name + "-dmax", self.cache_key, ".npy", version=DMAX_VERSION)
        if path.exists():
            return float(np.load(path))
        e = self.embeddings.astype(np.float64)
        r = np.linalg.norm(e - e.mean(axis=0), axis=1)
        order = np.argsort(-r)
        best, step = 0.0, 256
        for start in range(0, self.size, step):
            if r[order[start]] + r[order[0]] <= best:
                break
            best = max(best, float(self.distances(order[start : start + step]).max()))
        cache.save_npy(path, np.asarray(best))
        return best

    def describe(self) -> dict:
        """What the space is and what is cached for it, with its size (RANTEXT's noise calibration, which
        belongs to the mechanism layer, is added by ``dptext.mechanisms.calibration.describe_space``)."""
        out = self.info()
        self.load()
        out.update(size=self.size, dim=self.dim)
        return out

    def info(self) -> dict:
        out = {"name": self.name, "description": self.description, "cached": self.is_cached(),
               "cache_path": str(self.cache_path)}
        if self._arrays is not None:
            out.update(size=self.size, dim=self.dim)
        return out


def _with_lookup(arrays: dict) -> dict:
    """``arrays`` plus the sorted vocabulary ``lookup_units`` and its indices ``lookup_ids``."""
    units = np.asarray(arrays["units"], dtype=str)
    if len(np.unique(units)) != len(units):
        raise DPTextError("a space's vocabulary must not repeat a unit")
    order = np.argsort(units, kind="stable")
    return {**arrays, "units": units, "lookup_units": units[order], "lookup_ids": order.astype(np.int32)}
