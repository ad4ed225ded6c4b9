"""Postal addresses in any casing: US, UK, continental European, PO boxes, military.

An address is found as *anchors* joined by short gaps:

* strong anchors: a street line (house number, up to four words, a USPS
  street suffix such as ``Rd`` / ``road`` / ``AVE``, optional unit), a
  continental street (``Hauptstraße 12``, ``12 rue de la Paix``, ``Via Roma
  5``), a PO box (``P.O. Box 123``, ``po box 123``), a UK postcode
  (``SW1A 1AA``), a US ``City, ST 12345`` tail (ST one of the 50 states, DC and
  territories) and US military addresses;
* weak anchors: a postal code (``10115 Berlin``, ``38-609``, ``874 81``,
  ``BY 91714``), a unit (``Apt. 353``) and words followed by a house number
  (``Birkimelur 59``); kept next to a strong anchor or to a weak anchor of
  another kind.

Consecutive anchors separated by at most four words and commas or line
breaks (the town between a street and its postcode) merge into one address;
a leading ``Flat 3`` / ``Apt 5`` joins it. Words inside a street line may
not be common function words (``3 dogs in the park`` is not an address).
"""

from __future__ import annotations

import functools
import re

# USPS street suffixes (Publication 28, Appendix C1), long forms and standard abbreviations
_SUFFIXES = (
    "Alley|Aly|Annex|Anx|Arcade|Arc|Avenue|Ave|Av|Bayou|Byu|Beach|Bch|Bend|Bnd|Bluff|Blf|Bluffs|Blfs|Bottom|Btm|"
    "Boulevard|Blvd|Branch|Br|Bridge|Brg|Brook|Brk|Brooks|Burg|Bg|Burgs|Bypass|Byp|Camp|Cp|Canyon|Cyn|Cape|Cpe|"
    "Causeway|Cswy|Center|Ctr|Centers|Circle|Cir|Circles|Cliff|Clf|Cliffs|Clfs|Club|Clb|Common|Commons|Corner|Cor|"
    "Corners|Cors|Course|Crse|Court|Ct|Courts|Cts|Cove|Cv|Coves|Creek|Crk|Crescent|Cres|Crest|Crossing|Xing|"
    "Crossroad|Crossroads|Curve|Dale|Dl|Dam|Dm|Divide|Dv|Drive|Dr|Drives|Estate|Est|Estates|Ests|Expressway|Expy|"
    "Extension|Ext|Extensions|Fall|Falls|Fls|Ferry|Fry|Field|Fld|Fields|Flds|Flat|Flt|Flats|Ford|Frd|Fords|Forest|"
    "Frst|Forge|Frg|Forges|Fork|Frk|Forks|Fort|Ft|Freeway|Fwy|Garden|Gdn|Gardens|Gdns|Gateway|Gtwy|Glen|Gln|Glens|"
    "Green|Grn|Greens|Grove|Grv|Groves|Harbor|Hbr|Harbors|Haven|Hvn|Heights|Hts|Highway|Hwy|Hill|Hl|Hills|Hls|"
    "Hollow|Holw|Inlet|Island|Is|Islands|Isle|Junction|Jct|Junctions|Key|Ky|Keys|Knoll|Knl|Knolls|Lake|Lk|Lakes|"
    "Land|Landing|Lndg|Lane|Ln|Light|Lgt|Lights|Loaf|Lf|Lock|Lck|Locks|Lodge|Ldg|Loop|Mall|Manor|Mnr|Manors|"
    "Meadow|Mdw|Meadows|Mdws|Mews|Mill|Ml|Mills|Mission|Msn|Motorway|Mtwy|Mount|Mt|Mountain|Mtn|Mountains|Neck|"
    "Nck|Orchard|Orch|Oval|Overpass|Opas|Park|Parks|Parkway|Pkwy|Parkways|Pass|Passage|Psge|Path|Pike|Pine|Pines|"
    "Pnes|Place|Pl|Plain|Pln|Plains|Plns|Plaza|Plz|Point|Pt|Points|Pts|Port|Prt|Ports|Prairie|Pr|Radial|Radl|Ramp|"
    "Ranch|Rnch|Rapid|Rpd|Rapids|Rpds|Rest|Rst|Ridge|Rdg|Ridges|Rdgs|River|Riv|Road|Rd|Roads|Rds|Route|Rte|Row|"
    "Rue|Run|Shoal|Shl|Shoals|Shore|Shr|Shores|Shrs|Skyway|Skwy|Spring|Spg|Springs|Spgs|Spur|Spurs|Square|Sq|"
    "Squares|Station|Sta|Stravenue|Stra|Stream|Strm|Street|St|Streets|Summit|Smt|Terrace|Ter|Throughway|Trwy|"
    "Trace|Trce|Track|Trak|Trafficway|Trfy|Trail|Trl|Trailer|Trlr|Tunnel|Tunl|Turnpike|Tpke|Underpass|Upas|Union|"
    "Un|Unions|Valley|Vly|Valleys|Via|Viaduct|Via|View|Vw|Views|Village|Vlg|Villages|Ville|Vl|Vista|Vis|Walk|"
    "Walks|Wall|Way|Ways|Well|Wl|Wells")
