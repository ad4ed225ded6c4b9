"""Health data beyond WordNet's illnesses: care, pregnancy, injuries as events, the body part a condition is in.

Sentences written for these tests. Each recall case failed before the rule it tests; each "stays public" case
fails when its filter is removed.
"""

import pytest

from dptext.privacy.lexical import MedicalDetector


@pytest.fixture(scope="module")
def medical():
    return MedicalDetector()


def _found(det, text):
    return [text[d.start:d.end] for d in det.detect(text)]


@pytest.mark.parametrize("text,term", [
    ("she started chemotherapy in june", "chemotherapy"),      # a therapy (noun.act)
    ("HE HAD A VASECTOMY LAST YEAR", "VASECTOMY"),             # an operation
    ("after the mastectomy she rested", "mastectomy"),
    ("the miscarriage was in march", "miscarriage"),          # under abortion (noun.act)
    ("her pregnancy was uneventful", "pregnancy"),             # a physical condition beside the illnesses
    ("he got a concussion at practice", "concussion"),        # an injury filed as an event (noun.event)
    ("booked for open-heart surgery", "open-heart surgery"),
])
def test_care_and_events_of_health_are_medical(medical, text, term):
    assert term in _found(medical, text)


@pytest.mark.parametrize("text,span", [
    ("she has a knee injury from skiing", "knee injury"),
    ("CHRONIC BACK PAIN SINCE MAY", "CHRONIC BACK PAIN"),
    ("treated for head injuries twice", "head injuries"),     # a plural in -ies
    ("the abscesses healed slowly", "abscesses"),               # a plural in -es
])
def test_the_body_part_and_plural_belong_to_the_condition(medical, text, span):
    assert span in _found(medical, text)


@pytest.mark.parametrize("text", [
    "the taxis were late again",                     # "taxis" is a surgical manipulation and taxi's plural
    "we were taking apart the old shed",             # "taking apart" is an excision and everyday English
    "a ppp contract for the new bridge",             # an acronym of a procedure
    "the flooding closed the road",                  # a therapy and high water
    "the vet is spaying our cat on monday",          # an inflection of "spay", said of pets
])
def test_care_terms_with_everyday_uses_stay_public(medical, text):
    assert _found(medical, text) == []


@pytest.mark.parametrize("text,term", [
    ("I was diagnosed with depression last year", "depression"),
    ("she caught a cold on the trip", "cold"),
    ("HE SUFFERED A BAD HEADACHE ALL DAY", "HEADACHE"),
    ("treated for a hip fracture in May", "hip fracture"),
])
def test_a_condition_mostly_used_otherwise_after_a_word_of_illness(text, term):
    from dptext.privacy.lexical import MedicalDetector

    at = text.index(term)  # covered, alone or with a word before it ("BAD HEADACHE")
    assert any(d.start <= at and at + len(term) <= d.end for d in MedicalDetector().detect(text))


@pytest.mark.parametrize("text", ["The Great Depression hit the markets", "a cold wind blew", "the headache of taxes",
                                  "we finally caught a break today", "treating a variety of conditions",
                                  "she treated us to a break. Cold drinks"])
def test_no_condition_without_a_word_of_illness(text):
    from dptext.privacy.lexical import MedicalDetector

    assert MedicalDetector().detect(text) == []


@pytest.mark.parametrize("text,term", [
    ("my dad had a slight stroke last year", "slight stroke"),    # a degree of illness right before it
    ("MILD DEPRESSION RUNS IN THE FAMILY", "MILD DEPRESSION"),
    ("she had a heart attack in March", "heart attack"),          # WordNet's attacks of a condition
    ("he was rushed in after a seizure", "seizure"),
    ("the CVA left him weak on one side", "CVA"),
    ("Grandpa suffered a stroke", "stroke"),                       # a weak one after a word of illness
])
def test_attacks_of_a_condition_and_degrees_of_illness(text, term):
    from dptext.privacy.lexical import MedicalDetector

    assert term in [text[d.start:d.end] for d in MedicalDetector().detect(text)]


@pytest.mark.parametrize("text", ["a major attack on the city", "she was treated to a touch of class",
                                  "they suffered a spot of bad luck", "a bad spot to park", "the severe weather"])
def test_vague_attacks_and_degrees_of_other_things_stay_public(text):
    from dptext.privacy.lexical import MedicalDetector

    assert MedicalDetector().detect(text) == []
