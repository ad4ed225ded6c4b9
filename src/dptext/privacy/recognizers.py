"""Pattern recognizers for identifiers that a named-entity model does not tag.

Each recognizer finds character ranges of one kind of identifier with a
regular expression and, where the identifier carries a checksum, keeps only
matches that pass it:

* ``EMAIL``: ``local@domain.tld``;
* ``URL``: ``http(s)://…``, ``www.…`` and bare domains with a common TLD;
* ``PHONE``: 7 to 15 digits in groups separated by spaces, dots or dashes,
  optional ``+CC`` / ``00CC`` / ``001`` prefix (and a bracketed trunk ``(0)``),
  optional ``(area)`` of up to 5 digits and
  ``x123`` / ``ext. 123`` extension, at least three digit groups unless
  written with ``+`` or ``(``; a bare run of 10 to 12 digits (a North American
  number written without separators), or 8 to 15 after ``+`` or ``00`` (E.164); ISO dates and SSNs are excluded;
* ``CARD``: 13 to 19 digits (spaces or dashes allowed) passing the Luhn check
  ``Σ digits, every second from the right doubled (minus 9 above 9) ≡ 0 (mod 10)``;
* ``IBAN``: country code, two check digits, 11 to 30 alphanumerics, passing
  ISO 13616's ``int(rearranged, letters A=10…Z=35) mod 97 = 1``;
* ``ID`` (:mod:`.ids`): social security numbers, values after an ID keyword, codes that mix letters and
  digits, number plates, British national insurance numbers, and long runs or blocks of digits;
* ``IP``: dotted IPv4 addresses with every part ≤ 255;
* ``ADDRESS``: a street address (house number, up to four words, a USPS street
  suffix, optional ``Apt./Suite/Unit``), US military addresses
  (``USNS …``, ``Unit … Box …``, ``PSC …``, ``APO/FPO/DPO AA 12345``) and the
  ``City, ST 12345`` tail;
* ``DATE`` (:mod:`.dates`): numeric (``03/04/2021``, ``2021-03-04``) and written dates
  (``March 3, 2021``, ``3 Mar 2021``, ``Oct 17 '61``) with a weekday before them, a day after a dating word or a
  weekday (``expires 4/10``, ``on the 14th``, ``tues 3/4``), spans of years (``1974/75``), and times of day
  (``12:10``, ``10:30 pm``, ``7 a.m.``, ``noon``, ``5 o'clock``);
* ``HANDLE`` (:mod:`.handles`): a social-media handle, ``@`` and 1 to 30 of ``A-Z a-z 0-9 _`` holding a letter
  (``@Rene_M_Gomez``, ``@bradsmithjr``), in any casing; not after a word character, ``.``, ``@`` or ``/`` (the
  ``@`` of an email or of a URL path) except a dot that opens a word (``.@IKEA``), and not a time (``@10pm``,
  ``@7:30``).

All patterns are compiled once; :func:`recognize` runs the selected ones over
a text and returns :class:`Detection` records (start, end, label, detector).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dptext.privacy import addresses, dates, handles, ids
from dptext.privacy.dates import ISO_DATE
from dptext.privacy.ids import SSN, digits

DETECTOR = "regex"


@dataclass(frozen=True, slots=True)
class Detection:
    """One detected span ``text[start:end]`` of entity type ``label`` found by ``detector``."""

    start: int
    end: int
    label: str
    detector: str


def luhn_ok(digits: str) -> bool:
    """Luhn checksum of a string of digits (payment cards)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_ok(text: str) -> bool:
    """ISO 13616 check: move the first four characters to the end, letters to 10..35, mod 97 == 1."""
    s = text.replace(" ", "").upper()
    if not 15 <= len(s) <= 34:
        return False
    rearranged = s[4:] + s[:4]
    try:
        return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1
    except ValueError:
        return False


_TLDS = ("com|org|net|edu|gov|mil|int|info|biz|io|co|us|uk|de|fr|it|es|nl|eu|ca|au|in|ch|se|no|dk|be|at|"
         "ie|nz|jp|cn|ru|br|mx|ai|app|dev|me|tv")
EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                   r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?){0,8}\.[A-Za-z]{2,24}(?![\w-])")
URL = re.compile(r"(?<![\w@/.-])(?:(?:https?|ftp)://[^\s<>\"']+|www\.[^\s<>\"']+|"
                 rf"(?:[A-Za-z0-9-]{{1,63}}\.){{1,8}}(?:{_TLDS})(?:/[^\s<>\"']*)?(?![\w@.-]))", re.IGNORECASE)
