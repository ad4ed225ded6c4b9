"""``Pr(y | x)`` for every candidate input ``x`` and observed output ``y``.

The mechanism is public knowledge; its ``transition(x)`` gives the row
``Pr(· | x)``. A Bayesian attack needs columns ``Pr(y | ·)`` over the
candidate inputs, for each distinct observed ``y``. Two modes:

* table: when ``|candidates| x |output support|`` fits the memory budget, all
  rows are computed once (set-up, with a progress bar) and cached on disk as
  ``.npy`` keyed by the mechanism's settings, the space, the candidates and a
  fingerprint row; the table is stored transposed (``[y, x]``) so that the
  column of an observed ``y`` is one contiguous row gather;
* stream: otherwise, each batch of new distinct ``y`` costs one pass over the
  candidate rows, keeping only the needed columns (memoised per ``y``).

Rows come from ``Mechanism.transition_rows(ids) -> [len(ids), |V|]`` (batched
where the mechanism overrides it; the base calls ``transition`` per id).
"""

from __future__ import annotations

import numpy as np

from dptext import cache

TABLE_VERSION = 3  # bump when the likelihood table changes (cache entries)


def transition_rows(mechanism, ids: np.ndarray) -> np.ndarray:
    return np.asarray(mechanism.transition_rows(ids), dtype=np.float64)


class Likelihood:
    def __init__(self, mechanism, candidates: np.ndarray, *, budget_mb: float = 512, progress=None,
                 chunk: int = 256) -> None:
        self.mech = mechanism
        self.space = mechanism.space
        self.cand = np.asarray(candidates, dtype=np.int64)
        # outputs the mechanism may emit: its output set, plus inputs it may keep (SANTEXT+)
        self.support = np.flatnonzero(mechanism.output_mask | mechanism.input_mask)
        self.col_of = np.full(self.space.size, -1, dtype=np.int64)
        self.col_of[self.support] = np.arange(len(self.support))
        self.progress, self.chunk = progress, chunk
        self.table: np.ndarray | None = None
        self.memo: dict[int, np.ndarray] = {}
        self.streaming = len(self.cand) * len(self.support) * 4 > budget_mb * 2**20

    def _bar(self, total: int, what: str):
        if self.progress is None:
            return None
        return self.progress.add_task(what, total=total)

    def _key(self) -> str:
        probe = transition_rows(self.mech, self.cand[:1])[0] if len(self.cand) else np.zeros(1)
        return cache.key_of("likelihood", self.mech.settings(), self.space.cache_key,
                            cache.key_of(self.cand.tolist()), cache.key_of(self.support.tolist()),
                            np.round(probe[self.support][:256], 12).tolist())

    def build(self) -> None:
        """Set-up in table mode: all candidate rows over the output support."""
        if self.streaming or self.table is not None:
            return
        path = cache.entry_path("attacks", "likelihood-" + self.mech.name.replace("+", "plus"), self._key(), ".npy",
                                version=TABLE_VERSION)
        if path.exists():
            self.table = np.asarray(cache.load_npy(path, mmap=False))
            return
        table = np.empty((len(self.support), len(self.cand)), dtype=np.float32)
        task = self._bar(len(self.cand), "transition rows")
        for s in range(0, len(self.cand), self.chunk):
            part = self.cand[s : s + self.chunk]
            table[:, s : s + len(part)] = transition_rows(self.mech, part)[:, self.support].T
            if task is not None:
                self.progress.advance(task, len(part))
        cache.save_npy(path, table)
        self.table = table

    def columns(self, ys: np.ndarray) -> np.ndarray:
        """``[len(ys), |candidates|]`` with ``Pr(y_j | candidate_i)``; zero for ``y`` outside the support."""
        ys = np.asarray(ys, dtype=np.int64)
        cols = self.col_of[ys]
        out = np.zeros((len(ys), len(self.cand)), dtype=np.float32)
        ok = cols >= 0
        if not ok.any():
            return out
        if not self.streaming:
            self.build()
            out[ok] = self.table[cols[ok]]
            return out
        need = np.unique(ys[ok])
        need = need[[int(y) not in self.memo for y in need.tolist()]]
        if len(need):
            block = np.empty((len(self.cand), len(need)), dtype=np.float32)
            task = self._bar(len(self.cand), "transition rows")
            for s in range(0, len(self.cand), self.chunk):
                part = self.cand[s : s + self.chunk]
                block[s : s + len(part)] = transition_rows(self.mech, part)[:, need]
                if task is not None:
                    self.progress.advance(task, len(part))
            for j, y in enumerate(need.tolist()):
                self.memo[y] = block[:, j].copy()
        for j in np.flatnonzero(ok).tolist():
            out[j] = self.memo[int(ys[j])]
        return out
