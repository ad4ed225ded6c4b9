"""Frequency inversion (docs/algorithms.md; the Inversion-BERT baseline's behaviour in paper 003).

The adversary sanitizes its shadow corpus ``repeats`` times with the public
mechanism and counts the pairs ``(y, x)`` (observed output, true original).
An observed ``y`` is mapped to the originals seen most often with it,
best first. A ``y`` never seen in the shadow sanitizations cannot be
represented (counted as a failure and reported as ``unrepresentable``).

Counting is one ``np.unique`` over encoded pairs; ranking is a lexsort.
"""

from __future__ import annotations

import numpy as np

from dptext.attacks.base import Attack, Observed, observe, register_attack


@register_attack("frequency")
class FrequencyInversion(Attack):
    needs_shadow = True

    def __init__(self, mechanism, *, k: int = 5, repeats: int = 10, progress=None) -> None:
        super().__init__(mechanism, k=k, progress=progress)
        self.repeats = int(repeats)
        self.table: dict[str, list[str]] = {}

    def _fit(self, shadow, rng) -> None:
        obs = observe(self.mechanism, shadow, rng=rng, repeats=self.repeats, targets="all")
        ys = np.asarray([u.casefold() for u in obs.observed], dtype=object)
        xs = np.asarray([u.casefold() for u in obs.truth], dtype=object)
        if not len(ys):
            return
        yu, yi = np.unique(ys.astype(str), return_inverse=True)
        xu, xi = np.unique(xs.astype(str), return_inverse=True)
        pair = yi.astype(np.int64) * len(xu) + xi
        pu, cnt = np.unique(pair, return_counts=True)
        py, px = pu // len(xu), pu % len(xu)
        order = np.lexsort((-cnt, py))  # by y, then count descending
        py, px = py[order], px[order]
        starts = np.flatnonzero(np.r_[True, py[1:] != py[:-1]])
        ends = np.r_[starts[1:], len(py)]
        for s, e in zip(starts.tolist(), ends.tolist()):
            self.table[str(yu[py[s]])] = [str(xu[j]) for j in px[s : min(e, s + self.k)].tolist()]

    def rank(self, obs: Observed):
        return [self.table.get(y.casefold()) for y in obs.observed]
