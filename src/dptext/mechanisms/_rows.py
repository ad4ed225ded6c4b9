"""A bounded store of per-unit rows (sorted distances, CDFs) for vectorised sampling.

Rows live in one preallocated slab ``[capacity, width]`` so that a batch of
occurrences can gather ``slab[slot_of_occurrence, j]`` without copying rows.
Missing rows are computed in chunks by ``compute(ids) -> dict of [k, width]``;
when the slab is full the oldest rows are evicted (FIFO). Memory is bounded by
``budget_mb`` (default ``$DPTEXT_ROW_CACHE_MB`` or 1024).
"""

from __future__ import annotations

import os

import numpy as np


class RowStore:
    def __init__(self, width: int, dtypes: dict[str, np.dtype], compute, *, n_units: int,
                 budget_mb: float | None = None, chunk: int = 256) -> None:
        budget = float(budget_mb if budget_mb is not None else os.environ.get("DPTEXT_ROW_CACHE_MB", 1024))
        row_bytes = width * sum(np.dtype(d).itemsize for d in dtypes.values())
        self.capacity = int(max(chunk, min(n_units, budget * 2**20 // row_bytes)))
        self.width, self.dtypes, self.compute, self.chunk = width, dtypes, compute, chunk
        self.slabs: dict[str, np.ndarray] | None = None  # allocated on first use
        self.slot_of = np.full(n_units, -1, dtype=np.int64)
        self.unit_at = np.full(self.capacity, -1, dtype=np.int64)
        self.next = 0  # FIFO cursor

    def _alloc(self) -> None:
        if self.slabs is None:
            self.slabs = {k: np.empty((self.capacity, self.width), dtype=d) for k, d in self.dtypes.items()}

    def slots(self, ids: np.ndarray) -> np.ndarray:
        """Slots holding the rows of ``ids`` (computing missing ones). ``len(unique(ids)) <= capacity``."""
        self._alloc()
        uniq = np.unique(ids)
        if len(uniq) > self.capacity:
            raise ValueError("batch has more distinct units than the row store holds")
        missing = uniq[self.slot_of[uniq] < 0]
        protected = set(uniq.tolist())
        for start in range(0, len(missing), self.chunk):
            part = missing[start : start + self.chunk]
            rows = self.compute(part)
            for j, u in enumerate(part.tolist()):
                s = self._free_slot(protected)
                for k, arr in rows.items():
                    self.slabs[k][s] = arr[j]
                self.slot_of[u] = s
                self.unit_at[s] = u
        return self.slot_of[ids]

    def _free_slot(self, protected: set) -> int:
        for _ in range(self.capacity):
            s = self.next
            self.next = (self.next + 1) % self.capacity
            old = self.unit_at[s]
            if old < 0:
                return s
            if int(old) not in protected:
                self.slot_of[old] = -1
                self.unit_at[s] = -1
                return s
        raise RuntimeError("row store full of protected rows")

    def batches(self, ids: np.ndarray):
        """Split occurrence indices into groups whose distinct units fit in the store."""
        uniq, inv = np.unique(ids, return_inverse=True)
        if len(uniq) <= self.capacity:
            yield np.arange(len(ids))
            return
        step = self.capacity
        for start in range(0, len(uniq), step):
            yield np.flatnonzero((inv >= start) & (inv < start + step))


def gather_searchsorted(slab: np.ndarray, slots: np.ndarray, values: np.ndarray, n: np.ndarray | int,
                        side: str = "left") -> np.ndarray:
    """Vectorised ``searchsorted(slab[slots[i], :n[i]], values[i])`` over many rows at once."""
    lo = np.zeros(len(slots), dtype=np.int64)
    hi = np.broadcast_to(np.asarray(n, dtype=np.int64), lo.shape).copy()
    while True:
        active = lo < hi
        if not active.any():
            return lo
        mid = (lo + hi) // 2
        midc = np.minimum(mid, slab.shape[1] - 1)
        v = slab[slots, midc]
        go_right = (v < values) if side == "left" else (v <= values)
        go_right &= active
        lo = np.where(go_right, mid + 1, lo)
        hi = np.where(active & ~go_right, mid, hi)
