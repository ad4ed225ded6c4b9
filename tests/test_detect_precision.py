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


def test_conditions_filed_outside_wordnets_states_are_medical(medical):
    # "autism" is a noun.cognition synset and "menorrhagia" a noun.process one, each right under a condition
    text = "AUTISM RUNS IN THE FAMILY; her menorrhagia improved"
    assert [text[d.start:d.end] for d in medical.detect(text)] == ["AUTISM", "menorrhagia"]


def test_superlatives_and_men_plurals_are_english_words():
    # so the name lists do not read them as unknown (name-like) words
    from dptext.privacy.gazetteers import lexicon

    lex = lexicon()
    assert all(lex.is_word(w) for w in ("largest", "gunmen", "women", "batsmen", "smallest"))
    assert not lex.is_word("kowalczyk")


@pytest.mark.parametrize("text,expected", [
    ("on august 29 when he crashed into mt hotham", []),  # a clause, not a street line
    ("ABOUT 26 COUNTRIES WILL TRACK THE STORM", []),
    ("she lives at 45 Will Rogers Rd in Tulsa", ["45 Will Rogers Rd"]),  # title-case: a name in the street
    ("send it to 4619 kingsley rd", ["4619 kingsley rd"]),
])
def test_a_street_line_holds_no_clause_words(text, expected):
    from dptext.privacy.addresses import find

    assert [text[a:b] for a, b in find(text)] == expected


@pytest.mark.parametrize("text,expected", [
    ("FLIGHT 4146 TO DENVER WAS LATE AGAIN", []),   # capitals that spell "to" after a number: a sentence
    ("MY FLIGHT AA 1234 TO BOSTON LEAVES AT 7", []),  # a flight's number is no postcode
    ("POST IT TO KORENBLOEMLAAN 14, 7311 AS HOOGWOUD TODAY", ["KORENBLOEMLAAN 14, 7311 AS HOOGWOUD"]),
    ("Ship to Flight Lane 12, 10115 Berlin", ["Flight Lane 12, 10115 Berlin"]),
])
def test_flight_numbers_are_no_addresses(text, expected):
    from dptext.privacy.addresses import find

    assert [text[a:b] for a, b in find(text)] == expected


@pytest.mark.parametrize("text,expected", [
    ("we text the kids at 5 10 15 20 minutes past", []),  # a list of counts
    ("WE TEXT THE KIDS AT 5 10 15 20 MINUTES PAST", []),
    ("my number is 06 12 34 56 78", ["06 12 34 56 78"]),  # grouped in twos: a phone
    ("call me on 5 10 15 20 3", ["5 10 15 20 3"]),        # after a phone word, any grouping
])
def test_a_list_of_small_numbers_is_no_phone(text, expected):
    from dptext.privacy.recognizers import recognize

    assert sorted({text[d.start:d.end] for d in recognize(text, ("PHONE",))}) == expected


@pytest.mark.parametrize("text,expected", [
    ("Dispatch to Weibelstrasse 38, 7586 Nyon; phone 052 597 55 22.", ["Weibelstrasse 38, 7586 Nyon"]),
    ("the car KF 87960 was parked outside", []),
])
def test_a_phone_or_vehicle_word_opens_no_street(text, expected):
    from dptext.privacy.addresses import find

    assert [text[a:b] for a, b in find(text)] == expected


@pytest.mark.parametrize("text,names", [
    ("please forward kathy2071@yandex.com the tickets", []),
    ("damn, jack white & run maldives1810@outlook.com the jewels", ["jack white"]),
    ("write to ngozi okafor at ngozi.okafor@gmail.com today", ["ngozi okafor"]),
])
def test_an_email_local_part_lends_no_name_word_to_the_words_before_it(text, names):
    # "kathy" of kathy2071@… names the account and lies inside the EMAIL span: no name of its own, nor of "run"
    from dptext.privacy.policy import get_policy

    policy = get_policy("entities")
    assert [text[d.start:d.end] for d in policy.names.detect(text)] == names
    spans = policy.detect(text)
    # each name stays covered (under PERSON, or a spaCy ORG that takes it: "jack white & run"), and the
    # email's span is the email alone
    for name in names:
        i = text.index(name)
        assert any(s.start <= i and i + len(name) <= s.end for s in spans), name
    assert [(text[s.start:s.end], s.label) for s in spans if "@" in text[s.start:s.end]] == [
        (next(w for w in text.split() if "@" in w), "EMAIL")]


@pytest.mark.parametrize("text", [
    "others believe autism should be accepted as a difference and not treated as a disorder",
    "THE DISEASE SPREAD AND THE ILLNESS WAS NAMED",
])
def test_a_bare_disease_or_disorder_names_no_condition(medical, text):
    assert [text[d.start:d.end] for d in medical.detect(text) if text[d.start:d.end].lower() != "autism"] == []


def test_a_named_condition_alone_stays_medical(medical):
    text = "the singer died of cancer after a fever"
    assert [text[d.start:d.end] for d in medical.detect(text)] == ["cancer", "fever"]


@pytest.mark.parametrize("text", [
    "the money would be handed over before Christmas as some workers had waited",
    "anyone with an extra lemme know, do y'all have one?",
])
def test_holidays_and_chat_forms_are_no_names(text):
    from dptext.privacy.policy import get_policy

    spans = get_policy("entities").detect(text)
    assert [text[s.start:s.end] for s in spans if s.label == "PERSON"] == []


@pytest.mark.parametrize("text", [
    "During his 20-plus year tour career he won often",
    "the bank cut its rate to a 40-year low",
])
def test_durations_with_a_hyphen_are_no_dates(text):
    from dptext.privacy.policy import get_policy

    assert [text[s.start:s.end] for s in get_policy("entities").detect(text) if s.label == "DATE"] == []
