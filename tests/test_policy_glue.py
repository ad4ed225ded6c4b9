"""An address that detectors found in parts: the numbers between the parts join them (policy.merge_detections).

Sentences written for these tests; addresses in formats of Colombia, Taiwan, Indonesia and Greece.
"""

import pytest

from dptext.privacy.policy import get_policy, merge_detections
from dptext.privacy.recognizers import Detection


def _det(text, *parts):
    return [Detection(text.index(p), text.index(p) + len(p), label, "test") for p, label in parts]


def _spans(text, dets):
    return [(text[s.start:s.end], s.label) for s in merge_detections(dets, text)]


@pytest.mark.parametrize("text,parts,covered", [
    ("deliver to Carrera 16 # 2-1 Este today", [("Carrera", "PERSON"), ("Este", "PERSON")], "16 # 2-1"),
    ("at Jalan Kendalsari No. 588, Yogyakarta", [("Jalan Kendalsari", "FAC"), ("Yogyakarta", "GPE")], "No. 588,"),
    ("寄到雲林大安街330號1樓", [("雲林大安街", "ORG"), ("號", "ORG"), ("樓", "ORG")], "330號1"),
    ("Ψάκας 13-02, ΤΚ 11572 Κιλκίς", [("Ψάκας", "PERSON"), ("ΤΚ 11572 Κιλκίς", "ADDRESS")], "13-02,"),
])
def test_numbers_between_two_parts_join_them(text, parts, covered):
    spans = merge_detections(_det(text, *parts), text)
    s = text.index(covered)
    assert any(p.start <= s and s + len(covered) <= p.end for p in spans), _spans(text, _det(text, *parts))


@pytest.mark.parametrize("text,parts", [
    ("John 25 and Mary 30 came", [("John", "PERSON"), ("Mary", "PERSON")]),           # a word in the gap
    ("Ana, B., Rui came", [("Ana", "PERSON"), ("Rui", "PERSON")]),                     # no digit in the gap
    ("Ana 12345678901234567 Rui", [("Ana", "PERSON"), ("Rui", "PERSON")]),            # longer than 16
])
def test_other_gaps_stay_public(text, parts):
    spans = _spans(text, _det(text, *parts))
    assert [s for s, _ in spans] == [p for p, _ in parts], spans


def test_a_house_number_joins_the_place_after_it():
    text = "we live at 759 Emerald Street now"
    assert _spans(text, _det(text, ("Emerald Street", "ADDRESS"))) == [("759 Emerald Street", "ADDRESS")]
    # not before a person, nor a number glued to a word ("A4 Paris")
    text = "the 759 Emerald brothers"
    assert _spans(text, _det(text, ("Emerald", "PERSON"))) == [("Emerald", "PERSON")]
    text = "print on A4 Paris paper"
    assert _spans(text, _det(text, ("Paris", "GPE"))) == [("Paris", "GPE")]


def test_an_address_in_parts_is_covered_end_to_end():
    text = "deliver it to Carrera 16 # 2-1 Este, Apartamento 38, 526361, La Unión, Nariño before noon"
    spans = get_policy("entities").detect(text)
    covered = {i for s in spans for i in range(s.start, s.end)}
    addr = text[text.index("Carrera"):text.index(" before")]
    # every letter and digit of it (the commas between its parts tell nothing)
    missed = [c for i, c in enumerate(addr, text.index("Carrera")) if c.isalnum() and i not in covered]
    assert missed == [], "".join(missed)


