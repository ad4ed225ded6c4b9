"""Address and phone formats of more countries, in every casing, on sentences written for these tests: each
case names the form a rule covers; the last cases are sentences that hold no address or phone."""

import pytest

from dptext.privacy.policy import get_policy
from dptext.privacy.recognizers import recognize

CASINGS = (str, str.lower, str.upper)


def _clear(text, part):
    """The characters of ``part`` (no spaces) that no detected span covers, in ``text``."""
    start = text.index(part)
    covered = bytearray(len(text))
    for s in get_policy("entities").detect(text):
        covered[s.start:s.end] = b"\x01" * (s.end - s.start)
    return "".join(text[i] for i in range(start, start + len(part)) if not covered[i] and not text[i].isspace())


def _found(text, label):
    return sorted({text[d.start:d.end] for d in recognize(text, (label,))})


@pytest.mark.parametrize("casing", CASINGS)
@pytest.mark.parametrize("text,address", [
    # New Zealand: a street type that is an everyday word, a rural delivery round, a town and its 4-digit code
    ("the parcel goes to 14 Kowhai Approach, Riverhead 0820 tomorrow", "14 Kowhai Approach, Riverhead 0820"),
    ("my aunt lives at 212 Totara Line, RD 3, Upper Moutere 7175", "212 Totara Line, RD 3, Upper Moutere 7175"),
    # Canada: the province's code before the postal code
    ("write to 88 rang Sainte-Anne, Lac-Etchemin, QC G0R 1S0 soon", "88 rang Sainte-Anne, Lac-Etchemin, QC G0R 1S0"),
    # Czechia: "u" / "nad" in a town, and the district in brackets
    ("posílám na Husova 12, 664 31 Lelekovice u Brna by Friday", "Husova 12, 664 31 Lelekovice u Brna"),
    ("Nádražní 7, 664 34 Kuřim (okres Brno-venkov) from May", "Nádražní 7, 664 34 Kuřim (okres Brno-venkov)"),
    # Austria: a postcode that reads as a year before a town with "an der"
    ("the bill went to Schlossgasse 4, 2013 Göllersdorf an der Schmida by mistake",
     "Schlossgasse 4, 2013 Göllersdorf an der Schmida"),
    # Argentina: a letter after the street's number, then N°
    ("envíelo a Avenida 60 B N° 1234, La Plata cuanto antes", "Avenida 60 B N° 1234, La Plata"),
    # Romania: a commune in brackets after the village, and a town whose name starts with a number
    ("Strada Morii 3, Valea Lungă (Dâmbovița), 137505 is the flat", "Strada Morii 3, Valea Lungă (Dâmbovița), 137505"),
    ("Strada Unirii 9, 23 August, 907045 is the flat", "Strada Unirii 9, 23 August, 907045"),
    # Mexico: "y" inside a town, before the state and a ZIP+4 code
    ("ship it to Cerrada Olmos 12 Interior 4, San Juan Bosco y Anexas, GTO 38010-4521 today",
     "Cerrada Olmos 12 Interior 4, San Juan Bosco y Anexas, GTO 38010-4521"),
    # Colombia: a named street before the crossing, units written out, a 6-digit code between towns
    ("Av. Boyacá # 72-15 Sur, Torre 2 Apartamento 301, 111071, Bogotá, Cundinamarca is new",
     "Av. Boyacá # 72-15 Sur, Torre 2 Apartamento 301, 111071, Bogotá, Cundinamarca"),
    # Chile: an office after the number, the region after a comma, a 7-digit code
    ("factura: Los Aromos 2210 Of. 14, Ñuñoa, Región Metropolitana, 7750000 gracias",
     "Los Aromos 2210 Of. 14, Ñuñoa, Región Metropolitana, 7750000"),
    # Vietnam: "số" and a house number with a slash before the street, ward ("An" in its name) and city
    ("gửi tới số 27/4 Lý Tự Trọng phường An Hòa thành phố Cần Thơ nhé", "số 27/4 Lý Tự Trọng phường An Hòa thành phố Cần Thơ"),
    # the Philippines: a letter after the house number, then a town and its 4-digit code after a comma
    ("deliver to 2210 a Rizal Avenue, Tondo, 1012 Manila before noon", "2210 a Rizal Avenue, Tondo, 1012 Manila"),
    # a Philippine block and lot, a street named by an ordinal
    ("ship to B4 L17 Narra Grove, 12th Avenue, Bagong Silang, 1428 Caloocan asap",
     "B4 L17 Narra Grove, 12th Avenue, Bagong Silang, 1428 Caloocan"),
    # Vietnam: a street without its type word, then the ward after a comma; Colombia: a long street name before "#"
    ("giao hàng: 215 Trần Hưng Đạo, phường Cầu Kho, thành phố Huế nhé", "215 Trần Hưng Đạo, phường Cầu Kho, thành phố Huế"),
    ("Cl. Nuestra Señora del Carmen # 3-15, 050021, Medellín is it",
     "Cl. Nuestra Señora del Carmen # 3-15, 050021, Medellín"),
    # a word after a particle stays the town's; a postcode between commas; two names of a town; an en dash in it
    ("post it to Kirchgasse 12, 5700 Zell am See by noon", "Kirchgasse 12, 5700 Zell am See"),
    ("the invoice went to Blancefloerlaan 12, 2050, Antwerpen by mistake", "Blancefloerlaan 12, 2050, Antwerpen"),
    ("find us at Poststrasse 7, 3280 Murten/Morat from monday", "Poststrasse 7, 3280 Murten/Morat"),
    ("ship to 18/3, Tilak Nagar, Kalyan–Dombivli 421201 please", "18/3, Tilak Nagar, Kalyan–Dombivli 421201"),
    # Mexico: a pedestrian street with two numbers, a state written "Q. ROO"
    ("send it to Peatonal Hidalgo 45 12, Playa del Carmen, Q. ROO 77710-1234 by mistake",
     "Peatonal Hidalgo 45 12, Playa del Carmen, Q. ROO 77710-1234"),
    # the Philippines: a block and lot joined to the street's name; New Zealand: "Broadway" after the name
    ("ship to B9 L3 Camia Cove, Rosal Street, Bagumbayan, 1630 Taguig asap",
     "B9 L3 Camia Cove, Rosal Street, Bagumbayan, 1630 Taguig"),
    ("my mum still lives at 27 Kauri Broadway, Tokoroa 3420", "27 Kauri Broadway, Tokoroa 3420"),
    # Chile: a route and its kilometre; a long region name with "del" inside
    ("the farm is at Ruta 68, km 12, Región de Valparaíso now", "Ruta 68, km 12, Región de Valparaíso"),
    ("Los Boldos 4410, Coyhaique, Región de Aysén del General Carlos Ibáñez del Campo before noon",
     "Los Boldos 4410, Coyhaique, Región de Aysén del General Carlos Ibáñez del Campo"),
    # Colombia: a town of six words after the code
    ("Cl. 9 # 4-21, 250001, Villa de San Juan de Rioseco, Cundinamarca is it",
     "Cl. 9 # 4-21, 250001, Villa de San Juan de Rioseco, Cundinamarca"),
    # a floor with its letter before a building, then the street line; a New Zealand "Alleyway"
    ("deliver to 12B Molave Towers, 88 Sampaguita Street, Marikina, 1800 Metro Manila before noon",
     "12B Molave Towers, 88 Sampaguita Street, Marikina, 1800 Metro Manila"),
    # Indonesia: the street type written out before "No."
    ("kirim ke Jalan Diponegoro No. 45, Bandung 40115 besok", "Jalan Diponegoro No. 45, Bandung 40115"),
    # Germany: a street named by a preposition and an article, with and without a postcode after it
    ("we live at An den Eichen 206, 92273 Haldensleben now", "An den Eichen 206, 92273 Haldensleben"),
    ("the shop is on Unter den Birken 13", "Unter den Birken 13"),
    # Hungary: "u." (utca) and "rkp." (rakpart) after the name, the house number with its dot
    ("the flat is at Rózsa u. 62. in Pécs", "Rózsa u. 62."),
    ("stop at Bem rkp. 97. please", "Bem rkp. 97."),
    # Poland: a town of two names joined by a slash (a city and its district), then the postcode
    ("wyślij na ul. Lipowa 7, Warszawa/Ursus, 02-495 jutro", "ul. Lipowa 7, Warszawa/Ursus, 02-495"),
    # Portugal: "S/N" (no house number) between the street and the postcode
    ("a fatura foi para Rua do Sol 3, S/N, 4000-123 Porto ontem", "Rua do Sol 3, S/N, 4000-123 Porto"),
])
def test_addresses_of_more_countries_in_every_casing(text, address, casing):
    assert _clear(casing(text), casing(address)) == ""


