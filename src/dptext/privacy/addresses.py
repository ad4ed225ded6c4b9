"""Postal addresses in any casing: US, UK, continental European, PO boxes, military.

An address is found as *anchors* joined by short gaps:

* strong anchors: a street line (house number, up to four words, a USPS
  street suffix such as ``Rd`` / ``road`` / ``AVE``, optional unit), a
  continental street (``Hauptstraße 12``, ``12 rue de la Paix``, ``Via Roma
  5``), a PO box (``P.O. Box 123``, ``po box 123``), a UK postcode
  (``SW1A 1AA``), a US ``City, ST 12345`` tail (ST one of the 50 states, DC and
  territories), US military addresses,
  a street type written after the name with a house number (``186 Tycho Jessens
  Vej``, ``Gosposka ulica 58``), a Canadian postcode (``T2V 2W2``), a code
  after ``zip code`` / ``postal code``, and a street without a number after
  ``on`` / ``at`` / ``corner of`` (``on Chipmunk Lane``) when one of its words
  is no frequent English word;
* weak anchors: a postal code (``10115 Berlin``, ``38-609``, ``874 81``,
  ``BY 91714``, ``, 802`` after a town), a unit (``Apt. 353``) and words
  followed by a house number (``Birkimelur 59``, ``Recanto Rodrigues, 72,``);
  kept next to a strong anchor or to a weak anchor of another kind, or a street
  right after a cue (``lives at``, ``address:``, ``moving to``, ``send the keys to``, ``my new flat is``) when
  not all its words are frequent English ones; an 8-digit code is a
  Brazilian postcode (``90252092 Gomes / PI``); a house number and a name before a comma (``1172
  Tangerudbakken, 2285 Kragerø``) is a street. No anchor is cut from a phone or an identifier (three or more
  digit groups: ``SSN 514 74 0290``) or follows a vehicle (a number plate: ``the vehicle, HX 49575``).

An address then takes a house number right before it and up to three ``, Town``
or ``, 110111`` segments after it (a town with a region such as ``(FC)`` or ``/ GO``),
stopping at a stop word or a frequent English word (:mod:`.address_world`).

Consecutive anchors separated by at most four words and commas or line
breaks (the town between a street and its postcode) merge into one address;
a leading ``Flat 3`` / ``Apt 5`` joins it. Words inside a street line may
not be common function words (``3 dogs in the park`` is not an address), nor
pronouns, auxiliaries or conjunctions written in lower case, which belong to a
clause and never to a street name (``29 when he crashed into Mt``, ``26
countries will track``).

The regular expressions live in :mod:`.address_patterns`, their word lists in :mod:`.address_words`.
"""

from __future__ import annotations

import functools
import re

from dptext.privacy import address_world
from dptext.privacy.address_patterns import (  # noqa: F401 - the patterns, re-exported
    BARE_POSTCODE, BARE_UNIT, CA_POSTCODE, CITY_STATE_ZIP, CONTINENTAL, MILITARY, NAMED_STREET, POSTCODE_CITY,
    PO_BOX, REGION_ZIP, STREET, STREET_AFTER, STREET_LIKE, TOWN_CODE, UK_POSTCODE, ZIP_CUE, _BACK, _GAP,
    _UNIT_LEAD)
from dptext.privacy.address_words import CLAUSE as _CLAUSE
from dptext.privacy.address_words import NOT_STREET as _NOT_STREET
from dptext.privacy.address_words import PARTICLES as _PARTICLES
from dptext.privacy.id_words import LABELS as _ID_LABEL


def _clause_words(m):
    """True when a street-line match has a pronoun, auxiliary or conjunction between its number and street type."""
    inner = re.findall(r"[^\W\d_][\w'’]*", m.group(0))[:-1]
    return any(w.casefold() in _CLAUSE and not (w[:1].isupper() and not w.isupper() and len(w) > 1) for w in inner)


def everyday(word: str) -> bool:
    """``word`` (case-folded) is a frequent English word or a stop word."""
    return _common_words()(word) or word in _stop_words()


def stop_word(word: str) -> bool:
    """``word`` (case-folded) is one of spaCy's English stop words."""
    return word in _stop_words()


def _english(m):
    """A continental street match made of frequent English words only: "spring 1959", "bring 2" (the German
    street endings "-ring", "-weg" end English words too)."""
    return all(everyday(w) for w in _letters(m.group(0))) and not _C_SLASH.match(m.group(0))


