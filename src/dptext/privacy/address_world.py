"""Address anchors of formats beyond the US, UK and western continental ones (used by :mod:`.addresses`).

* strong: a house number after ``H.No.`` / ``house no.`` (India), an Indian street line (``772, Bir Path``,
  ``49/25, Mitter Nagar``), a numbered street with its house number's mark (``Calle 6 N° 1992``), a Colombian
  street with its crossing and number (``Calle 20 # 61-4 Sur``, ``Cl. 104C # 4H-67``) and an Indonesian street
  with its number (``Jl. Sadang Serang No. 6``);
* tails: an Australian state or territory and its 4-digit postcode after a comma (``, WA, 2865``, ``, vic
  3000``), and after a comma a town with a 6-digit code (``, Faridabad 127428``, ``, Maheshtala-436604``,
  ``, Bragadiru, 307403``: India, Romania, Russia, China); the town and street segments before a tail join the
  address as before a US ``City, ST 12345``;
* postcodes (weak, so they need a street or another anchor beside them): a town with a 6-digit code without
  the comma before it, an Irish Eircode (``D02 X285``, ``R67 PRRP``) and a Portuguese ``4419-671``;
* units (weak): Romanian and Spanish block, stair, flat and building marks with their full stop (``Bl. 27``,
  ``Sc. 59``, ``Ap. 616``, ``Edif. 218``, ``Depto. 478``, ``Dto. 7``).

House-number marks (``N° 222``, ``Nr. 24``, ``S/N``) and street types written first (``Strada``, ``Intrarea``,
``Calle``, ``Praça`` …) extend the continental patterns of :mod:`.addresses` through :data:`NUMBER_MARK`.
"""

from __future__ import annotations

import re

# a house number's mark before it: "N° 222", "Nº 5", "Nr. 24", "no. 7", "núm. 3"; "S/N" (no number) stands for one
NUMBER_MARK = r"(?:(?:n[°º]|nr\.?|no\.|núm\.?|num\.)\s?)?"
NO_NUMBER = r"s/n\b"

HOUSE_NO = re.compile(r"\b(?:h\.\s?no\.?|house\s+no\.?)\s*\d{1,5}[a-z]?(?:/\d{1,4})?\b", re.IGNORECASE)
# a numbered street with its house number's mark: "Calle 6 N° 1992", "Av. 7 N° 2499", "DIAGONAL 9 N° 982"
NUMBERED_STREET = re.compile(r"(?<![\w-])(?:calle|carrera|cra\.|transversal|diagonal|diag\.|avenida|av\.|blv\.)\s{1,3}"
                             r"\d{1,3}\s{1,3}(?:n[°º]|nr\.?|no\.)\s?\d{1,5}\b", re.IGNORECASE)
# a Colombian street address: "Calle 20 # 61-4 Sur", "Cl. 104C # 4H-67", "Carrera 9ª # 9-45 Este", "Cr. 7 Bis # 71-4"
HASH_STREET = re.compile(r"(?<![\w-])(?:calle|carrera|cl\.|cll\.|cr\.|cra\.|kr\.|transversal|tv\.|diagonal|dg\.|avenida|"
                         r"av\.)\s{1,3}\d{1,3}[a-z]?[ªº]?(?:\s+bis)?\s{0,3}#\s{0,3}\d{1,3}[a-z]?-\d{1,3}"
                         r"(?:\s+(?:sur|este|norte|oeste))?(?![\w-])", re.IGNORECASE)
# an Indonesian street with its house number: "Jl. Sadang Serang No. 6", "Gg. K.H. Wahid Hasyim No. 93"
ID_STREET = re.compile(r"(?<![\w-])(?:jl|jln|gg)\.[ \t]{0,2}(?:[^\W\d_][\w.'’]*[ \t]){1,4}no\.[ \t]?\d{1,5}[a-z]?\b",
                       re.IGNORECASE)
_TOWN_WORD = r"(?!(?:19|20)\d\d)[^\W\d_][\w'’.]{1,30}(?:-[^\W\d_][\w'’.]{1,30})?"
# an Indian street line: house number (with a flat), a comma, a name and a locality word ("772, Bir Path")
INDIAN_STREET = re.compile(rf"(?<![\w/-])\d{{1,5}}(?:/\d{{1,5}})?,[ \t]{{1,3}}(?:{_TOWN_WORD}[ \t]){{1,2}}"
                           r"(?:nagar|marg|path|ganj|zila|chowk|vihar|enclave|bagh|puram|road|street|lane)(?![\w-])",
                           re.IGNORECASE)
AU_TAIL = re.compile(r"(?<=,)[ \t]{0,3}(?:nsw|vic|qld|sa|wa|tas|nt|act)[ \t]{0,3},?[ \t]{1,3}\d{4}(?![\w/-])",
                     re.IGNORECASE)
# a town then a 6-digit code (India, Romania, Russia, China), or a town, a comma and the code
TOWN_PIN = re.compile(rf"(?<![\w-])((?:{_TOWN_WORD}[ \t]){{0,2}}{_TOWN_WORD})(?:[ \t]{{1,2}}|-|,[ \t]{{1,3}})\d{{6}}(?![\w/-])",
                      re.IGNORECASE)
EIRCODE = re.compile(r"(?<![\w-])(?:[a-z]\d{2}|d6w)[ \t][a-z0-9]{4}(?![\w-])", re.IGNORECASE)
PT_POSTCODE = re.compile(r"(?<![\w/.-])\d{4}-\d{3}(?![\w/-])")
UNIT_MARK = re.compile(r"\b(?:bl|sc|ap|et|edif|depto|dpto|dto)\.[ \t]?\d{1,4}[a-z]?\b", re.IGNORECASE)


def anchors(text: str, common):
    """``(start, end, kind)`` of the anchors above, kind one of strong, tail, postcode, unit. ``common(word)``
    tells a frequent English word: a town that is one is no town ("order 552341")."""
    for kind, pat in (("strong", HOUSE_NO), ("strong", NUMBERED_STREET), ("strong", HASH_STREET), ("strong", ID_STREET),
                      ("strong", INDIAN_STREET),
                      ("tail", AU_TAIL), ("postcode", EIRCODE), ("postcode", PT_POSTCODE), ("unit", UNIT_MARK)):
        for m in pat.finditer(text):
            yield m.start(), m.end(), kind
    for m in TOWN_PIN.finditer(text):
        words = re.findall(r"[^\W\d_]+", m.group(1))
        if any(common(w.casefold()) for w in words):
            continue
        # after a comma, the town ends an address: the street and unit segments before it join
        yield m.start(), m.end(), "tail" if text[:m.start()].rstrip(" \t").endswith(",") else "postcode"
