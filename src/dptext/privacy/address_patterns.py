"""The regular expressions of :mod:`.addresses`: street lines, continental streets, postcodes, units and the gaps
between the pieces of one address (the word lists they use live in :mod:`.address_words`)."""

from __future__ import annotations

import re

from dptext.privacy import address_world
from dptext.privacy.address_words import PARTICLES as _PARTICLES
from dptext.privacy.address_words import PREFIX as _PREFIX
from dptext.privacy.address_words import STATES as _STATES
from dptext.privacy.address_words import SUFFIXES as _SUFFIXES
from dptext.privacy.address_world import NO_NUMBER, NUMBER_MARK

MILITARY = re.compile(r"\b(?:(?:USNS|USNV|USS|USCGC)\s+[A-Z][a-z]+|Unit\s+\d{4}\s+Box\s+\d{4}|PSC\s+\d{4},\s+Box\s+\d{4})"
                      r"(?:,?\s+[AFD]PO\s+A[AEP]\s+\d{5})?|\b[AFD]PO\s+A[AEP]\s+\d{5}")

_STOP = r"(?!(?:the|a|an|in|on|at|of|to|for|and|or|with|my|your|his|her|our|their|is|was|are|by|from|near|now|then|today|tomorrow|yesterday|here|there|please|but|so|if)\b)"
_W = rf"(?:{_STOP}[^\W\d_][\w'’.-]{{0,30}}|\d{{1,4}}(?:st|nd|rd|th))"
_UNIT = r"(?:,?\s{1,3}(?:apt\.?|apartment|suite|ste\.?|unit|room|rm\.?|floor|fl\.?|#)\s*#?[a-z0-9-]+)?"
STREET = re.compile(rf"(?<![\w-])\d{{1,6}}[a-z]?(?:[-/]\d{{1,6}})?\s{{1,3}}(?:[a-z]\s{{1,3}}(?:{_W}\s{{1,3}}){{1,4}}|(?:{_W}\s{{1,3}}){{0,4}})"
                    rf"(?=[^\W\d_]){_STOP}(?:{_SUFFIXES})\b\.?"
                    + _UNIT, re.IGNORECASE)
_PARTICLE = "(?:" + "|".join(_PARTICLES) + ")"
_SUFFIX_WORD = (r"(?:\d{1,5}[a-z]?\s{1,3})?[^\W\d_][\w'’-]{1,40}(?:straße|strasse|str\.|weg|platz|gasse|allee|ring|damm|ufer|laan|straat|gracht|"
                r"plein|kade|steeg|dijk|dyk|hof|singel|dreef|baan|boulevard|vej|gade|gatan|vägen|väg|gränd|veien|gata|utca|tie|katu)")
# a prefixed street needs its house number, before or after: several prefixes ("am", "place", "route")
# are everyday English words, and "I am worried about keeping" is no street
_PREFIXED = rf"(?=[^\W\d_])(?:{_PREFIX})\s{{1,3}}(?:{_PARTICLE}\s{{1,3}}|{_W}\s{{1,3}}){{0,4}}{_W}"
# a house number after the street, with a flat or a range: "Grottgera 47/83", "Seidel-Allee 5-9", "Via Roma 5b"
_HOUSE = rf"(?:{NUMBER_MARK}\d{{1,5}}[a-z]?(?:[/-]\d{{1,4}}[a-z]?)?\b|{NO_NUMBER})"
CONTINENTAL = re.compile(
    rf"(?<![\w-])\d{{1,5}}[a-z]?,?\s{{1,3}}(?![ap]\.?m\b){_PREFIXED}"  # "3 am due" is a time
    rf"|(?<![\w-]){_PREFIXED},?\s{{1,3}}{_HOUSE}(?:[ \t]\d{{1,5}}(?![\w/-]))?"  # "Viaducto Pineda 302 167"
    rf"|(?<![\w-]){_SUFFIX_WORD}\s{{0,3}}{_HOUSE}"
    # the house number before a street word of a long Nordic, Dutch or German ending: "1340 Grev Moltkevej"
    rf"|(?<![\w-])\d{{1,5}}[a-z]?\s{{1,3}}(?:{_W}\s{{1,3}}){{0,2}}[^\W\d_][\w'’-]{{1,40}}"
    r"(?:vej|gade|gatan|vägen|veien|gata|straße|strasse|straat|laan|gracht|steeg|singel|dijk)(?![\w-])", re.IGNORECASE)
