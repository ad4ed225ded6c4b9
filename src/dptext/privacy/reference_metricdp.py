r"""Slow, literal reference samplers of the word-level metric-DP family (docs/algorithms.md, "Fidelity").

Written from the papers, one draw at a time, from the embedding matrix ``E`` and the
mechanism's parameters only (never from the fast samplers' tables or helpers); distances
are float64 ``‖q − E_t‖`` recomputed here. :func:`dptext.privacy.fidelity.compare` runs the
two-sample test against the fast samplers.

* MultivariateCalibrated (Feyisetan et al. 2020): ``r ~ Gamma(n, 1/ε)``, ``g ~ N(0, I_n)``,
  ``q = φ(x) + r·g/‖g‖``, output ``argmin_t ‖q − E_t‖``.
* Mahalanobis (Xu et al. 2020): ``Σ`` = sample covariance of ``E`` scaled to trace ``n``,
  ``Σ_λ = λΣ + (1−λ)I``, ``q = φ(x) + r·Σ_λ^{1/2}·g/‖g‖`` (``scipy.linalg.sqrtm``), nearest unit.
* Vickrey (Xu et al. 2021): the same ``q``; ``w₁, w₂`` its two nearest units at ``d₁ ≤ d₂``;
  ``w₁`` with probability ``(1 − t)·d₂ / (t·d₁ + (1 − t)·d₂)``, else ``w₂``.
* TEM (Carvalho et al. 2023): ``L_x = [y : d(x,y) ≤ γ]`` (``d`` the space's distance row); scores
  ``−d(x,y)`` and ``⊥: −γ + 2·ln|V \ L_x|/ε``; one Gumbel(0, 2/ε) draw per score per draw, the
  best wins; ``⊥`` draws a uniform unit of ``V \ L_x``.
* TruncatedGumbel (Carvalho et al. 2021): ``k ~ Poisson(ln(|V| − 1))`` redrawn while ``k > |V| − 1``;
  the ``k`` units nearest to ``x`` (float64 distance row, stable sort: ``x`` first, ties by index); one
  Gumbel(0, b) draw per candidate, redrawn while ``|g| > Δmax``; the lowest ``d + g`` wins (``k = 0``: ``x``).
* SynTF (Weggenmann, Kerschbaum 2018), word level: TF-IDF term vectors counted from the corpus texts with
  dictionaries, ``u(x,y)`` their cosine; one Gumbel-max draw over ``V_c`` of ``ε·u(x,y)/2`` per draw.
"""

from __future__ import annotations

import math

import numpy as np

BLOCK = 256  # draws whose distance rows are computed together (independent draws: same law)


def regularised_sqrt(E: np.ndarray, lam: float) -> np.ndarray:
    """``Σ_λ^{1/2}`` with ``Σ`` the sample covariance of ``E``'s rows scaled to trace ``n``."""
    from scipy.linalg import sqrtm

    X = np.asarray(E, dtype=np.float64)
    C = X - X.mean(axis=0)
    cov = C.T @ C / (len(X) - 1)
    cov = cov * (cov.shape[0] / np.trace(cov))
    sig = lam * cov + (1.0 - lam) * np.eye(cov.shape[0])
    return np.real(sqrtm(sig))


def noisy_points(E: np.ndarray, x: int, epsilon: float, n: int, rng: np.random.Generator,
                 shape: np.ndarray | None = None) -> np.ndarray:
    """``n`` noisy points ``φ(x) + r·S·g/‖g‖``, one radius and one direction per draw."""
    E = np.asarray(E, dtype=np.float64)
    dim = E.shape[1]
    out = np.empty((n, dim))
    for k in range(n):
        r = rng.gamma(shape=dim, scale=1.0 / epsilon)
        g = rng.standard_normal(dim)
        v = r * g / math.sqrt(float(g @ g))
        out[k] = E[x] + (v if shape is None else shape @ v)
    return out


