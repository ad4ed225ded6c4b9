"""TEM, the truncated exponential mechanism (Carvalho, Vasiliadis, Wang, Chapman, Vieira, SDM 2023;
docs/algorithms.md).

Per unit ``x``: candidates ``L_x = {y ∈ V : d(x,y) ≤ γ}`` with score ``−d(x,y)``, and one extra
element ``⊥`` with score ``−γ + 2·ln|V \\ L_x|/ε``; Gumbel noise of scale ``2/ε`` is added to
every score and the best is taken; ``⊥`` outputs a uniform unit of ``V \\ L_x``.

Gumbel-max with scale ``2/ε`` samples ``∝ exp(ε·score/2)``, so the row is exact:
``Pr(y|x) = exp(−ε·min(d(x,y), γ)/2) / Z_x`` (a unit outside ``L_x`` gets the ``⊥`` weight
``exp(−ε·γ/2)·|V \\ L_x|`` shared uniformly), ``Z_x`` the sum over ``V``: the exponential
mechanism with the clamped utility ``−min(d, γ)``.

Claim (proof in docs/algorithms.md): ``u_x(y) = −min(d(x,y), γ)`` is 1-Lipschitz in ``x`` and
lies in ``[−γ, 0]``, so ``ln Pr(y|x) − ln Pr(y|x') ≤ ε·min(d(x,x'), γ)``: ``ε·d``-metric DP with
``bound = ε·min(d_max, γ)`` over ``V``.

``γ``: given, or ``(2/ε)·ln((1 − β)·|V|/β)`` from the failure probability ``β`` (default
0.001; our reading of the paper's choice, stated as such: pass ``gamma`` to pin it).

Sampling draws from the exact row in two stages (``⊥`` or not, then a member of ``L_x`` by
inverse CDF, or a uniform unit outside ``L_x`` by rejection); ``L_x`` and its weights are
computed once per distinct input (one float32 GEMM row) and kept, so repeated units cost
one lookup. The kept tables are bounded (``MAX_TABLE_BYTES``, least recently used dropped first;
a large γ makes each ``L_x`` up to all of ``V``): a call whose inputs could need more is sampled
in parts of distinct inputs, each part's occurrences from that part's tables.
"""

from __future__ import annotations

import math

import numpy as np

from dptext.errors import DPTextError
from dptext.mechanisms._rows import flatten_tables
from dptext.mechanisms._vocab import distinct
from dptext.mechanisms.base import Mechanism, PrivacyClaim
from dptext.mechanisms.registry import register

ROWS = 256  # distance rows per GEMM block
MAX_TABLE_BYTES = 96 << 20  # kept per-input tables (16 bytes per member of L_x; the flat copies add 24)


def default_gamma(epsilon: float, size: int, beta: float) -> float:
    return 2.0 / epsilon * math.log((1.0 - beta) * size / beta)


