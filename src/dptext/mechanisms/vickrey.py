"""The Vickrey mechanism (Xu, Aggarwal, Feyisetan, Teissier, PrivateNLP 2021; docs/algorithms.md).

Per unit ``x``: the noisy point ``φ̂`` of the Mahalanobis mechanism (``λ = lam``; the default
``lam = 0`` is the spherical noise of MultivariateCalibrated), then its first and second
nearest units ``w₁, w₂`` (Euclidean, ``d₁ ≤ d₂`` their distances to ``φ̂``). The output is
``w₁`` with probability ``p = (1 − t)·d₂ / (t·d₁ + (1 − t)·d₂)`` and ``w₂`` otherwise
(the paper's rule with threshold ``t ∈ [0, 1]``: ``t = 0`` is the plain nearest unit, ``t = 0.5``
gives ``p = d₂/(d₁ + d₂)``, ``t = 1`` always the second).

Claim: the choice depends on ``φ̂`` (and fresh randomness) only, so it is post-processing
and the noise's metric DP carries over: ``ε·d_λ``-metric DP, ``ε·max d_λ`` over ``V``.
``transition(x)`` is a Monte-Carlo estimate.
"""

from __future__ import annotations

import numpy as np

from dptext.errors import DPTextError
from dptext.mechanisms._metricdp import nearest_two
from dptext.mechanisms.mahalanobis import RegularisedNoise
from dptext.mechanisms.registry import register


def first_probability(d1: np.ndarray, d2: np.ndarray, t: float) -> np.ndarray:
    """``Pr(w₁) = (1 − t)·d₂ / (t·d₁ + (1 − t)·d₂)`` (1 where both distances are 0)."""
    num = (1.0 - t) * d2
    den = t * d1 + num
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), 1.0)


@register("vickrey")
class Vickrey(RegularisedNoise):
    """Vickrey: noisy point, then its first or second nearest unit with the threshold ``t``."""

    params = {"lam": 0.0, "t": 0.5}

    def __init__(self, *, epsilon: float, t: float = 0.5, lam: float = 0.0, **kwargs) -> None:
        super().__init__(epsilon=epsilon, lam=lam, **kwargs)
        self.t = float(t)
        if not 0.0 <= self.t <= 1.0:
            raise DPTextError(f"invalid t={t}: must be in [0, 1]")

    def settings(self) -> dict:
        return {**super().settings(), "t": self.t}

    def _decode(self, q: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        i1, i2, d1, d2 = nearest_two(q, self.space)
        first = rng.random(len(q)) < first_probability(d1, d2, self.t)
        return np.where(first, i1, i2)
