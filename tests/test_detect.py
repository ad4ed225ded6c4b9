"""Detection that does not depend on casing or locale: the real spaCy model, word lists and recognizers."""

import pytest

from dptext.errors import PrivacyError
from dptext.privacy import gazetteers
from dptext.privacy.policy import DEFAULT_TYPES, get_policy, merge_detections
from dptext.privacy.recognizers import Detection, recognize


@pytest.fixture(scope="module")
def entities():
    return get_policy("entities")


def _covered(pol, text, needle, label=None):
    """True when every non-space character of ``needle`` lies in a private span (of ``label`` if given)."""
    i = text.index(needle)
    spans = [s for s in pol.plan(text) if s.private and (label is None or s.label == label)]
    return all(any(s.start <= c < s.end for s in spans) for c in range(i, i + len(needle)) if not text[c].isspace())


@pytest.mark.parametrize("text,name", [
    ("yesterday we met maria lopez at the station", "maria lopez"),
    ("THE FORM WAS SIGNED BY JOHN SMITH ON FRIDAY", "JOHN SMITH"),
    ("please forward it to anna kowalczyk", "anna kowalczyk"),
    ("the report by Dr. Oyelaran was late", "Oyelaran"),
    ("J. R. Tolkien wrote it", "J. R. Tolkien"),
    ("ask for siobhan o'sullivan", "siobhan o'sullivan"),
])
def test_names_in_any_casing_and_origin_are_private(entities, text, name):
    assert _covered(entities, text, name, "PERSON"), [(text[s.start:s.end], s.label) for s in entities.detect(text)]


def test_frequent_words_next_to_a_name_stay_public(entities):
    text = "please tell maria that I have 3 dogs in the park"
    private = [text[s.start:s.end] for s in entities.detect(text)]
    assert private == ["maria"]


@pytest.mark.parametrize("text,address", [
    ("I live at 4619 kingsley rd, port jamesfurt, nj 12345 since May", "4619 kingsley rd, port jamesfurt, nj 12345"),
    ("Ship it to Flat 3, 12 Baker Street, London SW1A 1AA please", "Flat 3, 12 Baker Street, London SW1A 1AA"),
    ("send it to po box 4421", "po box 4421"),
    ("NEW ADDRESS: HAUPTSTRASSE 12, 10115 BERLIN", "HAUPTSTRASSE 12, 10115 BERLIN"),
    ("we stayed at 12 rue de la Paix, 75002 Paris", "12 rue de la Paix, 75002 Paris"),
])
def test_addresses_us_uk_continental_and_po_boxes(text, address):
    found = [(text[d.start:d.end], d.label) for d in recognize(text, ("ADDRESS",))]
    assert (address, "ADDRESS") in found, found


@pytest.mark.parametrize("text,address", [
    ("i fell asleep 981 cour du pas de bordier, 54808 saint-louis", "981 cour du pas de bordier"),  # French types
    ("SHIP IT TO 448 RANG EMMA, SAINT-PHILIPPE", "448 RANG EMMA"),                # Québec's concession roads
    ("We moved! Find us at Yvesboulevard 6", "Yvesboulevard 6"),                   # Dutch compound street names
    ("the office is at Middendreef 389 now", "Middendreef 389"),
    ("THE OFFICE IS AT KANAALBAAN 12 NOW", "KANAALBAAN 12"),
])
def test_french_types_and_dutch_compounds_open_a_street(text, address):
    found = [text[d.start:d.end] for d in recognize(text, ("ADDRESS",))]
    assert any(address in f for f in found), found


@pytest.mark.parametrize("phone", ["039-3224", "07700 900123", "+44 7700 900123", "(020) 7946 0958"])
def test_local_national_and_international_phones(phone):
    text = f"ring me on {phone} tonight"
    assert (phone, "PHONE") in [(text[d.start:d.end], d.label) for d in recognize(text, ("PHONE",))]