@pytest.mark.parametrize("text,address", [
    ("ship it to Calle 20 # 61-4 Sur before friday", "Calle 20 # 61-4 Sur"),         # Colombia
    ("invoice: CL. 104C # 4H-67, BOGOTÁ", "CL. 104C # 4H-67"),
    ("her flat is on carrera 9ª # 9-45 este now", "carrera 9ª # 9-45 este"),
    ("kirim ke Jl. Sadang Serang No. 6, Bandung", "Jl. Sadang Serang No. 6"),          # Indonesia
    ("alamat: gg. k.h. wahid hasyim no. 93", "gg. k.h. wahid hasyim no. 93"),
])
def test_colombian_and_indonesian_streets_are_addresses(text, address):
    spans = get_policy("entities").detect(text)
    s = text.index(address)
    assert any(p.start <= s and s + len(address) <= p.end for p in spans), [(text[p.start:p.end], p.label)
                                                                             for p in spans]


def test_numbers_around_a_word_of_another_script_join_it():
    text = "send it to 93576 連江市自立巷829號之4 please"
    dets = _det(text, ("連江市自立巷829號之", "PERSON"))
    assert _spans(text, dets) == [("93576 連江市自立巷829號之4", "PERSON")]
    text = "we paid 500 for the 12 rooms"  # Latin words: no number joins
    assert _spans(text, _det(text, ("rooms", "PERSON"))) == [("rooms", "PERSON")]


def test_digits_after_a_word_of_another_script_stop_at_the_next_piece():
    # the digits written on to 號之 join it only up to where an ID found in them begins: no two spans overlap
    text = "寄到連江市829號之4567 x"
    spans = merge_detections(_det(text, ("連江市829號之", "PERSON"), ("567", "ID")), text)
    assert [(text[s.start:s.end], s.label) for s in spans] == [("連江市829號之4", "PERSON"), ("567", "ID")]
    assert all(a.end <= b.start for a, b in zip(spans, spans[1:]))


@pytest.mark.parametrize("text,parts,covered", [
    ("ship to 12 Fen Lane, Lowmoor today", [("12 Fen Lane", "ADDRESS"), ("Lowmoor", "GPE")], "12 Fen Lane, Lowmoor"),
    ("ship to 12 Fen Lane , Ada Ruiz", [("12 Fen Lane", "ADDRESS"), ("Ada Ruiz", "PERSON")], "12 Fen Lane , Ada Ruiz"),
    ("at Kirkby, 4 Mill Rd", [("Kirkby", "GPE"), ("4 Mill Rd", "ADDRESS")], "Kirkby, 4 Mill Rd"),
])
def test_the_comma_after_an_address_is_the_addresses(text, parts, covered):
    spans = merge_detections(_det(text, *parts), text)
    s = text.index(covered)
    assert [(p.start, p.end) for p in spans if p.start < s + len(covered) and p.end > s][0][0] == s
    assert all(any(p.start <= i < p.end for p in spans) for i in range(s, s + len(covered)) if not text[i].isspace())


@pytest.mark.parametrize("text,parts", [
    ("Ada, Ben and Cy", [("Ada", "PERSON"), ("Ben", "PERSON")]),  # names in a list keep their commas public
    ("from Leeds, York and 4 Mill Rd", [("Leeds", "GPE"), ("York", "GPE"), ("4 Mill Rd", "ADDRESS")]),
])
def test_commas_between_other_pieces_stay_public(text, parts):
    spans = merge_detections(_det(text, *parts), text)
    assert [text[p.start:p.end] for p in spans] == [p for p, _ in parts]


@pytest.mark.parametrize("text,parts,covered", [
    ("a bakery in Uummannaq 3961 in its mission", [("Uummannaq", "PERSON")], "Uummannaq 3961"),  # read as a name
    ("IN MARKE 8510 IN ITS", [("MARKE", "GPE")], "MARKE 8510"),
    ("ship to Tjaereborg 6731.", [("Tjaereborg", "ORG")], "Tjaereborg 6731"),
    # a house number that ends the clause after a street read as a name, after "on", "at", "to"
    ("The bus station is on Kuuse 23", [("Kuuse", "PERSON")], "Kuuse 23"),
    ("meet me at Rosenlund 4b, then", [("Rosenlund", "GPE")], "Rosenlund 4b"),
])
def test_a_postcode_or_house_number_after_its_place_joins_it(text, parts, covered):
    assert covered in [t for t, _ in _spans(text, _det(text, *parts))]


