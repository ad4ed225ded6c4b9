"""TruncatedGumbel (Carvalho, Vasiloudis, Feyisetan, FLAIRS 2021; docs/algorithms.md).

Per unit ``x``:

1. ``k ~ Poisson(ln(|V| − 1))`` truncated to ``k ≤ |V| − 1`` (redrawn above it);
2. the candidates are the ``k`` units nearest to ``x`` (Euclidean, ``x`` itself first at distance 0,
   ties by index); ``k = 0`` leaves no candidate and ``x`` is output;
3. each candidate ``y`` is scored ``d(x,y) + G_y`` with ``G_y`` i.i.d. Gumbel(0, b) conditioned on
   ``|G_y| ≤ Δmax``; the lowest score wins.

``Δmin`` and ``Δmax`` are the smallest positive and the largest distance between units of ``V`` (exact,
from the space's cached neighbour table and diameter). The noise scale ``b`` comes from ``ε`` by the
calibration ``a = (ε − 2·(1 + ln|V|)/Δmin)/3``, ``b = 2Δmax / W(2aΔmax)`` when ``aΔmin ≤ 0`` and
``b = 2Δmax / min(W(2aΔmax), ln(aΔmin))`` otherwise (``W`` Lambert's function, real part): the
calibration of the paper as published in ``mldp-text``; pass ``b`` to pin the scale.

Claim: the paper states ``ε·d``-metric DP for that calibration; it is reported as the paper's statement.
The proven worst case of the mechanism as implemented is unbounded (``bound = inf``): ``k ≤ |V| − 1``
and ``x`` takes a slot, so the unit farthest from ``x`` is never output for ``x`` but can be for other
inputs. ``transition(x)`` is a Monte-Carlo estimate (``transition_samples`` draws, fixed internal seed);
the audit compares the sampler with the literal reference sampler.

Sampling is vectorised: the candidates of every occurrence are the leading columns of the space's
sorted neighbour table (memory-mapped, built once per space), one truncated-Gumbel matrix per batch
by inverse CDF, one ``argmin`` per row; the rare ``k`` beyond the table's width takes an exact sorted
distance row.
"""

from __future__ import annotations

import cmath
import math

import numpy as np

from dptext import cache
from dptext.errors import DPTextError
from dptext.mechanisms._metricdp import MC_SEED
from dptext.mechanisms.base import Mechanism, PrivacyClaim
from dptext.mechanisms.registry import register

BATCH = 65536  # occurrences per noise matrix


def lambert_w0(z: float) -> complex:
    """Principal branch ``W₀(z)`` of Lambert's function (``w·e^w = z``; complex below ``−1/e``), by Halley's
    iteration from the branch-point series near ``−1/e``, ``ln(1 + z)`` for small ``|z|`` right of ``−1/2``, else
    ``ln z − ln ln z`` (kept here so that a cold start does not import scipy.special)."""
    z = complex(z)
    if z == 0:
        return 0j
    if abs(z + 1.0 / math.e) < 0.3:
        p = cmath.sqrt(2.0 * (math.e * z + 1.0))
        w = -1.0 + p - p * p / 3.0 + 11.0 / 72.0 * p ** 3
    elif abs(z) <= 1.0 and z.real > -0.5:
        w = cmath.log(1.0 + z)
    else:
        w = cmath.log(z)
        w -= cmath.log(w)
    for _ in range(64):
        ew = cmath.exp(w)
        f = w * ew - z
        step = f / (ew * (w + 1.0) - (w + 2.0) * f / (2.0 * w + 2.0))
        w -= step
        if abs(step) <= 1e-15 * (1.0 + abs(w)):
            break
    return w


def calibrated_scale(epsilon: float, size: int, d_min: float, d_max: float) -> float:
    """The paper's noise scale ``b`` (module docstring), as ``mldp-text`` computes it."""
    a = (epsilon - 2.0 * (1.0 + math.log(size)) / d_min) / 3.0
    w = lambert_w0(2.0 * a * d_max).real
    den = w if a * d_min <= 0 else min(w, math.log(a * d_min))
    return 2.0 * d_max / den


def truncated_gumbel(shape, b: float, limit: float, rng: np.random.Generator) -> np.ndarray:
    """Gumbel(0, b) draws conditioned on ``|g| ≤ limit`` (inverse CDF of ``F(g) = exp(−e^{−g/b})``)."""
    lo, hi = math.exp(-math.exp(limit / b)), math.exp(-math.exp(-limit / b))
    u = lo + (hi - lo) * rng.random(shape)
    with np.errstate(divide="ignore"):
        g = -b * np.log(-np.log(u))
    return np.clip(g, -limit, limit)  # u at an end (probability ~2^-53) lands on the bound


