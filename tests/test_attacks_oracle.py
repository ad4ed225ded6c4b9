"""Beam oracle on lossy mappers and the nearest-neighbour attacker on Stencil / the noise mapper (paper 004)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dptext.attacks import get_attack, observe
from dptext.attacks.synthetic import zipf_corpus
from dptext.errors import DPTextError
from dptext.mechanisms import get_mechanism
from dptext.spaces import get_space

NATURAL = ["I love this movie", "The food was great", "What a nice day", "She is very happy",
           "He went to school", "We like the new house", "This book is good", "They play football today"]
TEXT = ["The food was great and the service was friendly", "I love this movie because the actors are wonderful",
        "What a nice day to walk in the park with friends", "The children played in the garden until dinner"]


@pytest.fixture(scope="module")
def mapper():
    return get_mechanism("2-random", seed=3)


def test_oracle_recovers_short_natural_sentences(mapper):
    obs = observe(mapper, NATURAL, rng=np.random.default_rng(0))
    for t, (x, y) in enumerate(zip(obs.truth, obs.observed)):  # the truth is always among the options
        assert mapper.space.lookup(x) in mapper.preimage(y).tolist()
    att = get_attack("oracle", mapper, k=5, max_beam=8)
    rep = att.evaluate(obs)
    d = rep.details
    # chance MRR for m >= 4 units in pairs is at most 1/2^4
    assert d["sentences"] == len(NATURAL) and d["mrr_sentence"] >= 0.75 and d["pr_at_5_sentence"] >= 0.75
    assert d["edit_distance"] <= 0.5 and rep.asr_at_1 >= 0.9


def test_oracle_fails_more_on_longer_sentences(mapper):
    space = get_space("smollm2")
    rng = np.random.default_rng(0)
    short = zipf_corpus(space, n_sentences=12, n_words=400, length=4, exponent=1.0, rng=rng)
    long = zipf_corpus(space, n_sentences=5, n_words=400, length=24, exponent=1.0, rng=rng)
    res = {}
    for name, data in (("short", short), ("long", long)):
        att = get_attack("oracle", mapper, k=5, max_beam=8)
        res[name] = att.evaluate(observe(mapper, data, rng=np.random.default_rng(1))).details
    assert res["short"]["mrr_sentence"] > res["long"]["mrr_sentence"], res
    assert res["short"]["pr_at_5_sentence"] > res["long"]["pr_at_5_sentence"]
    assert res["long"]["edit_distance"] > res["short"]["edit_distance"]


def test_unpruned_beam_equals_exhaustive_search(mapper):
    obs = observe(mapper, ["the cat sat"], rng=np.random.default_rng(0))
    att = get_attack("oracle", mapper, keep_mass=1.0, max_beam=10_000)
    options = att.options(obs, 0, set(obs.pos.tolist()))
    ranked = att.search(options, obs.ws[0])
    lm = att.lm
    brute = []
    for seq in itertools.product(*options):
        text = "".join(w + u for w, u in zip([""] + obs.ws[0][1:], seq))
        brute.append((lm.logprob([], lm.tokens(text)), list(seq)))
    brute.sort(key=lambda b: -b[0])
    assert len(ranked) == len(brute) == int(np.prod([len(o) for o in options]))
    assert ranked[0][1] == brute[0][1]
    assert ranked[0][0] == pytest.approx(brute[0][0], abs=1e-3)


def test_oracle_needs_a_lossy_mapper():
    with pytest.raises(DPTextError, match="needs a lossy mapper"):
        get_attack("oracle", get_mechanism("santext", epsilon=2, corpus=["a b c"]))


def test_nearest_neighbour_attacker_tracks_noise():
    scores = {}
    for eta in (50, 1000):
        mech = get_mechanism("noise-mapper", eta=eta, seed=1)
        obs = observe(mech, TEXT, rng=np.random.default_rng(0))
        att = get_attack("nn", mech, k=5)
        ranking = att.rank(obs)
        assert all(y not in cands for y, cands in zip(obs.observed, ranking))  # self excluded
        scores[eta] = att.evaluate(obs).asr_at_k
    assert scores[1000] > scores[50] + 0.2, scores


def test_nearest_neighbour_attacker_on_stencil():
    pr5 = {}
    for name, kw in (("stencil", {"sigma": 0.0}), ("punctuated-stencil", {})):
        mech = get_mechanism(name, seed=1, **kw)
        obs = observe(mech, TEXT, rng=np.random.default_rng(0))
        pr5[name] = get_attack("nn", mech, k=5).evaluate(obs).asr_at_k
    # σ → 0: the output is the nearest other unit to the original, which the attacker inverts
    assert pr5["stencil"] >= 0.8 and pr5["punctuated-stencil"] < 0.3, pr5
