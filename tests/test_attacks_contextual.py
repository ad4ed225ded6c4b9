"""Contextual Bayesian attack, its detector and the contextual K bound (SPEC 3; paper 003)."""

from __future__ import annotations

import numpy as np
import pytest

from dptext.attacks import get_attack, observe, score
from dptext.attacks._detector import Detector
from dptext.attacks.synthetic import zipf_corpus
from dptext.mechanisms import get_mechanism
from dptext.spaces import get_space


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    space = get_space("glove-50d")
    rng = np.random.default_rng(21)
    private = zipf_corpus(space, n_sentences=60, n_words=300, exponent=1.2, topics=4, rng=rng)
    shadow = zipf_corpus(space, n_sentences=300, n_words=300, exponent=1.2, topics=4, rng=rng)
    mech = get_mechanism("santext+", epsilon=2, corpus=private + shadow, seed=5)
    return mech, private, shadow


@pytest.fixture(scope="module")
def contextual(setting, tmp_path_factory):
    import os

    mech, private, shadow = setting
    old = os.environ.get("DPTEXT_CACHE_DIR")
    os.environ["DPTEXT_CACHE_DIR"] = str(tmp_path_factory.mktemp("detector-cache"))  # train for real
    try:
        att = get_attack("contextual", mech, k=5, pool=5, repeats=2, max_pairs=1000)
        att.fit(shadow, rng=np.random.default_rng(3))
        again = get_attack("contextual", mech, k=5, pool=5, repeats=2, max_pairs=1000)
        again.fit(shadow, rng=np.random.default_rng(4))
        bound = get_attack("contextual-bound", mech, k=5, pool=5, repeats=2, max_pairs=1000)
        bound.fit(shadow, private=private, rng=np.random.default_rng(5))  # the same (cached) detector
    finally:
        if old is None:
            os.environ.pop("DPTEXT_CACHE_DIR")
        else:
            os.environ["DPTEXT_CACHE_DIR"] = old
    return att, again, bound


def test_training_pairs_are_label_balanced(setting):
    mech, _, shadow = setting
    att = get_attack("contextual", mech, pool=5, repeats=1, max_pairs=200)
    att.prior = None
    from dptext.attacks.bayes import BayesAttack

    BayesAttack._fit(att, shadow, np.random.default_rng(0))
    a, b, labels = att.training_pairs(shadow, np.random.default_rng(1))
    assert len(a) == len(b) == len(labels) and 150 <= len(labels) <= 200
    assert labels.sum() * 2 == len(labels)  # one positive and one negative per sanitized unit
    # the second sequence is the sanitized sentence; the first differs from it in one unit at most
    for x, y in zip(a[:50], b[:50]):
        assert len(x.split()) == len(y.split())
        assert sum(u != v for u, v in zip(x.split(), y.split())) <= 1


def test_detector_learns_a_separable_pair_task():
    rng = np.random.default_rng(0)
    nouns = ["river", "mountain", "forest", "ocean", "valley", "desert", "island", "lake"]
    a, b, y = [], [], []
    for _ in range(200):
        w = rng.choice(nouns)
        same = rng.random() < 0.5
        a.append(f"the {w} is near")
        b.append(f"the {w if same else rng.choice([n for n in nouns if n != w])} is near")
        y.append(int(same))
    det = Detector("frozen").train(a[:150], b[:150], np.asarray(y[:150]), epochs=60, seed=0)
    p = det.predict(a[150:], b[150:])
    acc = ((p > 0.5) == np.asarray(y[150:], dtype=bool)).mean()
    assert acc >= 0.9, acc


def test_detector_is_cached_on_disk(contextual):
    att, again, bound = contextual
    assert att.n_pairs > 0 and not att.detector_cached
    assert again.detector_cached and bound.detector_cached
    x = ["government only health does"]
    assert att.detector.predict(x, x)[0] == pytest.approx(again.detector.predict(x, x)[0], abs=1e-6)


