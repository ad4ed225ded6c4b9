"""Embedding spaces shared between worker processes through memory-mapped ``.npy`` files.

The space cache (``dptext.cache``) stores one ``.npz`` per space; a zip
archive cannot be memory-mapped. On first use this module writes each array
of the entry (``units``, ``embeddings``, ``freq``) as its own ``.npy`` next
to it, keyed the same way (``spaces/<name>-mmap-<array>-<key>.npy``); workers
then open them with ``np.load(mmap_mode="r")`` so the operating system keeps
one copy of the pages for all processes on a machine.

Seeded runs agree across workers because ``EmbeddingSpace.distances`` is
batch-invariant (a row's values do not depend on which rows share the call).

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
    return space


def _fresh(name: str) -> EmbeddingSpace:
    if name not in SPACES:
        raise DPTextError(f"unknown space {name!r}; known spaces: {', '.join(sorted(SPACES))}")
    return SPACES[name]()
