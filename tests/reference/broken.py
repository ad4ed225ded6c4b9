"""Deliberately broken mechanisms: each keeps a claim it does not deserve, or is not the paper's algorithm.

The audit (:mod:`dptext.privacy.audit`) or the reference comparison
(:mod:`dptext.privacy.fidelity`) must catch every one of them.
"""

from __future__ import annotations

import numpy as np

from dptext.mechanisms.base import PrivacyClaim
from dptext.mechanisms.custext import CusText
from dptext.mechanisms.rantext import RanText
from dptext.mechanisms.santext import SanText


class TenfoldScaleRanText(RanText):
    """Laplace scale 10·Δφ_j/Z(ε): honours ε within a list, but C_r is far larger than the paper's."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.scales = self.scales * 10.0
        self._grid = None


class GlobalDeltaRanText(RanText):
    """One Δφ for every dimension (the range of all entries of E) instead of the per-dimension range."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        e = self.space.embeddings
        self.scales = np.full_like(self.scales, float(e.max() - e.min()) / self.z)
        self._grid = None


class LessEqualRanText(RanText):
    """Rows at fixed d* over ``{t : d(x,t) ≤ d*}`` instead of the strict ``<`` of the paper.

    (Its sampler draws d* from a continuous law, where ``<`` and ``≤`` differ with probability 0;
    the rows at a given d*, which the audit and the exact check use, are where they differ.)
    """

    def transition(self, x, *, dstar=None):
        i = self.index_of(x)
        srt, order = self._sorted_row(i)
        s = srt.astype(np.float64)
        grid = self.dstar_grid() if dstar is None else np.asarray([float(dstar)])
        p = np.zeros_like(s)
        for d in grid:
            w = np.where(s <= d, np.exp(-self.epsilon * s / (2.0 * d)), 0.0)
            p += w / w.sum()
        out = np.zeros_like(p)
        out[order] = p / len(grid)
        return out


class DoubledSanText(SanText):
    """Samples and reports rows at 2ε (consistently) while claiming ε."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self._true_eps = 2.0 * self.epsilon

    def _swap(self, fn, *a):
        eps = self.epsilon
        self.epsilon = self._true_eps
        try:
            return fn(*a)
        finally:
            self.epsilon = eps

    def _probs(self, ids):
        return self._swap(super()._probs, ids)

    def _sample(self, idx, rng):
        return self._swap(super()._sample, idx, rng)


class AggressiveSharedClaimCusText(CusText):
    """Per-unit (aggressive) lists while claiming the conservative, shared-list scope."""

    def __init__(self, **kw) -> None:
        super().__init__(strategy="aggressive", **kw)

    def privacy(self):
        c = super().privacy()
        scope = ("ε-DP between inputs that share a candidate list (exponential mechanism over min-max scaled "
                 "similarity, sensitivity 1); unbounded across lists")
        return PrivacyClaim(c.mechanism, c.epsilon, c.kind, c.bound, scope, {**c.details, "strategy": "conservative"})
