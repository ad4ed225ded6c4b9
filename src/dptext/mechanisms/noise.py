"""The noise mapper of Qu et al. (2021), the baseline of Harel et al. (docs/algorithms.md).

Per unit ``x``: ``z = r·u`` with ``r ~ Gamma(shape=N, scale=1/η)`` and ``u``
uniform on the unit sphere of ``R^N`` (so ``z`` has density ``∝ exp(-η‖z‖)``);
output ``argmin_t ‖E[x] + z − E[t]‖`` over ``V``, excluding ``x`` itself unless
``exclude_original=False``. ``η`` is the ``--epsilon`` value unless ``eta`` is
given; a larger ``η`` means less noise.

Exact search, pruned: every unit's ``K`` nearest other units and the distance
``R_K(x)`` of the ``K``-th are computed once per unit seen (chunked GEMM) and
kept in memory. A unit ``t`` outside ``{x} ∪ KNN(x)`` has ``d(x,t) >= R_K(x)``, hence
``d(q,t) >= R_K(x) − ‖z‖`` (triangle inequality); when the best candidate is
at least that close the answer is exact without touching the rest of ``V``.
Other queries fall back to a full search: exact (one GEMM over ``V``,
:mod:`dptext.mechanisms._fastnn`) with ``exact=True`` (default), or with
``exact=False`` the best unit other than ``x`` in the ``nprobe`` lists of the
space's IVF index nearest to the query (:mod:`dptext.spaces.ann`; approximate:
on ``smollm2`` it agrees with exact search on about 0.95 of noisy queries at
``nprobe = 64``, 0.98 at 128, 0.995 at 256, where it is no cheaper than exact).

Guarantee: with ``exclude_original=False`` the output is post-processing of
``E[x] + z``, which is ``η·d(x, x')``-metric-DP (docs/algorithms.md). Excluding ``x`` makes
the last step depend on ``x`` (``Pr(x | x) = 0 < Pr(x | x')``), so no DP
claim is made then. ``transition(x)`` is a Monte Carlo estimate
(``transition_samples`` draws at a fixed internal seed).
"""

from __future__ import annotations

import numpy as np

from dptext.errors import DPTextError, check_epsilon
from dptext.mechanisms._fastnn import NPROBE, ann_best_match, exact_best_match
from dptext.mechanisms._vocab import distinct
from dptext.mechanisms.base import Mechanism, PrivacyClaim
from dptext.mechanisms.registry import register

CHUNK = 1024