PO_BOX = re.compile(r"\b(?:p\.?\s?o\.?\s?box|post\s+office\s+box|postfach|apartado|boîte\s+postale|bp)\s*\d{1,7}\b",
                    re.IGNORECASE)
UK_POSTCODE = re.compile(r"(?<![\w-])(?:[A-Z]{1,2}\d[A-Z\d]?|GIR)\s?\d[A-Z]{2}(?![\w-])", re.IGNORECASE)
CITY_STATE_ZIP = re.compile(rf"(?<![\w'’.-])(?:{_W}\s{{1,3}}){{0,2}}{_W},?\s{{1,3}}(?=[^\W\d_])(?:{_STATES})\s{{1,3}}\d{{5}}(?:-\d{{4}})?\b",
                            re.IGNORECASE)
# the two letters of a Dutch postcode ("1234 AB", "1614 DO") are never an English two-letter word in lower case:
# "flight 4146 to denver"
_NOT_WORD2 = r"(?!(?-i:to|of|in|on|at|is|it|am|pm|an|as|be|by|do|go|he|if|me|my|no|or|so|up|us|we)\b)"
_POSTCODE = r"(?:[A-Z]{1,2}-)?(?:\d{2}-\d{3}|\d{4,5}-\d{3}|\d{8}|\d{3}\s\d{2}|\d{4,5})(?:\s?" + _NOT_WORD2 + r"[A-Z]{2}(?![\w-]))?"
_PLACE = rf"{_STOP}[^\W\d_][\w'’.-]{{1,30}}(?:[/–][^\W\d_][\w'’.-]{{1,30}})?"  # two names: "Biel/Bienne"
POSTCODE_CITY = re.compile(rf"(?<![\w-]){_POSTCODE}\s{{1,3}}{_PLACE}(?:\s{{1,3}}(?:{_PARTICLE}\s{{1,3}}){{0,2}}{_PLACE}){{0,2}}"
                           rf"(?:\s{{1,3}}{address_world.BRACKETED}|\s{{1,3}}/\s{{1,3}}[A-Z]{{2}}\b)?", re.IGNORECASE)
# alone, a postcode needs a shape a year or a count does not have: 5 digits, a separator or letters
BARE_POSTCODE = re.compile(r"(?<![\w/.-])(?:[A-Z]{1,2}-\d{4,5}|\d{2}-\d{3}|\d{5}-\d{3}|\d{3}\s\d{2}|\d{5}|"
                           r"\d{4}\s?" + _NOT_WORD2 + r"[A-Z]{2})(?![\w/-])", re.IGNORECASE)
# weak: words then a house number (continental order), and a two-letter region before a postcode
# (a leading number is a house or building number: "443 Prenzlauer Allee 20"; "Recanto Rodrigues, 72,": the
# number between commas)
STREET_LIKE = re.compile(rf"(?<![\w-])(?:(?!(?:19|20)\d\d\b)\d{{1,5}}[a-z]?[ \t]{{1,3}})?(?:{_W}[ \t]{{1,3}}){{0,3}}{_W}"
                         rf"(?:[ \t]{{1,3}}{NUMBER_MARK}(?!(?:19\d|20[0-3])\d\b)\d{{1,5}}[a-z]?(?:/\d{{1,4}}[a-z]?)?\.?(?![\w/-])"
                         rf"|,[ \t]{{1,3}}(?:(?!(?:19\d|20[0-3])\d\b)\d{{1,5}}[a-z]?|{NO_NUMBER})(?=[,;!?|]|\.(?!\w)|\s*$))",
                         re.IGNORECASE | re.MULTILINE)
