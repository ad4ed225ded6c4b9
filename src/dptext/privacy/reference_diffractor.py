"""Slow, literal reference of 1-Diffractor (Meisenbacher et al. 2024; docs/algorithms.md, "Fidelity").

* :func:`reference_chain`: the greedy list, one step at a time: from the start, the next
  unit is ``argmin_y ‖E_y − E_cur‖`` over the units not yet listed (float64, ties to the
  smaller id). ``O(n²·dim)``: for small spaces (the tests check the fast builder with it).
* :func:`draws`: per draw, as the paper does it, one candidate from *every* list and then one
  candidate uniformly at random. A list's candidate, from position ``i``:

  - truncated geometric: ``Z = S·M``, ``Pr(M = 0) = (1 − α)/(1 + α)``, else a sign ``S = ±1`` with
    probability ½ each and ``M ≥ 1`` counted by coin flips (``M`` grows while a coin with
    ``Pr(heads) = α`` comes up heads), ``α = e^{−ε}``; the position is ``i + Z`` clamped to
    ``[0, n − 1]``;
  - TEM: positions ``L = {j : |j − i| ≤ γ}`` score ``−|j − i|``; ``⊥`` scores
    ``−γ + 2·ln(n − |L|)/ε``; one Gumbel(0, 2/ε) per score, the best wins; ``⊥`` is a uniform
    position outside ``L``.

The lists for :func:`draws` are the mechanism's cached chains (``mech.orders``): the
brute-force chain is ``O(n²)`` per list, too slow for ``|V| = 50,000``, and is checked against
the fast builder on small spaces instead.
"""

from __future__ import annotations

import math

import numpy as np


def reference_chain(E: np.ndarray, start: int = 0) -> np.ndarray:
    E = np.asarray(E, dtype=np.float64)
    n = len(E)
    listed = np.zeros(n, dtype=bool)
    out = []
    cur = int(start)
    while True:
        out.append(cur)
        listed[cur] = True
        if len(out) == n:
            return np.asarray(out, dtype=np.int64)
        best, best_d = -1, math.inf
        for y in range(n):  # literal: every unlisted unit, keep the strictly closer (ties: the smaller id)
            if listed[y]:
                continue
            d = float(np.sqrt(np.sum((E[y] - E[cur]) ** 2)))
            if d < best_d:
                best, best_d = y, d
        cur = best


def geometric_candidate(i: int, n: int, epsilon: float, rng: np.random.Generator) -> int:
    alpha = math.exp(-epsilon)
    if rng.random() < (1.0 - alpha) / (1.0 + alpha):
        z = 0
    else:
        m = 1
        while rng.random() < alpha:
            m += 1
        z = m if rng.random() < 0.5 else -m
    return min(max(i + z, 0), n - 1)


def tem_candidate(i: int, n: int, epsilon: float, gamma: int, rng: np.random.Generator) -> int:
    members = list(range(max(0, i - gamma), min(n, i + gamma + 1)))
    rest = n - len(members)
    scores = [-float(abs(j - i)) for j in members]
    scores.append(-gamma + 2.0 * math.log(rest) / epsilon if rest > 0 else -math.inf)
    noisy = [s + rng.gumbel(0.0, 2.0 / epsilon) for s in scores]
    best = int(np.argmax(noisy))
    if best < len(members):
        return members[best]
    while True:  # a uniform position outside L: uniform over all positions, redrawn while inside
        j = int(rng.integers(n))
        if j < members[0] or j > members[-1]:
            return j


def draws(mech, x: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` reference draws of 1-Diffractor ``mech`` at unit ``x`` (vocabulary index)."""
    orders = [np.asarray(o) for o in mech.orders]
    size = len(orders[0])
    starts = [int(np.flatnonzero(o == x)[0]) for o in orders]  # x's position in each list
    eps, gamma = float(mech.epsilon), int(mech.gamma)
    out = np.empty(n, dtype=np.int64)
    for k in range(n):
        cands = []
        for o, i in zip(orders, starts):
            j = (geometric_candidate(i, size, eps, rng) if mech.method == "geometric"
                 else tem_candidate(i, size, eps, gamma, rng))
            cands.append(int(o[j]))
        out[k] = cands[int(rng.integers(len(cands)))]
    return out


def handles(mech) -> bool:
    from dptext.mechanisms.diffractor import Diffractor

    return isinstance(mech, Diffractor)
