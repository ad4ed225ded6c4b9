"""Dates, phones, identifiers and addresses in the forms of ``benchmarks/detect_frames3.py`` (forms, signatures,
notes, letters), on sentences written for these tests: each rule has a case it covers and a case that stays out."""

import pytest

from dptext.privacy.recognizers import recognize


def _found(text, label):
    return sorted({text[d.start:d.end] for d in recognize(text, (label,))})


def _covered(text, label, value):
    """Every character of ``value`` in ``text`` lies in a detection of ``label``."""
    s = text.index(value)
    spans = [(d.start, d.end) for d in recognize(text, (label,))]
    return all(any(a <= i < b for a, b in spans) for i in range(s, s + len(value)))


@pytest.mark.parametrize("text,date", [
    ("started Oct 17 '61, left in May", "Oct 17 '61"),  # a two-digit year after an apostrophe
    ("JUL 31 ’40 - CALLED ABOUT THE LEAK", "JUL 31 ’40"),
    ("opened on Friday, 17 Oct 1935.", "Friday, 17 Oct 1935"),  # a weekday before a date
    ("dob thu, 30 jan 1991, tel", "thu, 30 jan 1991"),
    ("left message thurs 2/25.", "thurs 2/25"),  # a weekday before a day and month in figures
    ("STARTED SAT 11/13, LEFT SOON", "SAT 11/13"),
])
def test_dates_with_a_weekday_or_a_short_year(text, date):
    assert date in _found(text, "DATE")


@pytest.mark.parametrize("text,kept", [
    ("see you May 5 'cause I'm away", ["May 5"]),  # an apostrophe without a year
    ("He left Monday and 22 Sep 2025 was the deadline", ["22 Sep 2025"]),  # a weekday not right before the date
    ("I sat 5/6 exams this year", []),  # "sat" before a noun
    ("mon 13/14 is no day", []),  # no month
])
def test_weekday_and_year_rules_stay_near_dates(text, kept):
    assert _found(text, "DATE") == kept


@pytest.mark.parametrize("text,phone", [
    ("called from +468533239 about the leak", "+468533239"),  # E.164, 8 to 15 digits after the plus
    ("Whatsapp +4331622704187 for details", "+4331622704187"),
    ("T: 0012014352588 ext. 7371\n", "0012014352588 ext. 7371"),  # 00 and an extension
    ("mobile: (+30) 6977 346469. landline", "(+30) 6977 346469"),  # a group of six after a bracketed code
])
def test_international_numbers_without_separators(text, phone):
    assert phone in _found(text, "PHONE")


@pytest.mark.parametrize("text", ["we raised +12345 this year", "score (+30) 12 today"])
def test_short_numbers_after_a_plus_are_no_phone(text):
    assert _found(text, "PHONE") == []


@pytest.mark.parametrize("text,code", [
    ("The vehicle, 2-RBV-456, is registered here", "2-RBV-456"),  # a one-character first group, a vehicle and a comma
    ("THE VEHICLE, V-102-WO, IS OUTSIDE", "V-102-WO"),
    ("2-IYI-728 was caught speeding", "2-IYI-728"),  # the same without a vehicle before it
    ("The vehicle, HX 49575, is outside", "HX 49575"),  # a plate after a vehicle and a comma
    ("FG75 VZU WAS CAUGHT SPEEDING", "FG75 VZU"),  # a British plate
    ("fg75 vzu was caught speeding", "fg75 vzu"),
    ("National ID: ZZ 97 53 80 T", "ZZ 97 53 80 T"),  # a national insurance number
    ("nino zz975380t on file", "zz975380t"),
])
def test_plates_and_insurance_numbers(text, code):
    assert _covered(text, "ID", code)


@pytest.mark.parametrize("text", ["we met a-1234 and x-2019 fans", "AB12 THE END", "the car, which was red",
                                  "open 6-10pm daily"])
def test_codes_that_are_no_plate(text):
    assert _found(text, "ID") == []