_SEP = r"[ .\-]"
# a number ends at a space, a sentence stop or a dash before a word ("6301-Office"), not inside a longer token
_END = r"(?![\w/]|[.-]\d|-[^\W\d_]{0,2}\d)"
PHONE = re.compile(
    r"(?<![\w+/.-])(?:(?:\+|00)\d{1,3}(?:\s?\(0\))?" + _SEP + r"?|001-|1-|1 (?=\())?"  # +33 (0)5 …: the trunk zero in brackets
    r"(?:\(\d{1,5}\)" + _SEP + r"?|\d{1,4}" + _SEP + r")"  # (09403) 79693: a German area code has up to 5 digits
    r"\d{2,7}(?:" + _SEP + r"?\d{2,4}){0,3}"
    r"(?:\s?(?:x|ext\.?|extension)\s?\d{1,6})?" + _END +
    # a bare run of digits: 10 to 12, or 8 to 15 after a plus or 00 (E.164: "+468533239", "0012014352588")
    r"|(?<![\w+/.-])(?:(?:\+|00)\d{8,15}|\d{10,12})(?:\s?(?:x|ext\.?|extension)\s?\d{1,6})?" + _END
    # a country code in brackets, the plus inside or before them: "(+358) 521935231", "(+44) 7911 123 456", "+(351) 912345678"
    + r"|(?<![\w/.-])(?:\(\+\d{1,3}\)|\+\(\d{1,3}\))\s?\d{2,12}(?:[ .-]\d{2,6}){0,4}" + _END
    # an area code before a slash (Hungary, Austria): "(06)28/893-2377", "(35)/152-3395", "27/165 0763", and the
    # Hungarian trunk prefix and area code "06-1/234 5678"
    + r"|(?<![\w/.-])(?:\(\d{2}\)\d{0,2}|\d{2}(?:-\d{1,2})?)/\s?\d{3}[ -]?\d{4}" + _END, re.IGNORECASE)
CUED_PHONE = re.compile(r"(?<![\w+/.-])\+?\(?\d[\d()]*(?:[ .-]\(?\d[\d()]*){1,5}" + _END)
LOCAL_PHONE = re.compile(r"\d{3}[.-]\d{4}")
PAIRS = re.compile(r"\d\d(?:[ .-]\d\d){2}")
# national numbers with a trunk 0: 07700 900123, 016977 0062, 08652 41 94 73 (9 to 13 digits, checked below)
NATIONAL_PHONE = re.compile(r"(?<![\w+/.-])0\d{2,5}(?:[ -]?\d{2,5}){1,4}" + _END)  # "07688 10321 312" (Austria)
CARD = re.compile(r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])")
IBAN = re.compile(r"(?<!\w)[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?!\w)", re.IGNORECASE)
IPV4 = re.compile(r"(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?!\w|\.\d)")


def _emails(text):
    for m in EMAIL.finditer(text):
        yield m.start(), m.end()


def _urls(text):
    for m in URL.finditer(text):
        s, e = m.start(), m.end()
        while e > s and text[e - 1] in ".,;:!?)]}'\"":  # sentence punctuation after a URL
            e -= 1
        # an "@" makes it an email (or a URL's user name), unless every "@" opens a path part ("medium.com/@jsmith")
        if all(text[i - 1] == "/" for i in range(s, e) if text[i] == "@"):
            yield s, e


_PHONE_BEFORE = re.compile(r"(?i)\b(?:phone|tel|telephone|call|fax|mobile|cell|ring|text|number|whatsapp|sms|contact)\b"
                           r"[^\w\n]{0,3}(?:(?:me|us|him|her|them|on|at|is|no|number|:)\W{0,2}){0,3}$")
# a person between the verb and "on"/"at": "ring zaliha on", "call Dr Ames at" (no frequent word: "call came on")
_PHONE_PERSON = re.compile(r"(?i)\b(?:call|ring|text|phone)\s+((?:[^\W\d_]{2,}\.?\s+){1,2})(?:on|at)\s*$")
# reaching someone at a number: "you can reach the clinic at", "contact me on"; messages sent to one: "stop
# receiving messages to", "texts to"
_PHONE_REACH = re.compile(r"(?i)\b(?:(?:reach|contact|dial)\s+(?:[^\W\d_]{2,}\s+){0,2}(?:on|at)"
                          r"|(?:messages?|texts|sms)\s+to|\bregistered)\s*$")
