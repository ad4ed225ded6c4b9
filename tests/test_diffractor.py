"""1-Diffractor (SPEC 1.6): greedy lists, exact rows, the literal reference, claim, audit, CLI."""

import json
import math

import numpy as np
import pytest

from dptext.cli import main
from dptext.mechanisms import get_mechanism
from dptext.mechanisms._chain import greedy_chain
from dptext.mechanisms.diffractor import Diffractor, model_vectors
from dptext.privacy.audit import audit_mechanism
from dptext.privacy.fidelity import compare
from dptext.privacy.reference_diffractor import reference_chain
from stats import chi2_pvalue

LEVEL = 1e-3
ONE = {"lists": "glove-50d"}  # the GloVe list only: the MiniLM list is a one-time 70 s build


@pytest.fixture(scope="module")
def geo():
    return get_mechanism("diffractor", epsilon=1.0, seed=0, **ONE)


# ----- the lists ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [3, 32])
def test_fast_chain_is_the_brute_force_greedy_chain(k):
    """Random points (k = 3 exhausts most neighbour lists: the exact fallback and pool compaction run) and
    a slice of real GloVe vectors, against the literal one-step-at-a-time transcription."""
    rng = np.random.default_rng(7)
    pts = rng.standard_normal((260, 6))
    for E, start in ((pts, 0), (pts, 131), (np.asarray(get_mechanism("diffractor", epsilon=1, **ONE)
                                                       .space.embeddings[:260]), 0)):
        fast = greedy_chain(E, start=start, k=k)
        assert np.array_equal(np.sort(fast), np.arange(len(E))) and fast[0] == start
        assert np.array_equal(fast, reference_chain(E, start))


def test_chain_from_a_preselected_table_is_the_brute_force_chain():
    """A table of each row's nearest rows, sorted (as the space's neighbour table is for the GloVe list),
    stands in for the search; the chain stays the literal greedy chain."""
    E = np.random.default_rng(11).standard_normal((300, 5))
    d = ((E[:, None, :] - E[None, :, :]) ** 2).sum(axis=2)
    table = np.lexsort((np.broadcast_to(np.arange(300), d.shape), d), axis=1)[:, :48]  # itself first
    for k in (3, 32):
        assert np.array_equal(greedy_chain(E, start=5, k=k, preselected=table), reference_chain(E, 5))


def test_cached_glove_list_is_a_greedy_permutation(geo):
    order = np.asarray(geo.orders[0])
    E = np.asarray(geo.space.embeddings, dtype=np.float64)
    n = geo.space.size
    assert np.array_equal(np.sort(order), np.arange(n)) and order[0] == 0
    for t in np.random.default_rng(3).choice(n - 1, size=40, replace=False).tolist():
        rest = order[t + 1:]  # the units not yet listed at step t
        d = np.sqrt(((E[rest] - E[order[t]]) ** 2).sum(axis=1))
        assert d.argmin() == 0, f"step {t}: the next unit is not the nearest unlisted one"


def test_minilm_word_vectors_are_the_mean_of_their_pieces():
    from types import SimpleNamespace

    from safetensors.numpy import load_file

    from dptext.spaces.minilm import model_dir, wordpiece_tokenizer

    words = ["house", "unbelievable", "zyzzogeton", "café"]  # one piece, several, many, an accent
    V = model_vectors(SimpleNamespace(name="glove-50d", units=words), "minilm")
    assert V.shape == (len(words), 384) and np.isfinite(V).all()
    table = load_file(model_dir() + "/model.safetensors")["embeddings.word_embeddings.weight"]
    for w, v in zip(words, V):
        ids = wordpiece_tokenizer(model_dir()).encode(w, add_special_tokens=False).ids
        assert len(ids) >= 1
        np.testing.assert_allclose(v, table[ids].mean(axis=0), rtol=1e-5, atol=1e-6)