def _distance_rows(E: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``‖q_i − E_t‖`` in float64 for a block of points."""
    d2 = (q * q).sum(axis=1)[:, None] + (E * E).sum(axis=1)[None, :] - 2.0 * (q @ E.T)
    return np.sqrt(np.maximum(d2, 0.0))


def nearest_draw(E: np.ndarray, x: int, epsilon: float, n: int, rng: np.random.Generator,
                 lam: float = 0.0) -> np.ndarray:
    """MultivariateCalibrated (``lam = 0``) or Mahalanobis (``lam > 0``): the unit nearest to the noisy point."""
    E = np.asarray(E, dtype=np.float64)
    q = noisy_points(E, x, epsilon, n, rng, regularised_sqrt(E, lam) if lam > 0 else None)
    out = np.empty(n, dtype=np.int64)
    for s in range(0, n, BLOCK):
        out[s : s + BLOCK] = _distance_rows(E, q[s : s + BLOCK]).argmin(axis=1)
    return out


def vickrey_draw(E: np.ndarray, x: int, epsilon: float, t: float, n: int, rng: np.random.Generator,
                 lam: float = 0.0) -> np.ndarray:
    E = np.asarray(E, dtype=np.float64)
    q = noisy_points(E, x, epsilon, n, rng, regularised_sqrt(E, lam) if lam > 0 else None)
    out = np.empty(n, dtype=np.int64)
    for s in range(0, n, BLOCK):
        d = _distance_rows(E, q[s : s + BLOCK])
        for k, row in enumerate(d):
            two = np.argpartition(row, 1)[:2]
            w1, w2 = (two[0], two[1]) if row[two[0]] <= row[two[1]] else (two[1], two[0])
            d1, d2 = float(row[w1]), float(row[w2])
            p = (1.0 - t) * d2 / (t * d1 + (1.0 - t) * d2)
            out[s + k] = w1 if rng.random() < p else w2
    return out


def tem_draw(dist_row: np.ndarray, epsilon: float, gamma: float, n: int, rng: np.random.Generator) -> np.ndarray:
    dist_row = np.asarray(dist_row, dtype=np.float64)
    members = [y for y in range(len(dist_row)) if dist_row[y] <= gamma]
    outsiders = [y for y in range(len(dist_row)) if dist_row[y] > gamma]
    bottom = -gamma + 2.0 * math.log(len(outsiders)) / epsilon if outsiders else -math.inf
    scores = np.array([-float(dist_row[y]) for y in members] + [bottom])
    out = np.empty(n, dtype=np.int64)
    for k in range(n):
        noisy = scores + rng.gumbel(0.0, 2.0 / epsilon, size=len(scores))  # one Gumbel per candidate
        best = int(np.argmax(noisy))
        out[k] = members[best] if best < len(members) else outsiders[int(rng.integers(len(outsiders)))]
    return out


def truncated_gumbel_draw(E: np.ndarray, x: int, b: float, d_max: float, n: int,
                          rng: np.random.Generator) -> np.ndarray:
    E = np.asarray(E, dtype=np.float64)
    row = np.sqrt(((E - E[x]) ** 2).sum(axis=1))
    row[x] = 0.0
    order = np.argsort(row, kind="stable")
    top, lam = len(E) - 1, math.log(len(E) - 1)
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        k = int(rng.poisson(lam))
        while k > top:
            k = int(rng.poisson(lam))
        if k == 0:
            out[i] = x
            continue
        best, best_score = -1, math.inf
        for y in order[:k].tolist():
            g = rng.gumbel(0.0, b)
            while abs(g) > d_max:  # the truncation: redraw outside [−Δmax, Δmax]
                g = rng.gumbel(0.0, b)
            if row[y] + g < best_score:
                best, best_score = y, row[y] + g
        out[i] = best
    return out


_DOCS: dict = {}


def _term_counts(space, texts) -> list:
    """One ``Counter`` of unit ids per document (kept per space and corpus: the same texts recur in tests)."""
    from collections import Counter

    key = (space.name, space.cache_key, len(texts), hash(tuple(texts)))
    if key not in _DOCS:
        _DOCS[key] = [Counter(i for i in space.lookup_many([p.text for p in space.segment(t).pieces]).tolist()
                              if i >= 0) for t in texts]
    return _DOCS[key]


def syntf_utilities(space, texts, x: int) -> dict:
    """``{y: cos(v_x, v_y)}`` for every unit ``y`` seen in ``texts`` (TF-IDF term vectors, dictionaries)."""
    from collections import Counter

    docs = _term_counts(space, texts)
    df = Counter(t for d in docs for t in d)
    idf = {t: math.log((1 + len(docs)) / (1 + c)) + 1.0 for t, c in df.items()}
    sq = Counter()
    for d in docs:
        for t, c in d.items():
            sq[t] += (c * idf[t]) ** 2
    dot = Counter()
    for d in docs:
        if x in d:
            for t, c in d.items():
                dot[t] += d[x] * idf[x] * c * idf[t]
    nx = math.sqrt(sq[x]) if x in sq else 0.0
    return {t: (dot[t] / (nx * math.sqrt(sq[t])) if nx > 0 else 0.0) for t in df}


def syntf_draw(utilities: dict, epsilon: float, n: int, rng: np.random.Generator) -> np.ndarray:
    ys = sorted(utilities)
    score = np.array([epsilon * utilities[y] / 2.0 for y in ys])
    out = np.empty(n, dtype=np.int64)
    for i in range(n):  # Gumbel-max: argmax of score + Gumbel(0, 1) samples ∝ exp(score)
        out[i] = ys[int(np.argmax(score + rng.gumbel(0.0, 1.0, size=len(ys))))]
    return out


def handles(mech) -> bool:
    from dptext.mechanisms._metricdp import NoisyEmbedding
    from dptext.mechanisms.syntf import SynTF
    from dptext.mechanisms.tem import TEM
    from dptext.mechanisms.truncated_gumbel import TruncatedGumbel

    return isinstance(mech, (NoisyEmbedding, TEM, TruncatedGumbel, SynTF))


def draws(mech, x: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` reference draws for ``mech`` (one of this module's mechanisms) at unit ``x``."""
    if mech.name == "truncated-gumbel":
        return truncated_gumbel_draw(mech.space.embeddings, x, float(mech.b), float(mech.d_max), n, rng)
    if mech.name == "syntf":
        from dptext.mechanisms.syntf import corpus_texts

        u = syntf_utilities(mech.space, corpus_texts(mech.corpus, mech.split), x)
        return syntf_draw(u, float(mech.epsilon), n, rng)
    if mech.name == "tem":
        return tem_draw(mech.space.distances([x])[0], float(mech.epsilon), float(mech.gamma), n, rng)
    E = mech.space.embeddings
    lam = float(getattr(mech, "lam", 0.0))
    if mech.name == "vickrey":
        return vickrey_draw(E, x, float(mech.epsilon), float(mech.t), n, rng, lam)
    return nearest_draw(E, x, float(mech.epsilon), n, rng, lam)