_PHONE_AFTER = re.compile(r"(?i)[ \t]*[-(]?[ \t]*(?:office|fax|mobile|cell|home|work|tel|phone|landline)\b"
                         r"|[ \t]+is[ \t]+(?:the|my|our|his|her|their|your)[ \t]+(?:new[ \t]+)?(?:number|phone|mobile|cell)\b")


def _phone_cue(text, s, e):
    """A phone word right before ("call me on", "fax:") or a line's kind right after ("-Office", " mobile")."""
    before = text[max(0, s - 40):s]
    if _PHONE_BEFORE.search(before) or _PHONE_AFTER.match(text, e) or _PHONE_REACH.search(before):
        return True
    m = _PHONE_PERSON.search(before)
    if m is None:
        return False
    common = addresses._common_words()  # the English word lists, loaded once
    return not any(common(w.casefold().rstrip(".")) for w in m.group(1).split())


def _phones(text):
    for m in PHONE.finditer(text):
        s, e = m.start(), m.end()
        core = re.split(r"(?i)\s?(?:x|ext\.?|extension)\s?\d", m.group(0))[0]
        n = len(digits(core))
        if n > 15 and core.startswith(("+", "00", "(")):  # run into the next number: "+39 031 04309719 200 minute"
            ends = [g.start() for g in re.finditer(r"[ .-]\d", core) if 7 <= len(digits(core[:g.start()])) <= 15]
            if ends:
                core, e = core[:ends[-1]], s + ends[-1]
                n = len(digits(core))
        if not 7 <= n <= 15 or ISO_DATE.fullmatch(core) or SSN.fullmatch(core):
            continue
        groups = re.findall(r"\d+", core)
        if max(map(len, groups)) <= 2 and min(map(len, groups)) == 1 and not core.startswith(("+", "(")):
            continue  # counts or a list ("at 5 10 15 20"); numbers grouped in twos have no 1-digit group
        if 1 < len(groups) < 3 and not core.startswith(("+", "(")):  # "2019 2020" is two years, not a number
            local = LOCAL_PHONE.fullmatch(core)  # 039-3224, 555.1234
            national = groups[0].startswith("0") and n >= 9  # 07700 900123, 0151 2345678
            area = n == 10 and len(groups) == 2 and 2 <= len(groups[0]) <= 4  # an area code, then the line: 231 4567890
            if not (local or national or area):
                continue
        yield s, e
    for m in CUED_PHONE.finditer(text):  # any grouping ("524 2 986") right after or before a phone word
        n = len(digits(m.group(0)))
        # six digits in pairs are a whole number in Greenland and the Faroes ("call 68 21 97")
        if (7 <= n <= 15 or PAIRS.fullmatch(m.group(0))) and _phone_cue(text, m.start(), m.end()):
            yield m.start(), m.end()
    for m in NATIONAL_PHONE.finditer(text):
        if 9 <= len(digits(m.group(0))) <= 13 and not ISO_DATE.fullmatch(m.group(0)):
            yield m.start(), m.end()


def _cards(text):
    for m in CARD.finditer(text):
        d = digits(m.group(0))
        if 13 <= len(d) <= 19 and luhn_ok(d):
            yield m.start(), m.end()


def _ibans(text):
    for m in IBAN.finditer(text):
        if iban_ok(m.group(0)):
            yield m.start(), m.end()


def _ips(text):
    for m in IPV4.finditer(text):
        yield m.start(), m.end()


def _addresses(text):
    yield from addresses.find(text)


def _dates(text):
    yield from dates.find(text)


def _handles(text):
    yield from handles.find(text)


RECOGNIZERS = {
    "EMAIL": _emails, "URL": _urls, "PHONE": _phones, "CARD": _cards, "IBAN": _ibans,
    "ID": ids.find, "IP": _ips, "ADDRESS": _addresses, "DATE": _dates, "HANDLE": _handles,
}
LABELS = tuple(RECOGNIZERS)


def recognize(text: str, labels=LABELS) -> list[Detection]:
    """Detections of the recognizers named in ``labels`` over ``text`` (unsorted, may overlap)."""
    out = []
    for label in labels:
        fn = RECOGNIZERS.get(label)
        if fn is not None:
            out.extend(Detection(s, e, label, DETECTOR) for s, e in fn(text) if e > s)
    return out
