"""Words as chat writes them are no names: a negation without its apostrophe, a dropped g, letters without a
vowel, letters glued to a digit before them. Listed names of the same shapes stay names."""

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
    "just took that d and now im feelin better already!",
    "JUST TOOK THAT D AND NOW IM FEELIN BETTER ALREADY!",
    "iot footballs, the league claims nfl never saw the footage",
    "@cbsthismorning #3dprinted shoes are here",
])
def test_a_chat_form_is_no_name(policy, text):
    assert _persons(policy, text) == []


@pytest.mark.parametrize("text,name", [
    ("dustin and kevin came late", "dustin"),   # "dusting" is a word, but dustin is a listed name
    ("I met Dustin yesterday", "Dustin"),
    ("Ng Wei Ming arrived", "Ng Wei Ming"),       # two letters and no vowel: a name
    ("we asked kowalczyk about it", "kowalczyk"),
])
def test_listed_names_of_the_same_shapes_stay_names(policy, text, name):
    assert any(name in p for p in _persons(policy, text))


@pytest.mark.parametrize("text,name", [
    ("The report by Smrk was late.", "Smrk"),   # unlisted Czech surnames, alone
    ("I called Chrt yesterday.", "Chrt"),
])
def test_an_unlisted_surname_without_a_vowel_written_as_a_proper_noun_stays_a_name(policy, text, name):
    assert any(name in p for p in _persons(policy, text))


def test_spacy_person_spans_lose_chat_forms_but_keep_listed_names_of_that_shape():
    from dptext.privacy.lexical import NameDetector, refine
    from dptext.privacy.recognizers import Detection

    names = NameDetector()
    text = "then darin and feelin came"
    found = refine(text, [Detection(5, 10, "PERSON", "spacy"), Detection(15, 21, "PERSON", "spacy")], names)
    kept = {text[d.start:d.end] for d in found if d.label == "PERSON" and d.detector == "spacy"}
    assert "darin" in kept and "feelin" not in kept   # "daring" and "feeling" are both frequent words
