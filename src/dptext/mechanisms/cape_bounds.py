"""Proven worst-case privacy loss of Cape's bucketized exponential mechanism (docs/algorithms.md, "Cape").

The mechanism, for one input ``x`` in a fixed context: utilities ``u(x,t)`` over the
vocabulary ``V`` lie in an interval of length at most ``Δu``; ``[min u, max u]`` is cut
into ``N_b`` equal-width buckets (width ``w = R/N_b``, ``R = max u − min u ≤ Δu``), empty
buckets are dropped, bucket ``k`` is chosen with probability
``∝ exp(c·ū_k)``, ``c = ε/(2Δu)``, and the output is uniform inside it:
``Pr(t|x) = Pr(k(t)|x) / |b_k(t)(x)|``.

For any two inputs ``x, x'`` and any output ``t``:

* upper side: when ``x`` has at least two non-empty buckets some other bucket has a mean
  at most ``R`` below ``t``'s, so ``Pr(t|x) ≤ 1/(1 + e^{−ε/2})``
  (and ``Pr(t|x) = 1/|V|`` when it has one);
* lower side: ``t``'s bucket ``k'`` under ``x'`` has mean ``≥ min u + k'·w`` and every
  other non-empty bucket ``j`` has mean ``≤ min u + (j+1)·w``; with ``m`` other non-empty
  buckets, ``|b_k'| ≤ |V| − m`` and the bucket's probability is at least
  ``1 / (1 + Σ_{i=N_b−m+1}^{N_b} e^{ε·i/(2N_b)})``. Hence
  ``−ln Pr(t|x') ≤ F = max_{0≤m<min(N_b,|V|)} [ln(1 + Σ_{i=N_b−m+1}^{N_b} e^{ε·i/(2N_b)}) + ln(|V| − m)]``.

So ``ln Pr(t|x) − ln Pr(t|x') ≤ bound = −ln(1 + e^{−ε/2}) + F`` (``N_b ≥ 2``, ``|V| ≥ 2``;
``0`` when ``N_b = 1``: every row is uniform). Both sides are suprema over utility rows
with range ``≤ Δu`` and are approached by explicit rows (:func:`extreme_rows`), so the
bound is tight for the mechanism as a function of arbitrary utility rows; rows coming from
real logits and distances can only do less.

The paper's per-unit statement (Cape Thm 4.1) is ``ε + ln(max_k |b_k| / min_k |b_k|)``
over the input's own buckets; it is reported under that name, beside the proven per-unit
value :func:`cape_unit_bound` (the worst case between this input's actual row and any
other input's row in the same context).
"""

from __future__ import annotations

import math

import numpy as np


def cape_upper_log(epsilon: float, n_buckets: int, vocab_size: int) -> float:
    """``max ln Pr(t|x)`` over all utility rows: ``−ln(1 + e^{−ε/2})`` (``−ln|V|`` if ``N_b = 1``)."""
    if vocab_size < 2 or n_buckets < 2:
        return -math.log(max(vocab_size, 1))
    return -math.log1p(math.exp(-epsilon / 2.0))


def cape_floor_log(epsilon: float, n_buckets: int, vocab_size: int) -> float:
    """``F = max −ln Pr(t|x')`` over all utility rows (see the module docstring), and the ``m`` attaining it."""
    return _floor(epsilon, n_buckets, vocab_size)[0]


def _floor(epsilon: float, n_buckets: int, vocab_size: int) -> tuple[float, int]:
    m_max = min(n_buckets, vocab_size) - 1
    i = np.arange(n_buckets, 0, -1, dtype=np.float64)  # N_b, N_b−1, ..., 1: the top m indices first
    tops = np.concatenate([[0.0], np.cumsum(np.exp(epsilon * i / (2.0 * n_buckets)))])[: m_max + 1]
    m = np.arange(m_max + 1)
    vals = np.log1p(tops) + np.log(vocab_size - m)
    j = int(np.argmax(vals))
    return float(vals[j]), j


def cape_bound(epsilon: float, n_buckets: int, vocab_size: int) -> float:
    """Proven ``sup ln Pr(t|x) − ln Pr(t|x')`` of the bucketized EM (same context)."""
    if vocab_size < 2 or n_buckets < 2:
        return 0.0
    return cape_upper_log(epsilon, n_buckets, vocab_size) + cape_floor_log(epsilon, n_buckets, vocab_size)


def cape_thm41(epsilon: float, counts: np.ndarray) -> np.ndarray:
    """The paper's per-unit statement (Cape Thm 4.1), ``ε + ln(max_k|b_k| / min_k|b_k|)`` per row of ``counts``."""
    counts = np.atleast_2d(counts)
    big = counts.max(axis=1)
    small = np.where(counts > 0, counts, np.iinfo(np.int64).max).min(axis=1)
    return epsilon + np.log(big / small)


def cape_unit_bound(epsilon: float, n_buckets: int, counts: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Proven per-unit loss: ``max(ln max_t Pr(t|x) + F, upper − ln min_t Pr(t|x))`` per row.

    ``counts``/``probs`` are the bucket sizes and bucket probabilities of the actual input
    (``[P, N_b]``); the other input of the pair is arbitrary.
    """
    counts, probs = np.atleast_2d(counts), np.atleast_2d(probs)
    vocab_size = int(counts[0].sum())
    if vocab_size < 2 or n_buckets < 2:
        return np.zeros(len(counts))
    nz = counts > 0
    per_member = np.where(nz, probs / np.maximum(counts, 1), np.nan)
    with np.errstate(divide="ignore"):
        hi = np.log(np.nanmax(per_member, axis=1))
        lo = np.log(np.nanmin(per_member, axis=1))
    up, fl = cape_upper_log(epsilon, n_buckets, vocab_size), cape_floor_log(epsilon, n_buckets, vocab_size)
    return np.maximum(hi + fl, up - lo)


def extreme_rows(epsilon: float, n_buckets: int, vocab_size: int, delta_u: float = 1.0,
                 slack: float = 1e-9) -> tuple[np.ndarray, np.ndarray, int]:
    """Two utility rows ``(u_x, u_x')`` and an output ``t`` whose log-ratio approaches :func:`cape_bound`.

    ``x``: ``t`` alone at the top of the range, every other unit at the bottom (two buckets).
    ``x'``: ``t`` and ``|V| − m − 1`` others at the bottom, one unit just below the upper edge
    of each of the ``m`` highest buckets (the top one at the maximum).
    """
    _, m = _floor(epsilon, n_buckets, vocab_size)
    t = 0
    ux = np.zeros(vocab_size)
    ux[t] = delta_u
    ux2 = np.zeros(vocab_size)
    w = delta_u / n_buckets
    for r, j in enumerate(range(n_buckets - 1, n_buckets - 1 - m, -1)):
        ux2[1 + r] = delta_u if j == n_buckets - 1 else (j + 1) * w * (1 - slack)
    return ux, ux2, t