@pytest.mark.parametrize("casing", CASINGS)
@pytest.mark.parametrize("text,phone", [
    ("ring me on (+57) 301 442 17 90 after six", "(+57) 301 442 17 90"),  # a bracketed country code, groups after it
    ("the desk is +(371) 26123457 now", "+(371) 26123457"),               # the plus before the bracket
    ("hívjon: 06-1/234 5678 este", "06-1/234 5678"),                      # Hungary: trunk, area code, slash
    ("231 4567890 is the desk", "231 4567890"),                           # a 3-digit area code, then 7 digits
    ("waited +39 031 04309719 200 minutes", "+39 031 04309719"),          # a count right after the number
])
def test_phone_layouts_in_every_casing(text, phone, casing):
    assert casing(phone) in _found(casing(text), "PHONE")


@pytest.mark.parametrize("casing", CASINGS)
@pytest.mark.parametrize("text", [
    "at 5 10 15 20 we stopped",
    "room 4, at noon",
    "order 5531 shipped",
    "we crossed the 2 finish line together",            # an everyday street type without a town and code
    "tickets cost 15, Timaru 2012 was the best year",    # a town and a year after a comma, no street
    "mi casa 5 veces",                                   # a unit word alone
    "the 3rd 10 minutes were slow",                      # "rd" inside an ordinal is no rural delivery
    "the region, Región de Murcia, is warm",             # a region without an address
    "the 5th Avenue store and the 3rd Street deli",      # streets named by ordinals, no number or town
    "as the technical note says, Kestrix 4471, 1998.",   # a name and a number after a comma: no town alone
    "love u. 2 days left",                               # "u." after English words only: no Hungarian street
    "meet me at the main gate 2 minutes early",          # a street type after English words only
])
def test_sentences_without_an_address(text, casing):
    assert _found(casing(text), "ADDRESS") == []


