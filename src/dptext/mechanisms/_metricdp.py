"""Shared parts of the embedding-noise metric-DP mechanisms (docs/algorithms.md, "The word-level metric-DP family").

MultivariateCalibrated, Mahalanobis and Vickrey all release a noisy point
``φ̂ = φ(x) + z`` of the embedding space and map it back to the vocabulary:

* ``z = l·S·v`` with ``v`` uniform on the unit sphere of ``R^n``, ``l ~ Gamma(shape n, scale 1/ε)``
  and ``S = Σ_λ^{1/2}`` (``S = I`` for the spherical mechanism). With ``S = I`` the
  density of ``z`` is ``∝ exp(−ε‖z‖)`` (the radius of a density ``∝ exp(−ε r)`` in ``R^n``
  has density ``∝ r^{n−1} e^{−ε r}``, a Gamma(n, 1/ε)); with a general ``S`` the change
  of variables gives a density ``∝ exp(−ε‖S^{−1}z‖)``.
* the output is a function of ``φ̂`` alone (nearest unit, or Vickrey's choice between the
  two nearest), so it is post-processing of ``φ̂``.

Hence ``Pr(y|x) / Pr(y|x') ≤ exp(ε·‖S^{−1}(φ(x) − φ(x'))‖)`` for every output (triangle
inequality on the density), i.e. ``ε·d_S``-metric DP; over ``V`` the worst case is
``ε·max_{x,x'} d_S(x,x')``, the claim's ``bound``.

These mechanisms have no closed-form row: ``transition(x)`` is a Monte-Carlo estimate
from ``transition_samples`` draws at a fixed internal seed (standard error of each entry
``≤ 0.5/√N``, 0.005 at the default ``N = 10,000``). The audit therefore does not compute
log-ratios from those rows; it compares the sampler with the literal reference sampler
(:mod:`dptext.privacy.reference_metricdp`), as for the noise mapper.

Nearest-unit search is exact (:func:`dptext.mechanisms._fastnn.nearest_units`): a float32 GEMM screen
of every unit with a proven rounding margin, decided in float64, equal to a float64 brute-force scan.
"""

from __future__ import annotations

import numpy as np

from dptext import cache
from dptext.errors import DPTextError
from dptext.mechanisms._fastnn import nearest_units
from dptext.mechanisms.base import Mechanism, PrivacyClaim

CHUNK = 8192  # draws whose noisy points are made and decoded together (the search screens them in smaller blocks)
MC_SEED = 0x3E7D1C  # the fixed internal seed of the Monte-Carlo rows


