"""Language-model attacks: masked-token inference (causal fill with SmolLM2) and LLM inference (SPEC 3)."""

from __future__ import annotations

import numpy as np
import pytest

from dptext.attacks import get_attack, observe, rouge_l_f1
from dptext.attacks.base import Observed
from dptext.attacks.llm_inference import parse_predictions
from dptext.mechanisms import get_mechanism
from toy_mechanisms import Identity


class LlamaChat:
    """The minimal chat protocol over llama-cpp-python's ``create_chat_completion``."""

    def __init__(self):
        from dptext.attacks._lm import CausalLM

        self.llm = CausalLM().llm

    def complete(self, messages, *, max_tokens=128, temperature=0.7, stop=None):
        self.llm.reset()
        out = self.llm.create_chat_completion(messages=messages, max_tokens=max_tokens, temperature=temperature,
                                              stop=stop, seed=0)
        return out["choices"][0]["message"]["content"] or ""


# ----- parsing of LLM answers ---------------------------------------------------------------------------
@pytest.mark.parametrize("answer,n,expected,missing", [
    ('[["hello"], ["world", "earth"]]', 2, [["hello"], ["world", "earth"]], 0),
    ('Sure!\n[\n[\u201chello\u201d], # Corresponding to "hi"\n["world"] # x\n]\nDone.', 2, [["hello"], ["world"]], 0),
    ("[['a'], ['b']]", 2, [["a"], ["b"]], 0),  # a Python literal
    ('["a", "b"]', 2, [["a"], ["b"]], 0),  # flat list
    ('["a", "b"]', 3, [["a"], ["b"], []], 1),  # too short: the rest fail
    ('[["a"], ["b"], ["c"]]', 2, [["a"], ["b"]], 0),  # too long: truncated
    ("I cannot help with that.", 2, [[], []], 2),  # no list at all
    ('[["a"], [1, null, "b"], {"x": 1}]', 3, [["a"], ["1", "b"], []], 1),  # odd members
    ('[["a"], ["b"', 2, [["a"], ["b"]], 0),  # truncated JSON: quoted strings per line
    ("", 1, [[]], 1),
])
def test_parse_predictions(answer, n, expected, missing):
    got, miss = parse_predictions(answer, n)
    assert got == expected and miss == missing


@pytest.fixture(scope="module")
def santext_obs():
    priv = ["The president of the United States visited the capital on Monday.",
            "She said the company would report its quarterly earnings next week."]
    mech = get_mechanism("santext+", epsilon=3, corpus=priv * 3, seed=1)
    return mech, observe(mech, priv, rng=np.random.default_rng(0))


