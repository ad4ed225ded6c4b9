"""A number written in blocks apart by single spaces, seven digits or more, is an ID (ids.SPACED_DIGITS)."""

import pytest

from dptext.privacy.recognizers import recognize


def _ids(text):
    return [text[d.start:d.end] for d in recognize(text, ("ID",))]


@pytest.mark.parametrize("text,value", [
    ("you should 6923 0538 of told me", "6923 0538"),   # no cue word, two blocks: the phone recognizer needs three
    ("the car 121 8487 was parked outside", "121 8487"),
    ("REF 44 871 0231 ON FILE", "44 871 0231"),
    ("ring 1711 2073 after six", "1711 2073"),           # two blocks that could be years, but far apart
])
def test_digits_in_blocks_are_an_id(text, value):
    assert value in _ids(text)


@pytest.mark.parametrize("text", [
    "the war years 1891 1914 changed it",    # years, not a number
    "from 1775 1836 and",
    "scores of 12 345 were",                   # five digits
    "it sold 1,250 000 copies",                # a comma opens it: an amount
])
def test_years_short_numbers_and_amounts_stay_public(text):
    assert not [v for v in _ids(text) if " " in v]
