"""Words as chat writes them are no names: a negation without its apostrophe, letters without a vowel, letters
glued to a digit before them. Names of the same shapes stay names."""

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
    "iot footballs, the league claims nfl never saw the footage",
    "@cbsthismorning #3dprinted shoes are here",
])
def test_a_chat_form_is_no_name(policy, text):
    assert _persons(policy, text) == []


@pytest.mark.parametrize("text,name", [
    ("dustin and kevin came late", "dustin"),   # "dusting" is a frequent word, and so is "braving": a dropped g
    ('"imagine it" - @TroyAikman Bravin on #DeflateGate', "Bravin"),  # is no chat form
    ("I met Dustin yesterday", "Dustin"),
    ("Ng Wei Ming arrived", "Ng Wei Ming"),       # two letters and no vowel: a name
    ("we asked kowalczyk about it", "kowalczyk"),
])
def test_listed_names_of_the_same_shapes_stay_names(policy, text, name):
    assert any(name in p for p in _persons(policy, text))


def test_an_abbreviation_without_a_vowel_stays_in_its_address(policy):
    text = "ask the driver to stop at the corner of bem rkp. 97. st. and bem rkp. 97. st."
    cov = bytearray(len(text))
    for s in policy.detect(text):
        cov[s.start:s.end] = b"\1" * (s.end - s.start)
    assert all(cov[i] for i in range(text.index("bem"), text.index("rkp") + 3) if not text[i].isspace())


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
    text = "then vlk and sbt came"  # "vlk" is a listed name; "sbt" is not, and neither has a vowel
    assert "vlk" in names.lex.last | names.lex.first and "sbt" not in names.lex.last | names.lex.first
    found = refine(text, [Detection(5, 8, "PERSON", "spacy"), Detection(13, 16, "PERSON", "spacy")], names)
    kept = {text[d.start:d.end] for d in found if d.label == "PERSON" and d.detector == "spacy"}
    assert "vlk" in kept and "sbt" not in kept
