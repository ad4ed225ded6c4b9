"""DP-Prompt: the per-token law against its closed form, the sampler against the law, SmolLM2 end to end."""

import itertools
import math

import numpy as np
import pytest

from dptext.errors import ParameterError
from dptext.mechanisms import get_mechanism
from dptext.mechanisms.dp_prompt import DPPrompt, draw, token_probabilities, worst_log_ratio
from stats import chi2_pvalue

DOC = "My name is Maria Gonzalez and I live on Elm Street in Springfield. My blood tests showed type 2 diabetes."


@pytest.mark.parametrize("mode", ["raw", "logprob"])
@pytest.mark.parametrize("vocab", [2, 3, 7])
def test_worst_case_log_ratio_matches_closed_form_and_stays_below_epsilon_token(vocab, mode):
    lo, hi, temp = -2.0, 3.0, 0.8
    eps_token = 2 * (hi - lo) / temp
    # every logit vector with entries in {lo, hi} (the extremes), plus values beyond the clip range
    grid = np.array(list(itertools.product([lo - 5.0, lo, 0.5, hi, hi + 7.0], repeat=vocab)))
    p = token_probabilities(grid, lo, hi, temp, mode)
    lp = np.log(p)
    worst = float((lp.max(axis=0) - lp.min(axis=0)).max())  # max over token and over pairs of vectors
    if mode == "raw":
        assert worst == pytest.approx(worst_log_ratio(vocab, lo, hi, temp), rel=1e-12)
    assert worst <= eps_token + 1e-12
    # random logits never exceed the closed-form worst case either
    rng = np.random.default_rng(3)
    r = token_probabilities(rng.normal(0, 6, size=(4000, vocab)), lo, hi, temp, mode)
    assert float((np.log(r).max(axis=0) - np.log(r).min(axis=0)).max()) <= worst_log_ratio(vocab, lo, hi, temp) + 1e-12


def test_closed_form_tends_to_epsilon_token_on_large_vocabularies():
    lo, hi, temp = 0.0, 4.0, 2.0
    eps_token = 2 * (hi - lo) / temp
    assert worst_log_ratio(2, lo, hi, temp) == pytest.approx(eps_token / 2)
    assert worst_log_ratio(10**9, lo, hi, temp) == pytest.approx(eps_token, rel=1e-6)
    # the law itself is the Gibbs distribution of the clipped logits
    p = token_probabilities(np.array([5.0, 1.0, -3.0]), lo, hi, temp)
    expect = np.exp(np.array([4.0, 1.0, 0.0]) / temp)
    assert np.allclose(p, expect / expect.sum(), rtol=1e-14)


def test_draws_follow_the_token_law():
    p = token_probabilities(np.array([2.0, 0.0, 1.0, -1.0, 3.0, 0.5]), -1.0, 2.5, 0.7)
    rng = np.random.default_rng(11)
    samples = np.array([draw(p, rng) for _ in range(30000)])
    assert chi2_pvalue(samples, p) > 1e-3


def test_parameters_and_claim():
    m = DPPrompt(temperature=2.0, clip_min=-1.0, clip_max=4.0, max_tokens=10)
    assert m.epsilon_token == pytest.approx(5.0) and m.epsilon == pytest.approx(50.0)
    claim = m.privacy()
    assert claim.kind == "document-dp" and claim.bound == pytest.approx(50.0)
    same = DPPrompt(epsilon=50.0, clip_min=-1.0, clip_max=4.0, max_tokens=10)
    assert same.temperature == pytest.approx(2.0)
    bad = [
        (dict(epsilon=10.0, temperature=1.0), "options.temperature"),
        (dict(epsilon=10.0, clip_min=3.0, clip_max=1.0), "options.clip_min"),
        (dict(epsilon=10.0, space="glove-50d"), "space"),
        (dict(epsilon=-1.0), "epsilon"),
        (dict(epsilon=10.0, logits="softmax"), "options.logits"),
        (dict(), "epsilon"),
    ]
    for kw, param in bad:
        with pytest.raises(ParameterError) as err:
            DPPrompt(**kw)
        assert err.value.param == param, kw


def test_paraphrase_with_smollm2_reports_the_document_bound():
    mech = get_mechanism("dp-prompt", epsilon=16 * 2 * 20 / 0.5, logits="logprob", clip_min=-20.0, clip_max=0.0,
                         max_tokens=16)
    assert mech.temperature == pytest.approx(0.5)
    a = mech.perturb(DOC, rng=np.random.default_rng(5))
    b = mech.perturb(DOC, rng=np.random.default_rng(5))
    c = mech.perturb(DOC, rng=np.random.default_rng(6))
    assert isinstance(a.text, str) and a.text.strip()
    assert a.text == b.text  # the draws come from our generator, so a seed fixes the output
    assert c.text != a.text
    assert a.text != DOC
    rep = a.privacy
    assert 1 <= rep["generated_tokens"] <= 16
    assert rep["claim"]["kind"] == "document-dp"
    assert rep["claim"]["bound"] == pytest.approx(16 * 2 * 20 / 0.5)
    assert math.isclose(rep["claim"]["details"]["epsilon_token"], 80.0)
    assert [u.action for u in a.units] == ["perturbed"]


def test_low_temperature_limit_is_llama_cpp_greedy_decoding():
    # at T = 0.001 the law puts all mass on the top logit: our logits and sampler must reproduce
    # llama.cpp's own greedy decoding token for token
    n = 12
    mech = DPPrompt(temperature=0.001, clip_min=-10.0, clip_max=100.0, max_tokens=n)
    ours = mech.perturb(DOC, rng=np.random.default_rng(0)).text
    llm, lock = mech._model()
    with lock:
        ref = llm.create_completion(mech.prompt(DOC), max_tokens=n, temperature=0.0)["choices"][0]["text"]
    assert ours == ref.strip() and ours
