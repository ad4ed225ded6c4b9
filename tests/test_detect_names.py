"""Name detection from word lists, word shapes and casing, on sentences written for these tests.

Recall: surname endings, letters English does not use, particles, a given name before an infrequent word,
proper nouns inside a sentence, speakers of dialogue. Precision on everyday chat text: the pronoun "I",
negations, interjections, lower-case listed words in cased text, handles and hashtags.
"""

import pytest

from dptext.privacy.lexical import NameDetector, refine
from dptext.privacy.recognizers import Detection


@pytest.fixture(scope="module")
def names():
    return NameDetector()


def _names(det, text):
    return [text[d.start:d.end] for d in det.detect(text)]


@pytest.mark.parametrize("text,name", [
    ("the keys are with kwiatkowiak now", "kwiatkowiak"),            # -iak
    ("PLEASE FORWARD IT TO PAPADOPOULAKIS", "PAPADOPOULAKIS"),        # -akis
    ("the nurse asked for ørjasæter twice", "ørjasæter"),            # letters English does not use
    ("we saw pieter van den berg yesterday", "pieter van den berg"),  # particles reach the surname
    ("the form was signed by margarethe drub", "margarethe drub"),    # given name + infrequent word
    ("Leave the parcel for Ngubane at the front desk.", "Ngubane"),   # proper noun inside a sentence
    ('Tsegaye: "Where were you last night?"', "Tsegaye"),             # speaker of a line of dialogue
])
def test_names_from_shape_particles_and_position(names, text, name):
    assert name in _names(names, text)


@pytest.mark.parametrize("text", [
    "honestly I dunno what happened",        # the pronoun is no initial
    "Oh, and the app crashed again.",        # interjections are no names
    "We ordered a chai at noon, then left.",  # a lone lower-case listed word in cased text
    "Okay so we waited 30min Late on the tarmac.",  # two ambiguous words, one in lower case
    "The App store froze again.",            # a rare census surname is weak against casing
    "Thanks, we will wait in Terminal B. Trains run late.",
])
def test_chat_words_are_no_names(names, text):
    assert _names(names, text) == []


def test_a_negation_is_no_name_word(names):
    assert _names(names, "tom didn't call back") == ["tom"]


def test_handles_and_hashtags_leave_person_spans(names):
    text = "Nobody asked #DeflateGate about @Kowalczyk Maria Lopez today"

    def at(piece):
        i = text.index(piece)
        return Detection(i, i + len(piece), "PERSON", "spacy")

    out = [text[d.start:d.end] for d in refine(text, [at("DeflateGate"), at("Maria Lopez")], names)]
    assert out == ["Maria Lopez"]
