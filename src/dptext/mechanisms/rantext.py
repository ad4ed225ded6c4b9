"""RANTEXT, the InferDPT mechanism (docs/algorithms.md, RANTEXT).

Per input unit ``x``:

* ``Y_j ~ Laplace(0, Δφ_j / Z(ε))`` for each embedding dimension ``j``,
  ``d* = ‖Y‖₂``; ``Z(ε)`` is the noise curve of ``dptext.mechanisms.calibration``:
  ``noise="calibrated"`` (default) fits ``Z(ε) = a·ln(b·ε + c) + g`` for the space,
  ``noise="paper"`` uses InferDPT's constants (``Z = ε`` for ``ε < 2``);
* random adjacency list ``C_r(x) = {t ∈ V : d(x, t) < d*}`` (always holds ``x``);
* ``y ∈ C_r(x)`` with probability ``∝ exp(ε·u(x, y)/2)``, ``u = 1 − d(x, y)/d*``,
  i.e. ``∝ exp(−c·d(x, y))`` with ``c = ε/(2·d*)``.

``Pr(y|x) = E_{d*}[·]`` is integrated numerically over ``integration_points``
quantiles of the law of ``d*`` (which does not depend on ``x``).

Sampling draws from the space's memory-mapped neighbour table
(``dptext.spaces.neighbours``) with the exact envelope-and-rejection sampler
of ``dptext.mechanisms._rows``: ``|C_r|`` is a binary search in the table row,
and lists longer than the table reach the rest of ``V`` by rejection. Nothing
per unit is computed at run time.
"""

from __future__ import annotations

import numpy as np

from dptext.mechanisms import calibration
from dptext.mechanisms._rows import TableDraws, block_bounds, sample_ball
from dptext.mechanisms.base import Mechanism, PrivacyClaim
from dptext.mechanisms.registry import register

Z_A, Z_B, Z_C, Z_G = calibration.PAPER


def noise_divisor(epsilon: float) -> float:
    """InferDPT's published ``Z(ε)`` (``noise="paper"``)."""
    return calibration.PAPER_CURVE.z(epsilon)


