"""Detected entities as the non-overlapping spans a policy perturbs (:func:`merge_detections`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from dptext.privacy.recognizers import Detection
from dptext.privacy.scripts import foreign_letter

# rank of a label when detections overlap: the higher keeps its exact range (an equal rank: the longer). A handle
# keeps its characters over an ID, a person or an organisation read inside it ("@LG_Blount", "@jsmith42-x9");
# an email, URL, card, IBAN or IP keeps its own over a handle
_RANK = {"EMAIL": 4, "URL": 4, "CARD": 4, "IBAN": 4, "IP": 4, "HANDLE": 3.5, "PHONE": 3, "ID": 3, "ADDRESS": 2,
         "DATE": 2, "MEDICAL": 1}


@dataclass(frozen=True, slots=True)
class Span:
    """``text[start:end]``: perturbed when ``private``, at ``epsilon`` (None = the mechanism's ε).

    ``detector`` names the detector(s) that fired on a detected span
    (``spacy``, ``regex``, ``wordlist``, joined by ``+``) and ``label`` its entity type.
    """

    start: int
    end: int
    private: bool
    epsilon: float | None = None
    detector: str | None = None
    label: str | None = None


def merge_detections(detections: list[Detection], text: str | None = None) -> list[Span]:
    """Non-overlapping labelled spans covering every detected character, in text order.

    Detections are taken by rank (:data:`_RANK`, then length): each keeps the
    characters no higher-ranked detection took, so an email inside a longer
    spaCy entity stays an ``EMAIL`` span. Touching or overlapping pieces of one
    label merge; a span's ``detector`` names every detector that found it with that label.
    With ``text``, a piece holding no letter or digit (``\\,`` left of a spaCy DATE whose digits a
    PHONE took), or a piece of a numeric type holding no digit, joins the span it touches instead of standing
    as an entity of its own: the same characters stay covered, and no empty DATE is reported; and the numbers
    of an address found in parts join its parts (:func:`_glue_numbers`).
    """
    owner: dict[int, int] = {}
    order = sorted(range(len(detections)), key=lambda i: (-_RANK.get(detections[i].label, 0),
                                                          -(detections[i].end - detections[i].start),
                                                          detections[i].detector != "spacy", detections[i].start))
    for i in order:
        d = detections[i]
        for c in range(d.start, d.end):
            owner.setdefault(c, i)
    out: list[Span] = []
    cur = None  # [start, end, label]
    for c in sorted(owner):
        lab = detections[owner[c]].label
        if cur is not None and c == cur[1] and lab == cur[2]:
            cur[1] = c + 1
            continue
        if cur is not None:
            out.append(cur)
        cur = [c, c + 1, lab]
    if cur is not None:
        out.append(cur)
    if text is not None:
        out = _town_particles(_street_types(_glue_numbers(_absorb_remnants(out, text), text), text), text)
    spans = []
    for s, e, lab in out:
        names = "+".join(sorted({d.detector for d in detections if d.start < e and d.end > s and d.label == lab}))
        spans.append(Span(s, e, True, None, names, lab))
    return spans


_NUMERIC = frozenset(("ID", "PHONE", "CARD", "IBAN", "IP"))  # types made of digits


def _absorb_remnants(pieces: list[list], text: str) -> list[list]:
    """Pieces without a letter or digit, and pieces of a numeric type without a digit (``-OFFICE`` left of an ID
    ``2304-OFFICE`` whose digits a PHONE took), take the label of a touching neighbour; then touching pieces
    merge."""
    for k, p in enumerate(pieces):
        piece = text[p[0]:p[1]]
        if any(c.isalnum() for c in piece) and (p[2] not in _NUMERIC or any(c.isdigit() for c in piece)):
            continue
        if k and pieces[k - 1][1] == p[0] and any(c.isalnum() for c in text[pieces[k - 1][0]:pieces[k - 1][1]]):
            p[2] = pieces[k - 1][2]
        elif k + 1 < len(pieces) and pieces[k + 1][0] == p[1]:
            p[2] = pieces[k + 1][2]
    return _join_touching(pieces)


def _join_touching(pieces: list[list]) -> list[list]:
    """Touching pieces of one label as one piece (new lists; ``pieces`` in text order)."""
    out: list[list] = []
    for p in pieces:
        if out and out[-1][1] == p[0] and out[-1][2] == p[2]:
            out[-1][1] = p[1]
        else:
            out.append(list(p))
    return out


# between two detected pieces: numbers and codes ("16 # 2-1", "No. 588", "330"), single letters and address
# punctuation only, with a digit
_SEP = r"[\s,#/.:;()ªº°–-]"
_NUMBERS = re.compile(rf"(?:{_SEP}*(?:[Nn][oOº°]\.?|[^\W\d_]|[^\W\d_]?\d[\w/-]*)(?!\w))+{_SEP}*")
_PLACES = frozenset(("ADDRESS", "GPE", "LOC", "FAC"))
_DIGITS = re.compile(r"\d+(?:-\d+)*")
_COMMA = re.compile(r"[ \t]*,[ \t]*")
_NAMED = _PLACES | {"PERSON", "ORG", "NORP"}
_POSTCODE = re.compile(r"[ \t]\d{4,5}(?![\w/-]|[.,]\d)")
# a house number before a place ("at 759 Emerald St")
_HOUSE = re.compile(r"\d[\w/-]{0,8}[ \t]")
# a house number closing a clause after a street that a model read as a name or place ("is on Männi 23.")
_HOUSE_AFTER = re.compile(r"[ \t]\d{1,4}[^\W\d_]?(?=[ \t]*(?:[.,;!?)](?!\d)|\n|$))")
_LOCATIVE = re.compile(r"(?i)\b(?:on|at|to|from|near|address)\s*:?[ \t]*$")


def _numbers_only(gap: str) -> bool:
    """``gap`` holds a digit and nothing but numbers, codes, single letters, ``No.`` and address punctuation, and
    is at most 16 characters long: it joins the piece before it."""
    return 0 < len(gap) <= 16 and any(c.isdigit() for c in gap) and _NUMBERS.fullmatch(gap) is not None


def _glue_numbers(pieces: list[list], text: str) -> list[list]:
    """The numbers and codes between two detected pieces join the piece before them, when the gap holds a
    digit and nothing but numbers, codes, single letters, ``No.`` and address punctuation, at most 16
    characters: the house and flat numbers of an address that detectors found in parts (``Carrera 16 # 2-1
    Este``, ``雲林大安街330號1樓``, ``Jalan Kendalsari No. 588, Yogyakarta``). A house number or postcode right
    before a place, or before a word of a script other than Latin, joins it (``759 Emerald Street``, ``93576
    連江市``), and so do digits written on to the end of such a word (``號之4``); four or five digits after a
    place, person, organisation or group are its postcode (``Uummannaq 3961``), and one to four digits that close
    the clause after such a piece right after ``on``, ``at``, ``to``, ``from``, ``near`` or ``address`` are its
    house number (``on Männi 23.``: a street without a street type)."""
    out: list[list] = []
    for i, p in enumerate(pieces):
        p = list(p)
        if out and _numbers_only(text[out[-1][1]:p[0]]):
            out[-1][1] = p[0]
        if out:
            gap = text[out[-1][1]:p[0]]
            # the comma between an address and the next piece, or a place and an address, is the address's
            # ("804 Bowen Round, Robertton", "Flat 9, 12 Keith Rd")
            if (out[-1][2] == "ADDRESS" or p[2] == "ADDRESS" and out[-1][2] in _PLACES) and _COMMA.fullmatch(gap):
                out[-1][1] = p[0]
        if foreign_letter(text[p[0]]) or p[2] in _PLACES:
            for k in range(max(0, p[0] - 10), p[0]):  # a house number that ends at the place
                m = _HOUSE.fullmatch(text, k, p[0])
                if m and (k == 0 or not text[k - 1].isalnum()) and not (out and out[-1][1] > k):
                    p[0] = k
                    break
        if foreign_letter(text[p[1] - 1]) and (m := _DIGITS.match(text, p[1])):
            p[1] = min(m.end(), pieces[i + 1][0]) if i + 1 < len(pieces) else m.end()  # up to the next piece
        elif p[2] in _NAMED and (m := _POSTCODE.match(text, p[1])) and (
                i + 1 == len(pieces) or pieces[i + 1][0] >= m.end()):
            p[1] = m.end()  # a postcode after its town, which a model may read as a name ("in Uummannaq 3961")
        elif p[2] in _NAMED and (m := _HOUSE_AFTER.match(text, p[1])) and (
                i + 1 == len(pieces) or pieces[i + 1][0] >= m.end()
                and not _numbers_only(text[p[1]:pieces[i + 1][0]])) and _LOCATIVE.search(text[max(0, p[0] - 12):p[0]]):
            p[1] = m.end()  # a street and its house number after "on", "at", "to" ("on Männi 23")
        out.append(p)
    return _join_touching(out)


# street types that are no everyday word next to a name ("Way", "Park", "Is" are left out: "JOHN IS HERE")
_STREET_TYPE = re.compile(r"[ \t]+(?P<type>street|st|road|rd|avenue|ave|drive|lane|ln|boulevard|blvd|court|ct|place|"
                          r"pl|terrace|crescent|highway|hwy|parkway|pkwy|square|sq|alley|trail|trl)\b\.?", re.IGNORECASE)


def _street_types(pieces: list[list], text: str) -> list[list]:
    """Up to two street types right after a place, person, organisation or group join it: a street named after a
    person or a place, which a model reads as that (``Nelson Mandela Drive``, ``PORT WASHINGTON ROAD``). In text
    with capitals a type must have one (``let John drive``: a verb); in lower-case text any casing counts."""
    lower = not any(c.isupper() for c in text)
    for i, p in enumerate(pieces):
        if p[2] not in _NAMED:
            continue
        limit = pieces[i + 1][0] if i + 1 < len(pieces) else len(text)
        for _ in range(2):
            m = _STREET_TYPE.match(text, p[1])
            if not m or m.end() > limit or not (lower or text[m.start("type")].isupper()):
                break  # none, or one that another piece already holds ("ROAD" before a GPE "ST.")
            p[1] = m.end()
    return _join_touching(pieces)


# the small words inside a town's name between an address and the rest of the town ("Kingston upon Hull",
# "Giugliano in Campania", "Vilanova i la Geltrú", "Bourg en Bresse")
_TOWN_PARTICLES = re.compile(r"(?:[ \t]+(?:upon|on|in|i|en|sur|sous|am|an|der|de|del|la|le|y)){1,2}[ \t]+", re.IGNORECASE)


def _town_particles(pieces: list[list], text: str) -> list[list]:
    """One or two particles between an address and a place, person, organisation or group right after it join the
    address: the rest of its town's name, which a model reads apart."""
    for a, b in zip(pieces, pieces[1:]):
        if a[2] == "ADDRESS" and (b[2] in _NAMED) and _TOWN_PARTICLES.fullmatch(text, a[1], b[0]):
            a[1] = b[0]
    return _join_touching(pieces)
