"""How far mechanisms move units (docs/algorithms.md): mapping set size, embedding distance, synonyms, |C_r|/|V|.

Inputs are ``(original, output)`` pairs (``output`` None = dropped), as
returned by :func:`dptext.metrics.text.unit_pairs` from PerturbResults, or a
mechanism plus the units to probe.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from dptext.errors import DPTextError
from dptext.metrics.text import _as_pairs


def _norm(u) -> str:
    return str(u).strip().casefold()


# ----- effective mapping set size (Cape 5.3) -----------------------------------------------------------
def mapping_set_sizes(pairs) -> dict[str, int]:
    """``S_x = |{distinct outputs of x}|`` per distinct original ``x`` (case-folded; drops not counted)."""
    outs: dict[str, set] = defaultdict(set)
    for x, y in _as_pairs(pairs, False):
        if y is not None:
            outs[_norm(x)].add(_norm(y))
    return {x: len(s) for x, s in outs.items()}


def effective_mapping_set_size(mechanism, units, n_draws: int = 100, rng: np.random.Generator | None = None
                               ) -> np.ndarray:
    """Distinct outputs among ``n_draws`` independent perturbations of each unit (Cape "effective mapping set size").

    ``units`` are strings or vocabulary indices of the mechanism's input domain (others raise
    DPTextError). One vectorised ``_sample`` call for all units; returns one count per unit.
    """
    if n_draws < 1:
        raise DPTextError(f"n_draws must be >= 1, got {n_draws}")
    idx = np.asarray([mechanism.index_of(u) for u in units], dtype=np.int64)
    if not len(idx):
        return np.zeros(0, dtype=np.int64)
    rng = rng or mechanism.rng
    out = mechanism._sample(np.repeat(idx, n_draws), rng).reshape(len(idx), n_draws)
    out.sort(axis=1)
    return 1 + (np.diff(out, axis=1) != 0).sum(axis=1)


# ----- embedding distance ---------------------------------------------------------------------------------
def embedding_distances(space, pairs) -> np.ndarray:
    """``d(φ(x), φ(y)) = ‖φ(x) − φ(y)‖₂`` for every pair whose both units are in the space's vocabulary."""
    pairs = [(x, y) for x, y in _as_pairs(pairs, False) if y is not None]
    if not pairs:
        return np.zeros(0)
    a = space.lookup_many([x for x, _ in pairs])
    b = space.lookup_many([y for _, y in pairs])
    ok = (a >= 0) & (b >= 0)
    e = space.embeddings
    diff = e[a[ok]].astype(np.float64) - e[b[ok]]
    return np.sqrt(np.einsum("ij,ij->i", diff, diff))


def mean_embedding_distance(space, pairs) -> float:
    """Mean raw -> perturbed embedding distance (InferDPT Table V); NaN when no pair is in vocabulary."""
    d = embedding_distances(space, pairs)
    return float(d.mean()) if len(d) else float("nan")


# ----- synonyms ---------------------------------------------------------------------------------------------
def synonym_proportion(pairs, *, count_identical: bool = True) -> float:
    """Share of (raw, perturbed) pairs that are WordNet 3.0 synonyms (InferDPT Table IV).

    A pair counts when the two units' base forms share a synset; an unchanged unit counts when
    ``count_identical`` (a word is its own synonym: InferDPT's SANTEXT+ row stays near 0.37 at
    every ε because of units kept unchanged). Dropped units are left out.
    """
    from dptext.metrics._wordnet import synonym_table

    table = synonym_table()
    pairs = [(_norm(x), _norm(y)) for x, y in _as_pairs(pairs, False) if y is not None]
    if not pairs:
        return float("nan")
    hits = sum(1 for x, y in pairs if (count_identical and x == y) or (x != y and table.are_synonyms(x, y)))
    return hits / len(pairs)


# ----- |C_r| / |V| for RANTEXT --------------------------------------------------------------------------------
def candidate_set_ratios(mechanism, units, n_per_unit: int = 100, rng: np.random.Generator | None = None
                         ) -> np.ndarray:
    """Draws of ``|C_r(x)| / |V|`` (RANTEXT's random adjacency list, docs/algorithms.md), ``n_per_unit`` per unit.

    Needs a mechanism with ``candidate_set_sizes(x, n, rng)`` (RanText); returns one flat array.
    """
    from dptext.mechanisms.rantext import RanText

    if not isinstance(mechanism, RanText):  # the random adjacency list C_r is what RANTEXT samples from
        raise DPTextError(f"mechanism {mechanism.name} has no random adjacency list (|C_r| is RANTEXT's)")
    rng = rng or mechanism.rng
    parts = [mechanism.candidate_set_sizes(u, n_per_unit, rng) for u in units]
    if not parts:
        return np.zeros(0)
    return np.concatenate(parts).astype(np.float64) / mechanism.space.size
