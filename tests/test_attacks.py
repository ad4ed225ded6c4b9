"""Scorer, KNN, context-free Bayesian attack and bound, frequency inversion, the CLI (SPEC 3).

A synthetic corpus over a few hundred glove-50d words with a Zipf unit
distribution makes the comparisons decisive and fast.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from dptext.attacks import get_attack, observe, rouge_l_f1, score
from dptext.attacks.base import Observed
from dptext.attacks.synthetic import common_words, zipf_corpus
from dptext.mechanisms import get_mechanism
from dptext.spaces import get_space
from toy_mechanisms import Identity, Uniform


@pytest.fixture(scope="module")
def space():
    return get_space("glove-50d")


@pytest.fixture(scope="module")
def corpora(space):
    rng = np.random.default_rng(7)
    private = zipf_corpus(space, n_sentences=150, n_words=300, exponent=1.2, rng=rng)
    shadow = zipf_corpus(space, n_sentences=300, n_words=300, exponent=1.2, rng=rng)
    return private, shadow


@pytest.fixture(scope="module")
def words(space):
    return common_words(space, 300)


# ----- scorer ----------------------------------------------------------------------------------------
def test_scorer_exact_normalised_match_and_unrepresentable():
    truth = ["Paris", "house", "cat", "dog", "tree"]
    ranking = [[" paris "], ["houses", "house"], ["category"], None, []]
    s = score(truth, ranking, k=2)
    assert s.success_at_1 == 1  # case-folded, stripped
    assert s.success_at_k == 2  # "houses" is not "house": no substring matching
    assert s.unrepresentable == 1
    assert s.n_units == 5
    assert s.asr_at_1 == pytest.approx(0.2) and s.protection_at_1 == pytest.approx(0.8)
    assert s.asr_at_k == pytest.approx(0.4)
    assert s.details["mrr"] == pytest.approx((1 + 0.5) / 5)


def test_rouge_l_closed_form():
    assert rouge_l_f1("a b c d".split(), "a b c d".split()) == 1.0
    assert rouge_l_f1("x y".split(), "a b".split()) == 0.0
    # LCS("a x c d", "a b c d e") = 3: P = 3/4, R = 3/5
    assert rouge_l_f1("a x c d".split(), "a b c d e".split()) == pytest.approx(2 * 0.75 * 0.6 / 1.35)
    assert rouge_l_f1("B A".split(), "a b".split()) == pytest.approx(0.5)


# ----- KNN -----------------------------------------------------------------------------------------
def test_knn_identity_recovers_everything(space, corpora, words):
    mech = Identity(epsilon=1, space="glove-50d", words=words, seed=0)
    obs = observe(mech, corpora[0])
    rep = get_attack("knn", mech, k=5).evaluate(obs)
    assert rep.n_units == obs.n_targets > 1000
    assert rep.asr_at_1 == 1.0 and rep.unrepresentable == 0
    # skip_self can never return y itself, which is x for the identity
    rep = get_attack("knn", mech, k=5, skip_self=True).evaluate(obs)
    assert rep.asr_at_1 == 0.0


def test_knn_uniform_is_chance(space, corpora, words):
    mech = Uniform(epsilon=1, space="glove-50d", words=words, seed=0)
    obs = observe(mech, corpora[0] + corpora[1], rng=np.random.default_rng(1))
    rep = get_attack("knn", mech, k=1).evaluate(obs)
    # under a uniform mechanism the guess is independent of x: success ~ Binomial(n, ≈1/|V|)
    n, p0 = rep.n_units, 1.0 / len(words)
    assert stats.binomtest(rep.success_at_1, n, p0).pvalue > 1e-3
    assert rep.asr_at_1 < 5 * p0


def test_oov_observed_units_are_unrepresentable(space, words):
    mech = Identity(epsilon=1, space="glove-50d", words=words)
    obs = Observed(outputs=[["zzqxjv", space.units[words[0]]]], originals=[["secret", space.units[words[0]]]],
                   ws=[["", " "]], sent=np.array([0, 0]), pos=np.array([0, 1]))
    for name in ("knn", "bayes-bound"):
        rep = get_attack(name, mech, k=3).fit(["a b c"]).evaluate(obs)
        assert rep.unrepresentable == 1 and rep.success_at_1 == 1 and rep.n_units == 2


# ----- Bayesian -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def santext_plus(corpora):
    return get_mechanism("santext+", epsilon=2, corpus=corpora[0] + corpora[1], seed=3)


def test_bayes_ranking_matches_brute_force_posterior(santext_plus, corpora):
    mech = santext_plus
    att = get_attack("bayes", mech, k=3).fit(corpora[1])
    obs = observe(mech, corpora[0][:20], rng=np.random.default_rng(5))
    ranking = att.rank(obs)
    dom = np.flatnonzero(mech.input_mask)
    prior = att.prior[dom]
    for y, cands in list(zip(obs.observed, ranking))[:15]:
        j = mech.space.lookup(y)
        post = np.array([mech.transition(int(x))[j] for x in dom]) * prior
        order = np.argsort(-post, kind="stable")[:3]
        best = dom[order[post[order] > 0]]  # impossible originals are never guessed
        assert [u.lower() for u in cands] == [mech.space.units[i] for i in best]


def test_bayes_on_uniform_guesses_the_shadow_mode(corpora, words):
    mech = Uniform(epsilon=1, space="glove-50d", words=words, seed=0)
    att = get_attack("bayes", mech, k=1).fit(corpora[1])
    obs = observe(mech, corpora[0])
    mode = mech.space.units[int(np.argmax(att.shadow_counts))]
    assert {c[0] for c in att.rank(obs)} == {mode}


def test_bayes_beats_knn_on_santext_plus_eps2(santext_plus, corpora):
    rng = np.random.default_rng(11)
    obs = observe(santext_plus, corpora[0], rng=rng, repeats=2)
    knn = get_attack("knn", santext_plus, k=5).fit().evaluate(obs)
    bayes = get_attack("bayes", santext_plus, k=5).fit(corpora[1]).evaluate(obs)
    n = obs.n_targets
    # a margin of 3 binomial standard deviations
    sd = np.sqrt(0.25 / n)
    assert bayes.asr_at_1 > knn.asr_at_1 + 3 * sd, (bayes.asr_at_1, knn.asr_at_1)


@pytest.mark.parametrize("name", ["santext", "santext+", "custext+"])
def test_context_free_bound_dominates_attacks(corpora, name):
    # the bound is optimal in expectation: average over repeated sanitizations, and give the
    # adversary a small shadow corpus, so the expected gap is larger than the sampling noise
    mech = get_mechanism(name, epsilon=2, corpus=corpora[0] + corpora[1], seed=4)
    obs = observe(mech, corpora[0], rng=np.random.default_rng(12), repeats=3)
    bound = get_attack("bayes-bound", mech, k=5).fit().evaluate(obs)
    for att in ("bayes", "knn", "frequency"):
        rep = get_attack(att, mech, k=5).fit(corpora[1][:60], rng=np.random.default_rng(2)).evaluate(obs)
        assert bound.asr_at_1 >= rep.asr_at_1, (att, bound.asr_at_1, rep.asr_at_1)


# ----- frequency inversion -----------------------------------------------------------------------------
def test_frequency_inversion(space, corpora, words):
    mech = Identity(epsilon=1, space="glove-50d", words=words)
    att = get_attack("frequency", mech, k=3, repeats=1).fit(corpora[1][:50])
    obs = observe(mech, corpora[0])
    rep = att.evaluate(obs)
    seen = set(att.table)
    unseen = sum(1 for y in obs.observed if y.casefold() not in seen)
    assert unseen > 0  # the short shadow corpus misses rare units
    assert rep.unrepresentable == unseen
    assert rep.success_at_1 == rep.n_units - unseen


# ----- CLI ---------------------------------------------------------------------------------------------
def test_cli_attack(tmp_path, corpora, capsys):
    from dptext.cli import main

    priv, shad = tmp_path / "p.txt", tmp_path / "s.txt"
    priv.write_text("\n".join(corpora[0][:40]))
    shad.write_text("\n".join(corpora[1][:80]))
    rc = main(["attack", "-m", "santext+", "-e", "2", "-a", "bayes", "--private", str(priv), "--shadow", str(shad),
               "--seed", "3", "--n-units", "100", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["n_units"] == 100 and 0 <= out["asr_at_1"] <= out["asr_at_k"] <= 1
    assert out["protection_at_1"] == pytest.approx(1 - out["asr_at_1"])
    rc = main(["attack", "-m", "santext+", "-e", "2", "-a", "knn", "--private", str(priv), "--seed", "3"])
    text = capsys.readouterr().out
    assert rc == 0 and "ASR@1" in text and "protection" in text
    assert main(["attack", "-m", "santext+", "-e", "2", "-a", "bayes", "--private", str(priv)]) == 2
    assert "needs a shadow corpus" in capsys.readouterr().err
    assert main(["attack", "-m", "santext+", "-e", "2", "-a", "knn", "--private", str(tmp_path / "nope")]) == 2
    assert main(["attack", "-m", "santext+", "-e", "-1", "-a", "knn", "--private", str(priv)]) == 2


def test_cli_attack_on_a_dataset(capsys):
    pytest.importorskip("dptext.data")
    from dptext.cli import main

    rc = main(["attack", "-m", "rantext", "-e", "3", "-a", "knn", "--dataset", "tweets", "--n-units", "200",
               "--n-shadow", "300", "--seed", "1", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["n_units"] == 200 and out["mechanism"] == "rantext"
    assert main(["attack", "-m", "santext+", "-e", "3", "-a", "knn", "--dataset", "tweets", "--private", "x"]) == 2
    assert main(["attack", "-m", "santext+", "-e", "3", "-a", "knn", "--dataset", "tweets", "--model", "m"]) == 2
