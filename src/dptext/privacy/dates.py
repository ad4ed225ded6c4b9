"""Dates and times of day for the ``DATE`` recognizer of :mod:`.recognizers`.

* numeric dates (``03/04/2021``, ``2021-03-04``, ``08.06.59``) and written ones (``March 3, 2021``, ``8 jun 1959``,
  ``Oct 17 '61``, ``the eighth of june``), a weekday before a date joined to it (``Monday, 22 Sep 2025``);
* a day without a year after a dating word (``expires 4/10``, ``for 03.03``, ``on the 14th``) or a weekday (``tues 3/4``);
* years alone (``in 1484``, ``since 2015,``, ``the 2014 holiday season``), years of an era (``600 BC``), decades (``the 80s``), spans of years (``1974/75``) and times of day (``12:10``, ``10:30 pm``, ``7 a.m.``, ``noon``, ``5 o'clock``).
"""

from __future__ import annotations

import re

from dptext.privacy import addresses

_MONTHS = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
           r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?")
# "the eighth of june", "March the twenty-first"
_ORDINAL = (r"(?:(?:(?:twenty|thirty)[- ])?(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth)|tenth|"
            r"eleventh|twelfth|thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|"
            r"thirtieth)")
# a year after a day and month: "1959", or two digits after an apostrophe ("Oct 17 '61")
_YEAR = r"(?:,?\s+(?:\d{4}\b|['’]\d{2}\b))?"
DATE = re.compile(r"(?<![\w/.-])(?:\d{1,2}[/.]\d{1,2}[/.](?:\d{4}|\d{2})|\d{4}-\d{1,2}-\d{1,2}|\d{4}/\d{1,2}/\d{1,2})"
                  r"(?![\w/-])"
                  rf"|\b{_MONTHS}(?:\s+|(?<=\.))\d{{1,2}}(?:st|nd|rd|th)?\b{_YEAR}"  # "Jan.22" too
                  rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTHS}(?!\w){_YEAR}"
                  rf"|\b{_MONTHS}\s+\d{{4}}\b"
                  rf"|(?<![\w/.-])\d{{1,2}}[-/.]{_MONTHS}[-/.](?:\d{{4}}|\d{{2}})(?![\w/-])"  # 08-Jun-1959
                  rf"|\b{_ORDINAL}\s+of\s+{_MONTHS}(?!\w)|\b{_MONTHS}\s+(?:the\s+)?{_ORDINAL}\b", re.IGNORECASE)


# a day without a year after a word that dates something: "book for 3/19", "expires 4/10", "on 25 th", "on the
# 14th." (an ordinal day only before a stop word or the end of a clause: not "on the 3rd floor")
_DATE_CUE = (r"\b(?:on|until|till|til|before|after|since|due|expires?|expiring|expired"
             r"|(?P<loose>for|by|from|thru|through))\s+")  # loose: also before a fraction ("by 2/3")
CUED_DAY = re.compile(_DATE_CUE + r"(?:the\s+)?(?P<value>(?P<m>1[0-2]|0?[1-9])/(?P<d>3[01]|[12]\d|0?[1-9])(?![\w/]|[.,]\d)"
                      r"|(?:3[01]|[12]\d|0[1-9])\.(?:1[0-2]|0[1-9])(?![\w/]|[.,]\d)"  # "for 03.03.": day and month
                      r"|(?:3[01]|[12]\d|0?[1-9])\s?(?:st|nd|rd|th)\b(?=\s*(?:$|[^\w\s]|(?P<next>[a-z]+)\b)))",
                      re.IGNORECASE)
# a weekday before a date belongs to it ("Monday, 22 Sep 2025", "thu, 30 jan 1991"); before a day and month
# in figures it makes them a date ("tues 3/4", "SAT 9/11", "Fri 25/6")
_WEEKDAY = r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)\.?,?\s{1,2}"
WEEKDAY_LEAD = re.compile(_WEEKDAY + r"$", re.IGNORECASE)
WEEKDAY_DAY = re.compile(_WEEKDAY + r"(?P<a>[0-3]?\d)/(?P<b>[0-3]?\d)(?![\w/]|[.,]\d)(?=\s*(?P<next>[a-z]+)?)",
                         re.IGNORECASE)
# a year of an era ("600 BC", "AD 70", "1200 bce") and a decade ("80s", "1990s", "'90s", "MID 70S")
ERA_DECADE = re.compile(r"(?<![\w.,/-])\d{1,4}\s?(?:BCE?|B\.C\.(?:E\.)?|AD|A\.D\.|CE)(?![\w.])"
                        r"|\b(?-i:AD|A\.D\.)\s?\d{1,4}\b"  # "AD 70" in capitals ("my ad 50% off" is none)
                        r"|(?<![\w.,/$£€-])(?:['’]?[2-9]0|(?:1[5-9]|20)\d0)['’]?s\b", re.IGNORECASE)