def _english_name(m):
    """A street-type-after match whose name words (all but the type, its last word) are frequent English ones:
    "main gate 2", "love u. 2" (the Hungarian "u." for utca), not "Berings gate 210"."""
    words = _letters(m.group(0))
    return all(everyday(w) for w in words[:-1])


_C_SLASH = re.compile(r"c/", re.IGNORECASE)  # Spanish "C/" (calle) is no English word: "C/ Eras 47"


def _weak_pair(text, found):
    """Two kinds of weak anchor make an address ("Main 5, 12345"), side by side or as one text read two ways, but
    not a flight number ("flight 1249", "UA 1706", "@USAirways 1729": after a flight word, an airline's code in
    capitals or a handle), words and a year ("Philosophica, 1503"), nor words that are all frequent English ones
    ("moved 12 times") unless they name a unit ("Apt. 559") or end an address after a comma (", PA 569 32")."""
    kinds = {k for _, _, k in found}
    if len(kinds) < 2:
        return False
    s, e = min(a[0] for a in found), max(a[1] for a in found)
    if text[s - 1:s] == "@" and "," not in text[s:e] or _FLIGHT.search(text, max(0, s - 12), e):
        return False  # a handle and a number ("@USAirways 1729"), not a handle before a whole address
    if text[:s].rstrip().endswith(","):
        return True  # the last line of an address: "…, PA 569 32", "…, ni 1370"
    if _AIRLINE.fullmatch(text, s, e) or _YEAR_ONLY.fullmatch(text, s, e):
        return False
    if any(k != k2 and (e1 <= s2 or e2 <= s1) for s1, e1, k in found for s2, e2, k2 in found):
        return True
    return "unit" in kinds or not all(everyday(w) for w in _letters(text[s:e]))


# a flight number: after a flight word, or an airline's two-letter code in capitals and up to four digits
_AIRLINE = re.compile(r"[A-Z][A-Z0-9] ?\d{1,4}")
_YEAR_ONLY = re.compile(r"\D*(?<!\d)(?:1\d{3}|20[0-3]\d)")  # words and a year: "Margarita Philosophica, 1503"


def _after_cue(text, s, e):
    """Where a lone street ``text[s:e]`` starts after a cue (:data:`.address_world.CUE`), maybe one inside it
    ("home address Conjunto Macedo, 60"); None without a cue, or when its words are all frequent English ones
    ("moved to page 12", "Windows 10")."""
    for p in [s] + [s + w.start() for w in re.finditer(r"(?<!\S)[^\W\d_]", text[s:e])]:
        if address_world.CUE.search(text, max(0, p - 40), p):
            return None if all(everyday(x) for x in _letters(text[p:e])) else p
    return None


def _letters(s):
    """The words of ``s``; a house number's letter ("2a") is none."""
    return [w.casefold() for w in re.findall(r"(?<!\d)[^\W\d_]+", s)]


def _drop_stop_tail(text, m, stop):
    """A postcode-and-town match without the stop words at its end ("12345 since", "8609 Stenderup you");
    None when no town word is left."""
    words = [(w.start(), w.end()) for w in re.finditer(r"[^\s()/]+", m.group(0))]
    region = re.search(r"(?:\s\([^()]{1,40}\)|\s/\s[A-Z]{2})$", m.group(0), re.IGNORECASE)
    if region:  # a state after a slash ends a Brazilian address: "28234065 Cassiano Grande / SE"
        return m.start(), m.end(), "tail" if region.group(0).lstrip().startswith("/") else "postcode"
    low = [m.group(0)[a:b].casefold() for a, b in words]
    # the town ends before a stop word that is no particle of a place name: "4000-123 Porto last year", "6012 before
    # noon" (no town)
    first = 2 if len(low) > 1 and len(low[1]) == 2 and low[1].isalpha() else 1  # "7311 AS": the code's letters
    cut = next((i for i in range(first, len(words)) if low[i] in stop and low[i] not in _PARTICLES
                and low[i - 1] not in _PARTICLES), len(words))  # a particle's word is the town's: "Zell am See"
    del words[cut:]
    while len(words) > 1 and low[len(words) - 1] in stop and low[len(words) - 2] not in _PARTICLES:
        words.pop()
    return (m.start(), m.start() + words[-1][1], "postcode") if len(words) > 1 else None


# the house number, maybe after a flat and a slash: "1340 Grev Moltkevej", "5/2 Rich Reach"
_NUMBER_LEAD = re.compile(r"(?<![\w,./-])(?:\d{1,5}/)?\d{1,5}[a-z]?\s{1,3}$", re.IGNORECASE)


