"""Embedding spaces shared between worker processes through memory-mapped ``.npy`` files.

The space cache (``dptext.cache``) stores one ``.npz`` per space; a zip
archive cannot be memory-mapped. On first use this module writes each array
of the entry (``units``, ``embeddings``, ``freq``) as its own ``.npy`` next
to it, keyed the same way (``spaces/<name>-mmap-<array>-<key>.npy``); workers
then open them with ``np.load(mmap_mode="r")`` so the operating system keeps
one copy of the pages for all processes on a machine.

The private instance also gets a batch-invariant ``distances``: a one-row
call is computed as a two-row GEMM. (numpy sends a 1-row product to BLAS
``gemv``, whose float32 rounding differs from ``gemm``'s; RANTEXT sorts
distance rows computed in whatever groups of new units a worker meets, so
without this a seeded run could depend on which worker saw which unit first.)

On a node that has no cache yet (e.g. a remote Ray worker) the space is built
from its installed assets exactly as ``get_space`` would, then exported.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dptext import cache
from dptext.errors import DPTextError
from dptext.spaces import EmbeddingSpace
from dptext.spaces.registry import SPACES

ARRAYS = ("units", "embeddings", "freq")


def mmap_paths(space: EmbeddingSpace) -> dict[str, Path]:
    """Where the memory-mappable copies of ``space``'s arrays live (same key as its ``.npz``)."""
    return {a: cache.entry_path("spaces", f"{space.name}-mmap-{a}", space.cache_key, ".npy") for a in ARRAYS}


def export_space(name: str) -> dict[str, Path]:
    """Write the ``.npy`` copies of space ``name`` if missing (atomic writes); return their paths."""
    space = _fresh(name)
    paths = mmap_paths(space)
    if not all(p.exists() for p in paths.values()):
        space.load()
        for a, p in paths.items():
            if not p.exists():
                cache.save_npy(p, np.ascontiguousarray(space.arrays[a]))
    return paths


def load_space_mmap(name: str) -> EmbeddingSpace:
    """A private instance of space ``name`` whose arrays are read-only memory maps."""
    paths = export_space(name)
    space = _fresh(name)
    space._arrays = {a: cache.load_npy(p, mmap=True) for a, p in paths.items()}
    _batch_invariant_distances(space)
    return space


def _batch_invariant_distances(space: EmbeddingSpace) -> None:
    plain = space.distances

    def distances(rows, cols=None):
        rows = np.atleast_1d(np.asarray(rows, dtype=np.int64))
        if len(rows) == 1:
            return plain(np.repeat(rows, 2), cols)[:1]
        return plain(rows, cols)

    space.distances = distances


def _fresh(name: str) -> EmbeddingSpace:
    if name not in SPACES:
        raise DPTextError(f"unknown space {name!r}; known spaces: {', '.join(sorted(SPACES))}")
    return SPACES[name]()
