"""The one core: MechanismSpec (validated settings -> mechanism) and Sanitizer (segments -> report)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from dptext.errors import ParameterError, PrivacyError
from dptext.mechanisms import get_mechanism
from dptext.mechanisms.santext import SanText
from dptext.mechanisms.spec import MechanismSpec
from dptext.pipeline import Sanitizer, Segment

PRIVATE = "The patient John Smith was admitted to the hospital on Monday with chest pain."


@pytest.fixture(scope="module")
def spec():
    return MechanismSpec(mechanism="SanText", epsilon=1.0)


@pytest.fixture(scope="module")
def sanitizer(spec):
    return Sanitizer(spec)


@pytest.mark.parametrize("data, param", [
    ({"mechanism": "santext", "epsilon": 1, "epsilno": 2}, "epsilno"),
    ({"mechanism": "santxt", "epsilon": 1}, "mechanism"),
    ({"epsilon": 1}, "mechanism"),
    ({"mechanism": "santext", "epsilon": 0}, "epsilon"),
    ({"mechanism": "santext", "epsilon": "nan"}, "epsilon"),
    ({"mechanism": "santext", "epsilon": 1, "oov": "Drop"}, "oov"),
    ({"mechanism": "santext", "epsilon": 1, "seed": -5}, "seed"),
    ({"mechanism": "santext", "epsilon": 1, "options": {"bogus": 1}}, "options.bogus"),
    ({"mechanism": "cape", "epsilon": 1, "options": {"n_buckets": "abc"}}, "options.n_buckets"),
    ({"mechanism": "santext", "epsilon": 1, "options": {"epsilon": 2}}, "options.epsilon"),
])
def test_spec_errors_name_the_setting(data, param):
    with pytest.raises(ParameterError) as err:
        MechanismSpec.from_dict(data)
    assert err.value.param == param
    assert "\n" not in str(err.value)


def test_spec_normalises_and_coerces():
    s = MechanismSpec.from_dict({"mechanism": "SANTEXT+", "epsilon": "2", "options": {"p": 0.5}})
    assert s.mechanism == "santext+" and s.epsilon == 2.0 and s.options == {"p": 0.5}
    cape = MechanismSpec(mechanism="cape", epsilon=1, options={"n-buckets": "20", "lambda_l": "0.25"})
    assert cape.options == {"n_buckets": 20, "lambda_l": 0.25}
    m = s.build()
    assert m.name == "santext+" and m.epsilon == 2.0 and m.p == 0.5
    # get_mechanism goes through the same validation
    with pytest.raises(ParameterError) as err:
        get_mechanism("santext", epsilon=1, bogus=3)
    assert err.value.param == "options.bogus"


def test_public_segments_pass_byte_identical_private_are_perturbed(sanitizer):
    public = "Summarise in one line:\n\t"
    out = sanitizer.sanitize([Segment(public, False), Segment(PRIVATE, True), Segment("  \n", True)],
                             rng=np.random.default_rng(1))
    assert out.texts[0] == public and out.texts[2] == "  \n"
    assert out.texts[1] != PRIVATE
    units = out.units(1)
    r = out.report
    assert r["private_segments"] == 3 - 1 and r["public_segments"] == 1
    assert sum(r["units"].values()) == len(units) == 15
    assert r["units"]["perturbed"] == sum(u["action"] == "perturbed" for u in units) == 14
    assert r["epsilon_spent"] == 1.0 and r["unperturbed_private"] == 0 and r["no_dp_guarantee"] is False
    assert PRIVATE not in repr(r)


class Exploding(SanText):
    def _sample(self, idx, rng):
        raise RuntimeError("sampler exploded")

    _sample_branches = _sample


def test_fail_closed_returns_nothing():
    s = Sanitizer(Exploding(epsilon=1))
    with pytest.raises(PrivacyError, match="nothing was sent"):
        s.sanitize([Segment("public", False), Segment(PRIVATE, True)])


class DictMemo:
    """The memo protocol over a dict (the proxy's is SQLite + HMAC)."""

    def __init__(self):
        self.store = {}

    def key(self, scope, settings, text):
        return repr((scope, sorted(settings.items(), key=str), text)).encode()

    def get(self, key):
        return self.store.get(key)

    def put(self, key, text):
        self.store[key] = text


def test_memo_makes_repeats_identical_and_free(spec):
    memo = DictMemo()
    s = Sanitizer(spec, memo=memo)
    first = s.sanitize([Segment(PRIVATE, True)], scope="alice")
    again = [s.sanitize([Segment(PRIVATE, True)], scope="alice") for _ in range(5)]
    assert all(a.texts == first.texts for a in again)
    assert all(a.report["memo_hits"] == 1 and a.report["epsilon_spent"] == 0 for a in again)
    assert first.report["memo_hits"] == 0 and first.report["epsilon_spent"] == 1.0
    # without the memo (or in another scope) each copy is perturbed afresh
    other = {Sanitizer(spec).sanitize([Segment(PRIVATE, True)]).texts[0] for _ in range(5)}
    assert len(other) == 5
    assert s.sanitize([Segment(PRIVATE, True)], scope="bob").report["memo_hits"] == 0
    # a per-call memo replaces the Sanitizer's own for that call only
    held = DictMemo()
    r = s.sanitize([Segment(PRIVATE, True)], scope="alice", memo=held)
    assert r.report["memo_hits"] == 0 and len(held.store) == 1 and len(memo.store) == 2


@dataclass
class Span:
    start: int
    end: int
    private: bool
    epsilon: float | None
    detector: str | None


class WordPolicy:
    """A user policy: the word 'Smith' at a small ε; the rest at the spec's ε; 'Monday' in clear."""

    def __init__(self, tile=True):
        self.tile = tile

    def describe(self):
        return {"name": "test-words"}

    def plan(self, text):
        out, pos = [], 0
        for word, eps, private in (("Smith", 0.5, True), ("Monday", None, False)):
            i = text.index(word)
            out.append(Span(pos, i, True, None, None))
            out.append(Span(i, i + len(word), private, eps, "wordlist"))
            pos = i + len(word)
        out.append(Span(pos if self.tile else pos + 1, len(text), True, None, None))
        return out


def test_policy_spans_get_their_own_epsilon_and_clear_text_is_reported(spec):
    s = Sanitizer(spec, policy=WordPolicy())
    out = s.sanitize([Segment(PRIVATE, True)], rng=np.random.default_rng(3))
    r = out.report
    assert " Monday " in out.texts[0] and "Smith" not in out.texts[0].split()
    assert r["clear_private_chars"] == len("Monday")
    assert [sp["epsilon"] for sp in r["spans"]] == [0.5]
    assert s._mechanism_at(0.5).epsilon == 0.5 and r["policy"] == {"name": "test-words"}
    with pytest.raises(PrivacyError, match="tile"):
        Sanitizer(spec, policy=WordPolicy(tile=False)).sanitize([Segment(PRIVATE, True)])


def test_mechanism_without_claim_is_flagged():
    s = Sanitizer(MechanismSpec(mechanism="2-random", seed=1))
    r = s.sanitize([Segment(PRIVATE, True)]).report
    assert r["no_dp_guarantee"] is True and r["claim"]["bound"] is None
    assert any("no DP guarantee" in w for w in r["warnings"])


def test_build_takes_a_loaded_space_only_when_it_is_the_named_one(spec):
    from dptext.spaces import get_space

    glove = get_space("glove-50d")
    assert spec.space_name == "glove-50d" and spec.build(space=glove).space is glove
    with pytest.raises(ParameterError) as err:
        MechanismSpec(mechanism="rantext", epsilon=3).build(space=glove)  # rantext's space is cl100k-11k
    assert err.value.param == "space"


def test_get_mechanism_accepts_a_loaded_space():
    from dptext.spaces import get_space

    glove = get_space("glove-50d")
    m = get_mechanism("custext", epsilon=2, space=glove)
    assert m.space is glove and m.name == "custext"


def test_top_labels_the_row_against_the_closed_form():
    """SANTEXT's row is exp(-eps d/2) normalised: top(k) must list its k largest entries with their units."""
    m = get_mechanism("santext", epsilon=2)
    i = m.space.lookup("hospital")
    d = np.linalg.norm(m.space.embeddings.astype(np.float64) - m.space.embeddings[i].astype(np.float64), axis=1)
    w = np.exp(-2 * d / 2) * m.output_mask
    p = w / w.sum()
    want = np.argsort(-p, kind="stable")[:5]
    got = m.top("hospital", 5)
    assert [u for u, _ in got] == [m.space.units[j] for j in want]
    assert np.allclose([q for _, q in got], p[want], rtol=1e-4)
    with pytest.raises(ParameterError):
        m.top("hospital", 0)