def _forward(text: str, end: int, stop: frozenset) -> int:
    """``end`` moved over up to three ``, Town`` or ``, 110111`` (postal code) segments, a town's words neither stop
    words nor frequent English words."""
    common = _common_words()
    for _ in range(3):
        code = address_world.CODE_SEGMENT.match(text, end)  # ", 110111, Bogotá": a code between the towns
        if code:
            end = code.end()
            continue
        m = address_world.TOWN.match(text, end)
        if not m:
            break
        words = list(re.finditer(r"\S+", m.group(1)))
        coded = address_world.CODE_SEGMENT.match(text, m.end())  # a postal code after it: frequent words are the town's
        # the town is the words before the first stop or frequent word: ", obdam is free" -> obdam
        # (each of two names joined by a slash: ", and/or the next" is no town)
        k = next((i for i, w in enumerate(words) if (low := w.group().casefold().strip(".'’")) not in _PARTICLES and any(
                  part in stop or not coded and common(part) for part in {low, *low.split("/")} if part)), len(words))
        if k < len(words):
            if k == 0:
                break
            end = m.start(1) + words[k - 1].end()
            break
        end = m.end()
    m = address_world.CODE_LINE.match(text, end)
    return m.end() if m else end


@functools.cache
def _common_words():
    try:
        from dptext.privacy.gazetteers import lexicon

        return lexicon().common
    except Exception:  # noqa: BLE001 - without the word lists only stop words end a town
        return lambda w: False


@functools.cache
def _stop_words() -> frozenset:
    try:
        from spacy.lang.en.stop_words import STOP_WORDS
    except ImportError:  # the regex detector runs without spaCy; the pattern's own short list still applies
        return frozenset()
    return frozenset(STOP_WORDS)




def _named_streets(text):
    common = _common_words()
    for m in NAMED_STREET.finditer(text):
        words = m.group(1).split()[:-1]
        if any(not common(w.casefold().strip(".'’")) and not w[:1].isdigit() for w in words):
            yield m.start(1), m.end(1), "strong"


# a flight's number is no house number or postcode: "FLIGHT AA 1234", "flight 4146"
_FLIGHT = re.compile(r"(?i)\b(?:flight|flt)\.?\s{1,3}(?:[a-z]{2}\s?)?\d")
# a Dutch postcode whose capitals spell an English two-letter word ("4146 TO", "1614 DO"), then a town; in
# upper-case text ("FLIGHT 4146 TO DENVER") only a comma before it tells it from a sentence
_WORD_LETTERS = re.compile(r"\d{4}\s?(?i:to|of|in|on|at|is|it|am|pm|an|as|be|by|do|go|he|if|me|my|no|or|so|up|us|we)\b")


def _year_like_code(text, m):
    """A code that reads as a year is a postcode after a comma and before a town no English list knows:
    ", 1968 Schrattenthal"; not "2020 report" nor ", 2021 edition"."""
    return text[:m.start()].rstrip(" \t").endswith(",") and not any(
        everyday(w) for w in _letters(m.group(0)) if w not in _PARTICLES)  # ", 3571 Laa an der Thaya"


def _between_commas(text, m, town=False):
    """A postcode set between commas or line ends (", 4006 AS, WERKHOVEN", ", ZH 3284 AS"): its letters are no
    English word there, while "FLIGHT 4146 TO DENVER" stays a flight. With ``town``, the town follows the code
    (", 4006 AS WERKHOVEN") and only the comma before counts."""
    before, after = text[:m.start()].rstrip(" \t"), text[m.end():].lstrip(" \t")
    framed = before[-1:] in (",", "\n") or re.search(r"[,\n][ \t]*[A-Za-z]{2}$", before)  # ", ZH 3284 AS"
    return bool(framed) and (town or after[:1] in (",", "\n") or not after)


def _weak_kept(text, m, pat, stop):
    """A weak anchor counts unless a stop word ends its words ("2020 we", "IN 1090"), a phone or vehicle word
    opens a street-like one, or it is a flight's number or an ID's ("Patient ID 2231")."""
    letters = _letters(m.group(0))
    ends_well = (not letters or letters[-1] not in stop or pat is TOWN_CODE
                 # a house number with a letter or a flat after a stop word: "Klesarski put 9b" (put: road), not
                 # "dates before 1387"
                 or pat is STREET_LIKE and re.search(r"\d[a-z]\.?$|\d/\d", m.group(0), re.IGNORECASE)
                 and not all(everyday(w) for w in letters)
                 or pat is BARE_POSTCODE and _between_commas(text, m))  # after a comma
    return (ends_well and not (pat is STREET_LIKE and letters[:1] and letters[0] in _NOT_STREET)
            and not _FLIGHT.search(text, max(0, m.start() - 12), m.start() + 7)
            and not _ID_LABEL.search(text, max(0, m.start() - 12), m.end()))


