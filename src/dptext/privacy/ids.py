"""Identifiers for the ``ID`` recognizer of :mod:`.recognizers`.

* US social security numbers ``ddd-dd-dddd`` and values after an ID keyword (``MRN``, ``passport no.``,
  ``account #``, ``social security number is`` ...), in groups apart by spaces or in scientific notation too;
* upper-case codes that mix letters and digits (``AB1234567``, ``2-RBV-456``), not a small number joined to
  English words (``15MINUTES``, ``40-YEAR``);
* number plates after a vehicle word and in the British form (``FG75 VZU``), British national insurance
  numbers (``ZZ 97 53 80 T``);
* any other run of 6 or more digits, in groups joined by dashes or slashes too (not a date), and 7 or more digits
  in blocks apart by single spaces (``6923 0538``; not years within a lifetime of each other, ``1891 1914``).
"""

from __future__ import annotations

import re

from dptext.privacy import addresses
from dptext.privacy.dates import DATE, ISO_DATE, YEAR_SPAN, year_span
from dptext.privacy.id_words import KEYWORDS as _ID_WORDS

SSN = re.compile(r"(?<![\w-])\d{3}-\d{2}-\d{4}(?![\w-])")
# the value after an ID keyword, its number word and a linking verb ("passport number is"): groups apart by single
# spaces ("ZA 27 65 30", "4417 1234 5678"; 4 digits or more, checked in find), a number a spreadsheet wrote in
# scientific notation ("9.2121e+12"), or one token of letters, digits and dashes with a digit ("AB-12345")
KEYED_ID = re.compile(rf"\b(?:{_ID_WORDS})\b\.?\s{{0,3}}(?:(?:no\.?|number|num\.?|#|id)(?:\s{{1,3}}(?:is|was))?)?"
                      r"\s{0,3}[:#]?\s{0,3}"
                      r"(?P<value>(?P<groups>(?:[A-Za-z]{1,3}|\d{1,6})(?: \d{1,6}){1,5}(?: [A-Za-z](?![\w-]))?)"
                      r"|\d\.\d+e[+-]?\d{1,3}"
                      r"|(?=[A-Za-z0-9-]{0,40}\d)[A-Za-z0-9][A-Za-z0-9-]{3,40})(?![A-Za-z0-9-]|[.+]\d)", re.IGNORECASE)
# a hashtag ("#Coachella2015") is a public topic tag, not an identifier; a handle ("@jsmith42") stays one; a
# first group of one character opens a plate ("2-RBV-456", "V-102-WO"), a letter only before two dashes ("x-2019")
CODE_ID = re.compile(r"(?<![\w#-])(?=[A-Z0-9-]{0,80}\d)(?=[A-Z0-9-]{0,80}[A-Z])(?:[A-Z0-9]{2,40}|\d(?=-)|[A-Z](?=-[A-Z0-9]{1,20}-))"
                     r"(?:-[A-Z0-9]{1,20}){0,6}"
                     r"(?![\w-])", re.IGNORECASE)
# a registration plate after the vehicle it is on: "the car 3YBK 07", "reg: LU-250 769", "van vyw 63ey"
PLATE = re.compile(r"\b(?:car|cars|vehicle|van|truck|lorry|motorbike|plate|plates|reg|registration|rego)\b\.?"
                   r"\s{0,3}(?:(?:no\.?|number|#)\s{0,3})?[:,]?\s{0,3}"
                   r"(?P<value>(?=[A-Z0-9 -]{0,14}\d)(?=[A-Z0-9 -]{0,14}[A-Z])[A-Z0-9]{1,8}(?:[ -][A-Z0-9]{1,5}){0,2})"
                   r"(?![\w-])", re.IGNORECASE)
# the British forms: a number plate "FG75 VZU" (its last letters no English word: not "AB12 THE"), a national
# insurance number "ZZ 97 53 80 T"
UK_PLATE = re.compile(r"(?<![\w-])[A-Z]{2}\d{2}\s?(?P<tail>[A-Z]{3})(?![\w-])", re.IGNORECASE)
NINO = re.compile(r"(?<![\w-])[A-Z]{2}(?P<s>\s?)\d{2}(?P=s)\d{2}(?P=s)\d{2}(?P=s)[A-Z](?![\w-])", re.IGNORECASE)
DIGIT_GROUPS = re.compile(r"(?<![\w/.-])\d{2,}(?:[-/]\d{2,}){1,4}(?![\w/-])")
DIGIT_RUN = re.compile(r"(?<![\w.,-])\d{6,}(?![\w-])")
# groups of digits apart by single spaces, 7 or more digits in all: a number written in blocks ("6923 0538",
# "121 8487"), which counts and amounts never are (they group with commas); not years within a lifetime of each
# other ("1891 1914")
SPACED_DIGITS = re.compile(r"(?<![\w.,/+-])\d{2,4}(?: \d{2,4}){1,3}(?![\w/-]|[.,]\d)")


