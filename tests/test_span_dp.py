"""Detected spans go through the mechanism's DP branch only, and units sent unchanged are counted as such.

SPEC 5 (policies): no keep rule (SANTEXT+'s frequent words, CUSTEXT+'s stopwords, punctuation, digits
or OOV ``keep``) applies inside a detected span; a unit whose output equals its input is reported as
sent unchanged (kept by a rule, or drawn as itself), never as perturbed.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy.stats import binomtest

from dptext.mechanisms.spec import MechanismSpec
from dptext.pipeline import Sanitizer, Segment
from dptext.privacy.policy import get_policy

README = "The patient John Smith was admitted on Monday."
# a span with punctuation and digits (EMAIL, PHONE): kept by rule outside spans, never inside
CONTACT = "Write to maria.g@example.com or call 555-201-3344 today."
RUNS = 60


@pytest.fixture(scope="module")
def policies():
    return {"all": get_policy("all"), "entities": get_policy("entities"),
            "tiered": get_policy("tiered", entity_epsilon=1.0)}


def pieces_with_records(san, text, records):
    """(detector, record) per non-blank span of the plan: the Sanitizer keeps one record per such span."""
    plan = [sp for sp in san._plan(text) if text[sp[0]:sp[1]].strip()]
    assert len(plan) == len(records)
    return [(sp[4], rec) for sp, rec in zip(plan, records)]


def same(a, b):
    return a is not None and a.lower() == b.lower()  # glove-50d folds case; outputs take the input's


@pytest.mark.parametrize("mechanism", ["santext+", "custext+"])
@pytest.mark.parametrize("policy", ["all", "entities", "tiered"])
def test_no_keep_rule_applies_inside_a_detected_span(policies, mechanism, policy):
    # under `all` the entities detectors still run for a mechanism with a keep rule (policy.plan_for)
    san = Sanitizer(MechanismSpec(mechanism, epsilon=2.0), policy=policies[policy])
    texts = [README, CONTACT] * (RUNS // 2)
    out = san.sanitize([Segment(t, True) for t in texts], rng=np.random.default_rng(7))
    n_span_units = 0
    for i, text in enumerate(texts):
        for detector, rec in pieces_with_records(san, text, out.results[i]):
            if detector is None:
                continue
            for u in rec.units:
                n_span_units += 1
                # sampled by the DP branch (or a digit run / OOV unit replaced or dropped): never kept
                assert u.action != "kept" and u.reason != "non-sensitive-kept", (text, u)
                assert u.outcome != "kept"
                if mechanism == "santext+" and u.reason not in ("digits", "oov"):
                    assert u.reason in ("sensitive", "non-sensitive-resampled")
    assert n_span_units >= RUNS * 3  # John, Smith, Monday / the e-mail's and the phone's units
    assert sum(s["kept_by_rule"] for s in out.report["spans"]) == 0
    # the claim printed for the request says it covers the detected spans' units
    assert "every unit of every detected span" in out.report["claim"]["scope"]


def test_santext_plus_keeps_frequent_words_outside_spans_and_counts_them_as_sent_unchanged(policies):
    """Under ``all`` SANTEXT+'s keep branch stays outside the detected entities; such units are 'kept', not
    'perturbed', and no detected entity is ever kept."""
    san = Sanitizer(MechanismSpec("santext+", epsilon=2.0), policy=policies["all"])
    out = san.sanitize([Segment(README, True)] * 20, rng=np.random.default_rng(3))
    units = [u for i in range(20) for u in out.units(i)]
    assert any(u["reason"] == "non-sensitive-kept" for u in units)
    assert not any(u["reason"] == "non-sensitive-kept" for u in units if u["original"] in ("John", "Smith", "Monday"))
    for u in units:
        if u["reason"] == "non-sensitive-kept":
            assert u["outcome"] == "kept" and u["output"] == u["original"]
    counts = out.report["units"]
    changed = sum(u["output"] is not None and not same(u["output"], u["original"]) for u in units)
    unchanged = sum(same(u["output"], u["original"]) for u in units)
    assert counts["perturbed"] == changed
    assert out.report["sent_unchanged"] == counts["kept"] + counts["self"] == unchanged
    assert sum(counts.values()) == len(units)


def test_public_units_of_an_entities_plan_count_as_sent_unchanged(policies):
    san = Sanitizer(MechanismSpec("custext+", epsilon=2.0), policy=policies["entities"])
    out = san.sanitize([Segment(README, True)], rng=np.random.default_rng(1))
    units = out.units(0)
    public = [u for u in units if u["reason"] == "public"]
    assert [u["original"] for u in public] == ["The", "patient", "was", "admitted", "on", "."]
    assert all(u["output"] == u["original"] and u["outcome"] == "kept" for u in public)
    assert out.report["units"]["kept"] == len(public)  # no other unit is kept: spans hold no keep rule
    assert out.report["sent_unchanged"] == sum(same(u["output"], u["original"]) for u in units)


def test_the_summary_line_counts_a_unit_drawn_as_itself_as_sent_unchanged():
    """``dptext perturb``'s line agrees with its own --json units (same seed): unchanged is never perturbed."""
    env = {**os.environ}
    args = [sys.executable, "-m", "dptext.cli", "perturb", "--mechanism", "custext+", "--epsilon", "2",
            "--seed", "4", "John Smith John Smith John Smith John Smith John Smith"]
    line = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env).stderr.strip().splitlines()[-1]
    js = json.loads(subprocess.run(args + ["--json"], capture_output=True, text=True, timeout=300, env=env).stdout)
    units = js["units"]
    n_self = sum(u["action"] == "perturbed" and same(u["output"], u["original"]) for u in units)
    n_changed = sum(not same(u["output"], u["original"]) for u in units)
    assert n_self >= 1  # this seed draws at least one name as itself (Pr ≈ 0.1 each, 10 draws)
    assert line == (f"dptext: {n_changed} units perturbed, {n_self} sent unchanged (0 kept by rule, "
                    f"{n_self} drawn as themselves), 0 dropped")
    assert all(u["outcome"] == ("self" if same(u["output"], u["original"]) else "perturbed") for u in units)