@pytest.mark.parametrize("text,parts", [
    ("Ann 25 came", [("Ann", "PERSON")]),                      # an age: fewer than four digits
    ("Ann 2500.50 paid", [("Ann", "PERSON")]),                 # an amount
    ("Leeds 12345678 is", [("Leeds", "GPE")]),                 # too long for a postcode
    ("Leeds 2024 Ann", [("Leeds", "GPE"), ("2024 Ann", "PERSON")]),  # the next piece starts there
    ("gave it to Ann 2 weeks ago", [("Ann", "PERSON")]),        # the number does not end the clause
    ("then Ann 23.", [("Ann", "PERSON")]),                       # no "on", "at" or "to" before the name
    ("sent to Ann 12.50 today", [("Ann", "PERSON")]),            # an amount
])
def test_other_numbers_after_a_name_stay_apart(text, parts):
    assert [t for t, _ in _spans(text, _det(text, *parts))] == [p for p, _ in parts]


@pytest.mark.parametrize("text,parts,covered", [
    ("stop at the corner of Nelson Mandela Drive today", [("Nelson Mandela", "PERSON")], "Nelson Mandela Drive"),
    ("STOP AT PORT WASHINGTON ROAD ST. NOW", [("PORT WASHINGTON", "FAC")], "PORT WASHINGTON ROAD ST."),
    ("we met on kennedy avenue", [("kennedy", "PERSON")], "kennedy avenue"),  # lower-case text: any casing
])
def test_a_street_type_after_a_name_joins_it(text, parts, covered):
    assert covered in [t for t, _ in _spans(text, _det(text, *parts))]


@pytest.mark.parametrize("text,parts", [
    ("I let John drive home", [("John", "PERSON")]),     # a verb: in cased text a street type has a capital
    ("JOHN IS HERE", [("JOHN", "PERSON")]),              # an everyday word that is a USPS type is none here
])
def test_other_words_after_a_name_stay_apart(text, parts):
    assert [t for t, _ in _spans(text, _det(text, *parts))] == [p for p, _ in parts]


@pytest.mark.parametrize("text,parts,covered", [
    ("post it to 9 Quay Rd, HU1 1AA Kingston upon Hull", [("9 Quay Rd, HU1 1AA Kingston", "ADDRESS"), ("Hull", "PERSON")],
     "Kingston upon Hull"),
    ("a casa, 08800 Vilanova i la Geltrú, ahora", [("08800 Vilanova", "ADDRESS"), ("Geltrú", "GPE")],
     "Vilanova i la Geltrú"),
])
def test_the_particles_of_a_town_after_an_address_join_it(text, parts, covered):
    assert _clear(text, parts, covered) == [], _spans(text, _det(text, *parts))


def test_a_house_number_between_two_pieces_takes_the_comma_after_it_too():
    text, parts = "SENT TO KUUSE 21, TARTU, EE 5100 TODAY", [("KUUSE", "PERSON"), ("TARTU", "GPE")]
    assert _clear(text, parts, "KUUSE 21, TARTU") == [], _spans(text, _det(text, *parts))


def _clear(text, parts, covered):
    """The non-space characters of ``covered`` outside every merged span."""
    spans = merge_detections(_det(text, *parts), text)
    s = text.index(covered)
    return [text[i] for i in range(s, s + len(covered))
            if not text[i].isspace() and not any(p.start <= i < p.end for p in spans)]


def test_other_words_between_an_address_and_a_name_stay_public():
    text = "sent to 9 Quay Rd and then Hull"
    assert [t for t, _ in _spans(text, _det(text, ("9 Quay Rd", "ADDRESS"), ("Hull", "PERSON")))] == ["9 Quay Rd", "Hull"]
