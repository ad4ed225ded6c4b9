"""The Mahalanobis mechanism (Xu, Aggarwal, Feyisetan, Teissier, PrivateNLP 2020; docs/algorithms.md).

Per unit ``x``: ``φ̂ = φ(x) + l·Σ_λ^{1/2}·v`` with ``v`` uniform on the unit sphere of ``R^n``,
``l ~ Gamma(shape n, scale 1/ε)`` and ``Σ_λ = λ·Σ + (1 − λ)·I``; the output is the unit of
``V`` nearest to ``φ̂`` (Euclidean). ``Σ`` is the sample covariance of the embeddings of
``V`` (``ddof = 1``) scaled so that ``tr(Σ) = n``, the dimension: ``Σ`` then has the
identity's trace, and ``λ`` moves the noise's shape from spherical (``λ = 0``, the
MultivariateCalibrated mechanism) to the embedding covariance (``λ = 1``) without
changing its overall size. ``λ`` defaults to 0.5.

Claim: ``ε·d_λ(x,x')``-metric DP for the regularised Mahalanobis norm
``d_λ(x,x') = ‖Σ_λ^{−1/2}(φ(x) − φ(x'))‖`` (the noise density is
``∝ exp(−ε‖Σ_λ^{−1/2}z‖)``), so ``ε·max d_λ`` over ``V`` (computed exactly, cached).
``transition(x)`` is a Monte-Carlo estimate.
"""

from __future__ import annotations

import numpy as np

from dptext.errors import DPTextError
from dptext.mechanisms._metricdp import NoisyEmbedding
from dptext.mechanisms.registry import register

_SHAPES: dict = {}


def normalised_covariance(E: np.ndarray) -> np.ndarray:
    """Sample covariance of the rows of ``E`` (float64, ``ddof = 1``) scaled to trace ``n``."""
    cov = np.cov(np.asarray(E, dtype=np.float64), rowvar=False)
    return cov * (cov.shape[0] / np.trace(cov))


def shape_matrices(E: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """``(Σ_λ^{1/2}, Σ_λ^{−1/2})`` for ``Σ_λ = λ·Σ + (1 − λ)·I`` (symmetric square roots by eigh)."""
    cov = normalised_covariance(E)
    sig = lam * cov + (1.0 - lam) * np.eye(cov.shape[0])
    w, u = np.linalg.eigh(sig)
    if w.min() <= 0:
        raise DPTextError(f"Σ_λ is singular at lam={lam} (the embedding covariance has rank < n); use lam < 1")
    return (u * np.sqrt(w)) @ u.T, (u / np.sqrt(w)) @ u.T


def check_lam(lam) -> float:
    lam = float(lam)
    if not 0.0 <= lam <= 1.0:
        raise DPTextError(f"invalid lam={lam}: must be in [0, 1]")
    return lam


class RegularisedNoise(NoisyEmbedding):
    """Noise shaped by ``Σ_λ^{1/2}`` (``λ = 0``: spherical)."""

    params = {"lam": 0.5}
    metric_name = "regularised Mahalanobis norm d(x,x') = ‖Σ_λ^{−1/2}(φ(x) − φ(x'))‖"

    def __init__(self, *, epsilon: float, lam: float = 0.5, **kwargs) -> None:
        super().__init__(epsilon=epsilon, **kwargs)
        self.lam = check_lam(lam)
        if self.lam > 0:
            key = (self.space.name, self.space.cache_key, self.lam)
            if key not in _SHAPES:
                _SHAPES[key] = shape_matrices(self.space.embeddings, self.lam)
            self.shape, self.inv_shape = _SHAPES[key]

    def settings(self) -> dict:
        return {**super().settings(), "lam": self.lam}

    def metric_points(self) -> np.ndarray:
        E = np.asarray(self.space.embeddings, dtype=np.float64)
        return E if self.shape is None else E @ self.inv_shape

    def metric_key(self) -> str:
        return "euclidean" if self.shape is None else f"mahalanobis-lam{self.lam:g}"


@register("mahalanobis")
class Mahalanobis(RegularisedNoise):
    """Mahalanobis mechanism: elliptical Gamma-radius noise shaped by ``Σ_λ``, then the nearest unit."""