@pytest.mark.parametrize("casing", CASINGS)
@pytest.mark.parametrize("text,address", [
    ("the invoice went to 31 Kereru Alleyway, RD 2, Kaiwaka 0573 by mistake", "31 Kereru Alleyway, RD 2, Kaiwaka 0573"),
    ("the parcel goes to 14 Kowhai Approach, Riverhead 0820 tomorrow", "14 Kowhai Approach, Riverhead 0820"),
    ("deliver it to 17 Tui Line, Ranui Heights 0612 before noon", "17 Tui Line, Ranui Heights 0612"),  # a frequent word
    ("find us at 12/40 Wattle Quadrant, Kambah, ACT, 2902 from monday", "12/40 Wattle Quadrant, Kambah, ACT, 2902"),
])
def test_an_address_of_new_zealand_or_australia_is_one_span(text, address, casing):
    assert _found(casing(text), "ADDRESS") == [casing(address)]


@pytest.mark.parametrize("casing", CASINGS)
def test_a_clause_before_a_street_is_no_town(casing):
    text = casing("After the war in 1946, the Rua Nova 1188, 4000-123 Porto was sold")
    assert _found(text, "ADDRESS") == [casing("Rua Nova 1188, 4000-123 Porto")]


@pytest.mark.parametrize("casing", CASINGS)
def test_an_address_ends_before_a_stop_word(casing):
    text = casing("deliver to 9 Rimu Lane, Papakura 2110 before noon")
    assert _found(text, "ADDRESS") == [casing("9 Rimu Lane, Papakura 2110")]


@pytest.mark.parametrize("casing", CASINGS)
def test_a_year_after_an_address_is_no_postal_code(casing):
    text = casing("I moved to 5 Main Street, 2019.")
    assert _found(text, "ADDRESS") == [casing("5 Main Street")]


@pytest.mark.parametrize("casing", CASINGS)
def test_words_joined_by_a_slash_after_an_address_are_a_town_only_if_neither_is_english(casing):
    text = casing("I moved to 5 Main Street, and/or near it")
    assert _found(text, "ADDRESS") == [casing("5 Main Street")]


@pytest.mark.parametrize("text", ["in 2019 2020 prices rose", "scores 5 10 15 20", "we sold 120 4500 units"])
def test_years_and_counts_are_no_phone(text):
    assert _found(text, "PHONE") == []


@pytest.mark.parametrize("casing", CASINGS)
def test_a_brazilian_state_after_a_slash_ends_an_address(casing):
    # postcode, town and state: an address even with no street before it
    text = casing("entregar em 69900123 Lagoa Seca / PB amanhã")
    part = casing("Lagoa Seca / PB")
    labels = {s.label for s in get_policy("entities").detect(text)
              if s.start < text.index(part) + len(part) and s.end > text.index(part)}
    assert labels == {"ADDRESS"}