@pytest.mark.parametrize("date", ["8 jun 1959", "8 JUNE 1959", "june 8th, 1959", "MARCH 2021"])
def test_written_dates_in_any_casing(date):
    text = f"born on {date} in a small town"
    assert (date, "DATE") in [(text[d.start:d.end], d.label) for d in recognize(text, ("DATE",))]


def test_lower_case_codes_are_ids_but_ordinary_words_are_not():
    text = "my id is ab1234567 and I had covid19 twice"
    assert [text[d.start:d.end] for d in recognize(text, ("ID",))] == ["ab1234567"]


def test_an_email_inside_a_longer_entity_keeps_its_label(entities):
    text = "We moved to Springfield. Email maria@example.com now"
    spans = {text[s.start:s.end]: s.label for s in entities.detect(text)}
    assert spans.get("maria@example.com") == "EMAIL", spans
    assert _covered(entities, text, "Springfield")


@pytest.mark.parametrize("text,condition", [
    ("she was treated for endometriosis last year", "endometriosis"),
    ("HE HAS TYPE 2 DIABETES", "TYPE 2 DIABETES"),
    ("my father's Parkinson's disease got worse", "Parkinson's disease"),
    ("the migraines are back", "migraines"),
])
def test_medical_conditions_without_a_word_list(entities, text, condition):
    assert _covered(entities, text, condition, "MEDICAL"), [(text[s.start:s.end], s.label)
                                                             for s in entities.detect(text)]


def test_default_types_of_each_policy():
    tiered = get_policy("tiered", entity_epsilon=1.0)
    assert {"PERSON", "ADDRESS", "PHONE", "DATE", "EMAIL", "ID", "MEDICAL"} <= set(tiered.types)
    assert set(tiered.types) == set(DEFAULT_TYPES) - {"TERM"}
    assert get_policy("all").describe()["types"] == []
    regex_only = get_policy("entities", detectors="regex")
    text = "maria lopez has gout, call 039-3224"
    assert [text[s.start:s.end] for s in regex_only.detect(text)] == ["039-3224"]