MILITARY = re.compile(r"\b(?:(?:USNS|USNV|USS|USCGC)\s+[A-Z][a-z]+|Unit\s+\d{4}\s+Box\s+\d{4}|PSC\s+\d{4},\s+Box\s+\d{4})"
                      r"(?:,?\s+[AFD]PO\s+A[AEP]\s+\d{5})?|\b[AFD]PO\s+A[AEP]\s+\d{5}")

_STOP = r"(?!(?:the|a|an|in|on|at|of|to|for|and|or|with|my|your|his|her|our|their|is|was|are|by|from|near|now|then|today|tomorrow|yesterday|here|there|please|but|so|if)\b)"
_W = rf"(?:{_STOP}[^\W\d_][\w'’.-]{{0,30}}|\d{{1,4}}(?:st|nd|rd|th))"
_UNIT = r"(?:,?\s{1,3}(?:apt\.?|apartment|suite|ste\.?|unit|room|rm\.?|floor|fl\.?|#)\s*#?[a-z0-9-]+)?"
STREET = re.compile(rf"(?<![\w-])\d{{1,6}}[a-z]?(?:-\d{{1,6}})?\s{{1,3}}(?:{_W}\s{{1,3}}){{0,4}}(?:{_SUFFIXES})\b\.?"
                    + _UNIT, re.IGNORECASE)
_PARTICLE = r"(?:de|del|della|di|du|des|la|le|los|las|da|do|dos|von|van|der|den|am|an|im|zum|zur)"
_PREFIX = (r"(?:rue|avenue|av\.|boulevard|bd\.?|chemin|allée|place|impasse|quai|venelle|cours|passage|route|via|viale|"
           r"piazza|piazzale|corso|vicolo|borgo|stretto|contrada|lungomare|strada|calle|c/|avenida|avda\.?|plaza|paseo|"
           r"pasadizo|ronda|travesía|carrer|camino|rua|rúa|travessa|largo|alameda|ladeira|ulica|ul\.|aleja|al\.|"
           r"pl\.|plac|os\.|osiedle|straße|im|am|an\s+der|auf\s+der|za|na)")
_SUFFIX_WORD = (r"(?:\d{1,5}[a-z]?\s{1,3})?[^\W\d_][\w'’-]{1,40}(?:straße|strasse|str\.|weg|platz|gasse|allee|ring|damm|ufer|laan|straat|gracht|"
                r"plein|kade|steeg|dijk|dyk|hof|singel|vej|gade|gatan|vägen|väg|gränd|veien|gata|utca|tie|katu)")
# a prefixed street needs its house number, before or after: several prefixes ("am", "place", "route")
# are everyday English words, and "I am worried about keeping" is no street
_PREFIXED = rf"{_PREFIX}\s{{1,3}}(?:{_PARTICLE}\s{{1,3}}|{_W}\s{{1,3}}){{0,4}}{_W}"
CONTINENTAL = re.compile(
    rf"(?<![\w-])\d{{1,5}}[a-z]?,?\s{{1,3}}{_PREFIXED}"
    rf"|(?<![\w-]){_PREFIXED},?\s{{1,3}}\d{{1,5}}[a-z]?\b"
    rf"|(?<![\w-]){_SUFFIX_WORD}\s{{0,3}}\d{{1,5}}[a-z]?\b", re.IGNORECASE)
PO_BOX = re.compile(r"\b(?:p\.?\s?o\.?\s?box|post\s+office\s+box|postfach|apartado|boîte\s+postale|bp)\s*\d{1,7}\b",
                    re.IGNORECASE)
UK_POSTCODE = re.compile(r"(?<![\w-])(?:[A-Z]{1,2}\d[A-Z\d]?|GIR)\s?\d[A-Z]{2}(?![\w-])", re.IGNORECASE)
_STATES = ("AL|AK|AZ|AR|CA|CO|CT|DE|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE|NV|NH|NJ|NM|NY|NC|ND|"
           "OH|OK|OR|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY|DC|PR|GU|VI|AS|MP")
CITY_STATE_ZIP = re.compile(rf"(?<![\w'’.-])(?:{_W}\s{{1,3}}){{0,2}}{_W},?\s{{1,3}}(?:{_STATES})\s{{1,3}}\d{{5}}(?:-\d{{4}})?\b",
                            re.IGNORECASE)