def sphere_gamma(n: int, dim: int, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """``n`` draws of ``l·v`` [n, dim]: ``v`` uniform on the unit sphere, ``l ~ Gamma(dim, 1/ε)``."""
    r = rng.gamma(shape=dim, scale=1.0 / epsilon, size=n)
    v = rng.standard_normal((n, dim))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v * r[:, None]


def nearest_two(q: np.ndarray, space) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Exact first and second nearest units of each query (Euclidean) and their distances (float64), by
    :func:`dptext.mechanisms._fastnn.nearest_units` (equal distances: the lower index first)."""
    idx, d2 = nearest_units(q, space.embeddings, ("metricdp", space.name, space.cache_key), k=2)
    d = np.sqrt(d2)
    return idx[:, 0], idx[:, 1], d[:, 0], d[:, 1]


def nearest(q: np.ndarray, space) -> np.ndarray:
    """Exact nearest unit of each query (Euclidean; equal distances: the lower index), by
    :func:`dptext.mechanisms._fastnn.nearest_units`."""
    return nearest_units(q, space.embeddings, ("metricdp", space.name, space.cache_key), k=1)[0][:, 0]


def diameter(points: np.ndarray, step: int = 64) -> float:
    """Largest pairwise Euclidean distance among the rows of ``points`` (exact; rows scanned from the one
    farthest from the centroid inward, stopping once ``r_i + r_max`` cannot beat the best found)."""
    p = np.asarray(points, dtype=np.float64)
    r = np.linalg.norm(p - p.mean(axis=0), axis=1)
    order = np.argsort(-r)
    sq = np.einsum("ij,ij->i", p, p)
    best = 0.0
    for start in range(0, len(p), step):
        if r[order[start]] + r[order[0]] <= best:
            break
        rows = order[start : start + step]
        d2 = p[rows] @ p.T  # [step, |V|] float64: 25 MB blocks at |V| = 50,000
        d2 *= -2.0
        d2 += sq[None, :]
        d2 += sq[rows][:, None]
        best = max(best, float(np.sqrt(max(d2.max(), 0.0))))
    return best


class NoisyEmbedding(Mechanism):
    """Base of the mechanisms that release ``φ(x) + l·S·v`` and map it back to ``V`` (module docstring)."""

    default_space = "glove-50d"
    contextual = False
    dp = True
    params = {"transition_samples": 10_000}
    #: name of the metric in the claim
    metric_name = "Euclidean distance d(x,x') = ‖φ(x) − φ(x')‖"

    def __init__(self, *, epsilon: float, transition_samples: int = 10_000, **kwargs) -> None:
        super().__init__(epsilon=epsilon, **kwargs)
        self.transition_samples = int(transition_samples)
        if self.transition_samples < 1:
            raise DPTextError(f"invalid transition_samples={transition_samples}: must be >= 1")
        self.shape = None  # S = Σ_λ^{1/2}; None: the identity

    def settings(self) -> dict:
        return {**super().settings(), "transition_samples": self.transition_samples}

    def noise(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` draws of ``z = l·S·v`` [n, N] (float64)."""
        z = sphere_gamma(n, self.space.dim, self.epsilon, rng)
        return z if self.shape is None else z @ self.shape  # S is symmetric: (S v)ᵀ = vᵀ S

    def noisy_points(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        return self.space.embeddings[idx].astype(np.float64) + self.noise(len(idx), rng)

    def _sample(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        out = np.empty(len(idx), dtype=np.int64)
        for s in range(0, len(idx), CHUNK):
            out[s : s + CHUNK] = self._decode(self.noisy_points(idx[s : s + CHUNK], rng), rng)
        return out

    def _decode(self, q: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Output units for noisy points ``q`` (default: the nearest unit)."""
        return nearest(q, self.space)

    def transition(self, x) -> np.ndarray:
        """Monte-Carlo estimate of ``Pr(·|x)`` (``transition_samples`` draws, fixed internal seed)."""
        i = self.index_of(x)
        draws = self._sample(np.full(self.transition_samples, i, dtype=np.int64), np.random.default_rng(MC_SEED))
        return np.bincount(draws, minlength=self.space.size) / float(len(draws))

    # ----- the claim -------------------------------------------------------------------------------------
    def metric_points(self) -> np.ndarray:
        """Points whose Euclidean distances are the claim's metric (``S^{−1}φ``; ``φ`` itself for ``S = I``)."""
        return self.space.embeddings

    def metric_key(self) -> str:
        return "euclidean"

    def metric_dmax(self) -> float:
        """``max_{x,x'} d_S(x,x')`` over ``V`` (exact, cached on disk per space and metric)."""
        if self.shape is None:
            return float(self.space.d_max)
        key = cache.key_of(self.space.cache_key, "metricdp-dmax", self.metric_key())
        path = cache.entry_path("spaces", self.space.name + "-dmax-" + self.metric_key(), key, ".npy", version=1)
        if path.exists():
            return float(np.load(path))
        val = diameter(self.metric_points())
        cache.save_npy(path, np.asarray(val))
        return val

    def privacy(self) -> PrivacyClaim:
        dmax = self.metric_dmax()
        return PrivacyClaim(
            mechanism=self.name, epsilon=self.epsilon, kind="metric-dp", bound=self.epsilon * dmax,
            scope=f"ε·d(x,x')-metric-DP for the {self.metric_name} (noise density ∝ exp(−ε·‖S⁻¹z‖), the output "
                  "is post-processing of the noisy point); bound = ε·d_max over V",
            details={"metric": self.metric_key(), "d_max": dmax, "transition": "monte-carlo",
                     "transition_samples": self.transition_samples},
        )
