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
