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
    finally:
        if old is None:
            os.environ.pop("DPTEXT_CACHE_DIR")
        else:
            os.environ["DPTEXT_CACHE_DIR"] = old
    return att, again


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
    att, again = contextual
    assert att.n_pairs > 0 and not att.detector_cached
    assert again.detector_cached
    x = ["government only health does"]
    assert att.detector.predict(x, x)[0] == pytest.approx(again.detector.predict(x, x)[0], abs=1e-6)


def test_contextual_at_least_context_free_on_training_distribution(setting, contextual):
    mech, private, shadow = setting
    att, _ = contextual
    obs = observe(mech, shadow[:60], rng=np.random.default_rng(9))
    ctx_rank = att.rank(obs)
    cf_rank = get_attack("bayes", mech, k=5).fit(shadow).rank(obs)
    ctx, cf = score(obs.truth, ctx_rank, k=5), score(obs.truth, cf_rank, k=5)
    # paired (McNemar-style) one-sided check: the contextual attack is not worse than the
    # context-free one beyond 2 standard errors of the paired difference
    truth = [u.lower() for u in obs.truth]
    hit_ctx = np.array([bool(c) and c[0].lower() == t for c, t in zip(ctx_rank, truth)])
    hit_cf = np.array([bool(c) and c[0].lower() == t for c, t in zip(cf_rank, truth)])
    assert hit_ctx.sum() == ctx.success_at_1 and hit_cf.sum() == cf.success_at_1
    discordant = int((hit_ctx != hit_cf).sum())
    assert ctx.success_at_1 - cf.success_at_1 >= -2 * np.sqrt(max(discordant, 1)), (ctx.asr_at_1, cf.asr_at_1)
    # re-scoring only reorders the context-free pool (pool = K = 5): ASR@K cannot change
    assert ctx.success_at_k == cf.success_at_k


def test_contextual_bound_dominates_contextual_attack(setting, contextual):
    mech, private, shadow = setting
    att, _ = contextual
    bound = get_attack("contextual-bound", mech, k=5, pool=5)
    bound.detector, bound.fitted = att.detector, True
    bound.prior, bound.cand, bound.lik = att.prior, att.cand, att.lik
    obs = observe(mech, private[:40], rng=np.random.default_rng(10), repeats=2)
    b = bound.evaluate(obs)
    a = att.evaluate(obs)
    assert b.asr_at_1 >= a.asr_at_1, (b.asr_at_1, a.asr_at_1)
    assert b.asr_at_k >= a.asr_at_k