@pytest.mark.parametrize("text,address", [
    ("tel 795 812 069, ulica Dębowa 162.", "ulica Dębowa 162"),  # a phone before the street is no house number
    ("The vehicle, HX 49575, is registered to 643 Bakketoppen, 5290 Sarpsborg.", "643 Bakketoppen, 5290 Sarpsborg"),
    ("We are moving to 1172 Tangerudbakken, 2285 Kragerø at the end", "1172 Tangerudbakken, 2285 Kragerø"),
    ("PREVIOUS ADDRESS: 1233 VOIE PRINCIPALE, 49862 CHAUMONT", "1233 VOIE PRINCIPALE, 49862 CHAUMONT"),
    ("We are moving to Heidwiesen 441 at the end of the month.", "Heidwiesen 441"),  # cues of moving and sending
    ("please send the keys to Matteolei 6, thanks!!", "Matteolei 6"),
    ("Previous address (3 years): Švecova 715", "Švecova 715"),
    ("her last known address was mathisenåsen 1", "mathisenåsen 1"),
    ("My new flat is Remetska 9a/4!", "Remetska 9a/4"),
    ("SHIP TO: SVOJSÍKOVA 73 | TEL. 601 437 623", "SVOJSÍKOVA 73"),
    ("previous address: 1325 bølerbakken", "1325 bølerbakken"),  # a house number first
    ("previous address (3 years): 542 trask alleyway", "542 trask alleyway"),
    ("home address Conjunto Macedo, 60.", "Conjunto Macedo, 60"),  # the cue inside the words, a stop after the number
    ("MY NEW FLAT IS FEIRA IGOR GOMES, 421!", "FEIRA IGOR GOMES, 421"),
])
def test_addresses_after_cues_and_beside_numbers(text, address):
    assert _covered(text, "ADDRESS", address)
    assert not any(d for d in recognize(text, ("ADDRESS",)) if d.start < text.index(address) - 1)


@pytest.mark.parametrize("text", [
    "SSN 514 74 0290 does not match our records.",  # no street and postcode inside a number
    "hey its me, new number 06555 735 790 - save it",
    "Ph. 06154 33783140",
    "we moved to page 12 and she lives at home",  # a cue before frequent English words
    "return to Step 3, then registered to Windows 10",
    "we had 500 people, 12345 came",  # a count before a comma
    "John Smith, 60. He retired",
    "dated as early as 6550 to 6145 BC. The",  # one text read as a street and a postcode at once
    "by Gregor Reisch: Margarita Philosophica, 1503. The woodcut",
])
def test_numbers_and_cues_without_an_address(text):
    assert _found(text, "ADDRESS") == []


@pytest.mark.parametrize("text,address", [
    ("Looking to support Littler's in Traversara 48020 in its mission.", "Traversara 48020"),  # a 5-digit code
    ("Our offices are located at 185 M. Sfakianaki, Dierona, LI 4564", "Dierona, LI 4564"),  # a town read twice
])
def test_one_text_read_as_two_anchors_of_a_place(text, address):
    assert _covered(text, "ADDRESS", address)


@pytest.mark.parametrize("text", ["@united UA 1706 delayed again", "@JetBlue flight 1180 EWR is late"])
def test_a_flight_number_read_two_ways_is_no_address(text):
    assert _found(text, "ADDRESS") == []


@pytest.mark.parametrize("text,date", [
    ("NHL centre rankings:Jan.22 #hockey", "Jan.22"),      # a month, its dot and the day without a space
    ("RANKINGS:JAN.22", "JAN.22"),
    ("it was borrowed into Arabic about 600 BC, as", "600 BC"),  # a year of an era
    ("the walls were rebuilt in AD 70 and again", "AD 70"),
    ("a recession like those of the mid 70s and the early 80S", "80S"),  # decades, in any casing
    ("music of the '90s and the 1920s", "1920s"),
])
def test_era_years_decades_and_a_dotted_month(text, date):
    assert date in _found(text, "DATE")


@pytest.mark.parametrize("text", ["my ad 50% off today", "he got grade 10s", "the price was $20s", "mar. is short"])
def test_no_era_decade_or_month_date(text):
    assert _found(text, "DATE") == []


@pytest.mark.parametrize("text,address", [
    ("Please deliver to Apt. 559 on the third floor.", "Apt. 559"),       # a unit read two ways
    ("I moved to van Aragonstraat 924, 1418 JG Wijmers last week.", "Aragonstraat 924, 1418 JG Wijmers"),  # a particle
    ("SEND IT TO TYLOVA 1466, STARÉ MESTO U MORAVSKÉ TREBOVÉ, PA 569 32 PLEASE", "PA 569 32"),  # after a comma
    # after a handle (a sentence of the real set's dev part)
    ("@UNITED WONDER WHY BALSEMIENBEEMD 1388, 1606 MX SLOTEN PEOPLE HATE AIRLINES?",
     "BALSEMIENBEEMD 1388, 1606 MX SLOTEN"),
])
def test_units_particles_and_last_lines(text, address):
    assert _covered(text, "ADDRESS", address)


@pytest.mark.parametrize("text", ["the van HX 49575 was parked outside", "@USAirways 1729 connecting",
                                  "united flt 3444 delayed again"])
def test_plates_after_a_van_and_flights_are_no_address(text):
    assert _found(text, "ADDRESS") == []