def test_llm_attack_end_to_end_and_malformed_answers(santext_obs):
    mech, full = santext_obs
    one = full.sent == 0
    obs = Observed(full.outputs, full.originals, full.ws, full.sent[one], full.pos[one])
    chat = LlamaChat()
    att = get_attack("llm", mech, k=3, backend=chat, chunk=8)
    rep = att.evaluate(obs)
    assert rep.n_units == obs.n_targets and rep.unrepresentable == 0
    assert 0 <= rep.details["unparsed_units"] <= rep.n_units
    assert rep.details["llm_calls"] == sum((c + 7) // 8 for c in np.bincount(obs.sent))
    # answers cut after 1 token per unit cannot be parsed: every unit is a counted failure, no crash
    cut = get_attack("llm", mech, k=3, backend=chat, chunk=8, max_tokens_per_unit=0)
    rep = cut.evaluate(obs)
    assert rep.details["unparsed_units"] == rep.n_units and rep.success_at_k == 0


class Recording:
    """Wraps a real chat backend and keeps every prompt and answer."""

    def __init__(self, inner):
        self.inner, self.prompts, self.answers = inner, [], []

    def complete(self, messages, **kw):
        self.prompts.append(messages[-1]["content"])
        out = self.inner.complete(messages, **kw)
        self.answers.append(out if isinstance(out, str) else getattr(out, "text", ""))
        return out


def test_llm_attack_through_dptext_backend_sees_only_sanitized_units(santext_obs):
    """Through dptext's own in-process backend (SmolLM2): the model is shown exactly the observed units of
    each sentence, in order, as the JSON list of the prompt, and never an original the mechanism changed;
    each target's candidates are the parsed answer for its own index."""
    import json

    from dptext.llm import get_backend

    mech, full = santext_obs
    obs = Observed(full.outputs, full.originals, full.ws, full.sent[:6], full.pos[:6])
    rec = Recording(get_backend("local"))
    att = get_attack("llm", mech, k=3, backend=rec, chunk=3)
    ranking = att.rank(obs)
    assert len(rec.prompts) == sum((c + 2) // 3 for c in np.bincount(obs.sent)) == att.calls
    shown = []
    for prompt in rec.prompts:
        listed = prompt.rsplit("For the given list of \"INPUTS\":\n", 1)[1].split("\n", 1)[0]
        shown.extend(json.loads(listed))
    assert shown == obs.observed
    changed = {x for x, y in zip(obs.truth, obs.observed) if x.casefold() != y.casefold()}
    assert changed and not any(f'"{x}"' in p for x in changed for p in rec.prompts)
    expect = []
    for answer, prompt in zip(rec.answers, rec.prompts):
        n = len(json.loads(prompt.rsplit("For the given list of \"INPUTS\":\n", 1)[1].split("\n", 1)[0]))
        expect.extend(c[:3] for c in parse_predictions(answer, n)[0])
    assert ranking == expect


# ----- masked-token inference -------------------------------------------------------------------------
def test_masked_causal_fill_recovers_predictable_units():
    mech = Identity(epsilon=1, space="glove-50d")
    words = "The United States of America and the United Kingdom signed the treaty".split()
    targets = [2, 4, 9]  # States, America, Kingdom
    obs = Observed(outputs=[list(words)], originals=[list(words)], ws=[[""] + [" "] * (len(words) - 1)],
                   sent=np.zeros(3, dtype=np.int64), pos=np.asarray(targets))
    att = get_attack("masked", mech, k=5, n_candidates=8)
    ranking = att.rank(obs)
    assert all(len(c) <= 8 and all(mech.space.lookup(w) >= 0 for w in c) for c in ranking)
    rep = att.evaluate(obs)
    assert rep.success_at_k >= 2, ranking
    # Rouge-L of the rebuilt text against the closed form, and the sanitized text (identity) scores 1
    rebuilt = list(words)
    for p, c in zip(targets, ranking):
        rebuilt[p] = c[0]
    assert rep.details["rouge_l_f1"] == pytest.approx(rouge_l_f1(rebuilt, words))
    assert rep.details["rouge_l_f1_sanitized"] == 1.0


def test_masked_prediction_ignores_the_masked_unit_but_not_its_context(santext_obs):
    """Masked inference predicts a position from the rest of the sanitized sentence: swapping the observed
    unit at the attacked position for a decoy leaves the ranking unchanged, while replacing the left
    context changes it for at least one target."""
    mech, obs = santext_obs
    att = get_attack("masked", mech, k=5, n_candidates=6, right_window=2)

    def rank(outputs, t):
        # the scorer reuses its KV cache across calls, and logits evaluated in a different token batching
        # differ in the last bits (enough to swap near-tied candidates): compare from a fresh state
        att.lm.llm.reset()
        return att.rank(Observed(outputs, obs.originals, obs.ws, obs.sent[t : t + 1], obs.pos[t : t + 1]))

    changed_by_context = 0
    targets = [t for t in range(obs.n_targets) if obs.pos[t] >= 2][:4]
    assert len(targets) == 4
    for t in targets:
        s, p = int(obs.sent[t]), int(obs.pos[t])
        base = rank(obs.outputs, t)
        decoy = [list(o) for o in obs.outputs]
        decoy[s][p] = "zebra" if obs.outputs[s][p].casefold() != "zebra" else "apple"
        assert rank(decoy, t) == base
        other = [list(o) for o in obs.outputs]
        other[s][:p] = ["potatoes"] * p
        changed_by_context += rank(other, t) != base
    assert changed_by_context >= 1


def test_masked_with_a_local_hf_model_directory(santext_obs):
    # No masked-LM weights ship offline; the bundled MiniLM (a BERT encoder) exercises the HF path:
    # its MLM head loads untrained, so this checks plumbing (masking, top-k, filtering), not accuracy.
    from dptext.encoders import minilm_path

    mech, obs = santext_obs
    small = Observed(obs.outputs, obs.originals, obs.ws, obs.sent[:6], obs.pos[:6])
    att = get_attack("masked", mech, k=5, model=minilm_path(), n_candidates=6)
    rep = att.evaluate(small)
    assert rep.details["model"] == "hf-masked-lm" and rep.n_units == 6
    ranking = att.rank(small)
    assert all(c is not None and len(c) <= 6 and all(mech.space.lookup(w) >= 0 for w in c) for c in ranking)
