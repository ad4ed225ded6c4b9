"""Slow, literal reference samplers, one per stochastic mechanism (docs/algorithms.md, "Fidelity").

Each function here transcribes a published algorithm step by step, one draw at a
time, from the embedding matrix ``E`` and the mechanism's *parameters* (ε, Z(ε),
lists' size K, η, ...), never from the fast sampler's tables. The fast mechanisms
must agree with them in distribution; :func:`dptext.privacy.fidelity.compare` runs the
two-sample test. Distances ``d(s,t)`` are the space's metric (``space.distances``: the
one definition of ``d`` the whole package shares); everything else is recomputed here.

* RANTEXT (InferDPT Alg. 2-3): ``Δφ_j = max_t E[t,j] − min_t E[t,j]``; per draw a Laplace
  vector ``Y_j ~ Lap(0, Δφ_j / Z(ε))``, ``φ̂(x) = φ(x) + Y``, ``d* = d(φ(x), φ̂(x))``;
  ``C_r(x) = [t : d(x,t) < d*]`` (strict); ``u(t) = 1 − d(x,t)/d*``;
  ``Pr(t) ∝ exp(ε·u(t)/2)`` over ``C_r(x)``.
* SANTEXT / SANTEXT+ (Yue et al.): ``V_s`` = the ``⌈w·|V|⌉`` least frequent units; a
  sensitive ``x``, or a non-sensitive one with probability ``p``, is replaced by
  ``y ∈ V_s`` with ``Pr(y) ∝ exp(−ε·d(x,y)/2)``; otherwise kept.
* CUSTEXT / CUSTEXT+ (Chen et al.): conservative lists built by walking units in
  decreasing frequency, each unassigned unit seeding the list of its ``K`` most similar
  unassigned units; ``ŝ`` = min-max scaled similarity over the list;
  ``Pr(y) ∝ exp(ε·ŝ(x,y)/2)``.
* Cape (Wu et al.): ``L̃ = (clip(L, −B, B) + B)/(2B)``, ``d̃ = d/d_max``,
  ``u = λ_L·L̃ − λ_D·d̃``; ``N_b`` equal-width buckets on ``[min u, max u]``, empty ones
  dropped, bucket ``∝ exp(ε·mean(u)/(2(λ_L+λ_D)))``, member uniform. ``L`` is the
  device model's logit row (the language model is shared, not re-implemented).
* Noise mapper (Qu et al.): ``r ~ Gamma(N, 1/η)``, ``u`` uniform on the sphere,
  output ``argmin_t ‖E[x] + r·u − E[t]‖`` (``x`` excluded unless configured).
"""

from __future__ import annotations

import math

import numpy as np


def _categorical(weights, rng: np.random.Generator) -> int:
    """Index ``i`` with probability ``weights[i] / Σ weights`` (one uniform against the running sum)."""
    acc = np.cumsum(np.asarray(weights, dtype=np.float64))
    i = int(np.searchsorted(acc, rng.random() * acc[-1], side="right"))
    return min(i, len(acc) - 1)


# ----- RANTEXT ------------------------------------------------------------------------------------------
def rantext_delta_phi(E: np.ndarray) -> np.ndarray:
    """``Δφ_j``: range of dimension ``j`` of the embeddings over the vocabulary."""
    E = np.asarray(E, dtype=np.float64)
    return np.array([E[:, j].max() - E[:, j].min() for j in range(E.shape[1])])


def rantext_row_at(dist_row: np.ndarray, epsilon: float, dstar: float) -> np.ndarray:
    """Exponential mechanism over the strict list ``{t : d(x,t) < d*}`` with ``u = 1 − d/d*``."""
    dist_row = np.asarray(dist_row, dtype=np.float64)
    in_list = np.flatnonzero(dist_row < dstar)
    row = np.zeros(len(dist_row))
    w = np.exp(epsilon * (1.0 - dist_row[in_list] / dstar) / 2.0)
    row[in_list] = w / math.fsum(w.tolist())
    return row


def rantext_draw(E: np.ndarray, dist_row: np.ndarray, epsilon: float, Z: float, n: int,
                 rng: np.random.Generator, delta_phi: np.ndarray | None = None) -> np.ndarray:
    """``n`` RANTEXT outputs for the unit whose distance row is ``dist_row`` (one Laplace vector per draw)."""
    dphi = rantext_delta_phi(E) if delta_phi is None else delta_phi
    out = np.empty(n, dtype=np.int64)
    for k in range(n):
        y = rng.laplace(0.0, dphi / Z)  # one Laplace draw per dimension j, scale Δφ_j / Z(ε)
        dstar = float(np.sqrt(np.sum(y * y)))  # d(φ(x), φ̂(x)) with φ̂(x) = φ(x) + Y
        members = np.flatnonzero(dist_row < dstar)  # the strict adjacency list C_r(x)
        w = np.exp(epsilon * (1.0 - dist_row[members] / dstar) / 2.0)
        out[k] = members[_categorical(w, rng)]
    return out