class NeighbourTable:
    """Each unit's ``k`` nearest other units and their distances, computed lazily per unit (chunked GEMM).

    Rows are computed the first time a unit is queried and shared by all
    mechanisms on the same space in this process (``k·|V|`` ids + distances).
    """

    _shared: dict = {}

    def __init__(self, space, k: int) -> None:
        self.space, self.k = space, k
        self.ids = np.zeros((space.size, k), dtype=np.int32)
        self.dists = np.zeros((space.size, k), dtype=np.float32)
        self.done = np.zeros(space.size, dtype=bool)

    @classmethod
    def of(cls, space, k: int) -> "NeighbourTable":
        key = (space.name, space.cache_key, k)
        if key not in cls._shared:
            cls._shared[key] = cls(space, k)
        return cls._shared[key]

    def rows(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        todo = distinct(x[~self.done[x]])
        k = self.k
        for s in range(0, len(todo), CHUNK):
            rows = todo[s : s + CHUNK]
            d = self.space.distances(rows)
            d[np.arange(len(rows)), rows] = np.inf
            part = np.argpartition(d, k - 1, axis=1)[:, :k]
            pd = np.take_along_axis(d, part, axis=1)
            order = np.argsort(pd, axis=1, kind="stable")
            self.ids[rows] = np.take_along_axis(part, order, axis=1)
            self.dists[rows] = np.take_along_axis(pd, order, axis=1)
            self.done[rows] = True
        return self.ids[x], self.dists[x]


@register("noise-mapper")
class NoiseMapper(Mechanism):
    """Noise mapper (Qu et al.): Gamma(N, 1/η)-radius noise on the embedding, nearest other unit."""

    epsilon_alternatives = ("eta",)  # η is the privacy parameter; --epsilon is read as η

    default_space = "smollm2"
    contextual = False
    dp = False
    params = {"eta": None, "exclude_original": True, "k": 32, "transition_samples": 10_000,
              "exact": True, "nprobe": NPROBE}

    def __init__(self, *, epsilon: float | None = None, eta: float | None = None, exclude_original: bool = True,
                 k: int = 32, transition_samples: int = 10_000, exact: bool = True, nprobe: int = NPROBE,
                 **kwargs) -> None:
        if eta is None and epsilon is None:
            raise DPTextError("noise-mapper needs eta (or epsilon, used as eta)")
        eta = check_epsilon(eta if eta is not None else epsilon, name="eta")
        super().__init__(epsilon=eta, **kwargs)
        self.eta = eta
        self.exclude_original = bool(exclude_original)
        self.k = int(min(k, self.space.size - 1))
        self.transition_samples = int(transition_samples)
        self.table = NeighbourTable.of(self.space, self.k)
        self.exact, self.nprobe = bool(exact), int(nprobe)
        if self.nprobe < 1:
            raise DPTextError(f"invalid nprobe={self.nprobe}: must be >= 1")
        if not self.exact:  # build or open the index now (progress lines while building)
            from dptext.spaces.ann import IvfIndex

            IvfIndex.of(self.space, "euclidean", progress=kwargs.get("progress"))

    def settings(self) -> dict:
        out = {**super().settings(), "eta": self.eta, "exclude_original": self.exclude_original, "knn": self.k,
               "exact": self.exact}
        return out if self.exact else {**out, "nprobe": self.nprobe}

    def noise(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` draws of ``z`` [n, N] (float64)."""
        dim = self.space.dim
        r = rng.gamma(shape=dim, scale=1.0 / self.eta, size=n)
        u = rng.standard_normal((n, dim))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        return u * r[:, None]

    def _sample(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        out = np.empty(len(idx), dtype=np.int64)
        for s in range(0, len(idx), CHUNK):
            part = idx[s : s + CHUNK]
            z = self.noise(len(part), rng)
            q = (self.space.embeddings[part] + z).astype(np.float32)
            out[s : s + CHUNK] = self._nearest(q, part, np.linalg.norm(z, axis=1))
        return out

    def _nearest(self, q: np.ndarray, x: np.ndarray, radius: np.ndarray) -> np.ndarray:
        emb = self.space.embeddings
        nb_ids, nb_d = self.table.rows(x)
        best = np.full(len(x), -1, dtype=np.int64)
        slack = 1e-4 * (1.0 + nb_d[:, -1])  # float32 rounding margin
        near = np.flatnonzero(radius < nb_d[:, -1] - slack)  # otherwise the pruning test cannot pass
        if len(near):
            cand = np.concatenate([x[near, None], nb_ids[near].astype(np.int64)], axis=1)
            diff = emb[cand] - q[near, None, :]
            d = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
            if self.exclude_original:
                d[:, 0] = np.inf
            j = d.argmin(axis=1)
            rows = np.arange(len(near))
            ok = d[rows, j] <= nb_d[near, -1] - radius[near] - slack[near]
            best[near[ok]] = cand[rows[ok], j[ok]]
        unsafe = np.flatnonzero(best < 0)
        if len(unsafe):
            ex = x[unsafe] if self.exclude_original else None
            sp = self.space
            if not self.exact:
                best[unsafe] = ann_best_match(q[unsafe], sp, "euclidean", exclude=ex, nprobe=self.nprobe)
                return best
            best[unsafe] = exact_best_match(q[unsafe], sp, "euclidean", exclude=ex)
        return best

    def transition(self, x) -> np.ndarray:
        i = self.index_of(x)
        draws = self._sample(np.full(self.transition_samples, i, dtype=np.int64), np.random.default_rng(0x9015E))
        return np.bincount(draws, minlength=self.space.size) / float(len(draws))

    def privacy(self) -> PrivacyClaim:
        if self.exclude_original:
            return PrivacyClaim(
                mechanism=self.name, epsilon=self.eta, kind="none", bound=None,
                scope="no DP claim: excluding the original unit makes the nearest-neighbour step depend on "
                      "the input (the noise alone is η·d(x,x')-metric-DP)",
                details={"eta": self.eta, "exclude_original": True},
            )
        return PrivacyClaim(
            mechanism=self.name, epsilon=self.eta, kind="metric-dp", bound=self.eta * self.space.d_max,
            scope="η·d(x,x')-metric-DP (density ∝ exp(-η‖z‖), nearest unit is post-processing); "
                  "bound = η·d_max over V",
            details={"eta": self.eta, "exclude_original": False},
        )
