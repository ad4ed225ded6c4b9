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
from dptext.errors import DPTextError
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
        rep = get_attack(name, mech, k=3).fit(["a b c"], private=obs.originals[0]).evaluate(obs)
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


def test_bayes_not_worse_than_knn_on_santext_plus_eps2(santext_plus, corpora):
    """On SANTEXT+'s sensitive units (the targets) the shadow prior is nearly flat, so the Bayesian
    attack's top-1 is close to the nearest neighbour's; it must not trail KNN by more than 2 standard
    errors of the paired difference, at top-1 or top-5 (measured: 227 vs 229 and 302 vs 271 of 846)."""
    rng = np.random.default_rng(11)
    obs = observe(santext_plus, corpora[0], rng=rng, repeats=2)
    rk = get_attack("knn", santext_plus, k=5).fit().rank(obs)
    rb = get_attack("bayes", santext_plus, k=5).fit(corpora[1]).rank(obs)
    truth = [t.casefold() for t in obs.truth]
    for k in (1, 5):
        hk = np.array([t in [c.casefold() for c in (r or [])[:k]] for r, t in zip(rk, truth)])
        hb = np.array([t in [c.casefold() for c in (r or [])[:k]] for r, t in zip(rb, truth)])
        assert int(hb.sum()) - int(hk.sum()) >= -2 * np.sqrt(max(int((hb != hk).sum()), 1)), (k, hb.mean(), hk.mean())


@pytest.mark.parametrize("name", ["santext", "santext+", "custext+"])
def test_context_free_bound_dominates_attacks_on_held_out_data(corpora, name):
    """The bound is the Bayes rule under the private corpus's own unit law (paper 003, Def. 1): no attack
    beats it in expectation. Held-out set-up: the adversary's shadow corpus (300 sentences, the whole
    of it) is disjoint from the private one; the bound's prior is the private corpus's unit frequencies.
    One-sided paired check on 3 sanitizations of the private corpus: the attack may lead by at most
    2 standard errors of the paired difference (sqrt of the discordant count)."""
    private, shadow = corpora
    mech = get_mechanism(name, epsilon=2, corpus=private + shadow, seed=4)
    obs = observe(mech, private, rng=np.random.default_rng(12), repeats=3)
    bound = get_attack("bayes-bound", mech, k=5).fit(private=private)
    hits_b = _top1_hits(obs, bound.rank(obs))
    for att in ("bayes", "knn", "frequency"):
        a = get_attack(att, mech, k=5).fit(shadow, rng=np.random.default_rng(2))
        hits_a = _top1_hits(obs, a.rank(obs))
        discordant = int((hits_a != hits_b).sum())
        lead = int(hits_a.sum()) - int(hits_b.sum())
        assert lead <= 2 * np.sqrt(max(discordant, 1)), (att, hits_b.mean(), hits_a.mean(), discordant)


def _top1_hits(obs, ranking) -> np.ndarray:
    return np.array([bool(c) and c[0].casefold() == t.casefold() for c, t in zip(ranking, obs.truth)])


def test_bound_prior_is_the_whole_private_corpus_not_the_targets(space, words):
    """Under a uniform mechanism every row is equal, so the bound guesses the mode of its prior. The
    private corpus's mode is "dog" (4 of 7 units) while the attacked targets (the first 3 units) are all
    "cat": a prior fitted to the targets would score ASR 1, Def. 1's prior scores exactly 0."""
    cat, dog = "cat", "dog"
    ids = [space.lookup(cat), space.lookup(dog)]
    mech = Uniform(epsilon=1, space="glove-50d", words=sorted(set(words) | set(ids)), seed=0)
    private = ["cat cat cat", "dog", "dog", "dog", "dog"]
    obs = observe(mech, private, rng=np.random.default_rng(0), max_targets=3)
    assert obs.truth == [cat] * 3
    rep = get_attack("bayes-bound", mech, k=1).fit(private=private).evaluate(obs)
    assert rep.success_at_1 == 0 and rep.n_units == 3
    # and with the targets' own sentences as the private corpus, it guesses "cat" every time
    assert get_attack("bayes-bound", mech, k=1).fit(private=private[:1]).evaluate(obs).success_at_1 == 3


def test_bound_on_uniform_scores_the_private_mode_share(corpora, words):
    """Uniform rows: the bound's top-1 is always the private corpus's most frequent unit, so ASR@1 equals,
    exactly, the share of targets whose original is that unit. The mode is made a rare glove word (a high
    index), so a rule that ignores the prior (ties broken towards low indices) cannot pass by accident."""
    from collections import Counter

    mech = Uniform(epsilon=1, space="glove-50d", words=words, seed=0)
    rare = mech.space.units[int(words[-1])]
    private = corpora[0][:50] + [f"{rare} {rare}"] * 200
    mode = Counter(w.casefold() for s in private for w in s.split()).most_common(1)[0][0]
    assert mode == rare
    obs = observe(mech, private, rng=np.random.default_rng(3))
    rep = get_attack("bayes-bound", mech, k=1).fit(private=private).evaluate(obs)
    assert rep.success_at_1 == sum(t.casefold() == mode for t in obs.truth) == 400


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