@register("tem")
class TEM(Mechanism):
    """Truncated exponential mechanism: Gumbel-max over the γ-ball and one ⊥ for the rest of V."""

    default_space = "glove-50d"
    contextual = False
    dp = True
    params = {"gamma": None, "beta": 0.001}

    def __init__(self, *, epsilon: float, gamma: float | None = None, beta: float = 0.001, **kwargs) -> None:
        super().__init__(epsilon=epsilon, **kwargs)
        self.beta = float(beta)
        if not 0.0 < self.beta < 1.0:
            raise DPTextError(f"invalid beta={beta}: must be in (0, 1)")
        self.gamma = float(default_gamma(self.epsilon, self.space.size, self.beta) if gamma is None else gamma)
        if not (self.gamma >= 0 and math.isfinite(self.gamma)):
            raise DPTextError(f"invalid gamma={gamma}: must be a finite number >= 0")
        self._tables: dict[int, tuple] = {}  # x -> (L_x ids, cumulative weights inside L_x, Pr(⊥)), oldest use first
        self._bytes = 0  # of the kept ids and weights
        self._flat = None

    def settings(self) -> dict:
        return {**super().settings(), "gamma": self.gamma, "beta": self.beta}

    # ----- exact rows ------------------------------------------------------------------------------------------
    def _rows(self, ids: np.ndarray) -> np.ndarray:
        """Unnormalised weights ``exp(−ε·(min(d, γ) − d_min)/2)`` for input rows ``ids`` (row max 1)."""
        d = np.asarray(self.space.distances(ids), dtype=np.float64)
        np.minimum(d, self.gamma, out=d)
        d -= d.min(axis=1, keepdims=True)
        return np.exp(-self.epsilon * d / 2.0)

    def transition(self, x) -> np.ndarray:
        i = self.index_of(x)
        w = self._rows(np.array([i]))[0]
        return w / math.fsum(w.tolist())

    def transition_rows(self, ids) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        if not len(ids):
            return np.zeros((0, self.space.size))
        w = self._rows(ids)
        return w / w.sum(axis=1, keepdims=True)

    # ----- sampling ---------------------------------------------------------------------------------------------
    def _prepare(self, idx: np.ndarray) -> None:
        need = distinct(np.asarray(idx, dtype=np.int64))
        have = [int(t) in self._tables for t in need.tolist()]
        for t in need[have].tolist():  # used again: now the most recent
            self._tables[t] = self._tables.pop(t)
        todo = need[~np.asarray(have, dtype=bool)] if len(need) else need
        size, eps, g = self.space.size, self.epsilon, self.gamma
        for s in range(0, len(todo), ROWS):
            rows = todo[s : s + ROWS]
            d = np.asarray(self.space.distances(rows), dtype=np.float64)
            for x, row in zip(rows.tolist(), d):
                members = np.flatnonzero(row <= g)
                # weights relative to exp(−ε·γ/2): members exp(ε(γ − d)/2) ≥ 1, each outsider 1
                w = np.exp(eps * (g - row[members]) / 2.0)
                in_mass, out_mass = float(w.sum()), float(size - len(members))
                self._tables[x] = (members.astype(np.int64), np.cumsum(w) / in_mass, out_mass / (in_mass + out_mass))
                self._bytes += self._tables[x][0].nbytes + self._tables[x][1].nbytes
        if len(todo):
            self._flat = None
        self._evict(set(need.tolist()))

    def _evict(self, keep: set) -> None:
        """Drop the least recently used tables outside ``keep`` while the kept ones exceed ``MAX_TABLE_BYTES``."""
        if self._bytes <= MAX_TABLE_BYTES:
            return
        for x in list(self._tables):
            if self._bytes <= MAX_TABLE_BYTES:
                break
            if x not in keep:
                ids, cdf, _ = self._tables.pop(x)
                self._bytes -= ids.nbytes + cdf.nbytes
        self._flat = None

    def _flat_tables(self):
        """All prepared units as flat arrays: member ids, ``k + cdf`` (segment ``k``), segment starts/ends, Pr(⊥)."""
        if self._flat is None:
            keys, sizes, seg, ids, cdf, starts, ends, p_bot = flatten_tables(self._tables, self.space.size)
            pairs = np.sort(np.repeat(keys, sizes) * self.space.size + ids)  # (x, member) pairs, sorted
            self._flat = (seg, ids, cdf, starts, ends, p_bot, pairs)
        return self._flat

    def _sample(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        keys = distinct(idx)
        per = max(1, MAX_TABLE_BYTES // (16 * self.space.size))  # distinct inputs whose tables surely fit
        if len(keys) <= per:
            return self._sample_part(idx, rng)
        part = np.zeros(self.space.size, dtype=np.int64)
        part[keys] = np.arange(len(keys)) // per
        of = part[idx]
        out = np.empty(len(idx), dtype=np.int64)
        for p in range(int(of.max()) + 1):  # each draw is independent: the parts' order changes no law
            occ = np.flatnonzero(of == p)
            out[occ] = self._sample_part(idx[occ], rng)
        return out

    def _sample_part(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        self._prepare(idx)
        seg, ids, cdf, starts, ends, p_bot, _ = self._flat_tables()
        k = seg[idx]
        out = np.empty(len(idx), dtype=np.int64)
        bot = rng.random(len(idx)) < p_bot[k]
        inside = np.flatnonzero(~bot)
        if len(inside):
            kk = k[inside]
            pos = np.searchsorted(cdf, kk + rng.random(len(inside)), side="right")
            out[inside] = ids[np.clip(pos, starts[kk], ends[kk] - 1)]
        todo = np.flatnonzero(bot)
        while len(todo):  # a uniform unit outside L_x: uniform over V, redrawn while it falls in L_x
            cand = rng.integers(0, self.space.size, len(todo))
            ok = self._outside(idx[todo], cand)
            out[todo[ok]] = cand[ok]
            todo = todo[~ok]
        return out

    def _outside(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Whether ``y[i]`` lies outside ``L_{x[i]}`` (lookup of the pair ``(x, y)`` among all prepared members)."""
        keys = self._flat_tables()[6]
        q = x * self.space.size + y
        pos = np.minimum(np.searchsorted(keys, q), max(len(keys) - 1, 0))
        return keys[pos] != q if len(keys) else np.ones(len(x), dtype=bool)

    def privacy(self) -> PrivacyClaim:
        dmax = float(self.space.d_max)
        return PrivacyClaim(
            mechanism=self.name, epsilon=self.epsilon, kind="metric-dp", bound=self.epsilon * min(dmax, self.gamma),
            scope="ε·d(x,x')-metric-DP (exponential mechanism with the utility −min(d, γ), 1-Lipschitz in x and in "
                  "[−γ, 0]); bound = ε·min(d_max, γ) over V",
            details={"gamma": self.gamma, "beta": self.beta, "d_max": dmax},
        )