# ----- rows and sampler --------------------------------------------------------------------------------------------
def test_geometric_row_is_the_truncated_geometric_law(geo):
    """Against the two-sided geometric pmf summed term by term (the mass beyond each end piles on it)."""
    eps, n = 1.0, geo.space.size
    a = math.exp(-eps)
    pmf = lambda z: (1 - a) / (1 + a) * a ** abs(z)  # noqa: E731
    order = np.asarray(geo.orders[0])
    for i in (0, 1, 2, 1000, n - 2, n - 1):
        row = geo.transition(int(order[i]))[order]  # by list position
        assert row.sum() == pytest.approx(1.0, abs=1e-12)
        low = math.fsum(pmf(z) for z in range(-i - 2000, -i + 1))  # Pr(i + Z ≤ 0)
        high = math.fsum(pmf(z) for z in range(n - 1 - i, n - 1 - i + 2000))  # Pr(i + Z ≥ n − 1)
        assert row[0] == pytest.approx(low, rel=1e-9) and row[n - 1] == pytest.approx(high, rel=1e-9)
        for j in (i - 3, i - 1, i, i + 1, i + 4):
            if 0 < j < n - 1:
                assert row[j] == pytest.approx(pmf(j - i), rel=1e-12)


@pytest.mark.parametrize("method,eps,gamma", [("geometric", 1.0, 5), ("geometric", 0.3, 5), ("tem", 4.0, 5),
                                              ("tem", 2.0, 8)])
def test_sampler_matches_the_exact_row(method, eps, gamma):
    mech = get_mechanism("diffractor", epsilon=eps, method=method, gamma=gamma, seed=0, **ONE)
    order = np.asarray(mech.orders[0])
    for x in (int(order[0]), mech.index_of("house"), int(order[-2])):
        draws = mech.sample(x, 20000, np.random.default_rng(4))
        assert chi2_pvalue(draws, mech.transition(x)) > LEVEL


@pytest.mark.parametrize("method,eps", [("geometric", 0.5), ("tem", 3.0)])
def test_fast_sampler_matches_the_literal_reference(method, eps):
    mech = get_mechanism("diffractor", epsilon=eps, method=method, seed=0, **ONE)
    res = compare(mech, ["house", "doctor"], samples=1500, seed=5, alpha=LEVEL)
    assert all(r.passed for r in res) and all(r.distinct >= 5 for r in res), [r.to_dict() for r in res]


def test_two_lists_mix_uniformly():
    """Two lists (the GloVe list and a fixed shuffle of it): sampler, exact row and the reference's
    every-list draw agree."""
    mech = get_mechanism("diffractor", epsilon=0.7, seed=0, **ONE)
    mech.orders = np.stack([mech.orders[0], np.random.default_rng(9).permutation(mech.orders[0])])
    mech.positions = np.argsort(mech.orders, axis=1)
    x = int(mech.orders[0][20])  # near the start of the first list, elsewhere in the second
    row = mech.transition(x)
    assert row.sum() == pytest.approx(1.0, abs=1e-12)
    assert chi2_pvalue(mech.sample(x, 20000, np.random.default_rng(2)), row) > LEVEL
    res = compare(mech, [x], samples=1500, seed=6, alpha=LEVEL)
    assert res[0].passed, res[0].to_dict()


class HalfNoise(Diffractor):
    """Geometric noise at ε/2 (success probability 1 − e^{−ε/2}): a wider move than the paper's."""

    def _sample(self, idx, rng):
        eps = self.epsilon
        self.epsilon = eps / 2
        try:
            return super()._sample(idx, rng)
        finally:
            self.epsilon = eps


def test_wrong_noise_scale_is_caught_by_the_reference_and_the_audit():
    mech = HalfNoise(epsilon=1.0, seed=0, **ONE)
    assert compare(mech, ["house"], samples=1500, seed=5, alpha=LEVEL)[0].pvalue < 1e-6
    assert not audit_mechanism(mech, pairs=10, samples=5000, gof_units=1, seed=1).gof_passed