# ----- registry -----------------------------------------------------------------------------------------
def test_attack_names_follow_the_mechanism_name_rule():
    """Attack names are spelled and looked up by ``normalise_name``, the one rule for mechanism names."""
    import inspect

    from dptext.attacks import ATTACKS, attack_class
    from dptext.names import normalise_name

    assert all(normalise_name(n) == n for n in ATTACKS) and {"bayes-bound", "contextual-bound"} <= set(ATTACKS)
    assert attack_class(" Bayes_Bound ") is attack_class("bayes-bound") is ATTACKS["bayes-bound"]
    with pytest.raises(DPTextError, match="unknown attack 'bayes bound'; known attacks: bayes, bayes-bound"):
        attack_class("bayes bound")
    # --model goes to the option each attack declares, and that option is a keyword of its constructor
    takes_model = {n: c.model_option for n, c in ATTACKS.items() if c.model_option is not None}
    assert takes_model == {"masked": "model", "oracle": "model", "llm": "backend"}
    for name, option in takes_model.items():
        assert inspect.signature(ATTACKS[name].__init__).parameters[option].kind is inspect.Parameter.KEYWORD_ONLY


# ----- CLI ---------------------------------------------------------------------------------------------
def _cli(*args, timeout=600):
    import os
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "dptext.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "DPTEXT_LOG_INTERVAL": "0.5"})
    return proc.returncode, proc.stdout, proc.stderr


def test_cli_attack_identity_and_uniform_limits(tmp_path, corpora):
    """Through the real CLI: SANTEXT at ε = 1000 is the identity on glove-50d (the nearest other unit is
    ≥ 0.4 away, so e^{-200} of the mass leaves x): KNN and the bound recover every unit, exactly.
    CUSTEXT at ε = 1e-6 is uniform over each unit's 20-unit list (x included): KNN's top-1 guess is y
    itself, so it succeeds exactly when y = x, a Binomial(n, 1/20) count."""
    priv, shad = tmp_path / "p.txt", tmp_path / "s.txt"
    priv.write_text("\n".join(corpora[0][:40]))
    shad.write_text("\n".join(corpora[1][:80]))
    for att in ("knn", "bayes-bound"):
        rc, out, err = _cli("attack", "-m", "santext", "-e", "1000", "-a", att, "--private", priv, "--seed", 3,
                            "--json")
        rep = json.loads(out)
        assert rc == 0 and rep["n_units"] > 300 and rep["asr_at_1"] == 1.0, (att, rep, err)
    rc, out, err = _cli("attack", "-m", "custext", "-e", "1e-6", "-a", "knn", "--private", priv, "--seed", 3,
                        "--json", "-k", "1")
    rep = json.loads(out)
    assert rc == 0, err
    assert stats.binomtest(rep["success_at_1"], rep["n_units"], 1 / 20).pvalue > 1e-3, rep
    # the human-readable report names the targets
    rc, out, _ = _cli("attack", "-m", "santext", "-e", "1000", "-a", "knn", "--private", priv, "--seed", 3)
    assert rc == 0 and "ASR@1  1.0000" in out and "units attacked (sampled;" in out


@pytest.mark.parametrize("args,msg", [
    (["-a", "bayes"], "needs a shadow corpus"),
    (["-a", "knn", "--targets", "some"], "invalid --targets 'some'"),
    (["-a", "knn", "-e", "-1"], "epsilon"),
    (["-a", "knn", "--private", "/nonexistent/p.txt"], "private file not found"),
    (["-a", "nope"], "unknown attack 'nope'"),
    (["-a", "knn", "--model", "some.gguf"], "--model does not apply to attack 'knn'"),
])
def test_cli_attack_bad_input_is_one_line_exit_2(tmp_path, corpora, args, msg):
    priv = tmp_path / "p.txt"
    priv.write_text("\n".join(corpora[0][:5]))
    base = ["attack", "-m", "santext+", "-e", "2", "--private", priv]
    if "-e" in args:
        base = ["attack", "-m", "santext+", "--private", priv]
    if "--private" in args:
        base = ["attack", "-m", "santext+", "-e", "2"]
    rc, out, err = _cli(*base, *args)
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and msg in lines[0] and "Traceback" not in err, (rc, err)


def test_cli_attack_on_a_dataset_logs_progress_when_not_a_terminal():
    """stderr is a pipe here: the CLI writes periodic log lines for every stage, never a silent wait."""
    pytest.importorskip("dptext.data")
    rc, out, err = _cli("attack", "-m", "rantext", "-e", "3", "-a", "knn", "--dataset", "tweets", "--n-units", 200,
                        "--n-shadow", 300, "--seed", 1, "--json")
    rep = json.loads(out)
    assert rc == 0 and rep["n_units"] == 200 and rep["mechanism"] == "rantext"
    for stage in ("loading dataset tweets", "building rantext", "fitting knn", "attacking 200 units"):
        assert f"dptext: {stage}" in err, (stage, err)
    # perturbing the private sentences is a counted task: silent when it ends within the log interval, as
    # here; its count lines are checked in test_first_hour.test_attack_perturbing_stage_counts_sentences_*
    assert "\x1b[" not in err  # no terminal control codes in a log
