"""Place names against person names, on sentences written for these tests.

A geographic name no name list holds is no unlisted name word (``Perth``), is no plural of a condition
(``Wales``), and in lower- or upper-case text is written as a proper noun in the copy spaCy reads, so the
place is still found. Proper nouns and given names that casing marks inside a sentence are names.
"""

import pytest

from dptext.privacy.lexical import MedicalDetector, NameDetector, recase
from dptext.privacy.policy import get_policy


@pytest.fixture(scope="module")
def names():
    return NameDetector()


def _names(det, text):
    return [text[d.start:d.end] for d in det.detect(text)]


@pytest.mark.parametrize("text", [
    "Flights from Perth were late again.",
    "Andorra's ski season opened early.",
    "We drove through Tegucigalpa before dawn.",
])
def test_a_place_no_name_list_holds_is_no_name(names, text):
    assert _names(names, text) == []


def test_an_unlisted_word_that_is_no_place_stays_a_name(names):
    assert _names(names, "Flights from Ngubane were late again.") == ["Ngubane"]


def test_a_place_is_no_plural_of_a_condition():
    med = MedicalDetector()
    assert [d.label for d in med.detect("He moved to Wales last spring.")] == []
    assert [d.label for d in med.detect("She was treated for abscesses last spring.")] == ["MEDICAL"]


@pytest.mark.parametrize("text,places", [
    ("we flew from edinburgh to perth on a nice day", ["Edinburgh", "Perth"]),
    ("WE FLEW FROM EDINBURGH TO PERTH", ["Edinburgh", "Perth"]),
])
def test_uncased_places_are_proper_nouns_for_spacy(names, text, places):
    copy = recase(text, names)
    assert len(copy) == len(text)
    for p in places:
        assert p in copy
    assert "nice" in copy or "Nice" not in copy  # an English word that is also a town keeps its case


def test_an_uncased_place_is_detected_by_the_policy():
    text = "the parcel went from 12 high street, eh1 1yz edinburgh to the wrong house"
    spans = get_policy("entities").detect(text)
    covered = {i for s in spans for i in range(s.start, s.end)}
    start = text.index("edinburgh")
    assert all(i in covered for i in range(start, start + len("edinburgh")))


@pytest.mark.parametrize("text,expected", [
    ("Thanks to Kemi Ramadan for the cake.", ["Kemi Ramadan"]),   # a proper noun after an unlisted one
    ("Without Hope we would be lost.", ["Hope"]),                  # a given name that is a frequent word
    ("Without Fowler we would be lost.", ["Fowler"]),              # ... after a sentence's first word
    ("Lunch with Patience on friday?", ["Patience"]),              # a given name that is also a rare surname
    ("our 3 founders: van der Rest, Ito and Lam.", ["van der Rest", "Ito", "Lam"]),  # a particle ends no name
])
def test_names_casing_marks_inside_a_sentence(names, text, expected):
    assert _names(names, text) == expected


@pytest.mark.parametrize("text,expected", [
    ("Without Power we are lost.", []),              # a frequent word that is no given name
    ("The Customer Service line was busy.", []),     # capitalized common words
    ("Send it to Ngubane Power tomorrow.", ["Ngubane"]),  # a frequent word after an unlisted proper noun
    ("We all love Belgian Rose beer.", []),        # a given name inside a capitalized pair, not after an opener
])
def test_capitalized_frequent_words_are_no_names(names, text, expected):
    assert _names(names, text) == expected


@pytest.mark.parametrize("text,expected", [
    ("why is charles so quiet today?", ["charles"]),      # frequent in WordNet only as a name: distinctive
    ("i flew to london last week", []),                   # a place named often is an ambiguous name word
    ("we drove through barstow at night", []),            # ... as is a place that is no given name
    ("the parcel belongs to gary warner.", ["gary warner"]),   # a given name that is a small place stays one
])
def test_names_that_are_places(names, text, expected):
    assert _names(names, text) == expected


def test_places_no_english_word_list_knows_are_gpe_in_any_casing():
    from dptext.privacy.lexical import PlaceDetector

    det = PlaceDetector()
    text = "flights to PERTH and andorra's slopes, not nice or bath"
    assert [(text[d.start:d.end], d.label) for d in det.detect(text)] == [("PERTH", "GPE"), ("andorra", "GPE")]


def test_a_listed_name_the_name_lists_took_stays_a_person():
    spans = get_policy("entities").detect("i think austin kowalczyk said so")
    assert [(s.label) for s in spans if s.start <= 8 < s.end] == ["PERSON"]


@pytest.mark.parametrize("casing", [str, str.lower, str.upper])
def test_an_italian_province_code_in_brackets_ends_the_address(casing):
    text = casing("Please send it to Via Garibaldi 5, 60121 Ancona (AN) by monday.")
    spans = get_policy("entities").detect(text)
    start = text.index(casing("Via"))
    end = text.index(")") + 1
    covered = {i for s in spans for i in range(s.start, s.end)}
    assert all(i in covered for i in range(start, end) if not text[i].isspace())


def test_a_bracketed_clause_is_no_region():
    text = "Send it to Via Roma 5, 00184 Roma (see below) today."
    spans = get_policy("entities").detect(text)
    assert not any("see" in text[s.start:s.end] for s in spans)



@pytest.mark.parametrize("text,word", [("the van broke down on the way", "broke"), ("LOAD THE VAN QUICKLY", "QUICKLY")])
def test_a_particle_alone_joins_no_word_to_it(names, text, word):
    # a run of one particle ("van" is a listed given name) takes no next word as its surname
    assert not any(word in n for n in _names(names, text))


@pytest.mark.parametrize("text,expected", [
    ("Delivery for Brown at the back door", ["Brown"]),  # an addressee's cue, a capital
    ("Parcel for Green at noon, please", ["Green"]),
    ("@united Asked Flight attendant what typical compensation would be", []),     # another cue: a word still
    ("so far no call Getting tired of typing little notes", []),
    ("considering it's not - Come on", []),                                         # a dash before a word
    ("Delivery for white roses at noon, Thanks", []),                               # no capital, no name
    ("DELIVERY FOR WHITE ROSES AT NOON", []),                                       # capitals say nothing
])
def test_after_an_addressee_cue_a_capitalized_surname_that_is_a_word_is_a_name(names, text, expected):
    assert _names(names, text) == expected
