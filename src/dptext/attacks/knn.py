"""Embedding inversion (KNN) attack (docs/algorithms.md; InferDPT's embedding inversion).

For an observed unit ``y``, rank the candidate inputs ``x`` (the mechanism's
input domain) by ``d(x, y) = ‖φ(x) − φ(y)‖₂`` and guess the ``K`` nearest.
``skip_self`` drops ``y`` itself from the ranking (for mechanisms that never
return ``x``, e.g. Stencil or the noise mapper); ``metric="cosine"`` ranks by
cosine similarity instead (the nearest-neighbour attacker of paper 004).

Speed: neighbour lists are computed once per distinct observed unit with one
GEMM per chunk plus ``argpartition``; when the output support times the
domain is small enough, the whole table is built in ``fit`` and cached on disk
(``.npy``), so an attack is a pure gather.
"""

from __future__ import annotations

import numpy as np

from dptext import cache
from dptext.attacks.base import Attack, Observed, register_attack
from dptext.errors import DPTextError

TABLE_LIMIT = 4e8  # |support| x |domain| distance entries for a precomputed table
TABLE_VERSION = 1  # bump when the precomputed table changes (cache entries)


def top_k_rows(space, rows: np.ndarray, domain: np.ndarray, k: int, skip_self: bool,
               chunk: int = 512, metric: str = "euclidean") -> np.ndarray:
    """``[len(rows), k]`` domain indices nearest to each row unit (best first)."""
    k = min(k, len(domain) - (1 if skip_self else 0))
    out = np.empty((len(rows), k), dtype=np.int64)
    for s in range(0, len(rows), chunk):
        r = rows[s : s + chunk]
        d = space.distances(r, domain) if metric == "euclidean" else -space.cosine(r, domain)
        if skip_self:
            d[r[:, None] == domain[None, :]] = np.inf
        part = np.argpartition(d, k - 1, axis=1)[:, :k]
        order = np.take_along_axis(d, part, axis=1).argsort(axis=1, kind="stable")
        out[s : s + len(r)] = domain[np.take_along_axis(part, order, axis=1)]
    return out


@register_attack("knn")
class KNNAttack(Attack):
    default_skip_self = False
    default_metric = "euclidean"

    def __init__(self, mechanism, *, k: int = 5, skip_self: bool | None = None, metric: str | None = None,
                 precompute: bool | None = None, progress=None) -> None:
        super().__init__(mechanism, k=k, progress=progress)
        self.skip_self = bool(self.default_skip_self if skip_self is None else skip_self)
        self.metric = metric or self.default_metric
        if self.metric not in ("euclidean", "cosine"):
            raise DPTextError(f"unknown metric {self.metric!r}; choose euclidean or cosine")
        self.domain = np.flatnonzero(mechanism.input_mask)
        self.support = np.flatnonzero(mechanism.output_mask | mechanism.input_mask)
        self.precompute = precompute
        self.table: np.ndarray | None = None  # rows indexed by space index (support only)
        self._memo: dict[int, np.ndarray] = {}

    def _fit(self, shadow, rng) -> None:
        self.unit_array  # noqa: B018 (built once, during set-up)
        pre = self.precompute
        if pre is None:
            pre = len(self.support) * len(self.domain) <= TABLE_LIMIT
        if not pre:
            return
        key = cache.key_of("knn", self.space.name, self.space.cache_key, self.k, self.skip_self, self.metric,
                           cache.key_of(self.domain.tolist()), cache.key_of(self.support.tolist()))
        path = cache.entry_path("attacks", "knn-" + self.space.name, key, ".npy", version=TABLE_VERSION)
        if path.exists():
            table = np.asarray(cache.load_npy(path, mmap=False))
        else:
            table = top_k_rows(self.space, self.support, self.domain, self.k, self.skip_self, metric=self.metric)
            cache.save_npy(path, table.astype(np.int32))
        self.table = np.full((self.space.size, table.shape[1]), -1, dtype=np.int64)
        self.table[self.support] = table

    def neighbours(self, ids: np.ndarray) -> np.ndarray:
        """Top-K domain indices for observed space indices ``ids`` (all >= 0)."""
        have = self.table[ids, 0] >= 0 if self.table is not None else np.zeros(len(ids), dtype=bool)
        if have.all():
            return self.table[ids]
        rest = ids[~have]
        uniq, inv = np.unique(rest, return_inverse=True)
        todo = np.asarray([u for u in uniq.tolist() if u not in self._memo], dtype=np.int64)
        if len(todo):
            rows = top_k_rows(self.space, todo, self.domain, self.k, self.skip_self, metric=self.metric)
            self._memo.update(zip(todo.tolist(), rows))
        lazy = np.stack([self._memo[u] for u in uniq.tolist()])[inv]
        out = np.empty((len(ids), lazy.shape[1]), dtype=np.int64)
        out[~have] = lazy
        if have.any():
            out[have] = self.table[ids[have]]
        return out

    def rank(self, obs: Observed):
        ids = self.space.lookup_many(obs.observed)
        ok = np.flatnonzero(ids >= 0)
        out: list = [None] * len(ids)
        if len(ok):
            nb = self.neighbours(ids[ok])
            words = self.unit_array[nb]
            for j, row in zip(ok.tolist(), words.tolist()):
                out[j] = row
        return out