def find(text: str):
    """(start, end) of the addresses in ``text``."""
    strong = [(m.start(1), m.end(1), "strong") for m in ZIP_CUE.finditer(text)] + list(_named_streets(text))
    for kind, pat in (("strong", STREET), ("strong", CONTINENTAL), ("strong", PO_BOX), ("tail", UK_POSTCODE),
                      ("tail", CITY_STATE_ZIP), ("strong", MILITARY), ("strong", STREET_AFTER),
                      ("tail", CA_POSTCODE)):
        strong.extend((m.start(), m.end(), kind) for m in pat.finditer(text)
                      if not (pat is STREET and _clause_words(m) or pat is CONTINENTAL and _english(m)
                              or pat is STREET_AFTER and _english_name(m)
                              or pat is CITY_STATE_ZIP and _ID_LABEL.search(m.group(0))))
    world = list(address_world.anchors(text, _common_words()))
    strong += [a for a in world if a[2] in ("strong", "tail")]
    stop = _stop_words()
    towns = {e for s, e, kind in world if kind == "town"}
    weak = [a for a in world if a[2] not in ("strong", "tail")] + [w for m in POSTCODE_CITY.finditer(text)
            if (not re.match(r"(?:19|20)\d\d\s", m.group(0)) or _year_like_code(text, m))
            and (not _WORD_LETTERS.match(m.group(0)) or not m.group(0).isupper() or _between_commas(text, m, town=True))
            for w in [_drop_stop_tail(text, m, stop)] if w]
    for kind, pat in (("postcode", BARE_POSTCODE), ("postcode", REGION_ZIP), ("unit", BARE_UNIT),
                      ("street", STREET_LIKE), ("postcode", TOWN_CODE)):
        weak += [(m.start(), m.end(), kind) for m in pat.finditer(text) if _weak_kept(text, m, pat, stop)
                 and not (pat is STREET_LIKE and m.end() in towns)]  # ", Riverhead 0820" is a town, no street
    groups: list[list] = []
    strong, weak = address_world.outside_numbers(text, strong, weak)
    for s, e, kind in sorted(strong + weak):
        if groups and (s <= groups[-1][1] or _GAP.fullmatch(text, groups[-1][1], s)):
            g = groups[-1]
            g[1] = max(g[1], e)
            g[2].add(kind)
            g[3].append((s, e, kind))
        else:
            groups.append([s, e, {kind}, [(s, e, kind)]])
    for s, e, kinds, found in groups:
        if not kinds & {"strong", "tail"} and not _weak_pair(text, found):  # two kinds of weak anchor: "Main 5, 12345"
            s = _after_cue(text, s, e) if "street" in kinds else None  # or a cue: "lives at Roheline 43"
            if s is None:
                continue
        for _ in range(3 if kinds & {"tail", "postcode"} else 0):  # town, street and unit lines before the tail: "Flat 16, Rogers Creek, Rosieview, TN63 1RS"
            m = _BACK.search(text, max(0, s - 60), s)
            if not m or text[m.start():s].split()[0].casefold().strip(",") in stop:
                break
            s = m.start()
        lead = _UNIT_LEAD.search(text, max(0, s - 20), s) or _NUMBER_LEAD.search(text, max(0, s - 8), s)
        s = lead.start() if lead else s
        unit = _UNIT_LEAD.search(text, max(0, s - 20), s) if lead else None  # "Level 9 2 Sanders Tollway"
        yield (unit.start() if unit else s), _town_after_code(text, _forward(text, e, stop), stop)


_WORD_AFTER = re.compile(r"[ \t]{1,3}([^\W\d_][\w'’-]*)")


def _town_after_code(text: str, end: int, stop: frozenset) -> int:
    """``end`` moved over the town written after a UK postcode without a comma (``XQ0Y 5JX Brading``,
    ``os8j 6wb bridgnorth``): up to three words that are neither stop words nor frequent English words."""
    code = UK_POSTCODE.search(text, max(0, end - 9), end)
    if code is None or code.end() != end:
        return end
    common = _common_words()
    for _ in range(3):
        m = _WORD_AFTER.match(text, end)
        if not m or (low := m.group(1).casefold()) in stop or common(low):
            break
        end = m.end()
    return end
