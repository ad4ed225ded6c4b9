"""Words as chat writes them are no names: a negation without its apostrophe, letters glued to a digit before
them. Names of similar shapes, and names beside chat forms, stay names."""

import pytest

from dptext.privacy.policy import get_policy


@pytest.fixture(scope="module")
def policy():
    return get_policy("entities")


def _persons(policy, text):
    return [text[s.start:s.end] for s in policy.detect(text) if s.label == "PERSON"]


@pytest.mark.parametrize("text", [
    "to better service a 16 yr old shouldnt have a hard time",
    "TO BETTER SERVICE A 16 YR OLD SHOULDNT HAVE A HARD TIME",
    "@cbsthismorning #3dprinted shoes are here",
])
def test_a_chat_form_is_no_name(policy, text):
    assert _persons(policy, text) == []


@pytest.mark.parametrize("text,name", [
    ("dustin and kevin came late", "dustin"),   # "dusting" is a frequent word, and so is "braving": a dropped g
    ('"imagine it" - @TroyAikman Bravin on #DeflateGate', "Bravin"),  # is no chat form
    ("NEITHER IS BEING ON HOLD FOR 5+ WESTERMARCK HRS #ONHOLDWITH", "WESTERMARCK"),  # nor a word without a vowel
    ("we asked kowalczyk about it", "kowalczyk"),
])
def test_names_of_similar_shapes_stay_names(policy, text, name):
    assert any(name in p for p in _persons(policy, text))


def test_the_letters_of_a_postcode_after_its_digit_are_no_chat_form(policy):
    """``4yx`` ends a UK postcode: its letters stay as they are read (the recased copy spaCy reads keeps them),
    and the town after the postcode is part of the address."""
    text = "is that all computer things doesn't make trouble to the flight ? 1064 croaghan pine, nf8w 4yx manchester"
    cov = bytearray(len(text))
    for s in policy.detect(text):
        cov[s.start:s.end] = b"\1" * (s.end - s.start)
    assert all(cov[i] for i in range(text.index("1064"), len(text)) if not text[i].isspace())


def test_spacy_person_spans_lose_chat_forms_but_keep_listed_names_of_that_shape():
    from dptext.privacy.lexical import NameDetector, refine
    from dptext.privacy.recognizers import Detection

    names = NameDetector()
    text = "then yount and didnt came"  # "yount" is a listed surname; "didnt" is "did" + "nt"
    assert "yount" in names.lex.last | names.lex.first and "didnt" not in names.lex.last | names.lex.first
    found = refine(text, [Detection(5, 10, "PERSON", "spacy"), Detection(15, 20, "PERSON", "spacy")], names)
    kept = {text[d.start:d.end] for d in found if d.label == "PERSON" and d.detector == "spacy"}
    assert "yount" in kept and "didnt" not in kept
