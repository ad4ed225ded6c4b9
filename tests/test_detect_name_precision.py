"""What is no person's name, and what a cue, a list or a pair makes one, on sentences written for these tests.

Precision: field names before a code, spelled-out months and weekdays, short words in capitals in text that is
not all capitals, a frequent lower-case word after a capitalized name, places that no name list holds, military
titles and the cue word itself. Recall: cues of messages and assignments, lists of names, and an infrequent word
after a name that GloVe or a cue vouches for.
"""

import pytest

from dptext.privacy.lexical import NameDetector, refine
from dptext.privacy.policy import get_policy
from dptext.privacy.recognizers import Detection


@pytest.fixture(scope="module")
def names():
    return NameDetector()


@pytest.fixture(scope="module")
def policy():
    return get_policy("entities")


def _names(det, text):
    return [text[d.start:d.end] for d in det.detect(text)]


@pytest.mark.parametrize("text,word", [
    ("IBAN: CH2675563627953195728", "IBAN"),                     # a field name that is a listed given name
    ("vin 1HGCM82633A004352 on the logbook", "vin"),
    ("PNR: X7K2Q9", "PNR"),                                      # a speaker's line does not start with a code
    ("in the wake of Monday's fierce storms", "'s"),             # a weekday, possessive too
    ("ADMITTED ON TUESDAY 05 DECEMBER 1967", "DECEMBER"),          # a month is a rare surname, but a date here
    ("Acme hired a new CEO last week.", "CEO"),                    # a short word in capitals: an acronym
    ("our bags went from ORD to the wrong gate", "ORD"),
    ("Repair wait at gate - Capt Said the paperwork was late", "Capt"),  # a military title, no name
])
def test_no_name(names, text, word):
    assert not any(word in n for n in _names(names, text)), _names(names, text)


@pytest.mark.parametrize("text,expected", [
    ("IBAN: CH2675563627953195728 for Nino Rossi", ["Nino Rossi"]),  # the field name only before a code
    ("April Jones and June Lee met on Monday", ["April Jones", "June Lee"]),  # months that are given names
    ("JOHN SMITH called twice", ["JOHN SMITH"]),                    # a name in capitals, two words
    ("Sadly KIM left early", ["KIM"]),                               # a distinctive name in capitals
    ("I SAW ANNA TODAY", ["ANNA"]),                                  # all capitals: no acronym there
    ("Okonjo: 5 apples please", ["Okonjo"]),                        # a speaker whose line opens with a number
    ("Capt. Okafor called the tower.", ["Okafor"]),                 # after the title, the name
])
def test_still_a_name(names, text, expected):
    assert _names(names, text) == expected


@pytest.mark.parametrize("text,expected", [
    ("the fate of an Adelaide man suspected of fraud", ["Adelaide"]),  # a lower-case frequent word ends it
    ("Yesterday Maria lopez was at the gym", ["Maria lopez"]),         # an infrequent one does not
])
def test_a_lower_case_frequent_word_ends_a_capitalized_name(names, text, expected):
    assert _names(names, text) == expected


def test_a_place_no_name_list_holds_is_a_place(names, policy):
    # the name lists leave "Perth" out, the "and" of two people does not take it in, and spaCy's PERSON is
    # cut to nothing: the places detector labels it
    text = "The new route links Perth and Darwin."
    assert _names(names, text) == ["Darwin"]
    spans = {text[s.start:s.end]: s.label for s in policy.detect(text)}
    assert spans["Perth"] == "GPE"


def test_refine_drops_a_spacy_person_that_is_a_place_or_an_unlisted_lower_case_word(names):
    text = "Yesterday Anna from Berlin told me the checkin at Perth was slow."
    found = [Detection(text.index("checkin"), text.index("checkin") + 7, "PERSON", "spacy"),
             Detection(text.index("Perth"), text.index("Perth") + 5, "PERSON", "spacy"),
             Detection(text.index("Anna"), text.index("Anna") + 4, "PERSON", "spacy")]
    kept = [text[d.start:d.end] for d in refine(text, found, names) if d.label == "PERSON"]
    assert kept == ["Anna"]


@pytest.mark.parametrize("casing", [str, str.lower, str.upper])
@pytest.mark.parametrize("text", ["Tel: +44 20 7946 0958", "Attn: Brown", "Tel: Maria Rossi"])
def test_a_field_label_before_its_colon_is_no_name(policy, text, casing):
    # spaCy reads "Tel" as a person, and the name lists read a word before a colon at a line's start as a speaker
    text = casing(text)
    label = text.index(":")
    assert not [s for s in policy.detect(text) if s.label == "PERSON" and s.start < label]


@pytest.mark.parametrize("casing", [str, str.lower, str.upper])
def test_the_value_after_a_field_label_is_still_a_name(policy, casing):
    text = casing("Tel: Maria Rossi")
    assert [text[s.start:s.end] for s in policy.detect(text) if s.label == "PERSON"] == [casing("Maria Rossi")]


def test_the_cue_word_is_no_part_of_the_name(names):
    assert _names(names, "Student Oyenike Salami was late again.") == ["Oyenike Salami"]


@pytest.mark.parametrize("text,expected", [
    ("congrats to hope on the new job!", ["hope"]),
    ("assigned to grace for review", ["grace"]),
    ("message from joy: running late", ["joy"]),
    ("landlord grace will fix the boiler", ["grace"]),
    ("student oyenike salami was late again.", ["oyenike salami"]),   # an infrequent word after a cued name
    ("tenant okafor salami paid late", ["okafor salami"]),           # ... a listed surname too
    ("discharge summary for mojisola salami", ["mojisola salami"]),  # ... after a word GloVe reads as a name
    ("volunteers: eve, vakarė and cezara", ["eve", "vakarė", "cezara"]),  # a list with two distinctive names
])
def test_cues_lists_and_pairs(names, text, expected):
    assert _names(names, text) == expected


@pytest.mark.parametrize("text", [
    "we need bread, milk, rose and butter",    # one listed word in a list of groceries
    "she bought bell, wood and stone",         # listed words, none distinctive
    "message from the office: running late",   # a frequent word after the cue
])
def test_no_list_or_cue_without_a_name(names, text):
    assert _names(names, text) == []


@pytest.mark.parametrize("text,expected", [
    ("returned by blessing ojo on time", ["blessing ojo"]),      # a virtue name before a surname
    ("we want peace and quiet at last", []),                     # alone, still an ordinary word
    ("a gift for the whole team", []),
])
def test_virtue_names_given_in_west_africa(names, text, expected):
    assert _names(names, text) == expected

