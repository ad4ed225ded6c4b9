"""The LREC-COLING 2024 comparative analysis's measures (dptext.metrics.deniability): exact values on
hand-made inputs and closed forms for the identity map and uniform maps."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dptext.errors import DPTextError
from dptext.metrics.deniability import (
    cosine_similarity,
    deniability_counts,
    perturbation_percentage,
    plausible_deniability,
)


class _Stub:
    """A mechanism over the vocabulary ``0..size-1`` whose draws are given by ``draw(idx, rng)``."""

    def __init__(self, size: int, draw):
        self.size, self.draw, self.rng = size, draw, np.random.default_rng(0)

    def index_of(self, x) -> int:
        i = int(x)
        if not 0 <= i < self.size:
            raise DPTextError(f"unit {i} outside the vocabulary")
        return i

    def _sample(self, idx, rng):
        return self.draw(np.asarray(idx, dtype=np.int64), rng)


def test_counts_hand_computed():
    n_w, s_w = deniability_counts([1, 2], [[1, 1, 3, 1], [4, 5, 4, 6]])
    assert n_w.tolist() == [3, 0]  # word 1 came back 3 times of 4, word 2 never
    assert s_w.tolist() == [2, 3]  # {1, 3} and {4, 5, 6}


def test_counts_reject_bad_shapes():
    with pytest.raises(DPTextError):
        deniability_counts([1, 2], [[1, 1]])
    with pytest.raises(DPTextError):
        deniability_counts([1], np.zeros((1, 0)))


def test_identity_map_has_full_n_w_and_unit_support():
    mech = _Stub(10, lambda idx, rng: idx.copy())
    out = plausible_deniability(mech, [0, 3, 7, 9], n_draws=37)
    assert out["n_w_mean"] == 37 and out["n_w_median"] == 37 and out["n_w_rate"] == 1.0
    assert out["s_w_mean"] == 1 and out["s_w_median"] == 1
    assert out["n_units"] == 4 and out["n_draws"] == 37


def test_exactly_uniform_map_over_the_vocabulary():
    """Draw k of word w is (w + k) mod |V|: every output exactly n/|V| times, so N_w = n/|V|, S_w = |V|."""
    size, n = 6, 30
    mech = _Stub(size, lambda idx, rng: (idx + np.arange(len(idx)) % n) % size)
    out = plausible_deniability(mech, [0, 1, 5], n_draws=n)
    assert out["n_w_mean"] == n / size and out["n_w_median"] == n / size
    assert out["n_w_rate"] == pytest.approx(1 / size, abs=1e-15)
    assert out["s_w_mean"] == size and out["s_w_median"] == size


def test_random_uniform_map_matches_closed_forms():
    """Uniform draws over k = 5 words, n = 20: E[N_w] = n/k = 4, E[S_w] = k(1 − (1 − 1/k)^n).

    2,000 probe words at a fixed seed; each mean is within 4 standard errors of its expectation
    (N_w ~ Binomial(n, 1/k): standard error sqrt(n(1/k)(1 − 1/k) / 2000) = 0.04)."""
    size, n, k_units = 5, 20, 2000
    mech = _Stub(size, lambda idx, rng: rng.integers(0, size, len(idx)))
    units = np.arange(k_units) % size
    out = plausible_deniability(mech, units, n_draws=n, rng=np.random.default_rng(1))
    assert abs(out["n_w_mean"] - n / size) < 4 * math.sqrt(n * 0.2 * 0.8 / k_units)
    expected_s = size * (1 - (1 - 1 / size) ** n)  # 4.942
    # S_w takes values 4 or 5 here almost surely: its standard deviation is at most 0.5
    assert abs(out["s_w_mean"] - expected_s) < 4 * 0.5 / math.sqrt(k_units)


def test_deniability_rejects_unknown_units_and_no_draws():
    mech = _Stub(3, lambda idx, rng: idx.copy())
    with pytest.raises(DPTextError):
        plausible_deniability(mech, [5])
    with pytest.raises(DPTextError):
        plausible_deniability(mech, [1], n_draws=0)
    assert math.isnan(plausible_deniability(mech, [])["n_w_mean"])


def test_perturbation_percentage_hand_computed():
    pairs = [("A", "a"), ("b", "c"), ("d", None), ("e", " e ")]
    assert perturbation_percentage(pairs) == 0.5  # case-folded "a" kept, "e" kept; changed and dropped count
    assert math.isnan(perturbation_percentage([]))


def test_cosine_similarity_on_given_features():
    a = np.array([[1.0, 0.0], [0.0, 2.0]])
    b = np.array([[1.0, 1.0], [0.0, -3.0]])
    # features are taken as float32 (MiniLM's dtype), hence the tolerance
    assert cosine_similarity(a, b) == pytest.approx((1 / math.sqrt(2) - 1) / 2, abs=1e-6)


def test_bench_finds_the_measures_and_fills_them():
    """The sweep names resolve to these metrics and take the cell's inputs by name."""
    from dptext.bench.measures import resolve

    pp = resolve("metric", "perturbation_percentage")
    assert pp(pairs=[("a", "b"), ("c", "c")]) == 0.5
    pd_ = resolve("metric", "plausible-deniability")
    mech = _Stub(4, lambda idx, rng: idx.copy())
    out = pd_(mechanism=mech, units=[0, 1, 2, 3], rng=np.random.default_rng(0), n_units=2, n_draws=5)
    assert out["n_units"] == 2 and out["n_w_mean"] == 5 and out["s_w_mean"] == 1
    assert callable(resolve("metric", "cosine_similarity"))


TRAIN = [("the rocket reached orbit around the moon", "space"), ("nasa launched a new satellite", "space"),
         ("astronauts docked with the space station", "space"), ("the telescope imaged a distant galaxy", "space"),
         ("he argued that god does not exist", "religion"), ("the church preached about faith", "religion"),
         ("atheists debate believers about scripture", "religion"), ("prayer and belief in the bible", "religion")]
TEST = [("the shuttle landed after the mission", "space"), ("a comet passed near mars", "space"),
        ("religious faith and morality", "religion"), ("the priest spoke of god", "religion"),
        ("the orbit of jupiter's moons", "space")]


def test_downstream_identity_and_constant_perturbations():
    """Identity: ``all`` and ``test`` equal ``clean`` and the cosine is 1. Every text mapped to one string:
    the cosine drops below 1 and the clean head gives one class to all, so ``test`` is that class's share."""
    from dptext.metrics.deniability import downstream

    xs, ys = [t for t, _ in TRAIN], [y for _, y in TRAIN]
    ts, ls = [t for t, _ in TEST], [y for _, y in TEST]
    same = downstream(xs, ys, ts, ls, perturb=lambda texts: list(texts))
    assert same["all"] == same["clean"] and same["test"] == same["clean"]
    assert same["cosine"] == pytest.approx(1.0, abs=1e-5)
    const = downstream(xs, ys, ts, ls, perturb=lambda texts: ["zzz"] * len(texts))
    assert const["clean"] == same["clean"]
    assert const["cosine"] < 0.5
    assert const["test"] in (3 / 5, 2 / 5)  # the share of "space" or of "religion" in TEST
