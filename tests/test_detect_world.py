"""Address and phone formats of more countries, on sentences written for these tests: each case names the form
a rule covers, and the last cases what stays out."""

import pytest

from dptext.privacy.recognizers import recognize


def _found(text, label):
    return sorted({text[d.start:d.end] for d in recognize(text, (label,))})


@pytest.mark.parametrize("text,address", [
    ("please post it to H.No. 12, Gandhi Road, Pune 411001 today", "H.No. 12, Gandhi Road, Pune 411001"),  # India
    ("send it to 88/4, Shanti Nagar, Kota-324005 soon", "88/4, Shanti Nagar, Kota-324005"),
    ("the office is Calle 14 N° 302, Mendoza 5500, Mendoza", "Calle 14 N° 302, Mendoza 5500, Mendoza"),  # N° mark
    ("deliver to 7/21 Hollis Parade, Glenelg, SA, 5045 please", "7/21 Hollis Parade, Glenelg, SA, 5045"),  # Australia
    ("WRITE TO STRADA MORILOR NR. 9 BL. 4 AP. 12, BRASOV, 500123", "STRADA MORILOR NR. 9 BL. 4 AP. 12, BRASOV, 500123"),
    ("our flat: bulevardul unirii, cluj, 400112", "bulevardul unirii, cluj, 400112"),  # a town and a code after it
    ("post to 14 Quay Street F26 X2Y3 Ballina now", "14 Quay Street F26 X2Y3"),  # an Eircode after the street
    ("she moved to Rua do Sol 12, 4000-123 Porto last year", "Rua do Sol 12, 4000-123 Porto"),  # Portugal
    ("deliver to Ilica 5a, 10000 Zagreb by noon", "Ilica 5a, 10000 Zagreb"),  # a house number's letter is no word
    ("Marktplatz 3, 4020 Linz an der Donau", "Marktplatz 3, 4020 Linz an der Donau"),  # particles in a town
    ("Privada Robles 18 4, Tepic, NAY 63000", "Privada Robles 18 4, Tepic, NAY 63000"),  # two numbers, a region
])
def test_addresses_of_more_countries(text, address):
    assert address in _found(text, "ADDRESS")


@pytest.mark.parametrize("text", [
    "thanks, order 552341 is on its way",     # a frequent word before six digits is no town
    "Ikeja 250000 fans cheered",              # without a comma before it, a town and code need a street beside them
])
def test_six_digit_numbers_alone_are_no_address(text):
    assert _found(text, "ADDRESS") == []


def test_a_country_code_in_brackets_opens_a_phone_number():
    assert _found("reach me on (+358) 401234567 after six", "PHONE") == ["(+358) 401234567"]


def test_a_national_number_may_hold_a_group_of_five_digits():
    assert _found("Tel. bitte 04242 56810 177 anrufen", "PHONE") == ["04242 56810 177"]


@pytest.mark.parametrize("text,plate", [
    ("they towed the car KX12 ABD this morning", "KX12 ABD"),      # a plate after the vehicle, up to the verb
    ("van reg: zh-431 220, white", "zh-431 220"),
    ("the car LB-579 L was parked outside", "LB-579 L"),            # letters dashed to digits are no word ("lb")
    ("THE CAR LB-579 L WAS PARKED OUTSIDE", "LB-579 L"),            # nor is one letter other than "a" or "i"
    ("the car pan671 was parked outside", "pan671"),                # up to 8 characters in one group
    ("THE CAR 7ABC123 WAS TOWED", "7ABC123"),
])
def test_a_registration_plate_after_its_vehicle_is_an_id(text, plate):
    assert plate in _found(text, "ID")


@pytest.mark.parametrize("text", ["the car 2 days ago was fine", "my car in 2019 broke down",
                                  "the car 2 a day", "THE VAN IN 2-3 DAYS", "the car 10mins away",
                                  "the car 2days ago"])
def test_english_words_after_a_vehicle_are_no_plate(text):
    assert _found(text, "ID") == []


@pytest.mark.parametrize("text,date", [
    ("the card expires 08-Jun-1959, sadly", "08-Jun-1959"),      # a date, not a code
    ("born the eighth of june in leeds", "eighth of june"),      # ordinals in words
    ("DUE MARCH THE TWENTY-FIRST", "MARCH THE TWENTY-FIRST"),
])
def test_written_forms_of_dates(text, date):
    assert _found(text, "DATE") == [date]


@pytest.mark.parametrize("text", ["the first may be late", "born in spring 1959, she"])
def test_an_ordinal_before_may_and_an_english_word_before_a_year_are_no_date_or_street(text):
    assert _found(text, "ADDRESS") == [] and "first may" not in _found(text, "DATE")


@pytest.mark.parametrize("text,address", [
    ("ship it to Lindenweg 4, 1958 Obermarkt please", "Lindenweg 4, 1958 Obermarkt"),  # a year-like code after a comma
    ("deliver to Level 3 12 Acacia Tollway, Manly, NSW, 2095", "Level 3 12 Acacia Tollway, Manly, NSW, 2095"),
])
def test_codes_that_look_like_years_and_levels_before_the_house(text, address):
    assert address in _found(text, "ADDRESS")


@pytest.mark.parametrize("text,phone", [
    ("call (06)31/482-7715 today", "(06)31/482-7715"),     # an area code before a slash
    ("ring 1 (415) 555-0139 now", "1 (415) 555-0139"),     # a leading 1 before the bracketed area code
])
def test_more_phone_layouts(text, phone):
    assert _found(text, "PHONE") == [phone]


@pytest.mark.parametrize("text", ["In 2020, 2020 report was late", "we scored 27/165 runs",
                                  "as on page 5, 2021 report says"])  # a year, not a code, before an English word
def test_years_and_scores_stay_out(text):
    assert _found(text, "ADDRESS") == [] and _found(text, "PHONE") == []


def test_a_street_word_that_is_an_english_stop_word_keeps_its_street():
    # Croatian "put" (road) is an English stop word; "about 5" still is no street
    assert "Gornji put 4a, 21000 Split" in _found("post it to Gornji put 4a, 21000 Split today", "ADDRESS")
    assert _found("we waited about 5, 21000 people left", "ADDRESS") == []
    assert _found("the word abacus dates before 1387 AD", "ADDRESS") == []


def test_reaching_someone_at_a_number_cues_a_phone():
    assert _found("you can reach the office at 9432 7725 today", "PHONE") == ["9432 7725"]
    assert _found("we reached the summit at 8848 m", "PHONE") == []


def test_australian_street_types():
    assert "14 MARINE ESPLANADE, BRIGHTON 3186" in _found("POST TO 14 MARINE ESPLANADE, BRIGHTON 3186 BY FRIDAY", "ADDRESS")


def test_a_role_that_is_a_given_name_joins_the_name():
    from dptext.privacy.names import NameDetector

    text = "the letter from pastor zubiri arrived"  # Pastor is a Spanish given name, and a role
    assert [text[d.start:d.end] for d in NameDetector().detect(text)] == ["pastor zubiri"]


@pytest.mark.parametrize("text,phone", [
    ("4817 2290 is the number they gave me.", "4817 2290"),   # a number named after it
    ("Contact: 4817 2290 / front desk", "4817 2290"),          # a contact label before it
])
def test_a_number_named_as_a_phone_before_or_after_it(text, phone):
    assert _found(text, "PHONE") == [phone]
