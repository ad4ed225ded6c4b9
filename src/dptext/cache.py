"""On-disk cache for built artefacts (embedding matrices, neighbour tables).

Location: ``$DPTEXT_CACHE_DIR`` if set, else ``~/.cache/dptext``. Entries are
binary (``.npy`` files, a directory of them for a set of arrays, or a small
``.npz``), keyed by a hash of everything that went into them plus the version of the
code that built them (:func:`entry_path`), and written
atomically (temp file or directory + rename) so a crash never leaves a
half-written entry behind. Large arrays are opened memory-mapped, so every
process on a machine shares one copy of their pages.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np


def cache_dir() -> Path:
    root = os.environ.get("DPTEXT_CACHE_DIR") or os.path.join(Path.home(), ".cache", "dptext")
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def key_of(*parts) -> str:
    """A short stable hash of JSON-serialisable parts."""
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def file_fingerprint(path: str | os.PathLike) -> dict:
    st = os.stat(path)
    return {"path": os.path.basename(str(path)), "size": st.st_size, "mtime": int(st.st_mtime)}


def entry_path(kind: str, name: str, key: str, suffix: str = ".npz", *, version: int) -> Path:
    """``<cache>/<kind>/<name>-v<version>-<key><suffix>``.

    ``version`` is the builder's algorithm version, a constant beside the code that builds the entry:
    bump it with any change to what the builder computes, so that a fix reaches every existing cache
    (a stale entry is never found again) instead of only fresh ones. It is required: no entry without one.
    """
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"cache entry {kind}/{name}: version must be a positive int, got {version!r}")
    return cache_dir() / kind / f"{name}-v{version}-{key}{suffix}"


@contextmanager
def atomic_path(path: Path, suffix: str):
    """A temporary file beside ``path``; it replaces ``path`` only when the block succeeds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=suffix)
    os.close(fd)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def save_npz(path: Path, **arrays) -> None:
    with atomic_path(path, ".tmp.npz") as tmp:
        np.savez(tmp, **arrays)


def load_npz(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def save_npy(path: Path, array: np.ndarray) -> None:
    with atomic_path(path, ".tmp.npy") as tmp:
        np.save(tmp, array)


def load_npy(path: Path, mmap: bool = True) -> np.ndarray:
    return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)


def save_arrays(path: Path, **arrays) -> None:
    """Write ``arrays`` as ``path/<name>.npy`` (a directory entry, renamed into place when complete)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, suffix=".tmp"))
    try:
        for name, arr in arrays.items():
            np.save(tmp / f"{name}.npy", np.ascontiguousarray(arr))
        try:
            os.rename(tmp, path)
        except OSError:
            if not path.is_dir():  # not a concurrent writer that finished first
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def load_arrays(path: Path) -> dict[str, np.ndarray]:
    """The arrays of a :func:`save_arrays` entry, memory-mapped read-only (plain ndarray views)."""
    return {f[:-4]: np.asarray(np.load(path / f, mmap_mode="r", allow_pickle=False))
            for f in sorted(os.listdir(path)) if f.endswith(".npy")}