def test_missing_word_list_package_fails_closed(monkeypatch):
    monkeypatch.setattr(gazetteers.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(PrivacyError, match="nothing was sent"):
        gazetteers._sources()


def test_spacy_reads_a_recased_copy_of_lower_case_text(entities):
    from dptext.privacy.lexical import recase

    text = "yesterday i met barack obama and we drove to springfield"
    copy = recase(text, entities.names)
    assert len(copy) == len(text) and "Barack Obama" in copy and "Springfield" in copy
    found = {(text[d.start:d.end], d.label) for d in entities.spacy.detect(text, copy)}
    assert ("barack obama", "PERSON") in found and ("springfield", "GPE") in found


@pytest.mark.parametrize("text", [
    "Last week my blood tests showed type 2 diabetes, and I am worried about keeping my job.",
    "We took route 66 and the passage 3 of the book; I am at work until 5.",
])
def test_everyday_words_that_open_a_continental_street_are_no_address(text):
    """Continental prefixes ("am", "route", "passage") are English words too: without a house number next
    to the street name nothing is an address."""
    found = [(text[d.start:d.end], d.label) for d in recognize(text)]
    assert not [f for f in found if f[1] == "ADDRESS"], found


def _found(text, labels):
    return [(text[d.start:d.end], d.label) for d in recognize(text, labels)]


@pytest.mark.parametrize("text,time", [
    ("the meeting moved to 10:45 pm on the same day", "10:45 pm"),
    ("please call me before 7 a.m. if you can", "7 a.m."),
    ("we had lunch at noon with the team", "noon"),
    ("Abfahrt um 14:30 am Bahnhof", "14:30"),
])
def test_times_of_day_are_dates(text, time):
    assert (time, "DATE") in _found(text, ("DATE",))


@pytest.mark.parametrize("text,date", [
    ("I meant to book for 3/19 - can you help", "3/19"),
    ("my voucher expires 4/10.", "4/10"),
    ("HOPE MY FLIGHT ON 25 TH HAS A NEW PLANE", "25 TH"),
    ("the laptop was left on the plane on the 14th.", "14th"),
    ("in 1974/75 the troops arrived", "1974/75"),
    ("he lived there 1999-2001 with his aunt", "1999-2001"),
    ("the Grundriss (Vienna 1876-88).", "1876-88"),          # a later year of the same century
    ("the 1999/00 season", "1999/00"),
])
def test_a_day_after_a_dating_word_and_a_span_of_years_are_dates(text, date):
    assert _found(text, ("DATE", "ID")) == [(date, "DATE")]


@pytest.mark.parametrize("text", [
    "get it for 1/2 the price",       # a fraction after a loose cue
    "the film was rated 4/10 overall",  # no dating word
    "we met on the 3rd floor",        # an ordinal before a noun
    "she ranked 21st in the final",
    "a 200-metre-long path, 15MINUTES of fame and 20-PLUS games",  # a small number joined to English words
])
def test_fractions_ordinals_and_measures_are_no_dates_or_ids(text):
    assert _found(text, ("DATE", "ID")) == []


def test_codes_stay_ids():
    assert _found("codes AB1234 and PX-2231 were sent", ("ID",)) == [("AB1234", "ID"), ("PX-2231", "ID")]
    # two years out of order are no span of years
    assert set(_found("ticket 1999-1950 was sent", ("DATE", "ID"))) == {("1999-1950", "ID")}
    assert set(_found("ticket 1988-76 was sent", ("DATE", "ID"))) == {("1988-76", "ID")}  # two digits, earlier


def test_ratios_and_decimals_are_no_times():
    assert _found("the ratio was 3:1, the pH 7.4 and version 2.10 shipped", ("DATE",)) == []


@pytest.mark.parametrize("text,phone", [
    ("our office number is (04121) 55823, ask for the desk", "(04121) 55823"),
    ("dial +39 (0)6 4471 2290 from abroad", "+39 (0)6 4471 2290"),
    ("my mobile is +4755512345.", "+4755512345"),
    ("(07) 3224 5810-Home is the landline", "(07) 3224 5810"),
    ("or try 015394 32871 in the evening", "015394 32871"),
])
def test_phones_with_bracketed_area_codes_trunk_prefixes_and_trailing_words(text, phone):
    assert (phone, "PHONE") in _found(text, ("PHONE",))


@pytest.mark.parametrize("text,address", [
    ("Post it to:\n77 Lindenhof Allee 4\n Apt. 12\n Kassel\n\n Germany 3412", "77 Lindenhof Allee 4\n Apt. 12\n Kassel"),
    ("Post it to:\n77 Birchmoor 4\n Apt. 12\n Kassel", "77 Birchmoor 4\n Apt. 12"),
    ("we moved to 14 Kirke Vej, 4000 Roskilde.", "14 Kirke Vej, 4000 Roskilde"),
    ("Ship to Via Garibaldi 8, 50123, Firenze (FI), thanks", "Via Garibaldi 8, 50123, Firenze (FI)"),
    ("mail 88 Maple Crescent, Halifax, NS B3H 4R2 today", "88 Maple Crescent, Halifax, NS B3H 4R2"),
    ("the form says Oakridge Lane 21, Brookfield,  4310", "Oakridge Lane 21, Brookfield,  4310"),
    ("SÍTIO BOA VISTA, 77, CENTRO, 69900123 XAPURI / AC", "SÍTIO BOA VISTA, 77, CENTRO, 69900123 XAPURI / AC"),
    ("she lives at kalevipoja 17, rakvere", "kalevipoja 17, rakvere"),  # a lone street after a cue
    ("address: 9 quinta do lago 2071, faro", "9 quinta do lago 2071, faro"),  # 2071 is no year here
    ("To:\n  14 Birchwood Lane\n  Osterby South\n  Jutland\n  8721\n", "Osterby South\n  Jutland\n  8721"),  # code line
])
def test_addresses_with_unit_lines_trailing_towns_and_street_types_after_the_name(text, address):
    found = _found(text, ("ADDRESS",))
    assert any(address in f[0] for f in found), found


def test_years_and_chapters_are_no_postcodes():
    text = "In chapter 5, 2021 edition, we waited 3 hours at gate 12. On May 4, 2019 we met."
    assert _found(text, ("ADDRESS",)) == []
    # a year after a word is no house number, even before a postcode; a cue needs a street, not any number
    assert _found("born 2019, she wrote 69900123 times", ("ADDRESS",)) == []
    assert _found("we moved to page 12 and she lives at home", ("ADDRESS",)) == []
    # a number line far below an address, or after a long line, stays out of it
    found = _found("Ship to 12 Lime Street\nSpringfield\nIllinois\nUSA\n2020\n", ("ADDRESS",))
    assert [f[0] for f in found] == ["12 Lime Street"]


@pytest.mark.parametrize("text,name", [
    ("hello, my name is tsegaye and i need help", "tsegaye"),
    ("dear wojtkowiak, thanks for the note", "wojtkowiak"),
])
def test_an_unlisted_word_after_a_name_cue_is_a_name(entities, text, name):
    """The word lists alone (no spaCy): a cue such as "my name is" or "dear" makes the next word a name."""
    assert (name, "PERSON") in [(text[d.start:d.end], d.label) for d in entities.names.detect(text)]


def test_an_unlisted_word_in_the_possessive_is_a_name(entities):
    text = "we read Ofosuhene's letter today"
    assert ("Ofosuhene's", "PERSON") in [(text[d.start:d.end], d.label) for d in entities.names.detect(text)]


def test_spacy_spans_are_cut_to_what_identifies_and_names_widened(entities):
    from dptext.privacy.lexical import refine
    from dptext.privacy.recognizers import Detection

    text = "Client 40718833 saw Tsegaye Baker a few months ago"
    def at(piece, label):
        return Detection(text.index(piece), text.index(piece) + len(piece), label, "spacy")

    found = [at("Client 40718833", "DATE"), at("Baker", "PERSON"), at("a few months ago", "DATE")]
    assert sorted((text[d.start:d.end], d.label) for d in refine(text, found, entities.names)) == [
        ("40718833", "DATE"), ("Tsegaye Baker", "PERSON")]
    text = "THE OLD TALES WERE SUNG BY ABENA"
    found = [at("TALES", "PERSON"), at("SUNG", "PERSON"), at("SUNG BY ABENA", "PERSON")]
    assert [text[d.start:d.end] for d in refine(text, found, entities.names)] == ["ABENA"]


@pytest.mark.parametrize("text,name", [
    ("HER SURNAME IS WOJTKOWIAK", "WOJTKOWIAK"),
    ("we visited oyelowo adeyemi-okafor yesterday", "oyelowo adeyemi-okafor"),
    ("the report from Kwabena Asantewaa's office came", "Kwabena Asantewaa's"),
    ("is the dentist covered for Bertrand Kpodo?", "Bertrand Kpodo"),
])
def test_names_after_cues_unlisted_pairs_and_possessives(entities, text, name):
    assert _covered(entities, text, name), [(text[s.start:s.end], s.label) for s in entities.detect(text)]


@pytest.mark.parametrize("text", [
    "Her maiden name was on the form, and the guardian signed it.",
    "He's tired and I can't sleep.",
    "She brings 8+ years of experience and will start next week.",
])
def test_dictionary_words_contractions_and_durations_are_no_entities(entities, text):
    found = [(text[s.start:s.end], s.label) for s in entities.detect(text)]
    assert not [f for f in found if f[1] in ("PERSON", "DATE")], found


def test_a_punctuation_remnant_joins_the_span_it_touches():
    # a spaCy DATE over "6301\," whose digits a PHONE took leaves "\," alone: it joins the PHONE, no empty DATE
    text = "call (08) 8747 6301\\, thanks"
    spans = merge_detections([Detection(5, 19, "PHONE", "regex"), Detection(15, 21, "DATE", "spacy")], text)
    assert [(s.start, s.end, s.label) for s in spans] == [(5, 21, "PHONE")]
    # a remnant with a letter or digit keeps its own label
    spans = merge_detections([Detection(5, 19, "PHONE", "regex"), Detection(15, 23, "DATE", "spacy")],
                             "call (08) 8747 6301 May, thanks")
    assert [(s.start, s.end, s.label) for s in spans] == [(5, 19, "PHONE"), (19, 23, "DATE")]


def test_a_numeric_remnant_without_a_digit_joins_the_span_it_touches():
    # an ID over "2304-OFFICE" whose digits a PHONE took leaves "-OFFICE": it joins the PHONE, no digit-less ID
    text = "fax 0065 783 2304-OFFICE now"
    spans = merge_detections([Detection(4, 17, "PHONE", "regex"), Detection(13, 24, "ID", "regex")], text)
    assert [(s.start, s.end, s.label) for s in spans] == [(4, 24, "PHONE")]
    # an ID remnant that still holds a digit keeps its own label
    spans = merge_detections([Detection(4, 17, "PHONE", "regex"), Detection(13, 25, "ID", "regex")],
                             "fax 0065 783 2304-OFFICE7 now")
    assert [(s.start, s.end, s.label) for s in spans] == [(4, 17, "PHONE"), (17, 25, "ID")]


def test_a_spacy_person_keeps_no_sign_at_its_edges(entities):
    from dptext.privacy.lexical import refine

    # spaCy has read "& run" and "- I" as persons: a sign names no one; a number stays (it may be a house number)
    text = "jack white & run to the jewels - I know, Kowalczyk 12 moved"
    found = refine(text, [Detection(11, 16, "PERSON", "spacy"), Detection(31, 34, "PERSON", "spacy"),
                          Detection(41, 53, "PERSON", "spacy")], entities.names)
    assert [text[d.start:d.end] for d in found] == ["Kowalczyk 12"]


@pytest.mark.parametrize("text", [
    "The rep said 800 is the number to call.",
    "we only landed at 3 am due to the fog",
    "my flight 2231 to boston left 5 hours late",
    "ROOM 12 IS READY AND GATE 7 TO THE LEFT",
])
def test_stop_words_and_times_make_no_street_or_postcode(text):
    """A street suffix that is a stop word ("is"), "3 am" (a time, not a house number before "Am ..."), and a
    Dutch-postcode shape whose letters are an English word ("2231 to") are no address."""
    assert not [f for f in _found(text, ("ADDRESS",))], _found(text, ("ADDRESS",))


def test_a_hashtag_is_a_topic_not_an_id_but_a_handle_is_an_id():
    text = "so excited for #Summer2019 with @mike2015 and code ab1234567"
    assert [text[d.start:d.end] for d in recognize(text, ("ID",))] == ["mike2015", "ab1234567"]


def test_an_email_inside_a_date_span_keeps_its_label_and_its_exact_range():
    # spaCy once called "Springfield. Email maria@example.com" one DATE: the EMAIL inside keeps its range and
    # label, and the DATE pieces on either side stay DATE (touching pieces of different labels never merge)
    text = "Springfield. Email maria@example.com now"
    spans = merge_detections([Detection(0, 40, "DATE", "spacy"), Detection(19, 36, "EMAIL", "regex")], text)
    assert [(s.start, s.end, s.label) for s in spans] == [(0, 19, "DATE"), (19, 36, "EMAIL"), (36, 40, "DATE")]
