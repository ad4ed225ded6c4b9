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


@pytest.fixture(scope="module")
def entities():
    from dptext.privacy.policy import get_policy

    return get_policy("entities")


def _found(pol, text):
    return [(text[s.start:s.end], s.label) for s in pol.detect(text)]


@pytest.mark.parametrize("text", [
    "the largest gunmen group attacked the government and the women left",
    "THE LARGEST GUNMEN GROUP ATTACKED THE GOVERNMENT AND THE WOMEN LEFT",
    "the suffix is added to the verb",  # spaCy reads "suffix" as a place here
    "the tests showed that the amphibians were fine",  # and "amphibians" as a group
])
def test_ordinary_words_without_a_cue_are_no_names(entities, text):
    # superlatives, irregular plurals and common nouns: no capital where casing means something, no proper noun
    assert _found(entities, text) == []


def test_names_with_a_cue_keep_their_label(entities):
    text = "maria lopez of the red cross met the senate in paris with american and greek troops"
    spans = entities.detect(text)
    for needle in ("maria lopez", "red cross", "senate", "paris", "american", "greek"):
        i = text.index(needle)
        assert any(s.start <= i and i + len(needle) <= s.end for s in spans), (needle, _found(entities, text))


def test_the_rule_reads_casing_proper_nouns_and_name_lists(entities):
    from dptext.privacy.lexical import _ordinary_word
    from dptext.privacy.recognizers import Detection

    lex = entities.names.lex

    def dropped(text, word, ordinary):
        i = text.index(word)
        return _ordinary_word(text, Detection(i, i + len(word), "ORG", "spacy"), lex, ordinary)
    assert dropped("they said the government won", "the government", False)
    assert not dropped("They said the Government won.", "Government", True)  # a capital in ordinary casing
    assert dropped("They said the government won.", "government", True)
    assert not dropped("we flew to turkey", "turkey", False)  # WordNet's proper noun Turkey
    assert not dropped("ask maria", "maria", False)  # a listed given name that is no frequent word
    assert not dropped("the 42nd street", "42nd street", False)  # digits: an address or number, not this rule


@pytest.mark.parametrize("text,expected", [
    ("on august 29 when he crashed into mt hotham", []),  # a clause, not a street line
    ("ABOUT 26 COUNTRIES WILL TRACK THE STORM", []),
    ("she lives at 45 Will Rogers Rd in Tulsa", ["45 Will Rogers Rd"]),  # title-case: a name in the street
    ("send it to 4619 kingsley rd", ["4619 kingsley rd"]),
])
def test_a_street_line_holds_no_clause_words(text, expected):
    from dptext.privacy.addresses import find

    assert [text[a:b] for a, b in find(text)] == expected