@pytest.mark.parametrize("mechanism,word", [("custext+", "John"), ("custext+", "Monday"), ("santext+", "John")])
def test_span_self_draw_frequency_matches_the_dp_branch_row(mechanism, word):
    """Inside a span a unit comes out as itself with the DP branch's Pr(x|x) (binomial test, fixed seed):
    0 for a frequent SANTEXT+ word (V_s holds only rare words), not its 0.7 keep probability."""
    mech = MechanismSpec(mechanism, epsilon=2.0).build()
    n = 3000
    res = mech.perturb_many([word] * n, rng=np.random.default_rng(11), dp_only=True)
    k = sum(r.units[0].outcome == "self" for r in res)
    p_self = float(mech.dp_transition(word.lower())[mech.index_of(word.lower())])
    if p_self == 0.0:
        assert k == 0
    else:
        assert binomtest(k, n, p_self).pvalue > 1e-3, (k, n, p_self)
    assert sum(r.units[0].outcome == "kept" for r in res) == 0


def test_tiered_epsilon_spent_is_the_largest_unit_epsilon_when_the_text_ends_in_an_entity(policies):
    san = Sanitizer(MechanismSpec("custext+", epsilon=2.0), policy=policies["tiered"])
    out = san.sanitize([Segment("The patient was admitted by John Smith", True)], rng=np.random.default_rng(0))
    assert [s["epsilon"] for s in out.report["spans"]] == [1.0]  # the last span is the entity, at 1.0
    assert out.report["epsilon_spent"] == 2.0


@pytest.mark.parametrize("mechanism", ["santext+", "custext+"])
def test_keep_options_do_not_apply_inside_a_span(mechanism):
    """``oov="keep"``, ``digits="keep"``, punctuation and stopwords: kept outside a span, never inside."""
    mech = MechanismSpec(mechanism, epsilon=2.0, oov="keep", digits="keep").build()
    text = "the Qzxwvbn 42 , John"
    rng = np.random.default_rng(5)
    outside = mech.perturb(text, rng=rng)
    assert {u.original for u in outside.units if u.outcome == "kept"} >= {"Qzxwvbn", "42", ","}
    for r in mech.perturb_many([text] * 50, rng=rng, dp_only=True):
        assert all(u.action != "kept" and u.outcome != "kept" for u in r.units), r.units
        assert all(u.output != "Qzxwvbn" for u in r.units)  # an OOV unit is dropped or replaced by one of V
        assert [u.reason for u in r.units if u.original == "42"] == ["digits"]  # a uniform integer draw


def test_under_all_a_mechanism_without_a_keep_rule_runs_no_detector(policies):
    from dptext.privacy.policy import plan_for

    mech = MechanismSpec("santext", epsilon=2.0).build()
    assert not mech.has_keep_rule and MechanismSpec("santext+", epsilon=2.0).build().has_keep_rule
    assert [(s.start, s.end, s.detector) for s in plan_for(policies["all"], README, mech)] == [(0, len(README), None)]


def test_under_all_failing_detectors_leave_no_keep_rule_anywhere(policies, monkeypatch):
    from dptext.errors import PrivacyError
    from dptext.privacy import policy as policy_mod

    class Broken:
        def plan(self, text):
            raise PrivacyError("entity detection failed (test)")

    monkeypatch.setattr(policy_mod, "_keep_guard", Broken)
    san = Sanitizer(MechanismSpec("santext+", epsilon=2.0), policy=policies["all"])
    out = san.sanitize([Segment(README, True)] * 20, rng=np.random.default_rng(5))
    units = [u for i in range(20) for u in out.units(i)]
    assert len(units) == 20 * 9 and not any(u["reason"] == "non-sensitive-kept" for u in units)


def test_cli_default_policy_never_keeps_the_readme_name():
    """``dptext perturb --mechanism santext+`` (policy ``all``, the README's first example): over 30 copies no
    unit of John, Smith or Monday is kept by SANTEXT+'s frequent-word branch (before: about 70 % were)."""
    args = [sys.executable, "-m", "dptext.cli", "perturb", "--mechanism", "santext+", "--epsilon", "2", "--seed", "2",
            "--json", " ".join([README] * 30)]
    js = json.loads(subprocess.run(args, capture_output=True, text=True, timeout=300, env={**os.environ}).stdout)
    names = [u for u in js["units"] if u["original"] in ("John", "Smith", "Monday")]
    others = [u for u in js["units"] if u["original"] in ("patient", "admitted")]
    assert len(names) == 90 and all(u["reason"] != "non-sensitive-kept" and u["outcome"] != "kept" for u in names)
    assert any(u["reason"] == "non-sensitive-kept" for u in others)  # the keep branch stays for other words
