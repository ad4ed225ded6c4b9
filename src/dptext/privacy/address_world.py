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
  ``Sc. 59``, ``Ap. 616``, ``Edif. 218``, ``Depto. 478``, ``Dto. 7``, ``Of. 12``), Spanish units written out after
  a number or a comma (``Torre 2 Apartamento 301``, ``700 Interior 8``) and a New Zealand rural delivery ``RD 3``;
* more strong anchors: a Vietnamese house number before its lane or ward word (``Số 14/7/2 ngõ Huế``) and a
  ward, district or province with its name (``phường Cầu Kho``), a Philippine block and lot with the street
  after them (``B4 L17 Narra Grove``), a Chilean route and kilometre (``Ruta 68, km 12``);
* more tails: a Canadian province's code before the postal code (``QC G0R 1S0``);
* weak: an Australian or New Zealand street type that is an everyday word (``14 Kowhai Approach``, ``212 Totara
  Line``), a street named by an ordinal (``12th Avenue``), a town and a 4-digit code after a comma (``, Riverhead
  0820``: kind ``town``) and a Chilean region after a comma (``, Región Metropolitana``).

After an address, :data:`TOWN` and :data:`CODE_SEGMENT` take the towns and postal codes that end it (``, 111071,
Bogotá``, ``, Valea Lungă (Dâmbovița), 137505``, ``, GTO 38010-4521``).

