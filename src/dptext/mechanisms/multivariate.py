"""MultivariateCalibrated (Feyisetan, Balle, Drake, Diethe, WSDM 2020; docs/algorithms.md).

Per unit ``x``: ``φ̂ = φ(x) + l·v`` with ``v`` uniform on the unit sphere of ``R^n`` and
``l ~ Gamma(shape n, scale 1/ε)``, so the noise has density ``∝ exp(−ε‖z‖)``; the output
is the unit of ``V`` nearest to ``φ̂`` (Euclidean, exact search; ``x`` itself may come out).

Claim: ``ε·d(x,x')``-metric DP with ``d`` the Euclidean distance of the embeddings, so
``ε·d_max`` over ``V`` (proof in :mod:`dptext.mechanisms._metricdp`). ``transition(x)`` is a
Monte-Carlo estimate (``transition_samples`` draws at a fixed internal seed).
"""

from __future__ import annotations

from dptext.mechanisms._metricdp import NoisyEmbedding
from dptext.mechanisms.registry import register


@register("multivariate")
class MultivariateCalibrated(NoisyEmbedding):
    """Calibrated multivariate perturbation: spherical Gamma-radius noise, then the nearest unit."""