# ----- SANTEXT ----------------------------------------------------------------------------------------------
def santext_sensitive(vocab: np.ndarray, freq: np.ndarray, w: float) -> set[int]:
    """The ``⌈w·|V|⌉`` least frequent units of ``vocab`` (ties: the later index counts as rarer)."""
    ranked = sorted(vocab.tolist(), key=lambda t: (freq[t], -t))
    return set(ranked[: int(math.ceil(w * len(ranked)))])


def santext_draw(dist_row: np.ndarray, x: int, epsilon: float, sensitive: set[int], p: float, n: int,
                 rng: np.random.Generator) -> np.ndarray:
    vs = np.array(sorted(sensitive), dtype=np.int64)
    logits = -epsilon * np.asarray(dist_row, dtype=np.float64)[vs] / 2.0
    w = np.exp(logits - logits.max())
    out = np.empty(n, dtype=np.int64)
    for k in range(n):
        if x in sensitive or rng.random() < p:
            out[k] = vs[_categorical(w, rng)]
        else:
            out[k] = x
    return out


# ----- CUSTEXT ----------------------------------------------------------------------------------------------
def custext_list(similarity, vocab: np.ndarray, freq: np.ndarray, x: int, k: int) -> list[int]:
    """``x``'s conservative list: walking units by decreasing frequency, each still unassigned unit seeds a
    cluster of the ``k`` most similar unassigned units (itself first); members leave the pool."""
    vocab = np.asarray(vocab, dtype=np.int64)
    if x not in set(vocab.tolist()):
        raise ValueError(f"unit {x} is not in the vocabulary")
    free = np.zeros(int(vocab.max()) + 1, dtype=bool)
    free[vocab] = True
    walk = sorted(vocab.tolist(), key=lambda t: (-freq[t], t))
    for seed in walk:
        if not free[seed]:
            continue
        pool = np.flatnonzero(free)
        s = np.asarray(similarity(seed, pool), dtype=np.float64)
        s[pool == seed] = np.inf  # the seed belongs to its own cluster
        cluster = pool[np.argsort(-s, kind="stable")[:k]].tolist()
        if x in cluster:
            return cluster
        free[cluster] = False
    raise AssertionError("unreachable: every unit of the vocabulary joins a cluster")


def custext_draw(sims: list[float], members: list[int], epsilon: float, n: int, rng: np.random.Generator) -> np.ndarray:
    lo, hi = min(sims), max(sims)
    s_hat = [(s - lo) / (hi - lo) if hi > lo else 0.0 for s in sims]
    w = [math.exp(epsilon * v / 2.0) for v in s_hat]
    return np.array([members[_categorical(w, rng)] for _ in range(n)], dtype=np.int64)


# ----- Cape ---------------------------------------------------------------------------------------------------
def cape_utilities(logits: np.ndarray, dist_row: np.ndarray, d_max: float, clip: float, lambda_l: float,
                   lambda_d: float) -> list[float]:
    out = []
    for L, d in zip(np.asarray(logits, dtype=np.float64).tolist(), np.asarray(dist_row, np.float64).tolist()):
        lt = (min(max(L, -clip), clip) + clip) / (2.0 * clip)
        dt = min(d / d_max, 1.0)
        out.append(lambda_l * lt - lambda_d * dt)
    return out


def cape_draw(u: list[float], epsilon: float, sensitivity: float, n_buckets: int, n: int,
              rng: np.random.Generator) -> np.ndarray:
    lo, hi = min(u), max(u)
    width = (hi - lo) / n_buckets
    buckets: dict[int, list[int]] = {}
    for t, v in enumerate(u):
        b = 0 if width == 0 else min(int(math.floor((v - lo) / width)), n_buckets - 1)
        buckets.setdefault(b, []).append(t)
    keys = sorted(buckets)  # non-empty buckets only
    score = [epsilon * math.fsum(u[t] for t in buckets[b]) / len(buckets[b]) / (2.0 * sensitivity) for b in keys]
    top = max(score)
    w = [math.exp(s - top) for s in score]
    out = np.empty(n, dtype=np.int64)
    for k in range(n):
        members = buckets[keys[_categorical(w, rng)]]
        out[k] = members[int(rng.integers(len(members)))]
    return out


# ----- noise mapper -------------------------------------------------------------------------------------------------
def noise_draw(E: np.ndarray, x: int, eta: float, exclude_original: bool, n: int,
               rng: np.random.Generator) -> np.ndarray:
    """Draws are independent; their nearest-unit searches run 256 at a time as one float64 GEMM."""
    E = np.asarray(E, dtype=np.float64)
    dim = E.shape[1]
    sq = (E * E).sum(axis=1)
    queries = np.empty((n, dim))
    for k in range(n):
        r = rng.gamma(shape=dim, scale=1.0 / eta)  # the radius
        g = rng.standard_normal(dim)
        queries[k] = E[x] + r * g / math.sqrt(float(g @ g))  # plus a uniform direction on the sphere
    out = np.empty(n, dtype=np.int64)
    for s in range(0, n, 256):
        q = queries[s : s + 256]
        d2 = sq[None, :] - 2.0 * (q @ E.T)  # ‖q − E[t]‖² − ‖q‖²: the same argmin
        if exclude_original:
            d2[:, x] = np.inf
        out[s : s + 256] = d2.argmin(axis=1)
    return out
