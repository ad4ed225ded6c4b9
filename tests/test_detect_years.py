"""A year written alone is a date, a count of the same digits is not (dptext.privacy.dates.YEAR_ALONE)."""

import pytest

from dptext.privacy import dates


def _found(text):
    return sorted(text[a:b] for a, b in dates.find(text))


@pytest.mark.parametrize("text,year", [
    ("the expedition reached the coast in 1484, after which trade began", "1484"),
    ("SHE HAS LIVED THERE SINCE 2011 AND", "2011"),
    ("born in 1987", "1987"),
    ("by 1066 the town had a wall", "1066"),
    ("the tickets of 2019 were sold out", "2019"),
    ("we moved in winter 1950.", "1950"),
])
def test_a_year_alone_is_a_date(text, year):
    assert _found(text) == [year]


@pytest.mark.parametrize("text", [
    "the study counted 1500 cases in the region",
    "in 1200 patients the drug failed",
    "about 2000 people came",
    "it costs $2015 a month",
    "version 3.2019 is out",
    "call 0800 1999 tomorrow",
    "room #2015 is free",
    "see page 1234 of the report",
])
def test_a_count_or_code_of_four_digits_is_no_year(text):
    assert _found(text) == []


@pytest.mark.parametrize("text,date", [
    ("gadgets for the 2014 holiday season", "2014"),   # a year a determiner opens
    ("THEIR 1998 ALBUM WAS BETTER", "1998"),
    ("booking problems for 03.03.", "03.03"),          # a day and month with a dot after a dating word
    ("closed on 25.12 and 26.12", "25.12"),
])
def test_a_year_as_a_modifier_and_a_dotted_day_are_dates(text, date):
    assert date in _found(text)


@pytest.mark.parametrize("text", ["two for 12.50 each", "back for 10.30 tonight", "the 1500 metres final",
                                  "on 3.5 acres"])
def test_prices_distances_and_decimals_are_no_dates(text):
    assert _found(text) == []