# a street type written as its own word after the name, in languages where it follows: "Tycho Jessens Vej",
# "Gosposka ulica 58", "Berings gate 210"; a house number before or after it is required
_AFTER = (r"(?:vej|gade|gate|gata|gatan|vägen|veien|ulica|ulice|utca|u\.|út|körút|krt\.?|tér|rakpart|rkp\.|sétány|fasor|"
          r"allee|weg|laan|straat|"
          r"straße|strasse|tie|katu|põik|tee|iela|gatvė|cesta)")
STREET_AFTER = re.compile(rf"(?<![\w-])\d{{1,5}}[a-z]?\s{{1,3}}(?:{_W}\s{{1,3}}){{1,3}}(?=[^\W\d_]){_AFTER}(?![\w-])"
                          rf"(?:\s{{1,3}}\d{{1,5}}[a-z]?\b)?"
                          rf"|(?<![\w-])(?:{_W}\s{{1,3}}){{1,3}}(?=[^\W\d_]){_AFTER}\s{{1,3}}\d{{1,5}}[a-z]?\b\.?", re.IGNORECASE)
# a short postal code after a town and a comma ("Selfoss,  802", "Cebbala, 43 9122", "Larnaka, LA 6012")
# ("NO 9700", "la 6031": a region in any casing, even one that is a stop word; "43 9122": Tunisian)
TOWN_CODE = re.compile(r"(?<=,)[ \t]{1,3}(?:[A-Za-z]{2,5}[ \t]{1,3})?(?!(?:19|20)\d\d\b)(?:\d{2} \d{4}|\d{3,5}(?:[ -]\d{2,4})?)"
                       r"(?![\w/-])")
# Canadian postal codes: "T2V 2W2"
CA_POSTCODE = re.compile(r"(?<![\w-])[A-Z]\d[A-Z]\s?\d[A-Z]\d(?![\w-])", re.IGNORECASE)
REGION_ZIP = re.compile(r"(?<![\w-])[A-Z]{2}\s{1,3}\d{4,5}(?![\w-])")
BARE_UNIT = re.compile(r"\b(?:flat|apt\.?|apartment|unit|suite|studio)\s*#?\d{1,5}[a-z]?\b", re.IGNORECASE)
# one comma- or line-separated segment before an address tail: a town, a street name, a unit
_BACK = re.compile(r"(?<![\w'’./])(?:(?:flat|apt\.?|apartment|unit|suite|studio)\s*\d{1,5}[a-z]?|\d{1,5}[a-z]?(?:/\d{1,5})?|"
                   rf"(?:\d{{1,5}}[a-z]?\s{{1,3}})?(?:{_W}\s{{1,3}}){{0,3}}{_W})\s*[,\n]\s*$", re.IGNORECASE)  # "33F Rosas Towers,"
_UNIT_LEAD = re.compile(r"(?:flat|apt\.?|apartment|unit|suite|studio|level)\s*\d{1,5}[a-z]?,?\s{1,3}$", re.IGNORECASE)
_GAP = re.compile(r"[\s,>]*(?:[^\W\d_][\w'’.-]*(?:/[^\W\d_][\w'’.-]*)?[\s,>]+){0,4}", re.IGNORECASE)  # ">": a quoted e-mail's lines

# a postal code after the words that name it: "my zip code is 46000", "postal code: 4761 nx", "ZIP CODE IS 245"
ZIP_CUE = re.compile(r"\b(?:zip|postal|post)\s?code\s{0,3}(?:is\s|:|-)?\s{0,3}"
                     r"((?:[A-Z]{1,2}-?)?\d{3,6}(?:[ -]\d{2,4})?(?:\s?" + _NOT_WORD2 + r"[A-Z]{2})?)(?![\w/-])", re.IGNORECASE)
# a street without a house number after "on", "at" or "corner of": "is on Chipmunk Lane", "ON HEUVEL ST"; a
# name made only of frequent English words is left out ("on hold way too long", "at Park Avenue")
NAMED_STREET = re.compile(rf"\b(?:on|at|corner\s+of)\s{{1,3}}(?!it['’]?s\b)((?:{_W}\s{{1,3}}){{1,3}}?"
                          r"(?:street|st|road|rd|avenue|ave|lane|ln|boulevard|blvd|way|court|ct|terrace|crescent|close)"
                          r"\b\.?)(?![\w'’-])", re.IGNORECASE)