# ----- claim and audit ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method,gamma", [("geometric", 5), ("tem", 5)])
def test_claim_bound_holds_and_is_attained(method, gamma):
    eps = 0.8
    mech = get_mechanism("diffractor", epsilon=eps, method=method, gamma=gamma, **ONE)
    n, order = mech.space.size, np.asarray(mech.orders[0])
    c = mech.privacy()
    cap = n - 1 if method == "geometric" else min(n - 1, gamma)
    assert (c.kind, c.bound) == ("metric-dp", pytest.approx(eps * cap))
    for i, i2 in ((0, 1), (0, 3), (500, 507), (n - 1, n - 4), (100, 700)):
        x, x2 = int(order[i]), int(order[i2])
        p, q = mech.transition(x), mech.transition(x2)
        both = (p > 0) & (q > 0)
        lr = np.abs(np.log(p[both]) - np.log(q[both])).max()
        d = abs(i - i2)
        assert mech.claim_distances(x, [x2])[0] == d
        want = eps * (d if method == "geometric" else min(d, gamma))
        assert lr <= want + 1e-9
        if method == "geometric" and i == 0:  # attained at the end of the list
            assert lr == pytest.approx(want, rel=1e-9)


class TripledEps(Diffractor):
    """Samples and rows at 3ε while claiming ε (TEM's interior pairs reach only ε'·D/2: 2ε would pass)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.claimed = self.epsilon
        self.epsilon = 3 * self.epsilon

    def privacy(self):
        eps = self.epsilon
        self.epsilon = self.claimed
        try:
            return super().privacy()
        finally:
            self.epsilon = eps


@pytest.mark.parametrize("method", ["geometric", "tem"])
def test_audit_passes_and_catches_a_tripled_epsilon(method):
    mech = get_mechanism("diffractor", epsilon=2.0, method=method, seed=0, **ONE)
    res = audit_mechanism(mech, pairs=40, samples=5000, gof_units=2, seed=1)
    assert res.passed and res.pairs >= 40 and res.audited <= 2.0 + 1e-6, res.summary()
    assert res.unrestricted <= res.unrestricted_bound + 1e-6
    bad = audit_mechanism(TripledEps(epsilon=2.0, method=method, **ONE), pairs=40, samples=5000, gof_units=1,
                          seed=1)
    assert not bad.claim_holds and bad.audited > 2.0 + 1e-3


# ----- text and command line ---------------------------------------------------------------------------------------
def test_dp_only_samples_every_unit(geo):
    res = geo.perturb("The doctor is in the house , 42", rng=np.random.default_rng(1), dp_only=True)
    c = res.counts()
    assert c["kept"] == 0 and c["perturbed"] + c["self"] + c["dropped"] == len(res.units)


def test_cli(capsys):
    assert main(["perturb", "-m", "diffractor", "-e", "2", "-p", "lists=glove-50d", "-p", "method=tem", "--seed",
                 "1", "--json", "The quick brown fox"]) == 0
    rep = json.loads(capsys.readouterr().out)
    p = rep["privacy"]
    assert p["perturbed"] + p["self"] == 4 and p["kept"] == 0 and p["claim"]["details"]["method"] == "tem"
    assert main(["audit", "-m", "diffractor", "-e", "2", "-p", "lists=glove-50d", "--pairs", "10", "--samples",
                 "3000", "--gof-units", "1", "--seed", "1"]) == 0
    assert "result     PASS" in capsys.readouterr().out
    for bad, word in (("method=laplace", "method"), ("lists=glove-50d,word2vec", "lists"), ("gamma=2.5", "gamma")):
        assert main(["perturb", "-m", "diffractor", "-e", "2", "-p", bad, "x"]) == 2
        err = capsys.readouterr().err
        assert word in err and "Traceback" not in err
