"""Brute-force search for Cape privacy-loss violations on small vocabularies.

Works on the implemented bucketized exponential mechanism (``bucket_law`` /
``rows_from_law`` of :mod:`dptext.mechanisms.cape`) as a function of two utility
rows ``u_x, u_x'`` of range at most ``Δu``; the search knows nothing of the proof.
"""

from __future__ import annotations

import numpy as np

from dptext.mechanisms.cape import bucket_law, rows_from_law


def log_ratios(ux: np.ndarray, ux2: np.ndarray, epsilon: float, n_buckets: int, du: float = 1.0) -> np.ndarray:
    """``max_t ln Pr(t|x) − ln Pr(t|x')`` for each pair of rows ``[P, V]``."""
    p = len(ux)
    rows = rows_from_law(*bucket_law(np.concatenate([ux, ux2]), epsilon, du, n_buckets))
    return (np.log(rows[:p]) - np.log(rows[p:])).max(axis=1)


def random_rows(rng, p: int, v: int, du: float = 1.0) -> np.ndarray:
    kind = rng.integers(0, 3, size=p)
    u = rng.random((p, v)) * du
    u[kind == 1] = rng.beta(0.3, 0.3, size=((kind == 1).sum(), v)) * du  # mass at both ends
    few = kind == 2  # a few distinct levels
    u[few] = np.round(u[few] * 4) / 4
    return u


def adversarial_rows(rng, p: int, v: int, n_buckets: int, du: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """x: one unit high, the rest low. x': that unit low with many others, a few units spread above."""
    ux = np.zeros((p, v))
    ux[:, 0] = du
    ux2 = np.zeros((p, v))
    for r in range(p):
        m = int(rng.integers(1, min(n_buckets, v)))
        ux2[r, 1 : m + 1] = np.sort(rng.random(m)) * du
        ux2[r, m] = du
    return ux, ux2


def hill_climb(ux, ux2, epsilon, n_buckets, rng, steps: int = 300, scale: float = 0.05, du: float = 1.0):
    """Coordinate-noise hill climbing on the log-ratio (rows kept inside ``[0, du]``)."""
    best = log_ratios(ux, ux2, epsilon, n_buckets, du)
    for s in range(steps):
        step = scale * (1 - s / steps) + 1e-3
        cx = np.clip(ux + rng.normal(0, step, ux.shape) * (rng.random(ux.shape) < 0.2), 0, du)
        cx2 = np.clip(ux2 + rng.normal(0, step, ux2.shape) * (rng.random(ux2.shape) < 0.2), 0, du)
        val = log_ratios(cx, cx2, epsilon, n_buckets, du)
        better = val > best
        ux[better], ux2[better], best[better] = cx[better], cx2[better], val[better]
    return best


def search(epsilon: float, n_buckets: int, v: int, seed: int, population: int = 64, steps: int = 300) -> float:
    """Largest log-ratio found from random and adversarial starts after hill climbing."""
    rng = np.random.default_rng(seed)
    found = []
    ux, ux2 = random_rows(rng, population, v), random_rows(rng, population, v)
    found.append(hill_climb(ux, ux2, epsilon, n_buckets, rng, steps).max())
    ax, ax2 = adversarial_rows(rng, population, v, n_buckets)
    found.append(hill_climb(ax, ax2, epsilon, n_buckets, rng, steps, scale=0.02).max())
    return float(max(found))