def truncated_poisson(n: int, lam: float, top: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` draws of Poisson(``lam``) conditioned on ``≤ top`` (rejection, as the paper's truncation)."""
    k = rng.poisson(lam, n)
    bad = np.flatnonzero(k > top)
    while len(bad):
        k[bad] = rng.poisson(lam, len(bad))
        bad = bad[k[bad] > top]
    return k


def smallest_distance(space, table) -> float:
    """Smallest positive distance between two units (duplicates at 0 skipped), from the neighbour table's
    first columns; cached on disk per space (reading those columns of every row costs ~50 ms cold)."""
    path = cache.entry_path("spaces", space.name + "-dmin", cache.key_of(space.cache_key, "neighbours-dmin"),
                            ".npy", version=1)
    if path.exists():
        return float(np.load(path))
    head = np.asarray(table.dist[:, 1 : min(8, table.dist.shape[1])], dtype=np.float64)
    val = float(head[head > 0].min())
    cache.save_npy(path, np.asarray(val))
    return val


@register("truncated-gumbel")
class TruncatedGumbel(Mechanism):
    """Truncated Gumbel: noisy distances over a Poisson-sized set of nearest units, the lowest wins."""

    default_space = "glove-50d"
    contextual = False
    dp = True
    params = {"b": None, "transition_samples": 10_000}

    def __init__(self, *, epsilon: float, b: float | None = None, transition_samples: int = 10_000,
                 **kwargs) -> None:
        super().__init__(epsilon=epsilon, **kwargs)
        self.transition_samples = int(transition_samples)
        if self.transition_samples < 1:
            raise DPTextError(f"invalid transition_samples={transition_samples}: must be >= 1")
        if self.space.size < 2:
            raise DPTextError(f"{self.name}: the space needs at least 2 units")
        self.table = self.space.neighbours()
        self.d_min = smallest_distance(self.space, self.table)
        self.d_max = float(self.space.d_max)
        self.lam = math.log(self.space.size - 1)
        self.b = float(calibrated_scale(self.epsilon, self.space.size, self.d_min, self.d_max) if b is None else b)
        if not (self.b > 0 and math.isfinite(self.b)):
            raise DPTextError(f"invalid b={b if b is not None else self.b}: the noise scale must be a finite "
                              "number > 0")

    def settings(self) -> dict:
        return {**super().settings(), "b": self.b, "transition_samples": self.transition_samples}

    def _sample(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        out = np.empty(len(idx), dtype=np.int64)
        for s in range(0, len(idx), BATCH):
            out[s : s + BATCH] = self._batch(idx[s : s + BATCH], rng)
        return out

    def _batch(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        n, width = len(x), self.table.order.shape[1]
        k = truncated_poisson(n, self.lam, self.space.size - 1, rng)
        out = x.copy()  # k = 0: no candidate, x is output
        wide = np.flatnonzero(k > width)
        rows = np.flatnonzero((k > 0) & (k <= width))
        if len(rows):
            m = int(k[rows].max())
            d = np.asarray(self.table.dist[x[rows], :m], dtype=np.float64)
            beyond = np.arange(m)[None, :] >= k[rows, None]  # beyond the k nearest: never chosen
            d[~beyond] += self._noise(int(k[rows].sum()), rng)  # noise for the k candidates only (half the
            d[beyond] = np.inf  # draws of a full [rows, max k] matrix; the same law, i.i.d. per candidate)
            out[rows] = self.table.order[x[rows], d.argmin(axis=1)]
        for i in wide.tolist():  # k beyond the table (Pr ~ 0 for |V| ≥ 1,000): an exact sorted row
            row = self.space.exact_distances([x[i]])[0].astype(np.float64)
            near = np.argsort(row, kind="stable")[: k[i]]
            out[i] = near[np.argmin(row[near] + self._noise(len(near), rng))]
        return out

    def _noise(self, shape, rng: np.random.Generator) -> np.ndarray:
        """Gumbel(0, b) noise truncated to ``[−Δmax, Δmax]``."""
        return truncated_gumbel(shape, self.b, self.d_max, rng)

    def transition(self, x) -> np.ndarray:
        """Monte-Carlo estimate of ``Pr(·|x)`` (``transition_samples`` draws, fixed internal seed)."""
        i = self.index_of(x)
        draws = self._sample(np.full(self.transition_samples, i, dtype=np.int64), np.random.default_rng(MC_SEED))
        return np.bincount(draws, minlength=self.space.size) / float(len(draws))

    def privacy(self) -> PrivacyClaim:
        return PrivacyClaim(
            mechanism=self.name, epsilon=self.epsilon, kind="metric-dp", bound=float("inf"),
            scope="the paper's statement (Carvalho et al. 2021): ε·d(x,x')-metric DP with the calibrated b; "
                  "not proven here. Proven worst case: unbounded (the unit farthest from x is never output "
                  "for x, and can be for another input)",
            details={"b": self.b, "d_min": self.d_min, "d_max": self.d_max, "poisson_mean": self.lam,
                     "paper_statement": f"{self.epsilon:g}·d-metric DP", "transition": "monte-carlo",
                     "transition_samples": self.transition_samples},
        )