def digits(s: str) -> str:
    """The digits of ``s``, in order."""
    return "".join(c for c in s if c.isdigit())


_UNITS = frozenset("plus metre metres meter meters km kg cm mm ml yr yrs hr hrs min mins sec secs mph kph".split())
_TIME_UNITS = frozenset("day days week weeks month months year years hour hours minute minutes second seconds "
                        "mo mos wk wks".split())


def _amount(value: str) -> bool:
    """A number run into a unit or a span of time: "10mins", "2days", no plate."""
    m = re.fullmatch(r"\d+([^\W\d_]+)", value)
    return m is not None and (m.group(1).casefold() in _UNITS or m.group(1).casefold() in _TIME_UNITS)


def _measure(code: str) -> bool:
    """A small number joined to English words: "15MINUTES", "20-PLUS", "200-metre-long", "40-YEAR", no code."""
    numbers = re.findall(r"\d+", code)
    words = re.findall(r"[^\W\d_]+", code)
    return len(numbers) == 1 and len(numbers[0]) <= 4 and all(
        addresses.everyday(w.casefold()) or w.casefold() in _UNITS for w in words)


def find(text):
    """(start, end) of the identifiers in ``text``."""
    for m in SSN.finditer(text):
        yield m.start(), m.end()
    for m in KEYED_ID.finditer(text):
        if m.group("groups") is None or len(digits(m.group("value"))) >= 4:
            yield m.start("value"), m.end("value")
    for m in CODE_ID.finditer(text):
        g = m.group(0)
        if len(g) >= 6 and (not g.islower() or sum(c.isdigit() for c in g) >= 3) and not DATE.fullmatch(g) \
                and not _measure(g) and not re.fullmatch(r"[\d-]+[ap]m", g, re.IGNORECASE):  # hours: "6-10pm"
            # "covid19" stays a word, "08-Jun-1959" a date
            yield m.start(), m.end()
    for m in PLATE.finditer(text):
        value = m.group("value")
        groups = list(re.finditer(r"[A-Za-z0-9]+", value))
        # an English word stands apart: letters dashed to digits ("LB-579") are a code, and one letter other than
        # "a" or "i" is no word ("LB-579 L")
        words = [g.group().isalpha() and addresses.everyday(g.group().casefold())
                 and "-" not in value[max(0, g.start() - 1):g.end() + 1]
                 and (len(g.group()) > 1 or g.group().casefold() in ("a", "i")) for g in groups]
        while groups and words[-1]:
            groups.pop()  # "the car 3YBK 07 was parked": the plate ends before the verb
            words.pop()
        value = value[:groups[-1].end()] if groups else ""
        # letters and digits, and no English word inside: not "the car 2 days ago", "a car in 2019"
        if re.search(r"\d", value) and re.search(r"[^\W\d_]", value) and not any(words) and not _amount(value):
            yield m.start("value"), m.start("value") + len(value)
    for m in UK_PLATE.finditer(text):
        if not addresses.everyday(m.group("tail").casefold()):
            yield m.start(), m.end()
    for m in NINO.finditer(text):
        yield m.start(), m.end()
    for m in DIGIT_RUN.finditer(text):
        yield m.start(), m.end()
    for m in SPACED_DIGITS.finditer(text):
        groups = m.group(0).split()
        years = all(len(g) == 4 and 1000 <= int(g) <= 2999 for g in groups) and all(
            abs(int(a) - int(b)) <= 150 for a, b in zip(groups, groups[1:]))  # a span of years, as in a lifetime
        if len(digits(m.group(0))) >= 7 and not years:
            yield m.start(), m.end()
    for m in DIGIT_GROUPS.finditer(text):  # 86-09/96, 12/345/678: 6+ digits in groups, not a date
        span = YEAR_SPAN.fullmatch(m.group(0))
        if len(digits(m.group(0))) >= 6 and not DATE.fullmatch(m.group(0)) and not ISO_DATE.fullmatch(m.group(0)) \
                and not (span and year_span(span)):
            yield m.start(), m.end()
