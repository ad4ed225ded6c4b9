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


@pytest.mark.parametrize("text,value", [
    ("His social security number is ZA 27 65 30", "ZA 27 65 30"),           # a linking verb, groups apart by spaces
    ("his social security number is 5.50825e+12", "5.50825e+12"),           # a spreadsheet's scientific notation
    ("HIS SOCIAL SECURITY NUMBER IS 3.61201E+12.", "3.61201E+12"),
    ("my national insurance number was QQ 12 34 56 C", "QQ 12 34 56 C"),
    ("account number 4417 1234 5678 9012 was closed", "4417 1234 5678 9012"),
    ("passport no. is X1234567.", "X1234567"),
])
def test_a_value_after_an_id_keyword_is_whole(text, value):
    assert value in _ids(text)


@pytest.mark.parametrize("text", [
    "the case no 12 3 was",     # groups with fewer than four digits
    "tax 12.50 was due",        # an amount, no scientific notation
    "order number is 7 or 8",
])
def test_short_numbers_after_an_id_keyword_stay_public(text):
    assert not _ids(text)


@pytest.mark.parametrize("text,value", [
    ("Patient ID 2231 was admitted", "2231"),
    ("the patient ID 22314 was admitted", "22314"),     # five digits: no Idaho ZIP code either
    ("MEMBER ID 40913 CALLED", "40913"),
    # every ID keyword labels the ID after it, not only the medical ones: one list serves both detectors
    ("Order ID 12345 was shipped yesterday", "12345"),
    ("please quote invoice id 77812 when you call", "77812"),
    ("The record ID 4471 belongs to him", "4471"),
    ("STAFF ID 55213 SIGNED IT", "55213"),
])
def test_the_id_a_label_names_is_no_idaho_address(text, value):
    found = recognize(text)
    assert value in [text[d.start:d.end] for d in found if d.label == "ID"]
    assert not [d for d in found if d.label == "ADDRESS"]


@pytest.mark.parametrize("text,town", [("Send it to Boise, ID 83702 now", "Boise"),
                                       ("ship to pocatello id 83201 now", "pocatello")])
def test_a_town_in_idaho_stays_an_address(text, town):
    addresses = [text[d.start:d.end] for d in recognize(text) if d.label == "ADDRESS"]
    assert any(town in a for a in addresses), addresses