# a year alone (1000-2099) after a word that dates it ("in 1484", "since 2015", "by 1990", "spring 2014"), or a
# year of 1900-2099 anywhere; either only before a stop word, punctuation or the end ("in 1484, after", "the
# 2015 ones"), so that a count ("in 1500 cases", "2000 people") stays a number
YEAR_ALONE = re.compile(r"(?<![\w$£€#@.,/:+-])(?P<y>1\d{3}|20\d\d)(?![\w%/:-]|[.,]\d)(?=\s*(?P<next>[a-z]+)?)", re.IGNORECASE)
YEAR_CUE = re.compile(r"\b(?:in|since|until|till|by|from|during|before|after|of|circa|around|early|late|mid|spring"
                      r"|summer|autumn|fall|winter|year|season)\W{0,2}$", re.IGNORECASE)
# a year of 1900-2099 that a determiner opens, before any word: "the 2014 holiday season", "their 1998 album"
YEAR_MODIFIER = re.compile(r"\b(?:the|this|that|his|her|their|its|our|my|your)\s+(?P<y>19\d\d|20\d\d)(?=\s+[^\W\d_])",
                           re.IGNORECASE)
# a date in ISO order: "2021-03-04"
ISO_DATE = re.compile(r"\d{4}-\d{1,2}-\d{1,2}")
# consecutive years: "1974/75", "2005-06" (a season or a financial year, no code)
YEAR_SPAN = re.compile(r"(?<![\w/.-])(?P<y>1[5-9]\d\d|20\d\d)[/–-](?P<n>\d\d|1[5-9]\d\d|20\d\d)(?![\w/-])")


def year_span(m) -> bool:
    """Consecutive years ("1974/75", "1999/00"), a later year of the same century in two digits ("1876-88"), or a
    later year within a lifetime ("1999-2001")."""
    y, n = int(m.group("y")), int(m.group("n"))
    return n == (y + 1) % 100 or y % 100 < n if len(m.group("n")) == 2 else y < n <= y + 100


# times of day, labelled DATE (a time next to a date pins an event down further): 12:10, 10:30 pm, 7 a.m., noon
_AMPM = r"\s?[ap]\.?\s?m\b\.?"
TIME = re.compile(rf"(?<![\w:.])(?:1[0-2]|0?\d):[0-5]\d(?::[0-5]\d)?(?:{_AMPM})?(?![\w:])"
                  rf"|(?<![\w:.])(?:1[3-9]|2[0-3]):[0-5]\d(?::[0-5]\d)?(?![\w:])"  # 24-hour: "14:30 am" is German
                  rf"|(?<![\w:.])(?:1[0-2]|0?[1-9])(?:[.][0-5]\d)?{_AMPM}(?!\w)"
                  r"|\b(?:noon|midday|midnight)\b|\b(?:1[0-2]|0?[1-9])\s?o['’]\s?clock\b", re.IGNORECASE)


def _weekday_led(text, s):
    """``s`` moved back over a weekday right before it."""
    lead = WEEKDAY_LEAD.search(text, max(0, s - 12), s)
    return lead.start() if lead else s


def _clause_ends(m) -> bool:
    """The word after match ``m`` (its ``next`` group) is a stop word, or none follows: "3rd." but not "3rd floor"."""
    after = m.group("next")
    return after is None or addresses.stop_word(after.casefold())


def find(text):
    """(start, end) of the dates and times of day in ``text``."""
    written = [(m.start(), m.end()) for m in DATE.finditer(text)]
    for s, e in written:
        yield _weekday_led(text, s), e
    for m in WEEKDAY_DAY.finditer(text):
        a, b = int(m.group("a")), int(m.group("b"))
        # the words "sat", "sun", "wed" only before a clause's end: not "sat 5/6 exams"
        word = m.group(0)[:3].casefold() in ("sun", "sat", "wed") and m.group(0)[3:4].isspace()
        if 1 <= min(a, b) <= 12 and 1 <= max(a, b) <= 31 and (not word or _clause_ends(m)):
            yield m.start(), m.end()
    for m in CUED_DAY.finditer(text):
        top, bottom = (int(m.group("m")), int(m.group("d"))) if m.group("m") else (0, 0)
        fraction = m.group("loose") and top < bottom and bottom in (2, 3, 4, 5, 8, 10)
        if not fraction and _clause_ends(m):  # "for 1/2", "3rd floor"
            yield _weekday_led(text, m.start("value")), m.end("value")
    for m in ERA_DECADE.finditer(text):
        yield m.start(), m.end()
    for m in YEAR_ALONE.finditer(text):
        if any(s <= m.start() < e for s, e in written):  # the year of a written date ("22 Sep 2025")
            continue
        if _clause_ends(m) and (
                int(m.group("y")) >= 1900 or YEAR_CUE.search(text, max(0, m.start() - 12), m.start())):
            yield m.start(), m.end()
    for m in YEAR_MODIFIER.finditer(text):
        yield m.start("y"), m.end("y")
    for m in YEAR_SPAN.finditer(text):
        if year_span(m):
            yield m.start(), m.end()
    for m in TIME.finditer(text):
        yield m.start(), m.end()