House-number marks (``N° 222``, ``Nr. 24``, ``S/N``) and street types written first (``Strada``, ``Intrarea``,
``Calle``, ``Praça`` …) extend the continental patterns of :mod:`.addresses` through :data:`NUMBER_MARK`.
"""

from __future__ import annotations

import re

from dptext.privacy.address_words import PARTICLES

# a house number's mark before it: "N° 222", "Nº 5", "Nr. 24", "no. 7", "núm. 3"; "S/N" (no number) stands for one
NUMBER_MARK = r"(?:(?:n[°º]|nr\.?|no\.|núm\.?|num\.)\s?)?"
NO_NUMBER = r"s/n\b"

HOUSE_NO = re.compile(r"\b(?:h\.\s?no\.?|house\s+no\.?)\s*\d{1,5}[a-z]?(?:/\d{1,4})?\b", re.IGNORECASE)
# a numbered street with its house number's mark: "Calle 6 N° 1992", "Av. 7 N° 2499", "DIAGONAL 9 N° 982",
# "Avenida 52 B N° 310" (a letter after the street's number)
NUMBERED_STREET = re.compile(r"(?<![\w-])(?:calle|carrera|cra\.|transversal|diagonal|diag\.|avenida|av\.|blv\.)\s{1,3}"
                             r"\d{1,3}(?:\s?[a-z])?\s{1,3}(?:n[°º]|nr\.?|no\.)\s?\d{1,5}\b", re.IGNORECASE)
# a Colombian street address: "Calle 20 # 61-4 Sur", "Cl. 104C # 4H-67", "Carrera 9ª # 9-45 Este", "Cr. 7 Bis # 71-4",
# with a name or letters and a quarter before the crossing: "Av. Bolívar # 12-30", "Cl. 40b Bis C Sur # 5-12"
HASH_STREET = re.compile(r"(?<![\w-])(?:calle|carrera|cl\.|cll\.|cr\.|cra\.|kr\.|transversal|tv\.|tr\.|diagonal|dg\.|"
                         r"avenida|av\.)\s{1,3}(?:\d{1,3}[a-z]?[ªº]?|(?:[^\W\d_][\w'’]*\s{1,3}){0,4}[^\W\d_][\w'’]*)"
                         r"(?:\s{1,3}(?:bis|sur|este|norte|oeste|[a-z])\b){0,3}\s{0,3}#\s{0,3}\d{1,3}[a-z]?-\d{1,3}"
                         r"(?:\s+(?:sur|este|norte|oeste))?(?![\w-])", re.IGNORECASE)
# an Indonesian street with its house number: "Jl. Sadang Serang No. 6", "Gg. K.H. Wahid Hasyim No. 93",
# "Jalan Merdeka Barat No. 12", "Gang Mawar No. 3" (the types written out)
ID_STREET = re.compile(r"(?<![\w-])(?:(?:jl|jln|gg)\.|jalan[ \t]|gang[ \t])[ \t]{0,2}(?:[^\W\d_][\w.'’]*[ \t]){1,4}no\.[ \t]?\d{1,5}[a-z]?\b",
                       re.IGNORECASE)
_TOWN_WORD = r"(?!(?:19|20)\d\d)[^\W\d_][\w'’.]{1,30}(?:[-–][^\W\d_][\w'’.]{1,30})?"  # "Hubli–Dharwad"
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
UNIT_MARK = re.compile(r"\b(?:bl|sc|ap|et|edif|depto|dpto|dto|of|int|apto|mz)\.[ \t]?\d{1,4}[a-z]?\b"
                       # Spanish units written out after a number or a comma: "Sur, Oficina 12", "Torre 3 Apartamento
                       # 502", "700 Interior 8" (not "mi casa 5")
                       r"|(?<=[\d,][ \t])(?:apartamento|oficina|bodega|torre|casa|etapa|piso|interior|local|manzana|lote)[ \t]\d{1,4}[a-z]?\b"
                       # a New Zealand rural delivery round: "RD 3"
                       r"|\brd[ \t]?\d{1,2}\b", re.IGNORECASE)

# Australian and New Zealand street types that are everyday words ("6 Kowhai Approach", "12 Totara Line"): weak,
# so a town with its postcode or a unit beside them is needed
AU_STREET = re.compile(r"(?<![\w/-])\d{1,5}[a-z]?(?:/\d{1,5})?[ \t]{1,3}(?:(?!(?:the|a|an|of|in|on|at|to|and|or|my|your)\b)"
                       r"[^\W\d_][\w'’-]*[ \t]{1,3}){1,3}(?:approach|line|cross|rise|centre|close|vale|chase|link|"
                       r"fairway|strand|reserve|outlook|lookout|gate|retreat|broadway|alleyway)(?![\w-])", re.IGNORECASE)
# after a comma, a town and a 4-digit postcode (New Zealand, Australia, the Philippines): ", Ngaio 6035"; a code
# that reads as a year ends the clause (", Henderson 2012." but not ", Timaru 2012 was the best")
_NO_TOWN = r"(?!(?:the|a|an|of|in|on|at|to|and|or|is|was|by|for|from|with|my|your|our|his|her|its|their)\b)"
TOWN_CODE4 = re.compile(rf"(?<=,)[ \t]{{1,3}}((?:{_NO_TOWN}{_TOWN_WORD}[ \t]){{0,2}}{_NO_TOWN}{_TOWN_WORD})[ \t]{{1,2}}"
                        r"(?:(?!(?:19\d|20[0-3])\d\b)\d{4}(?![\w/-])|\d{4}(?=[ \t]*(?:[,;.)\n]|$)))", re.IGNORECASE)
# a Canadian province's code before its postal code: "QC H2X 1Y4", "on k1a0b1"
CA_TAIL = re.compile(r"(?<![\w-])(?:ab|bc|mb|nb|nl|ns|nt|nu|on|pe|qc|sk|yt)[ \t]{1,2}[a-z]\d[a-z][ \t]?\d[a-z]\d(?![\w-])",
                     re.IGNORECASE)
# a Chilean region after a comma: ", Región de Los Lagos", ", Región Metropolitana", ", REGIÓN DEL MAULE"
_CL_WORD = r"(?!(?:the|a|an|in|on|at|of|to|for|and|or|is|was|by|from|before|after|please|now)\b)[^\W\d_][\w'’-]*"
CL_REGION = re.compile(rf"(?<=,)[ \t]{{0,3}}regi[óo]n[ \t]+(?:metropolitana|(?:del?|de[ \t]+l[ao]s?)[ \t]+{_CL_WORD}"
                       rf"(?:[ \t]+(?:y[ \t]+)?(?:del?[ \t]+)?(?:l[ao]s?[ \t]+)?{_CL_WORD}){{0,5}})", re.IGNORECASE)
# a Chilean rural address, a route and its kilometre: "Ruta 68, km 12", "Ruta U-40, Km. 7", "Ruta 5 Sur km 1020"
CL_ROUTE = re.compile(r"(?<![\w-])ruta[ \t]{1,2}(?:[a-z]-?)?\d{1,3}(?:-[a-z]{1,2})?(?:[ \t]+(?:sur|norte))?,?[ \t]{1,2}"
                      r"km\.?[ \t]?\d{1,4}(?![\w-])", re.IGNORECASE)
# a Vietnamese house number ("Số 12", "4/17/203") before its lane, street, quarter or ward word: "Số 12 phố Huế",
# "4/17/203 Ngõ 9 đường Láng", "215 Trần Hưng Đạo, phường"; and a ward, commune, district, town or province with its name: "phường Bến Nghé"
_VN_UNIT = r"(?:đường|phố|ngõ|ngách|hẻm|khu|khóm|ấp|thôn|tổ|phường|xã)"
VN_STREET = re.compile(rf"(?<![\w/-])(?:số[ \t]{{1,2}})?\d{{1,4}}(?:/\d{{1,4}}){{0,3}}[ \t]{{1,2}}(?:[^\W\d_]+,?[ \t]{{1,2}}){{0,4}}"
                       rf"{_VN_UNIT}(?![\w-])", re.IGNORECASE)
_VN_NAME = r"(?!(?:the|in|on|at|of|to|for|and|or|is|was|by|from|before|after|please)\b)[^\W\d_]+"
VN_AREA = re.compile(r"(?<![\w-])(?:phường|xã|quận|huyện|thị[ \t]xã|thị[ \t]trấn|thành[ \t]phố|tp\.|tỉnh)[ \t]{1,2}"
                     rf"{_VN_NAME}(?:[ \t]{_VN_NAME}){{0,3}}(?![\w-])", re.IGNORECASE)
# a Philippine block and lot before the street: "Blk 12 Lot 5 Sampaguita St.", "B4 L17 Narra Drive"
BLOCK_LOT = re.compile(r"(?<![\w-])(?:b|blk\.?|block)[ \t]?\d{1,3}[a-z]?,?[ \t]{1,2}(?:l|lot)[ \t]?\d{1,3}[a-z]?(?![\w-])"
                       rf"(?:[ \t]{{1,2}}{_CL_WORD}){{0,4}}", re.IGNORECASE)  # and the street's name after them
# a street named by an ordinal, without a house number ("14th Avenue", "3rd St."): weak
ORDINAL_STREET = re.compile(r"(?<![\w-])\d{1,3}(?:st|nd|rd|th)[ \t]{1,3}(?:avenue|ave\.|street|st\.|drive|road|boulevard|"
                            r"lane)(?![\w-])", re.IGNORECASE)
# the segments an address may end with, after a comma: a postal code, maybe after a region code (", 110111",
# ", 8320000", ", GTO 38000-1234", ", Q. ROO 77500", ", 2080, Torhout"); and a place's district or commune in brackets ("Brno (okres Brno-venkov)").
# Before such a code, a town is taken whole even with frequent words in it (", Nueva Santa Cruz, GTO 38000")
CODE_SEGMENT = re.compile(r",[ \t]{1,3}(?:(?:[a-z]\.[ \t]?)?[a-z]{2,4}[ \t])?(?:(?:\d{6,7}|\d{5}-\d{4})(?![\w/-])|"
                          r"(?!(?:19\d|20[0-3])\d\b)\d{4,5}(?:-\d{3})?"
                          r"(?=[ \t]*(?:[,;.)\n]|$)))", re.IGNORECASE)  # 4 or 5 digits end a clause: not ", 2500 people"
# a region in brackets: a two-letter code even if it spells a stop word ("(AN)" is Ancona, "(TO)" Turin), or up to
# three words that open no clause ("(okres Brno-venkov)"; not "(see below)")
BRACKETED = (r"\((?:[^\W\d_]{2}|(?:(?!(?:the|a|an|and|or|is|was|not|see|i|we|you)\b)[^\W\d_][\w'’.-]*[ \t]?){1,3})\)")
# after an address, a comma and a town of up to six words (maybe a number first; its last word maybe two names
# joined by a slash, ", Warszawa/Wesoła", ", Biel/Bienne"), with a region in brackets or after a slash, or a code:
# ", Tessello (FC)", ", Duarte / GO", ", Corrientes 3400", ", Imphal-576707", ", 9 Mai"
TOWN = re.compile(r",\s{1,3}((?:\d{1,2}\s{1,3})?(?:['’]?[^\W\d_][\w'’.-]*\s{1,3}){0,5}['’]?[^\W\d_][\w'’.]*"
                  r"(?:[-–/][^\W\d_][\w'’.]*)*)"
                  rf"(?:\s{{1,3}}{BRACKETED}|\s{{1,3}}/\s{{1,3}}[A-Z]{{2}}\b|(?:[ \t]|-)\d{{4,6}}(?![\w/-]))?", re.IGNORECASE)

# the lines of an address block after its street: the rest of its line (no digit), up to two short lines (a
# town, a country, a region code), then a line holding only a postal code ("hurup thy\n    no\n    7760"), each
# line maybe quoted with ">"
CODE_LINE = re.compile(r"[^\n\d]{0,30}(?:\n[ \t]*>?[ \t]*[^\n]{1,30}){0,2}?\n[ \t]*>?[ \t]*"
                       r"(?:[A-Z]{1,2}[ \t-]?)?\d{3,6}(?:[ -]\d{3})?[ \t]*(?=\n|$)", re.IGNORECASE)


# a house number and a street name before a comma or a clause's end, the name no frequent English words: "1172
# Tangerudbakken,", "1233 VOIE PRINCIPALE," (weak: a postcode and town after the comma, or a cue before it, make it
# an address: "address: 1325 bølerbakken")
NUMBERED_NAME = re.compile(r"(?<![\w/.,-])(?!(?:19|20)\d\d\b)\d{1,5}[a-z]?[ \t]{1,3}((?:[^\W\d_][\w'’.-]*[ \t]{1,3}){0,3}"
                           r"[^\W\d_][\w'’.-]*)(?=[ \t]*(?:[,;.!?|)]|$))", re.IGNORECASE)


# words that announce an address: after them a lone weak anchor ("Roheline 43", "Vale Verde, 94,") is one
# (a verb of sending or moving, up to three words, then "to": "send the keys to", "moving to"; the address named,
# maybe with a note: "home address", "address (3 years):", "last known address was"; a home: "my new flat is")
CUE = re.compile(r"(?:\b(?:lives?|living|lived|resides?|residing|located|ship|shipped|deliver|delivered)\s+(?:at|to|in)"
                 r"|\b(?:ship|send|sent|post|posted|mail|mailed|forward|return|returned|moving|moved|registered)"
                 r"(?:\s+[^\W\d_]+){0,3}?\s+to\s*:?"
                 r"|\b(?:ship|deliver)\s+to\s*:|\baddress(?:\s+\([^()\n]{1,20}\))?(?:\s+(?:is|was))?\s*[:-]?"
                 r"|\b(?:flat|home|house|property)\s+(?:is|at))\s*$", re.IGNORECASE)
# three or more groups of digits, 8 digits or more: a phone or an identifier ("514 74 0290", "07 859 31 55"); a
# weak anchor cut out of one ("SSN 514 74": a street and a postcode) is none
NUMBER_CHAIN = re.compile(r"(?<![\w/.-])\d{1,6}(?:[ .-]\d{1,6}){2,}(?![\w/-])")


# a vehicle before a code (maybe after the plate's first group): a number plate, no postcode ("the vehicle,
# SO211WS, is", "reg: HX 49575", "car PO 2813 WT")
# "van" only after a determiner: before a street it is a particle ("van Aragonstraat 924")
VEHICLE = re.compile(r"\b(?:car|vehicle|(?:the|a|my|our|his|her|their|your)\s+van|truck|lorry|motorbike|plates?|reg|"
                     r"registration|rego)\b\.?\s{0,3}"
                     r"(?:(?:no\.?|number|#)\s{0,3})?[:,]?\s{0,3}(?:[a-z0-9]{1,4}[ -])?$", re.IGNORECASE)


def outside_numbers(text, strong, weak):
    """The anchors without number plates (:data:`VEHICLE`) and pieces of phones and identifiers: a weak anchor
    that starts or ends inside a :data:`NUMBER_CHAIN` goes, a strong one starts after it ("795 812 069, ulica
    Dębowa" keeps "ulica Dębowa")."""
    strong, weak = ([a for a in found if not VEHICLE.search(text, max(0, a[0] - 30), a[0])] for found in (strong, weak))
    chains = [(m.start(), m.end()) for m in NUMBER_CHAIN.finditer(text) if sum(c.isdigit() for c in m.group(0)) >= 8]
    if not chains:
        return strong, weak
    weak = [a for a in weak if not any(cs < a[1] < ce or cs < a[0] < ce for cs, ce in chains)]
    cut = []
    for s, e, kind in strong:
        s = next((ce for cs, ce in chains if cs < s < ce), s)
        s += len(text[s:e]) - len(text[s:e].lstrip(" ,"))
        if e > s:
            cut.append((s, e, kind))
    return cut, weak


def _words(s):
    """The words of ``s``, case-folded."""
    return [w.casefold() for w in re.findall(r"[^\W\d_]+", s)]


def anchors(text: str, common):
    """``(start, end, kind)`` of the anchors above, kind one of strong, tail, postcode, unit. ``common(word)``
    tells a frequent English word: a town that is one is no town ("order 552341")."""
    for kind, pat in (("strong", HOUSE_NO), ("strong", NUMBERED_STREET), ("strong", HASH_STREET), ("strong", ID_STREET),
                      ("strong", INDIAN_STREET), ("strong", VN_STREET), ("strong", VN_AREA), ("tail", CA_TAIL),
                      ("postcode", CL_REGION), ("street", AU_STREET),
                      ("strong", BLOCK_LOT), ("strong", CL_ROUTE), ("street", ORDINAL_STREET),
                      ("tail", AU_TAIL), ("postcode", EIRCODE), ("postcode", PT_POSTCODE), ("unit", UNIT_MARK)):
        for m in pat.finditer(text):
            yield m.start(), m.end(), kind
    for m in NUMBERED_NAME.finditer(text):
        if all(w in PARTICLES or not common(w) for w in _words(m.group(1))):  # "Parc des Tartans", not "Zagreb by noon"
            yield m.start(), m.end(), "street"
    for m in TOWN_CODE4.finditer(text):  # one of the town's words is no frequent English word: not ", June 2024"
        if not all(common(w.casefold()) for w in re.findall(r"[^\W\d_]+", m.group(1))):
            yield m.start(), m.end(), "town"
    for m in TOWN_PIN.finditer(text):
        words = re.findall(r"[^\W\d_]+", m.group(1))
        if any(common(w.casefold()) for w in words):
            continue
        # after a comma, the town ends an address: the street and unit segments before it join
        yield m.start(), m.end(), "tail" if text[:m.start()].rstrip(" \t").endswith(",") else "postcode"
