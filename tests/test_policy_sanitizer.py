"""Policies through the core (``dptext.pipeline.Sanitizer``) with RANTEXT and the real detectors."""

import numpy as np
import pytest

from dptext.errors import PrivacyError
from dptext.mechanisms.spec import MechanismSpec
from dptext.pipeline import Sanitizer, Segment
from dptext.privacy.policy import get_policy

TEXT = "Please tell Maria Gonzalez that the meeting moved; write to maria.g@example.com or call 555-201-3344."


@pytest.fixture(scope="module")
def spec():
    return MechanismSpec("rantext", epsilon=1.0)


def test_entities_policy_sends_undetected_text_in_clear_and_perturbs_entities(spec):
    san = Sanitizer(spec, policy=get_policy("entities"))
    out = san.sanitize([Segment(TEXT, True)], rng=np.random.default_rng(0))
    text = out.texts[0]
    for clear in ("Please tell ", " that the meeting moved; write to ", " or call "):
        assert clear in text
    assert "maria.g@example.com" not in text and "555-201-3344" not in text
    assert out.report["policy"]["name"] == "entities" and "in clear" in out.report["policy"]["scope"]
    assert out.report["clear_private_chars"] > 0
    assert {s["detector"] for s in out.report["spans"]} >= {"gazetteer+spacy", "regex"}


def test_tiered_policy_spends_the_smaller_epsilon_on_detected_spans(spec):
    san = Sanitizer(spec, policy=get_policy("tiered", entity_epsilon=0.25))
    out = san.sanitize([Segment(TEXT, True)], rng=np.random.default_rng(0))
    assert out.report["clear_private_chars"] == 0
    assert out.report["spans"] and all(s["epsilon"] == 0.25 for s in out.report["spans"])
    assert "Please tell " not in out.texts[0] or "meeting moved" not in out.texts[0]


def test_a_detector_failing_at_run_time_fails_closed(spec):
    pol = get_policy("entities")
    pol.spacy.nlp = None  # the NER pipeline is gone: detection raises
    san = Sanitizer(spec, policy=pol)
    with pytest.raises(PrivacyError):
        san.sanitize([Segment(TEXT, True)], rng=np.random.default_rng(0))