_POSTCODE = r"(?:[A-Z]{1,2}-)?(?:\d{2}-\d{3}|\d{5}-\d{3}|\d{3}\s\d{2}|\d{4,5})(?:\s?[A-Z]{2}(?![\w-]))?"
_PLACE = rf"{_STOP}[^\W\d_][\w'’.-]{{1,30}}"
POSTCODE_CITY = re.compile(rf"(?<![\w-]){_POSTCODE}\s{{1,3}}{_PLACE}(?:\s{{1,3}}{_PLACE}){{0,2}}"
                           r"(?:\s{1,3}\([A-Z]{2}\)|\s{1,3}/\s{1,3}[A-Z]{2}\b)?", re.IGNORECASE)
# alone, a postcode needs a shape a year or a count does not have: 5 digits, a separator or letters
BARE_POSTCODE = re.compile(r"(?<![\w/.-])(?:[A-Z]{1,2}-\d{4,5}|\d{2}-\d{3}|\d{5}-\d{3}|\d{3}\s\d{2}|\d{5}|"
                           r"\d{4}\s?[A-Z]{2})(?![\w/-])", re.IGNORECASE)
# weak: words then a house number (continental order), and a two-letter region before a postcode
STREET_LIKE = re.compile(rf"(?<![\w-])(?:{_W}\s{{1,3}}){{0,3}}{_W}\s{{1,3}}\d{{1,5}}[a-z]?\.?(?![\w/-])", re.IGNORECASE)
REGION_ZIP = re.compile(r"(?<![\w-])[A-Z]{2}\s{1,3}\d{4,5}(?![\w-])")
BARE_UNIT = re.compile(r"\b(?:flat|apt\.?|apartment|unit|suite|studio)\s*#?\d{1,5}[a-z]?\b", re.IGNORECASE)
# one comma- or line-separated segment before an address tail: a town, a street name, a unit
_BACK = re.compile(r"(?:(?:flat|apt\.?|apartment|unit|suite|studio)\s*\d{1,5}[a-z]?|\d{1,5}[a-z]?|"
                   rf"(?:{_W}\s{{1,3}}){{0,3}}{_W})\s*[,\n]\s*$", re.IGNORECASE)
_UNIT_LEAD = re.compile(r"(?:flat|apt\.?|apartment|unit|suite|studio)\s*\d{1,5}[a-z]?,?\s{1,3}$", re.IGNORECASE)
_GAP = re.compile(r"[\s,]*(?:[^\W\d_][\w'’.-]*[\s,]+){0,4}", re.IGNORECASE)


@functools.cache
def _stop_words() -> frozenset:
    try:
        from spacy.lang.en.stop_words import STOP_WORDS
    except ImportError:  # the regex detector runs without spaCy; the pattern's own short list still applies
        return frozenset()
    return frozenset(STOP_WORDS)


def find(text: str):
    """(start, end) of the addresses in ``text``."""
    strong = []
    for kind, pat in (("strong", STREET), ("strong", CONTINENTAL), ("strong", PO_BOX), ("tail", UK_POSTCODE),
                      ("tail", CITY_STATE_ZIP), ("strong", MILITARY)):
        strong.extend((m.start(), m.end(), kind) for m in pat.finditer(text))
    stop = _stop_words()
    weak = [(m.start(), m.end(), "postcode") for m in POSTCODE_CITY.finditer(text)
            if m.group(0).split()[-1].casefold() not in stop  # "12345 since" is no place
            and not re.match(r"(?:19|20)\d\d\s", m.group(0))]  # nor is "2020 report"
    for kind, pat in (("postcode", BARE_POSTCODE), ("postcode", REGION_ZIP), ("unit", BARE_UNIT),
                      ("street", STREET_LIKE)):
        weak += [(m.start(), m.end(), kind) for m in pat.finditer(text)]
    groups: list[list] = []
    for s, e, kind in sorted(strong + weak):
        if groups and (s <= groups[-1][1] or _GAP.fullmatch(text, groups[-1][1], s)):
            g = groups[-1]
            g[1] = max(g[1], e)
            g[2].add(kind)
        else:
            groups.append([s, e, {kind}])
    for s, e, kinds in groups:
        if not kinds & {"strong", "tail"} and not ("postcode" in kinds and len(kinds) > 1):  # "Main 5, 12345"
            continue
        for _ in range(3 if kinds & {"tail", "postcode"} else 0):  # town, street and unit lines before the tail: "Flat 16, Rogers Creek, Rosieview, TN63 1RS"
            m = _BACK.search(text, max(0, s - 60), s)
            if not m or text[m.start():s].split()[0].casefold().strip(",") in stop:
                break
            s = m.start()
        lead = _UNIT_LEAD.search(text, max(0, s - 20), s)
        yield (lead.start() if lead else s), e