@register("rantext")
class RanText(TableDraws, Mechanism):
    """RANTEXT (InferDPT): exponential mechanism inside a random adjacency list C_r(x)."""

    default_space = "cl100k-11k"
    contextual = False
    dp = True
    params = {"noise": "calibrated", "noise_unit": calibration.UNIT, "integration_points": 2000, "block": 128}

    def __init__(self, *, epsilon: float, noise: str = "calibrated", noise_unit: str = calibration.UNIT,
                 integration_points: int = 2000, block: int = 128, **kwargs) -> None:
        super().__init__(epsilon=epsilon, **kwargs)
        self.integration_points = int(integration_points)
        self.block = int(block)
        self.noise = noise
        self.curve, self.calibration = calibration.noise_curve(self.space, noise, noise_unit)
        self.z = self.curve.z(self.epsilon)
        self.scales = self.space.dim_range / self.z  # Laplace scale per dimension
        self._grid = None
        self._progress = kwargs.get("progress")

    def settings(self) -> dict:
        return {**super().settings(), "integration_points": self.integration_points, "noise": self.noise,
                "Z": self.z}

    def _sorted_row(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Row of ``i`` sorted by (distance, index), distances as ``EmbeddingSpace.distances`` gives them
        (the table's float64-accumulated values agree with these to float32 rounding, ~1e-7)."""
        d = self.space.distances([i])[0]
        order = np.lexsort((np.arange(len(d)), d))
        return d[order], order

    def _sorted_rows(self, ids: np.ndarray) -> dict[str, np.ndarray]:
        """Full sorted rows ``{"dist", "order"}`` of ``ids`` (by distance, then index)."""
        rows = [self._sorted_row(int(i)) for i in np.asarray(ids)]
        return {"dist": np.stack([r[0] for r in rows]), "order": np.stack([r[1] for r in rows])}

    # ----- the law of d* --------------------------------------------------------------------------
    def draw_dstar(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` draws of ``d* = ‖Y‖₂`` (``|Y_j|`` is exponential with scale ``Δφ_j/Z``)."""
        return calibration.draw_norms(self.scales, n, rng)

    def dstar_grid(self) -> np.ndarray:
        """Quantile midpoints of d*, estimated from 50 MC draws per point (fixed internal seed)."""
        if self._grid is None:
            m = self.integration_points
            draws = np.sort(self.draw_dstar(50 * m, np.random.default_rng(0xD57A2)))
            pos = ((np.arange(m) + 0.5) / m * len(draws)).astype(np.int64)
            self._grid = draws[pos]
        return self._grid

    # ----- sampling --------------------------------------------------------------------------------
    def _sample(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        tab = self.table
        if self._bounds is None:
            self._bounds = block_bounds(tab.width, self.block)
        dstar = self.draw_dstar(len(idx), rng)
        with np.errstate(over="ignore"):
            c = self.epsilon / (2.0 * dstar)
        return sample_ball(self.space, tab, idx, c, rng, radius=dstar, bounds=self._bounds,
                           exact=lambda pos, g: self._draw_dense(idx[pos], dstar[pos], g))

    def _draw_dense(self, x: np.ndarray, dstar: np.ndarray, rng: np.random.Generator, *,
                    inclusive: bool = False) -> np.ndarray:
        """Exact draws given ``d*`` from full distance rows (the sampler's fallback).

        ``inclusive`` takes the list ``d ≤ d*`` instead of RANTEXT's ``d < d*`` (for fidelity tests
        that must tell the two apart)."""
        uniq, inv = np.unique(x, return_inverse=True)
        rows = self.space.exact_distances(uniq)  # one row per distinct unit
        out = np.empty(len(x), dtype=np.int64)
        for s in range(0, len(x), 256):
            ds = dstar[s : s + 256].astype(np.float32).astype(np.float64)[:, None]
            d = rows[inv[s : s + 256]].astype(np.float64)
            with np.errstate(over="ignore", invalid="ignore"):
                e = np.where(d > 0, -(self.epsilon / (2.0 * ds)) * d, 0.0)
            inside = d <= ds if inclusive else d < ds
            cdf = np.cumsum(np.where(inside, np.exp(e), 0.0), axis=1)
            u = rng.random(len(d)) * cdf[:, -1]
            out[s : s + 256] = np.minimum((cdf < u[:, None]).sum(axis=1), self.space.size - 1)
        return out

    def candidate_set_sizes(self, x, n: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """``n`` draws of ``|C_r(x)|`` (for the |C_r|/|V| distribution)."""
        i = self.index_of(x)
        d, _ = self._sorted_row(i)
        dstar = self.draw_dstar(n, rng or self.rng)
        return np.maximum(np.searchsorted(d, dstar.astype(np.float32), side="left"), 1)

    # ----- exact row -------------------------------------------------------------------------------
    def transition(self, x, *, dstar: float | None = None) -> np.ndarray:
        """``Pr(y|x)`` integrated over the d* quadrature, or conditioned on one ``dstar`` value.

        The quadrature covers d* up to its ``1 − 1/(2·integration_points)`` quantile: units
        reachable only through the extreme upper tail of d* get probability 0 here although
        the sampler can (rarely) emit them.
        """
        i = self.index_of(x)
        srt, order = self._sorted_row(i)
        s = srt.astype(np.float64)
        p_sorted = np.zeros_like(s)
        grid = self.dstar_grid() if dstar is None else np.asarray([float(dstar)])
        for start in range(0, len(grid), 256):
            d = grid[start : start + 256][:, None]
            with np.errstate(over="ignore", invalid="ignore"):
                e = np.where(s[None, :] > 0, -(self.epsilon / (2.0 * d)) * s[None, :], 0.0)
            w = np.where(s[None, :] < d, np.exp(e), 0.0)
            w[:, 0] = 1.0  # x itself (d = 0) is always in C_r
            p_sorted += (w / w.sum(axis=1, keepdims=True)).sum(axis=0)
        p_sorted /= len(grid)
        out = np.zeros_like(p_sorted)
        out[order] = p_sorted
        return out

    def privacy(self) -> PrivacyClaim:
        # bound: the worst case over ANY pair of inputs, unbounded (supports differ across lists);
        # ε is the value within a shared list
        return PrivacyClaim(
            mechanism=self.name, epsilon=self.epsilon, kind="dp-within-set", bound=float("inf"),
            scope="ε-DP between inputs that share the random adjacency list C_r (exponential mechanism "
                  "with utility sensitivity 1); no bound across inputs outside each other's C_r",
            details={"Z": self.z, "noise": self.noise, "noise_curve": self.curve.to_dict(),
                     "calibration": self.calibration.to_dict() if self.calibration is not None else None,
                     "laplace_scale_mean": float(self.scales.mean())},
        )
