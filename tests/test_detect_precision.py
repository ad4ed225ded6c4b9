"""Precision of the entity detectors on everyday words: what is not personal data stays public.

Sentences written for these tests; each case names a word class that a rule keeps out of the detected spans.
"""

import pytest

from dptext.privacy.lexical import MedicalDetector


@pytest.fixture(scope="module")
def medical():
    return MedicalDetector()


def test_public_disorder_is_no_medical_condition(medical):
    # WordNet's "disorder" of the public peace (anarchy, rioting, unrest, chaos, turmoil) and of a room (mess)
    text = "the rioting and unrest turned to anarchy; chaos and turmoil, a mess in every street"
    assert [text[d.start:d.end] for d in medical.detect(text)] == []


def test_conditions_and_symptoms_stay_medical(medical):
    text = "she had a migraine, a fever and nausea; her brother has bipolar disorder and asthma"
    assert [text[d.start:d.end] for d in medical.detect(text)] == ["migraine", "fever", "nausea",
                                                                     "bipolar disorder", "asthma"]