def _paired(obs, rank_a, rank_b, k: int = 1):
    """Success@k of two rankings of the same targets, and the discordant count (at least 1)."""
    truth = [u.casefold() for u in obs.truth]
    a = np.array([t in [c.casefold() for c in (r or [])[:k]] for r, t in zip(rank_a, truth)])
    b = np.array([t in [c.casefold() for c in (r or [])[:k]] for r, t in zip(rank_b, truth)])
    return a, b, max(int((a != b).sum()), 1)


def test_contextual_detector_generalises_to_held_out_private_data(setting, contextual):
    """The detector was trained on pairs from shadow sanitizations only. On pairs built the same way from
    sanitizations of the private corpus (never seen), it scores the true original above the wrong guess:
    Mann-Whitney AUC > 0.55 with one-sided p < 1e-3 (about 1,000 pairs; measured AUC ≈ 0.67). Its
    re-scoring of the context-free pool then does not lose on the private corpus: top-1 successes may trail
    the context-free attack's by at most 2 standard errors of the paired difference; with pool = K = 5 the
    re-scoring only reorders the pool, so ASR@K is exactly equal."""
    from scipy import stats

    mech, private, shadow = setting
    att = contextual[0]
    a, b, labels = att.training_pairs(private, np.random.default_rng(7))
    p = att.detector.predict(a, b)
    pos, neg = p[labels == 1], p[labels == 0]
    test = stats.mannwhitneyu(pos, neg, alternative="greater")
    auc = test.statistic / (len(pos) * len(neg))
    assert len(labels) >= 800 and auc > 0.55 and test.pvalue < 1e-3, (auc, test.pvalue)
    obs = observe(mech, private, rng=np.random.default_rng(9), repeats=2)
    ctx_rank = att.rank(obs)
    cf_rank = get_attack("bayes", mech, k=5).fit(shadow).rank(obs)
    hit_ctx, hit_cf, discordant = _paired(obs, ctx_rank, cf_rank)
    assert int(hit_ctx.sum()) - int(hit_cf.sum()) >= -2 * np.sqrt(discordant), (hit_ctx.mean(), hit_cf.mean())
    assert score(obs.truth, ctx_rank, k=5).success_at_k == score(obs.truth, cf_rank, k=5).success_at_k


def test_contextual_bound_dominates_contextual_attack_on_held_out_data(setting, contextual):
    """The contextual K bound (paper 003, Def. 2) uses the same detector with the private corpus's unit law as
    prior; the attack uses the whole 300-sentence shadow corpus. On fresh sanitizations of the private corpus
    the attack may lead by at most 2 standard errors of the paired difference (sqrt of the discordant
    count), at top-1 and at top-K."""
    mech, private, shadow = setting
    att, _, bound = contextual
    obs = observe(mech, private, rng=np.random.default_rng(10), repeats=3)
    rb, ra = bound.rank(obs), att.rank(obs)
    for k in (1, 5):
        hit_b, hit_a, discordant = _paired(obs, rb, ra, k)
        assert int(hit_a.sum()) - int(hit_b.sum()) <= 2 * np.sqrt(discordant), (k, hit_b.mean(), hit_a.mean())
    assert bound.details(obs, rb)["candidates"] <= len(set(" ".join(private).split()))


def test_bound_prior_is_the_private_corpus_law_of_the_sensitive_units(setting, contextual):
    """Def. 1 of paper 003: the bounds' prior P(x) is the frequency of x among the units the mechanism
    samples, over the whole private corpus (here SANTEXT+'s sensitive units), counted independently from
    the space's segmentation and the mechanism's sensitive set; not flat, not the attacked targets' law."""
    mech, private, _ = setting
    _, _, bound = contextual
    space = mech.space
    ids = np.asarray([space.lookup(p.text) for t in private for p in space.segment(t).pieces])
    ids = ids[ids >= 0]
    ids = ids[mech.input_mask[ids] & mech.sensitive[ids]]
    expected = np.bincount(ids, minlength=space.size) / len(ids)
    obs = observe(mech, private[:6], rng=np.random.default_rng(1), repeats=1)  # a few sentences under attack
    prior = np.asarray(bound._prior(obs), dtype=np.float64)
    assert len(np.unique(expected[expected > 0])) > 3  # a non-flat law, so a flat prior could not pass
    np.testing.assert_allclose(prior, expected, rtol=0, atol=1e-12)
